package conformance;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import driver.LockDriver;
import io.lockchaos.kit.Description;
import io.lockchaos.kit.Driver;
import io.lockchaos.kit.Hello;
import io.lockchaos.kit.Lock;
import io.lockchaos.kit.Outcome;
import io.lockchaos.kit.Request;
import io.lockchaos.kit.jedis.JedisNode;

/**
 * The Java kit's conformance driver (tests/drivers/test_kit_conformance.py): the Jedis
 * skeleton's lock, misbehaving on demand as {@code LOCKCHAOS_CONFORMANCE} says
 * (chaos/drivers/kits/README.md):
 * <ul>
 * <li>{@code retry-forever}: its acquire retries {@code SET NX} every 10 ms until it wins,
 *     with no bound of its own — and, as such libraries do, it sleeps through interrupts (the
 *     kit's bound must answer it in time, and release the grant that comes late);</li>
 * <li>{@code late-command}: 300 ms after each acquire returned, the library sends
 *     {@code GET} on its own connection from a timer the acquire started (a callback firing
 *     after the answer went out);</li>
 * <li>{@code slow-start}: building the lock takes 2 s (a cold start, within the hello bound).</li>
 * </ul>
 */
public final class ConformanceDriver {
    static final String BEHAVIOUR = System.getenv().getOrDefault("LOCKCHAOS_CONFORMANCE", "");
    static final long RETRY_MS = 10;
    static final long LATE_MS = 300;
    static final long SLOW_START_MS = 2000;

    private ConformanceDriver() { }

    public static void main(String[] args) {
        String name = "java-conformance-" + (BEHAVIOUR.isEmpty() ? "plain" : BEHAVIOUR);
        Driver.serve(Description.of(name, "jedis 8.0.2").extend(), ConformanceDriver::lock);
    }

    static Lock<Void> lock(Hello hello) throws InterruptedException {
        if (BEHAVIOUR.equals("slow-start")) Thread.sleep(SLOW_START_MS);
        Lock<Void> lock = LockDriver.lock(hello);
        JedisNode library = JedisNode.master(hello);  // the library's own connection for its late command
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "library-timer");
            t.setDaemon(true);
            return t;
        });
        return new Lock<>() {
            @Override
            public Outcome acquire(Request request) throws Exception {
                Outcome outcome = lock.acquire(request);
                while (BEHAVIOUR.equals("retry-forever") && !(outcome instanceof Outcome.Granted)) {
                    sleepThroughInterrupts(RETRY_MS);
                    outcome = lock.acquire(request);
                }
                if (BEHAVIOUR.equals("late-command")) {
                    timer.schedule(() -> library.call(jedis -> jedis.get(hello.lockName())), LATE_MS, TimeUnit.MILLISECONDS);
                }
                return outcome;
            }

            @Override
            public Outcome release(Request request, Void lease) throws Exception {
                return lock.release(request, lease);
            }

            @Override
            public Outcome extend(Request request, Void lease) throws Exception {
                return lock.extend(request, lease);
            }
        };
    }

    private static void sleepThroughInterrupts(long ms) {
        long end = System.nanoTime() + ms * 1_000_000;
        for (long left; (left = end - System.nanoTime()) > 0; ) {
            try {
                TimeUnit.NANOSECONDS.sleep(left);
            } catch (InterruptedException e) {
                // a library that retries forever does not stop for an interrupt
            }
        }
    }
}
