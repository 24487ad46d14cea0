package io.lockchaos.kit;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

/**
 * A lock driver (docs/driver-protocol.md): {@code Driver.serve(description, hello -> lock)}
 * runs the protocol on stdin and stdout until stdin closes, and the lock only locks.
 *
 * <p>Three threads: one reads the harness's lines (answering {@code describe}, passing each
 * {@code go} to the waiting command, and exiting the JVM the moment stdin closes, since the
 * client stopped); the main thread takes the requests in order and answers each within the
 * harness's bound; one lock thread runs the lock's methods one at a time. A method that
 * overruns the bound — 0.8 × max(3 s, 4 × TTL) of running time, which like the harness's
 * counts neither a stretch the process was stopped (SIGSTOP) nor the time a command waited
 * for its go — is answered {@code definite: false}, the lock thread interrupted, and a grant
 * that still comes back later is released at once (nobody asked for it any more).
 */
public final class Driver {
    /** A wait slice; a slice this much longer means the process did not run (the harness's rule). */
    private static final long SLICE_MS = 50;
    private static final long STALL_MS = 250;
    private static final double BOUND_SHARE = 0.8;
    private static final long HELLO_BOUND_MS = 30_000;  // the harness's bound on hello
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Description description;
    private final Lock.Factory factory;
    private final BlockingQueue<JsonObject> requests = new LinkedBlockingQueue<>();
    private final ExecutorService lockThread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "lockchaos-lock");
        t.setDaemon(true);
        Commands.lockThread(t);
        return t;
    });
    /** The live leases: token → the library's object for it (null: none). */
    private static final Map<String, Lease> LEASES = new ConcurrentHashMap<>();
    private Hello hello;
    /** The lock; its leases are the objects its own acquires returned, so they fit its methods. */
    private Lock<Object> lock;

    /** A lease the kit holds for the harness; {@code closed}: why nothing more may be sent for it. */
    private record Lease(Object object, Outcome closed) { }

    private Driver(Description description, Lock.Factory factory) {
        this.description = description;
        this.factory = factory;
    }

    /**
     * Runs the driver until stdin closes (then the JVM exits). Call it first thing in
     * {@code main}: it keeps stdout for the protocol and sends the JVM's logging to stderr.
     */
    public static void serve(Description description, Lock.Factory factory) {
        Logging.toStderr();
        Wire.claimStdout();
        new Driver(description, factory).run();
    }

    /**
     * A background renewal of {@code token} succeeded (validity 0: it found the lease gone and
     * the library gave it up), its command sent at {@code sentNanos} ({@link System#nanoTime}).
     */
    public static void renewed(String token, double validityMs, long sentNanos) {
        JsonObject m = Wire.message("renewed");
        m.addProperty("token", token);
        m.addProperty("validity_ms", validityMs);
        m.addProperty("sent_ns", sentNanos);
        Wire.write(m);
    }

    /** A line for the driver's log (the harness shows it when the driver breaks). */
    public static void log(String text) {
        Wire.log(text);
    }

    /** The live leases (token → the library's object for the lease), for a hook that reports renewals. */
    public static Map<String, Object> leases() {
        Map<String, Object> out = new HashMap<>();
        LEASES.forEach((token, lease) -> {
            if (lease.object() != null && lease.closed() == null) out.put(token, lease.object());
        });
        return out;
    }

    // -- the harness's lines ----------------------------------------------------------------

    private void run() {
        Thread reader = new Thread(this::read, "lockchaos-stdin");
        reader.setDaemon(true);
        reader.start();
        for (long n = 0; n < Long.MAX_VALUE; n++) {  // ends when stdin closes (the reader halts the JVM)
            JsonObject m;
            try {
                m = requests.take();
            } catch (InterruptedException e) {
                return;
            }
            handle(m);
        }
    }

    /**
     * Reads the harness's lines until stdin closes, then ends the JVM at once: the client
     * stopped, and no library thread (nor a shutdown hook of one) may keep it alive.
     */
    private void read() {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            for (String line; (line = in.readLine()) != null; ) {
                if (!line.isBlank()) take(line);
            }
        } catch (IOException e) {
            // stdin broke: the same as closed
        }
        Runtime.getRuntime().halt(0);
    }

    /** The id of the request being served (0: none), and the last id the harness used. */
    private volatile long open;
    private long lastId;
    private volatile boolean greeted;

    /** One line: answered here (describe, go, anything out of order) or queued for the main thread. */
    private void take(String line) {
        JsonObject m;
        try {
            JsonElement e = JsonParser.parseString(line);
            if (!e.isJsonObject()) throw new IllegalArgumentException("not a JSON object");
            m = e.getAsJsonObject();
        } catch (RuntimeException e) {
            Wire.log("a line that is not a JSON object: " + cut(line));
            return;
        }
        JsonElement t = m.get("type");
        String type = t != null && t.isJsonPrimitive() ? t.getAsString() : "";
        Long id = id(m);
        switch (type) {
            case "go" -> {
                if (id == null) Wire.log("a go without an id: " + cut(line));
                else Commands.go(id);
            }
            case "describe" -> Wire.write(description.described());
            case "hello" -> {
                greeted = true;
                requests.add(m);
            }
            case "acquire", "release", "extend" -> {
                String why = id == null ? "without an id"
                    : !greeted ? "before hello"
                    : id <= lastId ? "whose id does not grow (the last was " + lastId + ")"
                    : open != 0 ? "while #" + open + " is not answered: one request at a time"
                    : null;
                if (why != null) {
                    refuse(m, type + " " + why + ": " + cut(line));
                    return;
                }
                lastId = id;
                open = id;
                requests.add(m);
            }
            default -> refuse(m, "an unknown request type '" + type + "': " + cut(line));
        }
    }

    private static String cut(String line) {
        return line.length() <= 120 ? line : line.substring(0, 117) + "...";
    }

    private static Long id(JsonObject m) {
        JsonElement v = m.get("id");
        if (v == null || !v.isJsonPrimitive() || !v.getAsJsonPrimitive().isNumber()) return null;
        return v.getAsLong();
    }

    private static String string(JsonObject m, String field) {
        JsonElement v = m.get(field);
        return v == null || v.isJsonNull() ? null : v.getAsString();
    }

    /** A line the kit does not obey: one log line, and an error answer (nothing done) when it has an id. */
    private static void refuse(JsonObject m, String why) {
        Wire.log(why);
        Long id = id(m);
        if (id != null) write(id, Outcome.notSent(why), null, null);
    }

    /** A queued request (its order checked by the reader), on the main thread. */
    private void handle(JsonObject m) {
        String type = m.get("type").getAsString();
        if (type.equals("hello")) {
            hello(m);
            return;
        }
        long id = id(m);
        String token = string(m, "token");
        JsonElement v = m.get("announce");
        boolean announce = v != null && v.isJsonPrimitive() && v.getAsBoolean();
        if (lock == null) {
            answer(id, Outcome.notSent("not sent: " + type + " #" + id + " before a hello that succeeded"), null, type);
        } else if (type.equals("acquire")) {
            String permits = string(m, "permits");
            acquire(new Request(id, type, newToken(), string(m, "mode"), permits == null ? 1 : Integer.parseInt(permits), announce));
        } else if (token == null) {
            answer(id, Outcome.notSent("not sent: " + type + " #" + id + " without a token"), null, type);
        } else if (type.equals("extend") && !description.canExtend()) {
            answer(id, Outcome.notSent("not sent: this driver did not declare extend"), token, type);
        } else if (!LEASES.containsKey(token)) {
            answer(id, Outcome.notSent("not sent: no lease " + token + " was granted here"), token, type);
        } else if (LEASES.get(token).closed() != null) {  // the kit answers for a lease the library closed
            Outcome closed = LEASES.get(token).closed();
            if (type.equals("release")) LEASES.remove(token);
            answer(id, closed, token, type);
        } else if (type.equals("release")) {
            release(new Request(id, type, token, null, 1, announce), LEASES.get(token));
        } else {
            extend(new Request(id, type, token, null, 1, announce), LEASES.get(token));
        }
    }

    private String newToken() {
        byte[] b = new byte[8];
        RANDOM.nextBytes(b);
        return hello.clientId() + ":" + HexFormat.of().formatHex(b);
    }

    // -- hello and the three requests -----------------------------------------------------------

    private void hello(JsonObject m) {
        if (hello != null) {
            Wire.log("a second hello: ignored");
            return;
        }
        JsonObject reply;
        try {
            hello = new Hello(m);
            Task<Lock<?>> made = new Task<>(null, () -> factory.create(hello));
            long boundMs = (long) (HELLO_BOUND_MS * BOUND_SHARE);
            if (!bounded(made, boundMs)) throw new IllegalStateException("the lock was not built within " + boundMs + " ms");
            if (made.failure != null) throw made.failure;
            @SuppressWarnings("unchecked")
            Lock<Object> built = (Lock<Object>) made.result;
            lock = built;
            reply = description.ready(Commands.isHooked());
        } catch (Exception e) {
            reply = Wire.message("hello");
            reply.addProperty("ok", false);
            reply.addProperty("message", oneLine(e));
            lock = null;
        }
        Wire.write(reply);
    }

    private void acquire(Request request) {
        Outcome outcome = outcome(request, new Task<>(request, () -> lock.acquire(request)));
        if (outcome instanceof Outcome.Granted g) LEASES.put(request.token(), new Lease(g.lease(), null));
        answer(request.id(), outcome, request.token(), request.kind());
    }

    private void release(Request request, Lease lease) {
        Outcome outcome = outcome(request, new Task<>(request, () -> lock.release(request, lease.object())));
        LEASES.remove(request.token());  // nothing will be asked of it again
        answer(request.id(), outcome, request.token(), request.kind());
    }

    private void extend(Request request, Lease lease) {
        Outcome outcome = outcome(request, new Task<>(request, () -> lock.extend(request, lease.object())));
        if (outcome instanceof Outcome.Granted g && g.lease() != null) {
            LEASES.put(request.token(), new Lease(g.lease(), null));
        } else if (outcome instanceof Outcome.Revoked) {
            LEASES.remove(request.token());  // the library gave it up: nothing will be asked of it again
        } else if (outcome instanceof Outcome.Invalidated) {
            LEASES.put(request.token(), new Lease(null, Outcome.notSent(
                "not sent: the library invalidated this lease's lock object (extend #" + request.id() + ")")));
        }
        answer(request.id(), outcome, request.token(), request.kind());
    }

    /** The lock method's outcome within the bound; an exception is a failure (definite only for NotSent). */
    private Outcome outcome(Request request, Task<Outcome> task) {
        long boundMs = (long) (hello.requestBoundMs() * BOUND_SHARE);
        if (bounded(task, boundMs)) {
            if (task.failure != null) return failed(task.failure);
            return task.result != null ? task.result : Outcome.unknown("the lock's " + request.kind() + " returned no outcome");
        }
        return task.started
            ? Outcome.unknown("the library did not return within " + boundMs + " ms (the kit's bound on one request)")
            : Outcome.notSent("not sent: the previous request still runs in the library");
    }

    private static Outcome failed(Exception e) {
        return e instanceof NotSent ? Outcome.notSent(e.getMessage()) : Outcome.unknown(oneLine(e));
    }

    private static String oneLine(Throwable e) {
        String message = String.valueOf(e.getMessage()).strip();
        int nl = message.indexOf('\n');
        return e.getClass().getSimpleName() + ": " + (nl < 0 ? message : message.substring(0, nl));
    }

    /** The answer's type and fields for an outcome of a {@code kind} request. */
    private static JsonObject answerOf(Outcome outcome, String token, String kind) {
        if (outcome instanceof Outcome.Granted g) {
            JsonObject m = Wire.message("ok");
            if (!"release".equals(kind)) {
                m.addProperty("token", token);
                if (g.validityMs() != null) m.addProperty("validity_ms", g.validityMs());
                if ("acquire".equals(kind)) {
                    if (g.fence() == null) m.add("fence", JsonNull.INSTANCE);
                    else m.addProperty("fence", g.fence());
                }
            }
            return m;
        }
        if (outcome instanceof Outcome.Refused r) return withMessage(Wire.message("refused"), r.message());
        if (outcome instanceof Outcome.Failed f) {
            JsonObject m = Wire.message("error");
            m.addProperty("definite", f.definite());
            return withMessage(m, String.valueOf(f.message()));
        }
        if (outcome instanceof Outcome.Revoked r && "extend".equals(kind)) return withMessage(Wire.message("revoked"), r.message());
        if (outcome instanceof Outcome.Invalidated i && "extend".equals(kind)) {
            JsonObject m = Wire.message("invalidated");
            m.addProperty("definite", i.definite());
            return withMessage(m, i.message());
        }
        if (outcome instanceof Outcome.Kept k && "release".equals(kind)) {
            JsonObject m = Wire.message("kept");
            if (k.validityMs() != null) m.addProperty("validity_ms", k.validityMs());
            return m;
        }
        String why = "the lock answered " + kind + " with " + outcome + ", which answers no " + kind;
        Wire.log(why);
        return answerOf(Outcome.unknown(why), token, kind);
    }

    private static JsonObject withMessage(JsonObject m, String message) {
        if (message != null) m.addProperty("message", message);
        return m;
    }

    /** Answers the request being served: the next one may come as soon as this line is out. */
    private void answer(long id, Outcome outcome, String token, String kind) {
        open = 0;
        write(id, outcome, token, kind);
    }

    private static void write(long id, Outcome outcome, String token, String kind) {
        JsonObject m = answerOf(outcome, token, kind);
        m.addProperty("id", id);
        Wire.write(m);
    }

    // -- bounded waits --------------------------------------------------------------------------

    /** One call on the lock thread, which the main thread may give up on. */
    private static final class Task<T> implements Runnable {
        final Request request;
        final Callable<T> body;
        final CountDownLatch done = new CountDownLatch(1);
        T result;
        Exception failure;
        boolean started;
        boolean finished;
        boolean abandoned;
        Thread thread;
        Driver late;

        Task(Request request, Callable<T> body) {
            this.request = request;
            this.body = body;
        }

        @Override
        public void run() {
            synchronized (this) {
                if (abandoned) return;
                started = true;
                thread = Thread.currentThread();
            }
            Commands.begin(request);
            T value = null;
            Exception error = null;
            try {
                value = body.call();
            } catch (Exception e) {
                error = e;
            } finally {
                Commands.end(request);
            }
            boolean gaveUp;
            synchronized (this) {
                finished = true;
                gaveUp = abandoned;
                result = value;
                failure = error;
                thread = null;
            }
            Thread.interrupted();  // an interrupt meant for this call must not reach the next
            done.countDown();
            if (gaveUp) late.late(request, value, error);
        }

        /** Give up on it unless it finished: its commands from now on are the library's own. */
        synchronized boolean abandon(Driver driver) {
            if (finished) return false;
            abandoned = true;
            late = driver;
            Commands.end(request);
            if (thread != null) thread.interrupt();
            return true;
        }
    }

    /**
     * Runs {@code task} on the lock thread and waits for it: true once it finished, false
     * once it overran {@code boundMs} of counted time (it is then given up).
     */
    private boolean bounded(Task<?> task, long boundMs) {
        lockThread.execute(task);
        double counted = 0;
        long last = System.nanoTime();
        for (long slices = 0; slices < 100 * boundMs / SLICE_MS + 1000; slices++) {  // bounded: stalls are not counted
            try {
                if (task.done.await(SLICE_MS, TimeUnit.MILLISECONDS)) return true;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            long now = System.nanoTime();
            double step = (now - last) / 1e6;
            last = now;
            if (Commands.waiting()) continue;  // the harness's time, not the library's
            counted += step < STALL_MS ? step : SLICE_MS;
            if (counted >= boundMs) break;
        }
        return !task.abandon(this);
    }

    /** A call the kit gave up on came back: a grant nobody asked for any more is released at once. */
    private void late(Request request, Object value, Exception error) {
        String what = request == null ? "building the lock" : request.toString();
        if (request != null && request.kind().equals("acquire") && value instanceof Outcome.Granted g) {
            Request release = new Request(-1, "release", request.token(), null, request.permits(), false);
            String released;
            try {
                released = String.valueOf(lock.release(release, g.lease()));
            } catch (Exception e) {
                released = "it failed: " + oneLine(e);
            }
            Wire.log(what + " was granted after the kit answered it: released at once (" + released + ")");
        } else {
            Wire.log(what + " came back after the kit answered it: " + (error != null ? oneLine(error) : value));
        }
    }
}
