package lockchaos;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.bootstrap.Bootstrap;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.client.NettyHook;
import org.redisson.client.RedisException;
import org.redisson.client.protocol.CommandData;
import org.redisson.client.protocol.CommandsData;
import org.redisson.config.Config;
import org.redisson.config.ReadMode;
import org.redisson.config.SentinelServersConfig;
import org.redisson.config.SingleServerConfig;
import org.redisson.misc.RedisURI;

/**
 * Redisson's RLock behind the lockchaos driver protocol.
 *
 *   java lockchaos.RedissonDriver watchdog   tryLock(): no lease time, so the watchdog renews
 *                                            the lock every lockWatchdogTimeout/3 (= TTL/3)
 *   java lockchaos.RedissonDriver lease      tryLock(0, TTL, ms): expires after the TTL
 *   java lockchaos.RedissonDriver semaphore  RSemaphore: tryAcquire(k), release(k): no lease
 *   java lockchaos.RedissonDriver permit-expirable-semaphore
 *                                            RPermitExpirableSemaphore: tryAcquire(0, TTL, ms)
 *                                            → a permit id, tryRelease(id)
 *   java lockchaos.RedissonDriver rwlock     RReadWriteLock: readLock()/writeLock() tryLock(0, TTL, ms)
 *   java lockchaos.RedissonDriver fair       RFairLock: tryLock(wait, TTL, ms), waiting in its queue
 *
 * Redisson is configured as an application would, with the run's TTL as the watchdog timeout
 * and no command retries (a retried lock command whose first reply was lost would lie).
 * A Netty hook on every connection sees the commands Redisson writes: it reports each watchdog
 * renewal as it goes out ("sent") and how it ended ("renewed", with the time it was written:
 * validity 0 when it found the lease gone, after which Redisson renews no more), and announces
 * the operation's own commands when the harness asks (the pause-points capability).
 */
public final class RedissonDriver {
    /** Redisson 3.45.1's batched renewal script (org.redisson.renewal.LockTask). */
    static final String RENEW_SCRIPT = "local result = {} for i = 1, #KEYS, 1 do if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); else table.insert(result, 0); end; end; return result;";
    static final String RENEW_SHA = sha1(RENEW_SCRIPT);

    static final boolean DEBUG = System.getenv("LOCKCHAOS_DRIVER_DEBUG") != null;
    static volatile String heldToken;  // the token of the lease this client holds, if any
    static volatile Thread opThread;   // the thread running the current request
    static volatile long lastScriptSent; // when the current request's last script went out (System.nanoTime)

