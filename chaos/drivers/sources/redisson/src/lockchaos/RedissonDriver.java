package lockchaos;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
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
 *
 * Redisson is configured as an application would, with the run's TTL as the watchdog timeout
 * and no command retries (a retried lock command whose first reply was lost would lie).
 * A Netty hook on every connection sees the commands Redisson writes: it reports each watchdog
 * renewal that succeeded ("renewed", with the time the renewal was written) and announces the
 * operation's own commands when the harness asks (the pause-points capability).
 */
public final class RedissonDriver {
    /** Redisson 3.45.1's batched renewal script (org.redisson.renewal.LockTask). */
    static final String RENEW_SCRIPT = "local result = {} for i = 1, #KEYS, 1 do if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); else table.insert(result, 0); end; end; return result;";
    static final String RENEW_SHA = sha1(RENEW_SCRIPT);

    static final boolean DEBUG = System.getenv("LOCKCHAOS_DRIVER_DEBUG") != null;
    static volatile String heldToken;  // the token of the lease this client holds, if any
    static volatile Thread opThread;   // the thread running the current request

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
                    String token = heldToken;
                    long sent = System.nanoTime();
                    c.getPromise().whenComplete((result, error) -> {
                        if (error == null && token != null && token.equals(heldToken)
                                && result instanceof List && !((List<?>) result).isEmpty()) {
                            // Redisson decodes the script's reply into the names it renewed.
                            Protocol.renewed(token, Protocol.ttlMs, sent);
                        }
                    });
                } else if (opThread != null && !SET_UP.contains(c.getCommand().getName().toUpperCase())) {
                    Protocol.before(c.getCommand().getName());
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

    public static void main(String[] args) throws Exception {
        String variant = args.length > 0 ? args[0] : "";
        if (!variant.equals("watchdog") && !variant.equals("lease")) {
            System.err.println("usage: RedissonDriver watchdog|lease");
            System.exit(2);
        }
        String name = variant.equals("watchdog") ? "redisson" : "redisson-lease";
        Protocol.serve(name, "redisson 3.45.1", List.of("pause-points"), () -> {
            RedissonClient redisson = client();
            RLock lock = redisson.getLock(Protocol.lockName);
            int ttl = Protocol.ttlMs;
            return new Protocol.Lock() {
                public Object[] acquire() throws Exception {
                    String token = Protocol.newToken();
                    opThread = Thread.currentThread();
                    boolean got;
                    try {
                        got = variant.equals("watchdog") ? lock.tryLock() : lock.tryLock(0, ttl, TimeUnit.MILLISECONDS);
                    } catch (RedisException e) {
                        throw new Protocol.Failure(e.getClass().getSimpleName() + ": " + e.getMessage(), false);
                    } finally {
                        opThread = null;
                    }
                    if (!got) return null;
                    heldToken = token;
                    return new Object[] {token, ttl, null};
                }

                public boolean release(String token) throws Exception {
                    heldToken = null;
                    opThread = Thread.currentThread();
                    try {
                        lock.unlock();
                        return true;
                    } catch (IllegalMonitorStateException e) {
                        return false;  // "attempt to unlock lock, not locked by current thread": not ours
                    } catch (RedisException e) {
                        throw new Protocol.Failure(e.getClass().getSimpleName() + ": " + e.getMessage(), false);
                    } finally {
                        opThread = null;
                    }
                }
            };
        });
    }
}
