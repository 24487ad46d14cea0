package io.lockchaos.kit;

import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import com.google.gson.JsonObject;

/**
 * The protocol's stdout: one JSON object per line, written whole and flushed, from any thread.
 * Nothing else may reach stdout, so {@link #claimStdout()} points {@code System.out} at stderr
 * (a library's or a user's {@code println} lands in the driver's log, not in the protocol).
 */
final class Wire {
    private static final OutputStream OUT =
        new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 14);

    private Wire() { }

    /** From now on only the kit writes to stdout. */
    static void claimStdout() {
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8));
    }

    static synchronized void write(JsonObject message) {
        try {
            OUT.write(message.toString().getBytes(StandardCharsets.UTF_8));
            OUT.write('\n');
            OUT.flush();
        } catch (IOException e) {
            // The harness is gone (its end of the pipe closed): nobody is left to answer.
            Runtime.getRuntime().halt(0);
        }
    }

    static JsonObject message(String type) {
        JsonObject m = new JsonObject();
        m.addProperty("type", type);
        return m;
    }

    /** A line for the driver's log (shown when the driver breaks). */
    static void log(String text) {
        JsonObject m = message("log");
        m.addProperty("message", text);
        write(m);
    }
}