    static String sha1(String s) {
        try {
            StringBuilder b = new StringBuilder();
            for (byte x : MessageDigest.getInstance("SHA-1").digest(s.getBytes(StandardCharsets.UTF_8))) b.append(String.format("%02x", x));
            return b.toString();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** A connection's own set-up and keep-alive: never the lock's commands, never announced. */
    static final java.util.Set<String> SET_UP = java.util.Set.of("HELLO", "AUTH", "SELECT", "CLIENT", "PING", "READONLY");

    /**
     * Redisson's pub/sub bookkeeping after a wait (RFairLock's, RLock's tryLock with a wait
     * time): it unsubscribes once the request that subscribed has returned, often while the next
     * one runs, so it is no request's command (a point aimed there waited in vain, in 3 audits
     * of 10): reported as sent on its own, never announced.
     */
    static final java.util.Set<String> UNSUBSCRIBES = java.util.Set.of("UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE");

    static boolean isRenewal(CommandData<?, ?> c) {
        Object[] p = c.getParams();
        if (p == null || p.length == 0) return false;
        String first = String.valueOf(p[0]);
        return first.equals(RENEW_SCRIPT) || first.equalsIgnoreCase(RENEW_SHA);
    }

    /** Sees every command Redisson writes on a connection. */
    static final class Watcher extends ChannelOutboundHandlerAdapter {
        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) throws Exception {
            List<CommandData<?, ?>> commands = new ArrayList<>();
            if (msg instanceof CommandData) commands.add((CommandData<?, ?>) msg);
            else if (msg instanceof CommandsData) commands.addAll(((CommandsData) msg).getCommands());
            for (CommandData<?, ?> c : commands) {
                if (DEBUG) System.err.println(System.nanoTime() / 1000000 + " " + c.getCommand().getName() + " " + java.util.Arrays.toString(c.getParams()) + " renewal=" + isRenewal(c));
                if (isRenewal(c)) {
                    Protocol.sent(c.getCommand().getName());
                    String token = heldToken;
                    long sent = System.nanoTime();
                    c.getPromise().whenComplete((result, error) -> {
                        if (error != null || token == null || !(result instanceof List)) return;
                        // Redisson decodes the script's reply into the names it renewed. None:
                        // the lease ran out before the renewal reached Redis, and Redisson gives
                        // the lock up (cancels its renewal): validity 0, the watchdog alive.
                        // Reported even if the lease was released meanwhile (a client stopped
                        // with the reply on its way, then released at once): it went out while
                        // held, which is what shows the watchdog alive; the checker applies it
                        // to no later lease.
                        Protocol.renewed(token, ((List<?>) result).isEmpty() ? 0 : Protocol.ttlMs, sent);
                    });
                } else if (UNSUBSCRIBES.contains(c.getCommand().getName().toUpperCase())) {
                    Protocol.sent(c.getCommand().getName());
                } else if (opThread != null && !SET_UP.contains(c.getCommand().getName().toUpperCase())) {
                    Protocol.before(c.getCommand().getName());
                    if (c.getCommand().getName().toUpperCase().startsWith("EVAL")) lastScriptSent = System.nanoTime();
                }
            }
            super.write(ctx, msg, promise);
        }
    }

    static String uri(Map<String, Object> address) {
        return "redis://" + address.get("host") + ":" + Protocol.intField(address, "port", 6379);
    }

    @SuppressWarnings("unchecked")
    static RedissonClient client() {
        Config config = new Config();
        config.setLockWatchdogTimeout(Protocol.ttlMs);
        config.setThreads(2);
        config.setNettyThreads(2);
        config.setLazyInitialization(true);
        config.setNettyHook(new NettyHook() {
            public void afterBoostrapInitialization(Bootstrap bootstrap) { }
            public void afterChannelInitialization(Channel channel) { channel.pipeline().addLast(new Watcher()); }
        });
        int timeout = Protocol.socketTimeoutMs;
        String password = (String) Protocol.hello.get("password");
        List<Map<String, Object>> sentinels = Protocol.addresses("sentinels");
        if (sentinels.isEmpty()) {
            SingleServerConfig s = config.useSingleServer()
                .setAddress(uri(Protocol.addresses("nodes").get(0)))
                .setConnectionMinimumIdleSize(1).setConnectionPoolSize(2)
                .setSubscriptionConnectionMinimumIdleSize(0).setSubscriptionConnectionPoolSize(1);
            s.setTimeout(timeout).setConnectTimeout(timeout).setRetryAttempts(0).setPingConnectionInterval(0).setPassword(password);
        } else {
            Map<String, Object> route = (Map<String, Object>) Protocol.hello.get("route");
            SentinelServersConfig s = config.useSentinelServers()
                .setMasterName(String.valueOf(Protocol.hello.get("master_name")))
                .setCheckSentinelsList(false).setSentinelsDiscovery(false)
                .setScanInterval(200)
                .setNatMapper(u -> {
                    Object mine = route.get(u.getHost() + ":" + u.getPort());
                    if (mine == null) return u;
                    Map<String, Object> m = (Map<String, Object>) mine;
                    return new RedisURI("redis", String.valueOf(m.get("host")), Protocol.intField(m, "port", 6379));
                })
                .setReadMode(ReadMode.MASTER)
                .setMasterConnectionMinimumIdleSize(1).setMasterConnectionPoolSize(2)
                .setSlaveConnectionMinimumIdleSize(0).setSlaveConnectionPoolSize(1)
                .setSubscriptionConnectionMinimumIdleSize(0).setSubscriptionConnectionPoolSize(1);
            for (Map<String, Object> a : sentinels) s.addSentinelAddress(uri(a));
            s.setTimeout(timeout).setConnectTimeout(timeout).setRetryAttempts(0).setPingConnectionInterval(0).setPassword(password);
        }
        return Redisson.create(config);
    }

    /** The variants: the name each runs as, and its lock. */
    static final List<String> VARIANTS = List.of("watchdog", "lease", "semaphore",
        "permit-expirable-semaphore", "rwlock", "fair");

    /** An RSemaphore's permits carry no lease: valid until released, said as a day (longer than any run). */
    static final double NO_LEASE_MS = 86_400_000.0;

    public static void main(String[] args) throws Exception {
        String variant = args.length > 0 ? args[0] : "";
        if (!VARIANTS.contains(variant)) {
            System.err.println("usage: RedissonDriver " + String.join("|", VARIANTS));
            System.exit(2);
        }
        String name = variant.equals("watchdog") ? "redisson" : "redisson-" + variant;
        Protocol.serve(name, "redisson 3.45.1", List.of("pause-points"), shape(variant), () -> {
            RedissonClient redisson = client();
            switch (variant) {
                case "semaphore": return semaphore(redisson);
                case "permit-expirable-semaphore": return permitExpirableSemaphore(redisson);
                case "rwlock": return readWriteLock(redisson);
                case "fair": return fairLock(redisson);
                default: return rlock(redisson.getLock(Protocol.lockName), variant.equals("watchdog"));
            }
        });
    }

    /** What a variant grants, for its describe answer (as chaos/drivers/catalog.py declares it). */
    static Object[] shape(String variant) {
        List<String> shared = List.of("shared");
        switch (variant) {
            case "semaphore": return new Object[] {"capacity", 3, "modes", shared};
            case "permit-expirable-semaphore": return new Object[] {"capacity", 3, "modes", shared, "max_permits", 1};
            case "rwlock": return new Object[] {"capacity", null, "modes", List.of("exclusive", "shared"), "max_permits", 1};
            case "fair": return new Object[] {"fair", true};
            default: return new Object[0];
        }
    }

    /** A Redis or connection error: the command may have run (no retries are configured). */
    static Protocol.Failure indeterminate(RedisException e) {
        return new Protocol.Failure(e.getClass().getSimpleName() + ": " + e.getMessage(), false);
    }

    /** One operation's commands, announced (pause points) while it runs on this thread. */
    interface Op<T> { T run() throws Exception; }

    static <T> T op(Op<T> body) throws Exception {
        opThread = Thread.currentThread();
        try {
            return body.run();
        } catch (RedisException e) {
            throw indeterminate(e);
        } finally {
            opThread = null;
        }
    }

    /**
     * RLock: tryLock() with the watchdog, or tryLock(0, TTL, ms); unlock(). Redisson names the
     * holder by its client UUID and thread: one hold at a time per driver, so the token maps to it.
     */
    static Protocol.Lock rlock(RLock lock, boolean watchdog) {
        int ttl = Protocol.ttlMs;
        return new Protocol.Lock() {
            public Object[] acquire() throws Exception {
                String token = Protocol.newToken();
                boolean got = op(() -> watchdog ? lock.tryLock() : lock.tryLock(0, ttl, TimeUnit.MILLISECONDS));
                if (!got) return null;
                heldToken = token;
                return new Object[] {token, ttl, null};
            }

            public boolean release(String token) throws Exception {
                heldToken = null;
                return unlock(lock);
            }
        };
    }

    /** unlock(): true, or false when Redisson says the lock is not ours ("not locked by current thread"). */
    static boolean unlock(RLock lock) throws Exception {
        try {
            return op(() -> { lock.unlock(); return true; });
        } catch (IllegalMonitorStateException e) {
            return false;
        }
    }

    /**
     * RFairLock: tryLock(wait, TTL, ms). A fair lock queues its waiters, so an attempt waits in
     * the queue (a third of the harness's bound on one request: max(3 s, 4 TTL) / 3) instead of
     * leaving it at once, as tryLock(0, ...) would after its one try: a waiter that left the
     * queue at every failure would be granted in no order at all.
     */
    static Protocol.Lock fairLock(RedissonClient redisson) {
        RLock lock = redisson.getFairLock(Protocol.lockName);
        int ttl = Protocol.ttlMs;
        long waitMs = Math.max(3000, 4L * ttl) / 3;
        return new Protocol.Lock() {
            public Object[] acquire() throws Exception {
                String token = Protocol.newToken();
                long asked = System.nanoTime();
                lastScriptSent = asked;
                boolean got = op(() -> lock.tryLock(waitMs, ttl, TimeUnit.MILLISECONDS));
                if (!got) return null;
                // The lease runs from the script that granted it (the last one this request
                // sent, after its wait in the queue), counted from the request as the protocol asks.
                return new Object[] {token, ttl + Math.max(0, lastScriptSent - asked) / 1e6, null};
            }

            public boolean release(String token) throws Exception {
                return unlock(lock);
            }
        };
    }

    /** RReadWriteLock: readLock() or writeLock(), tryLock(0, TTL, ms) (no watchdog: see the catalog); unlock(). */
    static Protocol.Lock readWriteLock(RedissonClient redisson) {
        RReadWriteLock rw = redisson.getReadWriteLock(Protocol.lockName);
        int ttl = Protocol.ttlMs;
        Map<String, RLock> held = new HashMap<>();
        return new Protocol.SharedLock() {
            public Object[] acquire(String mode, int permits) throws Exception {
                if (permits != 1) throw new Protocol.Failure("a read-write lock grants one hold, not " + permits, true);
                RLock lock = mode.equals("shared") ? rw.readLock() : rw.writeLock();
                String token = Protocol.newToken();
                if (!op(() -> lock.tryLock(0, ttl, TimeUnit.MILLISECONDS))) return null;
                held.clear();
                held.put(token, lock);
                return new Object[] {token, ttl, null};
            }

            public boolean release(String token) throws Exception {
                RLock lock = held.remove(token);
                return lock != null && unlock(lock);
            }
        };
    }

    static int permits() throws Protocol.Failure {
        if (Protocol.capacity == null) throw new Protocol.Failure("a semaphore needs a number of permits (--capacity)", true);
        return Protocol.capacity;
    }

    /**
     * trySetPermits(capacity), as an application calls it once before its first acquire (the
     * first client's call sets them; the others' return false). Tried in hello, which also
     * opens the connection and warms the JVM's path to Redis (a cold first acquire on a busy
     * machine can outlast the harness's bound on a request); a timeout there does not keep the
     * client from starting: until one call has answered, each acquire tries it first, and one
     * that failed took no permit (definite).
     */
    static final class Permits {
        private final Op<Boolean> trySet;
        private boolean set;

        Permits(Op<Boolean> trySet) {
            this.trySet = trySet;
            try {
                ensure();
            } catch (Exception e) {
                System.err.println("trySetPermits in hello failed, will retry: " + e.getMessage());
            }
        }

        void ensure() throws Exception {
            if (set) return;
            try {
                op(trySet);
            } catch (Protocol.Failure e) {
                throw new Protocol.Failure("trySetPermits: " + e.getMessage(), true);
            }
            set = true;
        }
    }

    /**
     * RSemaphore: trySetPermits(capacity) once (the first client's wins; {@link Permits}), tryAcquire(k),
     * release(k). Its permits are a counter with no lease: a holder that dies never gives
     * them back, and release(k) adds k whoever calls it.
     */
    static Protocol.Lock semaphore(RedissonClient redisson) throws Exception {
        RSemaphore semaphore = redisson.getSemaphore(Protocol.lockName);
        int capacity = permits();
        Permits init = new Permits(() -> semaphore.trySetPermits(capacity));
        Map<String, Integer> held = new HashMap<>();
        return new Protocol.SharedLock() {
            public Object[] acquire(String mode, int permits) throws Exception {
                init.ensure();
                String token = Protocol.newToken();
                if (!op(() -> semaphore.tryAcquire(permits))) return null;
                held.clear();
                held.put(token, permits);
                return new Object[] {token, NO_LEASE_MS, null};
            }

            public boolean release(String token) throws Exception {
                Integer permits = held.remove(token);
                if (permits == null) return false;
                return op(() -> { semaphore.release(permits); return true; });
            }
        };
    }

    /**
     * RPermitExpirableSemaphore: trySetPermits(capacity) once, tryAcquire(0, TTL, ms) → a
     * permit id (one permit per acquire), tryRelease(id): false when the permit had expired.
     */
    static Protocol.Lock permitExpirableSemaphore(RedissonClient redisson) throws Exception {
        RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(Protocol.lockName);
        int capacity = permits();
        int ttl = Protocol.ttlMs;
        Permits init = new Permits(() -> semaphore.trySetPermits(capacity));
        Map<String, String> held = new HashMap<>();
        return new Protocol.SharedLock() {
            public Object[] acquire(String mode, int permits) throws Exception {
                if (permits != 1) throw new Protocol.Failure("one permit per acquire, not " + permits, true);
                init.ensure();
                String token = Protocol.newToken();
                String id = op(() -> semaphore.tryAcquire(0, ttl, TimeUnit.MILLISECONDS));
                if (id == null) return null;
                held.clear();
                held.put(token, id);
                return new Object[] {token, ttl, null};
            }

            public boolean release(String token) throws Exception {
                String id = held.remove(token);
                return id != null && op(() -> semaphore.tryRelease(id));
            }
        };
    }
}
