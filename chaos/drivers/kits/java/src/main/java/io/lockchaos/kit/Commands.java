package io.lockchaos.kit;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.google.gson.JsonObject;

/**
 * The command hook's decisions (the pause-points capability, docs/driver-protocol.md "pause
 * points"), for the client hooks of the kit (Jedis, Lettuce, Redisson) and for a user's own.
 *
 * <p>A command is the request's when the request issued it: for a hook that runs on the
 * thread that sends ({@link #sending}: Jedis, Lettuce), when that thread is the kit's lock
 * thread inside a request; for a hook on an I/O thread ({@link #holding}: Redisson's Netty
 * pipeline), when it is written while a request runs. The request's commands are announced
 * ({@code before}) when the harness asked, and go out on its {@code go} — each its own, in
 * order. Every other command the library sends on its own (a watchdog's renewal, a command of
 * a request already answered) is reported with an unasked {@code sent} line as it goes out and
 * never waits. A connection's set-up and housekeeping ({@link #HOUSEKEEPING}) is neither.
 */
public final class Commands {
    /**
     * A connection's own set-up and upkeep, never the lock's: not announced, not reported
     * (Sentinel's queries go to Sentinels, not to the lock's nodes).
     */
    public static final Set<String> HOUSEKEEPING =
        Set.of("HELLO", "AUTH", "SELECT", "CLIENT", "PING", "READONLY", "INFO", "QUIT", "SENTINEL");

    /** How long one command may wait for its go: the harness answers in milliseconds. */
    private static final long GO_BOUND_S = 120;

    private static volatile Request current;
    private static volatile Thread lockThread;
    private static volatile boolean hooked;
    private static final Deque<Gate> GATES = new ArrayDeque<>();
    private static final AtomicInteger OPEN = new AtomicInteger();

    private Commands() { }

    /** A command waiting for its go; {@code send} runs then (null: a thread waits instead). */
    private static final class Gate {
        final long id;
        final Runnable send;
        final CountDownLatch go = new CountDownLatch(1);

        Gate(long id, Runnable send) {
            this.id = id;
            this.send = send;
        }
    }

    /** A client helper installed its hook: the driver has the pause-points capability. */
    public static void hooked() {
        hooked = true;
    }

    static boolean isHooked() {
        return hooked;
    }

    static void lockThread(Thread thread) {
        lockThread = thread;
    }

    static void begin(Request request) {
        synchronized (GATES) {
            current = request;
        }
    }

    /**
     * The request's method returned (or the kit gave it up): its later commands are the
     * library's own. A command of it still held for a go the harness will not send now (it
     * ignores a {@code before} of a request it has the answer to) goes out at once.
     */
    static void end(Request request) {
        List<Gate> stale = new ArrayList<>();
        synchronized (GATES) {
            if (current == request) current = null;
            if (request != null) {
                GATES.removeIf(gate -> gate.id == request.id() && stale.add(gate));
                OPEN.addAndGet(-stale.size());
            }
        }
        for (Gate gate : stale) {
            gate.go.countDown();
            if (gate.send != null) gate.send.run();
        }
    }

    /** Whether a command waits for the harness's go now (that time is the harness's). */
    static boolean waiting() {
        return OPEN.get() > 0;
    }

    /** The protocol's name of a command: its first word, upper case. */
    public static String name(String command) {
        String s = command.strip();
        int end = 0;
        while (end < s.length() && !Character.isWhitespace(s.charAt(end))) end++;
        return s.substring(0, end).toUpperCase(Locale.ROOT);
    }

    /**
     * A hook on the thread about to send {@code command} (Jedis's connection, Lettuce's
     * command listener): returns once it may go — at once, or after the harness's go when it
     * is an announced command of the request this thread is running.
     */
    public static void sending(String command) {
        String name = name(command);
        if (HOUSEKEEPING.contains(name)) return;
        Request request = current;
        if (request == null || Thread.currentThread() != lockThread) {
            sent(name);
            return;
        }
        request.sent();
        if (!request.announcing()) return;
        Gate gate = announce(request, List.of(name), null);
        if (gate == null) {  // answered meanwhile
            sent(name);
            return;
        }
        try {
            if (!gate.go.await(GO_BOUND_S, TimeUnit.SECONDS)) {
                throw new IllegalStateException("no go for " + name + " within " + GO_BOUND_S + " s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted before sending " + name + " (the request was given up)");
        } finally {
            abandon(gate);
        }
        request.sent();
    }

    /**
     * A hook on an I/O thread that must not wait (Redisson's Netty pipeline), about to write
     * {@code commands} in one go: false — write them now yourself; true — the kit holds them,
     * and runs {@code send} (from the thread that reads the harness's lines: hand the write to
     * the I/O thread) once the harness said go to each.
     */
    public static boolean holding(List<String> commands, Runnable send) {
        List<String> names = new ArrayList<>();
        for (String c : commands) {
            String name = name(c);
            if (!HOUSEKEEPING.contains(name)) names.add(name);
        }
        if (names.isEmpty()) return false;
        Request request = current;
        if (request == null) {
            names.forEach(Commands::sent);
            return false;
        }
        request.sent();
        if (!request.announcing()) return false;
        Gate gate = announce(request, names, () -> {
            request.sent();
            send.run();
        });
        if (gate == null) names.forEach(Commands::sent);  // answered meanwhile
        return gate != null;
    }

    /**
     * Writes a {@code before} per name, in order; the last one's go releases the send. Null
     * when the request is no longer the current one (its method returned meanwhile).
     */
    private static Gate announce(Request request, List<String> names, Runnable send) {
        Gate last = null;
        synchronized (GATES) {
            if (current != request) return null;
            for (int i = 0; i < names.size(); i++) {
                last = new Gate(request.id(), i == names.size() - 1 ? send : null);
                GATES.addLast(last);
                OPEN.incrementAndGet();
                JsonObject m = Wire.message("before");
                m.addProperty("id", request.id());
                m.addProperty("command", names.get(i));
                Wire.write(m);
            }
        }
        return last;
    }

    private static void abandon(Gate gate) {
        synchronized (GATES) {
            if (GATES.remove(gate)) OPEN.decrementAndGet();
        }
    }

    /** The harness's go for request {@code id}: the oldest waiting command goes out. */
    static void go(long id) {
        Gate gate;
        synchronized (GATES) {
            gate = GATES.pollFirst();
            if (gate != null) OPEN.decrementAndGet();
        }
        if (gate == null) {
            Wire.log("go #" + id + " came with no command waiting for it: ignored");
            return;
        }
        if (gate.id != id) Wire.log("go #" + id + " came while request #" + gate.id + "'s command waited: sent anyway");
        gate.go.countDown();
        if (gate.send != null) gate.send.run();
    }

    /** A command the library sent on its own, outside any request: an unasked sent line. */
    public static void sent(String command) {
        JsonObject m = Wire.message("sent");
        m.addProperty("command", name(command));
        Wire.write(m);
    }
}
