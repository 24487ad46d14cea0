package io.lockchaos.kit;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Consumer;

import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

/**
 * A lock driver (docs/driver-protocol.md): {@code Driver.serve(description, hello -> lock)}
 * runs the protocol on stdin and stdout until stdin closes, and the lock only locks.
 *
 * <p>The thread that calls {@code serve} is the lock thread: it runs every method of the lock,
 * one at a time, in the harness's order, and writes each answer. While it waits for a request
 * it reads stdin itself, so a request costs no hand-over between threads. While a method runs,
 * a pump thread reads instead — from the start when the request's commands are announced
 * (their {@code go} lines come then), else once the method has run for a wait slice — so that
 * a {@code go}, a line out of order, and the end of stdin are seen at once; the pump hands the
 * next request to the lock thread and, once that one waits for it, stops. Whoever reads
 * answers {@code describe} and anything out of order itself, and halts the JVM the moment
 * stdin closes (the client stopped). A watch thread bounds the methods: one that has not
 * returned after 0.8 × max(3 s, 4 × TTL) of running time — which, like the harness's, counts
 * neither a stretch the process was stopped (SIGSTOP) nor the time a command waited for its
 * go — is answered {@code definite: false} and its thread interrupted, and a grant that still
 * comes back later is released at once (nobody asked for it any more).
 */
public final class Driver {
    /** A wait slice; a slice this much longer means the process did not run (the harness's rule). */
    private static final long SLICE_MS = 50;
    private static final long STALL_MS = 250;
    private static final double BOUND_SHARE = 0.8;
    private static final long HELLO_BOUND_MS = 30_000;  // the harness's bound on hello
    private static final SecureRandom RANDOM = new SecureRandom();
    /** The live leases: token → the library's object for it. */
    private static final Map<String, Lease> LEASES = new ConcurrentHashMap<>();

    private final Description description;
    private final Lock.Factory factory;
    private final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    /** The thread that called serve: it runs every method of the lock, and reads stdin while the pump does not. */
    private Thread lockThread;
    /** Requests the pump read, for the lock thread. */
    private final BlockingQueue<Task> handed = new LinkedBlockingQueue<>();
    /** Guarded by {@code this}: the pump owns stdin; the lock thread runs a method. */
    private boolean pumping;
    private boolean busy;
    private volatile Hello hello;
    /** The lock; its leases are the objects its own acquires returned, so they fit its methods. */
    private volatile Lock<Object> lock;
    /** The hello or request being served (null: none); guarded by {@code this} for the watch. */
    private Task open;
    private volatile long lastId;  // written by whoever reads stdin: one thread at a time
    private volatile boolean greeted;

    /** A lease the kit holds for the harness; {@code closed}: the answer for it once the library closed it. */
    private record Lease(Object object, Outcome closed) { }

    private Driver(Description description, Lock.Factory factory) {
        this.description = description;
        this.factory = factory;
    }

    /**
     * Runs the driver until stdin closes (then the JVM halts). Call it first thing in
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

    /** The lock thread: reads stdin while the pump does not, else runs the requests the pump hands it. */
    private void run() {
        lockThread = Thread.currentThread();
        Commands.lockThread(lockThread);
        daemon(this::watch, "lockchaos-bound");
        daemon(this::pump, "lockchaos-stdin");
        for (long n = 0; n < Long.MAX_VALUE; n++) {  // ends when stdin closes (the reader halts the JVM)
            Task next;
            boolean reading;
            synchronized (this) {  // a request the pump read comes first; else read, unless the pump does
                next = handed.poll();
                reading = next == null && !pumping;
            }
            if (reading) {
                readLine();
                continue;
            }
            if (next == null) {
                try {
                    next = handed.take();
                } catch (InterruptedException e) {
                    continue;  // an interrupt meant for a method given up on
                }
            }
            runHere(next);
        }
    }

    /** Runs {@code task} on the lock thread (busy meanwhile: the pump keeps reading). */
    private void runHere(Task task) {
        synchronized (this) {
            busy = true;
        }
        try {
            task.run();
        } finally {
            synchronized (this) {
                busy = false;
            }
        }
    }

