package lockchaos;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import io.lockchaos.kit.Description;
import io.lockchaos.kit.Driver;
import io.lockchaos.kit.Hello;
import io.lockchaos.kit.Lock;
import io.lockchaos.kit.NotSent;
import io.lockchaos.kit.Outcome;
import io.lockchaos.kit.Request;
import io.lockchaos.kit.redisson.Redissons;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;

/**
 * Redisson's locks on lockchaos's Java driver kit (chaos/drivers/kits/java: the protocol, and
 * {@code Redissons.client}: Redisson configured by the protocol's rules, with the Netty hook
 * that announces its commands and reports its watchdog's renewals).
 *
 *   java lockchaos.RedissonDriver watchdog   RLock.tryLock(): no lease time, so the watchdog renews
 *                                            the lock every lockWatchdogTimeout/3 (= TTL/3)
 *   java lockchaos.RedissonDriver lease      RLock.tryLock(0, TTL, ms): expires after the TTL
 *   java lockchaos.RedissonDriver semaphore  RSemaphore: tryAcquire(k), release(k): no lease
 *   java lockchaos.RedissonDriver permit-expirable-semaphore
 *                                            RPermitExpirableSemaphore: tryAcquire(0, TTL, ms)
 *                                            → a permit id, tryRelease(id)
 *   java lockchaos.RedissonDriver rwlock     RReadWriteLock: readLock()/writeLock() tryLock(0, TTL, ms)
 *   java lockchaos.RedissonDriver fair       RFairLock: tryLock(wait, TTL, ms), waiting in its queue
 *
 * Redisson names a lock's holder by its client's UUID and the thread that took it: the kit runs
 * every request on one thread, so each release comes from the thread that acquired.
 */
public final class RedissonDriver {
    private RedissonDriver() { }

    public static void main(String[] args) {
        String variant = args.length > 0 ? args[0] : "";
        Description description = description(variant);
        if (description == null) {
            System.err.println("usage: RedissonDriver watchdog|lease|semaphore|permit-expirable-semaphore|rwlock|fair");
            System.exit(2);
        }
        Driver.serve(description, hello -> {
            RedissonClient redisson = Redissons.client(hello);
            switch (variant) {
                case "semaphore": return RedissonSemaphores.semaphore(redisson, hello);
                case "permit-expirable-semaphore": return RedissonSemaphores.permitExpirable(redisson, hello);
                case "rwlock": return readWrite(redisson, hello);
                case "fair": return fair(redisson, hello);
                default: return rlock(redisson.getLock(hello.lockName()), hello, variant.equals("watchdog"));
            }
        });
    }

    /** What a variant is and grants (as chaos/drivers/catalog.py declares it); null: no such variant. */
    static Description description(String variant) {
        Description d = Description.of(variant.equals("watchdog") ? "redisson" : "redisson-" + variant, "redisson 3.45.1");
        switch (variant) {
            case "watchdog": return d.renews();
            case "lease": return d;
            case "semaphore": return d.grants(3, "shared");
            case "permit-expirable-semaphore": return d.grants(3, "shared").maxPermits(1);
            case "rwlock": return d.grants(null, "exclusive", "shared").maxPermits(1);
            case "fair": return d.fair();
            default: return null;
        }
    }

    /** unlock(): released, or refused when Redisson says the lock is not ours ("not locked by current thread"). */
    static Outcome unlock(RLock lock) {
        try {
            lock.unlock();
            return Outcome.released();
        } catch (IllegalMonitorStateException e) {
            return Outcome.refused(e.getMessage());
        }
    }

    /** RLock: tryLock() with the watchdog (its renewals reported by the kit's hook), or tryLock(0, TTL, ms). */
    static Lock<RLock> rlock(RLock lock, Hello hello, boolean watchdog) {
        int ttl = hello.ttlMs();
        return new Lock<>() {
            public Outcome acquire(Request request) throws Exception {
                boolean got = watchdog ? lock.tryLock() : lock.tryLock(0, ttl, MILLISECONDS);
                return got ? Outcome.granted(ttl).withLease(lock) : Outcome.refused();
            }

            public Outcome release(Request request, RLock held) {
                return unlock(held);
            }
        };
    }

