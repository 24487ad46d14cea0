package io.lockchaos.kit;

/**
 * A library's logging goes to stderr, never to stdout (which is the protocol's): the harness
 * keeps stderr in the run's directory and shows its last line when the driver breaks. For
 * slf4j-simple (the binding the bundled drivers and the skeletons use) that is its default,
 * made explicit here, at WARN so a healthy run logs next to nothing; a system property set on
 * the command line wins. Another binding (logback, log4j) must be pointed at stderr in its own
 * configuration.
 */
final class Logging {
    private Logging() { }

    static void toStderr() {
        setDefault("org.slf4j.simpleLogger.logFile", "System.err");
        setDefault("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        setDefault("org.slf4j.simpleLogger.showDateTime", "true");
        setDefault("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS");
        // java.util.logging's console handler writes to stderr already.
    }

    private static void setDefault(String key, String value) {
        if (System.getProperty(key) == null) System.setProperty(key, value);
    }
}