    private static void daemon(Runnable body, String name) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
    }

    /** The pump: reads stdin while the lock thread runs a method (see the class's comment). */
    private void pump() {
        for (long n = 0; n < Long.MAX_VALUE; n++) {  // ends when stdin closes
            synchronized (this) {
                while (!pumping) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
            readLine();
        }
    }

    /** The pump reads from now on (called while the lock thread is not reading). */
    private synchronized void pumpOn() {
        if (!pumping) {
            pumping = true;
            notifyAll();
        }
    }

    /**
     * Reads one line and acts on it; at the end of stdin ends the JVM at once: the client
     * stopped, and no library thread (nor a shutdown hook of one) may keep it alive.
     */
    private void readLine() {
        String line;
        try {
            line = in.readLine();
        } catch (IOException e) {
            line = null;  // stdin broke: the same as closed
        }
        if (line == null) Runtime.getRuntime().halt(0);
        if (!line.isBlank()) take(line);
    }

    /** One line: answered here (describe, go, anything out of order) or handed to the lock thread. */
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
        String type = string(m, "type");
        Long id = id(m);
        try {
            switch (type == null ? "" : type) {
                case "go" -> {
                    if (id == null) Wire.log("a go without an id: " + cut(line));
                    else Commands.go(id);
                }
                case "describe" -> Wire.write(description.described());
                case "hello" -> hello(m);
                case "acquire", "release", "extend" -> {
                    String why = id == null ? "without an id"
                        : !greeted ? "before hello"
                        : id <= lastId ? "whose id does not grow (the last was " + lastId + ")"
                        : isOpen() ? "while another request is not answered: one request at a time"
                        : null;
                    if (why != null) {
                        refuse(m, type + " " + why + ": " + cut(line));
                    } else {
                        lastId = id;
                        request(m, type, id);
                    }
                }
                default -> refuse(m, "an unknown request type '" + type + "': " + cut(line));
            }
        } catch (RuntimeException e) {  // a field of the wrong type
            refuse(m, "a line that is not the protocol (" + oneLine(e) + "): " + cut(line));
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

    private String newToken() {
        byte[] b = new byte[8];
        RANDOM.nextBytes(b);
        return hello.clientId() + ":" + HexFormat.of().formatHex(b);
    }

    // -- hello and the three requests -----------------------------------------------------------

    private void hello(JsonObject m) {
        if (greeted) {
            Wire.log("a second hello: ignored");
            return;
        }
        greeted = true;
        Hello parsed;
        try {
            parsed = new Hello(m);
        } catch (RuntimeException e) {
            Wire.write(notReady("a hello that is not the protocol: " + oneLine(e)));
            return;
        }
        Object[] built = new Object[1];
        start(new Task(null, (long) (HELLO_BOUND_MS * BOUND_SHARE), () -> {
            built[0] = factory.create(parsed);
            return null;
        }, failure -> {
            if (failure == null) {  // ready: requests may come once the answer is out
                @SuppressWarnings("unchecked")
                Lock<Object> made = (Lock<Object>) built[0];
                hello = parsed;
                lock = made;
            }
            close();
            Wire.write(failure == null ? description.ready(Commands.isHooked())
                : notReady(((Outcome.Failed) failure).message()));
        }));
    }

    private static JsonObject notReady(String why) {
        JsonObject reply = Wire.message("hello");
        reply.addProperty("ok", false);
        reply.addProperty("message", why);
        return reply;
    }

    /** A request whose order the reader checked: answered here when the kit can tell, else run. */
    private void request(JsonObject m, String type, long id) {
        Lock<Object> lock = this.lock;
        String token = type.equals("acquire") ? null : string(m, "token");
        Lease lease = token == null ? null : LEASES.get(token);
        JsonElement v = m.get("announce");
        boolean announce = v != null && v.isJsonPrimitive() && v.getAsBoolean();
        if (lock == null) {
            refuse(m, type + " #" + id + " before a hello that succeeded");
        } else if (type.equals("acquire")) {
            String permits = string(m, "permits");
            Request request = new Request(id, type, newToken(), string(m, "mode"),
                permits == null ? 1 : Integer.parseInt(permits), announce);
            run(request, () -> lock.acquire(request), outcome -> {
                if (outcome instanceof Outcome.Granted g) LEASES.put(request.token(), new Lease(g.lease(), null));
            });
        } else if (token == null) {
            refuse(m, type + " #" + id + " without a token");
        } else if (type.equals("extend") && !description.canExtend()) {
            refuse(m, "extend #" + id + ": this driver did not declare extend");
        } else if (lease == null) {
            refuse(m, "not sent: no lease " + token + " was granted here (" + type + " #" + id + ")");
        } else if (lease.closed() != null) {  // the library closed it: the kit answers
            if (type.equals("release")) LEASES.remove(token);
            write(id, lease.closed(), token, type);
        } else if (type.equals("release")) {
            Request request = new Request(id, type, token, null, 1, announce);
            run(request, () -> lock.release(request, lease.object()), outcome -> LEASES.remove(token));
        } else {
            Request request = new Request(id, type, token, null, 1, announce);
            run(request, () -> lock.extend(request, lease.object()), outcome -> {
                if (outcome instanceof Outcome.Granted g && g.lease() != null) {
                    LEASES.put(token, new Lease(g.lease(), null));
                } else if (outcome instanceof Outcome.Revoked) {
                    LEASES.remove(token);  // the library gave it up: nothing will be asked of it again
                } else if (outcome instanceof Outcome.Invalidated) {
                    LEASES.put(token, new Lease(null, Outcome.notSent(
                        "not sent: the library invalidated this lease's lock object (extend #" + id + ")")));
                }
            });
        }
    }

    /** Runs the lock's method for {@code request}; {@code keep} updates the token map before the answer goes out. */
    private void run(Request request, Callable<Outcome> method, Consumer<Outcome> keep) {
        long boundMs = (long) (hello.requestBoundMs() * BOUND_SHARE);
        start(new Task(request, boundMs, method, outcome -> {
            if (outcome == null) outcome = Outcome.unknown("the lock's " + request.kind() + " returned no outcome");
            keep.accept(outcome);
            close();
            write(request.id(), outcome, request.token(), request.kind());
        }));
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

    private static void write(long id, Outcome outcome, String token, String kind) {
        JsonObject m = answerOf(outcome, token, kind);
        m.addProperty("id", id);
        Wire.write(m);
    }

    // -- bounded waits --------------------------------------------------------------------------

    /**
     * One call of the lock (or of its factory) on the lock thread, answered once: by the lock
     * thread when it returns, or by the watch when it overran its bound (then given up).
     */
    private final class Task implements Runnable {
        final Request request;  // null: building the lock
        final long boundMs;
        final Callable<Outcome> body;
        final Consumer<Outcome> answer;
        boolean started;
        boolean finished;
        boolean abandoned;
        Thread thread;

        Task(Request request, long boundMs, Callable<Outcome> body, Consumer<Outcome> answer) {
            this.request = request;
            this.boundMs = boundMs;
            this.body = body;
            this.answer = answer;
        }

        @Override
        public void run() {
            synchronized (this) {
                if (abandoned) return;
                started = true;
                thread = Thread.currentThread();
            }
            Commands.begin(request);
            Outcome outcome;
            try {
                outcome = body.call();
            } catch (Exception e) {
                outcome = failed(e);
            } finally {
                Commands.end(request);
            }
            boolean gaveUp;
            synchronized (this) {
                finished = true;
                gaveUp = abandoned;
                thread = null;
            }
            Thread.interrupted();  // an interrupt meant for this call must not reach the next
            if (gaveUp) late(request, outcome);
            else answer.accept(outcome);
        }

        /** Give up on it unless it finished: true if given up (then the caller answers it). */
        synchronized boolean abandon() {
            if (finished) return false;
            abandoned = true;
            Commands.end(request);  // its commands from now on are the library's own
            if (thread != null) thread.interrupt();
            return true;
        }

        /** The answer to a call given up at its bound. */
        Outcome overran() {
            return started
                ? Outcome.unknown("the library did not return within " + boundMs + " ms (the kit's bound)")
                : Outcome.notSent("not sent: the library still runs a request the kit gave up on");
        }
    }

    private synchronized boolean isOpen() {
        return open != null;
    }

    /**
     * Runs {@code task} on the lock thread: at once when it read the request, else handed to
     * it by the pump, which stops reading when the lock thread is between methods — unless the
     * request's commands are announced, whose go lines the pump reads.
     */
    private void start(Task task) {
        boolean announcing = task.request != null && task.request.announcing();
        synchronized (this) {
            open = task;
            notifyAll();
        }
        if (Thread.currentThread() == lockThread) {
            if (announcing) pumpOn();
            runHere(task);
            return;
        }
        synchronized (this) {  // a lock thread between methods takes this one next, then reads itself
            handed.add(task);
            if (!busy && !announcing) pumping = false;
        }
    }

    /** The open request is answered (called right before its answer goes out): the next may come. */
    private synchronized void close() {
        open = null;
    }

    /** The watch: bounds each open call in running time (see the class's comment). */
    private void watch() {
        for (long calls = 0; calls < Long.MAX_VALUE; calls++) {  // ends with the process
            Task task;
            synchronized (this) {
                while (open == null) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                task = open;
            }
            double counted = 0;
            long last = System.nanoTime();
            while (true) {
                try {
                    Thread.sleep(SLICE_MS);
                } catch (InterruptedException e) {
                    return;
                }
                synchronized (this) {
                    if (open != task) break;  // answered
                    pumpOn();  // a method still running: read stdin meanwhile (its end, a line out of order)
                }
                long now = System.nanoTime();
                double step = (now - last) / 1e6;
                last = now;
                if (Commands.waiting()) continue;  // the harness's time, not the library's
                counted += step < STALL_MS ? step : SLICE_MS;
                if (counted >= task.boundMs) {
                    if (task.abandon()) task.answer.accept(task.overran());
                    break;
                }
            }
        }
    }

    /** A call the kit gave up on came back: a grant nobody asked for any more is released at once. */
    private void late(Request request, Outcome outcome) {
        String what = request == null ? "building the lock" : request.toString();
        if (request != null && request.kind().equals("acquire") && outcome instanceof Outcome.Granted g) {
            Request release = new Request(-1, "release", request.token(), null, request.permits(), false);
            String released;
            try {
                released = String.valueOf(lock.release(release, g.lease()));
            } catch (Exception e) {
                released = "it failed: " + oneLine(e);
            }
            Wire.log(what + " was granted after the kit answered it: released at once (" + released + ")");
        } else {
            Wire.log(what + " came back after the kit answered it: " + outcome);
        }
    }
}