    /**
     * RFairLock: tryLock(wait, TTL, ms). A fair lock queues its waiters, so an attempt waits in
     * the queue (a third of the harness's bound on one request) instead of leaving it at once, as
     * tryLock(0, …) would after its one try: a waiter that left the queue at every failure would
     * be granted in no order at all. The lease runs from the script that granted it, the last
     * command the request sent, after its wait.
     */
    static Lock<RLock> fair(RedissonClient redisson, Hello hello) {
        RLock lock = redisson.getFairLock(hello.lockName());
        int ttl = hello.ttlMs();
        long waitMs = hello.requestBoundMs() / 3;
        return new Lock<>() {
            public Outcome acquire(Request request) throws Exception {
                if (!lock.tryLock(waitMs, ttl, MILLISECONDS)) return Outcome.refused();
                return Outcome.granted(request.validityFromLastCommand(ttl)).withLease(lock);
            }

            public Outcome release(Request request, RLock held) {
                return unlock(held);
            }
        };
    }

    /** RReadWriteLock: readLock() or writeLock(), tryLock(0, TTL, ms) (no watchdog: see the catalog); unlock(). */
    static Lock<RLock> readWrite(RedissonClient redisson, Hello hello) {
        RReadWriteLock rw = redisson.getReadWriteLock(hello.lockName());
        int ttl = hello.ttlMs();
        return new Lock<>() {
            public Outcome acquire(Request request) throws Exception {
                if (request.permits() != 1) return Outcome.notSent("a read-write lock grants one hold, not " + request.permits());
                RLock lock = "shared".equals(request.mode()) ? rw.readLock() : rw.writeLock();
                return lock.tryLock(0, ttl, MILLISECONDS) ? Outcome.granted(ttl).withLease(lock) : Outcome.refused();
            }

            public Outcome release(Request request, RLock held) {
                return unlock(held);
            }
        };
    }
}

/** Redisson's semaphores: their permits are set once, as an application sets them before its first acquire. */
final class RedissonSemaphores {
    /** An RSemaphore's permits carry no lease: valid until released, said as a day (longer than any run). */
    static final double NO_LEASE_MS = 86_400_000.0;

    private RedissonSemaphores() { }

    /**
     * trySetPermits(capacity) (the first client's call sets them; the others' return false).
     * Tried while the lock is built, which also opens the connection and warms the JVM's path
     * to Redis; a failure there does not keep the client from starting: until one call has
     * answered, each acquire tries it first, and one that failed took no permit (not sent).
     */
    static final class Permits {
        interface TrySet { boolean run(int permits) throws Exception; }

        private final TrySet trySet;
        private final int capacity;
        private boolean set;

        Permits(Hello hello, TrySet trySet) {
            if (hello.capacity() == null) throw new IllegalArgumentException("a semaphore needs a number of permits (--capacity)");
            this.capacity = hello.capacity();
            this.trySet = trySet;
            try {
                ensure();
            } catch (NotSent e) {
                Driver.log("trySetPermits while starting failed, tried again at the first acquire: " + e.getMessage());
            }
        }

        void ensure() throws NotSent {
            if (set) return;
            try {
                trySet.run(capacity);
            } catch (Exception e) {
                throw new NotSent("trySetPermits: " + e.getMessage(), e);
            }
            set = true;
        }
    }

    /** RSemaphore: tryAcquire(k), release(k). A holder that dies never gives its permits back; release(k) adds k whoever calls it. */
    static Lock<Integer> semaphore(RedissonClient redisson, Hello hello) {
        RSemaphore semaphore = redisson.getSemaphore(hello.lockName());
        Permits permits = new Permits(hello, semaphore::trySetPermits);
        return new Lock<>() {
            public Outcome acquire(Request request) throws Exception {
                permits.ensure();
                if (!semaphore.tryAcquire(request.permits())) return Outcome.refused();
                return Outcome.granted(NO_LEASE_MS).withLease(request.permits());
            }

            public Outcome release(Request request, Integer held) {
                semaphore.release(held);
                return Outcome.released();
            }
        };
    }

    /** RPermitExpirableSemaphore: tryAcquire(0, TTL, ms) → a permit id (one permit per acquire), tryRelease(id): false once it expired. */
    static Lock<String> permitExpirable(RedissonClient redisson, Hello hello) {
        RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(hello.lockName());
        Permits permits = new Permits(hello, semaphore::trySetPermits);
        int ttl = hello.ttlMs();
        return new Lock<>() {
            public Outcome acquire(Request request) throws Exception {
                if (request.permits() != 1) return Outcome.notSent("one permit per acquire, not " + request.permits());
                permits.ensure();
                String id = semaphore.tryAcquire(0, ttl, MILLISECONDS);
                return id == null ? Outcome.refused() : Outcome.granted(ttl).withLease(id);
            }

            public Outcome release(Request request, String id) {
                return semaphore.tryRelease(id) ? Outcome.released() : Outcome.refused();
            }
        };
    }
}
