package lockchaos;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The lockchaos driver protocol, Java side (docs/driver-protocol.md): newline-delimited JSON on
 * stdin/stdout. A driver implements {@link Lock}; {@link #serve} does the rest. Requests are
 * handled one at a time on the main thread; {@link #renewed} may be called from any thread.
 */
abstract class Protocol {
    /** A reply to one request. */
    static final class Reply {
        final String json;
        private Reply(String json) { this.json = json; }
    }

    /** Raised by a driver when the outcome is unknown (definite=false) or known not to have happened. */
    static final class Failure extends Exception {
        final boolean definite;
        Failure(String message, boolean definite) { super(message); this.definite = definite; }
    }

    interface Lock {
        /** The token, validity (ms, from invocation) and fence; null when refused. */
        Object[] acquire() throws Exception;
        /** True if released, false if the lease certainly was not ours any more. */
        boolean release(String token) throws Exception;
    }

    /**
     * A lock that is not a mutex (a semaphore, a read-write lock): each acquire carries the
     * mode ("exclusive" or "shared") and the permits it asks; release acts on all of them.
     */
    interface SharedLock extends Lock {
        /** The token, validity and fence of a grant of {@code permits} in {@code mode}; null when refused. */
        Object[] acquire(String mode, int permits) throws Exception;

        /** Never sent to a lock that declared itself no mutex. */
        default Object[] acquire() throws Exception { throw new Failure("an acquire without a mode", true); }
    }

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final PrintStream OUT =
        new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
    private static BufferedReader in;
    private static volatile long currentId = -1;
    private static volatile boolean announce = false;

    static Map<String, Object> hello;
    static String clientId;
    static String lockName;
    static int ttlMs;
    static int socketTimeoutMs;
    /** The run's permits (the hello's "capacity": absent for a mutex, so 1; null: unbounded). */
    static Integer capacity;

    static synchronized void write(String line) {
        OUT.print(line);
        OUT.print('\n');
        OUT.flush();
    }

    static String newToken() {
        byte[] b = new byte[8];
        RANDOM.nextBytes(b);
        StringBuilder s = new StringBuilder(clientId).append(':');
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }

    /**
     * A watchdog renewal succeeded: the command was sent at {@code sentNanos} (System.nanoTime,
     * which on Linux is CLOCK_MONOTONIC: the history's clock, so no time spent on the way to the
     * harness is counted as lease).
     */
    static void renewed(String token, double validityMs, long sentNanos) {
        write(Json.write("type", "renewed", "token", token, "validity_ms", validityMs, "sent_ns", sentNanos));
    }

    /**
     * A command the library sent on its own, outside any request (a watchdog's renewal): a
     * network fault on this client's links counts it, as it counts an announced command.
     */
    static void sent(String command) {
        write(Json.write("type", "sent", "command", command));
    }

    /**
     * The pause-points capability: before sending {@code command}, when the harness asked for
     * announcements in this request, say so and wait for "go" (the harness may stop or kill the
     * whole client there).
     */
    static void before(String command) throws IOException {
        if (!announce || currentId < 0) return;
        write(Json.write("type", "before", "id", currentId, "command", command));
        String line = in.readLine();
        if (line == null) System.exit(0);
        Map<String, Object> go = Json.object(line);
        if (!"go".equals(go.get("type"))) throw new IOException("expected go, got " + line);
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> addresses(String key) {
        Object v = hello.get(key);
        return v == null ? new ArrayList<>() : (List<Map<String, Object>>) v;
    }

    static int intField(Map<String, Object> m, String key, int dflt) {
        Object v = m.get(key);
        return v instanceof Number ? ((Number) v).intValue() : dflt;
    }

    interface Factory { Lock make() throws Exception; }

    static void serve(String driver, String library, List<String> capabilities, Factory factory) throws IOException {
        serve(driver, library, capabilities, new Object[0], factory);
    }

    /**
     * As above, for a lock that is not a mutex: {@code shape} is what its describe answer adds
     * to say what it grants, as key-value pairs ("capacity", 3, "modes", List.of("shared"), …).
     */
    static void serve(String driver, String library, List<String> capabilities, Object[] shape, Factory factory) throws IOException {
        in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Lock lock = null;
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) continue;
            Map<String, Object> m = Json.object(line);
            String type = String.valueOf(m.get("type"));
            Object idv = m.get("id");
            long id = idv instanceof Number ? ((Number) idv).longValue() : -1;
            if (type.equals("describe")) {
                List<Object> described = new ArrayList<>(List.of("type", "describe", "driver", driver,
                    "language", "java", "library", library, "capabilities", capabilities));
                described.addAll(java.util.Arrays.asList(shape));
                write(Json.write(described.toArray()));
                continue;
            }
            if (type.equals("hello")) {
                hello = m;
                clientId = String.valueOf(m.get("client_id"));
                lockName = String.valueOf(m.get("lock_name"));
                ttlMs = intField(m, "ttl_ms", 200);
                socketTimeoutMs = intField(m, "socket_timeout_ms", 500);
                capacity = !m.containsKey("capacity") ? Integer.valueOf(1)
                    : m.get("capacity") == null ? null : Integer.valueOf(intField(m, "capacity", 1));
                try {
                    lock = factory.make();
                } catch (Exception e) {
                    write(Json.write("type", "hello", "ok", false, "message", String.valueOf(e)));
                    return;
                }
                write(Json.write("type", "hello", "ok", true, "driver", driver, "language", "java",
                    "library", library, "capabilities", capabilities));
                continue;
            }
            if (lock == null) {
                write(Json.write("type", "error", "id", id, "definite", true, "message", "no hello yet"));
                continue;
            }
            currentId = id;
            announce = Boolean.TRUE.equals(m.get("announce"));
            String reply;
            try {
                if (type.equals("acquire")) {
                    Object[] lease = lock instanceof SharedLock && m.get("mode") != null
                        ? ((SharedLock) lock).acquire(String.valueOf(m.get("mode")), intField(m, "permits", 1))
                        : lock.acquire();
                    reply = lease == null ? Json.write("type", "refused", "id", id)
                        : Json.write("type", "ok", "id", id, "token", lease[0], "validity_ms", lease[1], "fence", lease[2]);
                } else if (type.equals("release")) {
                    boolean ok = lock.release(String.valueOf(m.get("token")));
                    reply = Json.write("type", ok ? "ok" : "refused", "id", id);
                } else {
                    reply = Json.write("type", "error", "id", id, "definite", true, "message", "unsupported request " + type);
                }
            } catch (Failure f) {
                reply = Json.write("type", "error", "id", id, "definite", f.definite, "message", f.getMessage());
            } catch (Exception e) {
                reply = Json.write("type", "error", "id", id, "definite", false, "message", e.getClass().getSimpleName() + ": " + e.getMessage());
            } finally {
                currentId = -1;
                announce = false;
            }
            write(reply);
        }
    }
}
