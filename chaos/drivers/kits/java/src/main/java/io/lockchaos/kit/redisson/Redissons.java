package io.lockchaos.kit.redisson;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import io.lockchaos.kit.Address;
import io.lockchaos.kit.Commands;
import io.lockchaos.kit.Driver;
import io.lockchaos.kit.Hello;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.NettyHook;
import org.redisson.client.protocol.CommandData;
import org.redisson.client.protocol.CommandsData;
import org.redisson.config.Config;
import org.redisson.config.ReadMode;
import org.redisson.config.SentinelServersConfig;
import org.redisson.config.SingleServerConfig;
import org.redisson.misc.RedisURI;

/**
 * A Redisson client for the hello: {@code Redissons.client(hello)}, configured as an
 * application would be, with what the protocol's rules add — the run's TTL as the watchdog's
 * timeout, no command retries (a retried lock command whose first reply was lost would lie),
 * the hello's socket timeout, no keep-alive pings, lazy connections (a JVM answers hello
 * before it connects) and, with Sentinel, every reported address mapped to this client's proxy.
 *
 * <p>The hook is a Netty handler on every connection, which sees each command Redisson writes
 * (on Netty's threads, which must never wait). A command written while a request runs is that
 * request's: announced when asked, and held — not written — until the harness's go, its write
 * promise made uncancellable so that Redisson's write timeout does not run out while the
 * harness holds it (the time is the harness's; it goes out late, as a paused client's would).
 * Redisson's watchdog renewals are reported as they go out ({@code sent}) and as they end
 * ({@code renewed}, timed from when they went out, for every lease the kit holds under that
 * lock's name: validity 0 when the lease was gone and Redisson gave it up), and so are its
 * unsubscribes, which it sends once the request that subscribed has returned.
 *
 * <p>What a Netty thread cannot know is which request a command came from: a command written
 * after its request was answered is reported as the library's own, and one still written
 * while the next request runs would be counted as that one's — which is why the
 * unsubscribes are never a request's.
 */
public final class Redissons {
    /** Redisson 3.45.1's batched renewal script (org.redisson.renewal.LockTask). */
    static final String RENEWAL = "local result = {} for i = 1, #KEYS, 1 do if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); else table.insert(result, 0); end; end; return result;";
    static final String RENEWAL_SHA = sha1(RENEWAL);
    /** Pub/sub bookkeeping after a wait: sent once its request has returned, so no request's. */
    static final Set<String> UNSUBSCRIBES = Set.of("UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE");

    private Redissons() { }

    private static String sha1(String s) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The client for the hello's nodes (the first one, or the Sentinels' master). */
    public static RedissonClient client(Hello hello) {
        return Redisson.create(config(hello));
    }

    /** The configuration {@link #client} uses, for a driver that changes something first. */
    public static Config config(Hello hello) {
        Config config = new Config();
        config.setLockWatchdogTimeout(hello.ttlMs());
        config.setThreads(2);
        config.setNettyThreads(2);
        config.setLazyInitialization(true);
        int ttl = hello.ttlMs();
        config.setNettyHook(new NettyHook() {
            @Override
            public void afterBoostrapInitialization(Bootstrap bootstrap) { }

            @Override
            public void afterChannelInitialization(Channel channel) {
                channel.pipeline().addLast(new Watcher(ttl));
            }
        });
        int timeout = hello.socketTimeoutMs();
        if (hello.sentinels().isEmpty()) {
            SingleServerConfig s = config.useSingleServer()
                .setAddress(uri(hello.nodes().get(0)))
                .setConnectionMinimumIdleSize(1).setConnectionPoolSize(2)
                .setSubscriptionConnectionMinimumIdleSize(0).setSubscriptionConnectionPoolSize(1);
            s.setTimeout(timeout).setConnectTimeout(timeout).setRetryAttempts(0).setPingConnectionInterval(0)
                .setPassword(hello.password());
        } else {
            SentinelServersConfig s = config.useSentinelServers()
                .setMasterName(hello.masterName())
                .setCheckSentinelsList(false).setSentinelsDiscovery(false)
                .setScanInterval(200)
                .setNatMapper(u -> {
                    Address mine = hello.routed(u.getHost(), u.getPort());
                    return mine == null ? u : new RedisURI("redis", mine.host(), mine.port());
                })
                .setReadMode(ReadMode.MASTER)
                .setMasterConnectionMinimumIdleSize(1).setMasterConnectionPoolSize(2)
                .setSlaveConnectionMinimumIdleSize(0).setSlaveConnectionPoolSize(1)
                .setSubscriptionConnectionMinimumIdleSize(0).setSubscriptionConnectionPoolSize(1);
            for (Address a : hello.sentinels()) s.addSentinelAddress(uri(a));
            s.setTimeout(timeout).setConnectTimeout(timeout).setRetryAttempts(0).setPingConnectionInterval(0)
                .setPassword(hello.password());
        }
        Commands.hooked();
        return config;
    }

    private static String uri(Address a) {
        return "redis://" + a.host() + ":" + a.port();
    }

    /** Sees every command Redisson writes on a connection (see the class's comment). */
    private static final class Watcher extends ChannelOutboundHandlerAdapter {
        private final int ttlMs;

        Watcher(int ttlMs) {
            this.ttlMs = ttlMs;
        }

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) throws Exception {
            List<CommandData<?, ?>> commands = new ArrayList<>();
            if (msg instanceof CommandData<?, ?> c) commands.add(c);
            else if (msg instanceof CommandsData batch) commands.addAll(batch.getCommands());
            List<String> names = new ArrayList<>();
            for (CommandData<?, ?> c : commands) {
                String name = c.getCommand().getName().toUpperCase(Locale.ROOT);
                if (isRenewal(c)) renewal(c);
                else if (UNSUBSCRIBES.contains(name)) Commands.sent(name);
                else names.add(name);
            }
            if (!names.isEmpty() && Commands.holding(names, () -> ctx.executor().execute(() -> ctx.writeAndFlush(msg, promise)))) {
                promise.setUncancellable();
                return;
            }
            super.write(ctx, msg, promise);
        }

        private static boolean isRenewal(CommandData<?, ?> c) {
            Object[] p = c.getParams();
            if (p == null || p.length == 0) return false;
            String first = String.valueOf(p[0]);
            return first.equals(RENEWAL) || first.equalsIgnoreCase(RENEWAL_SHA);
        }

        /**
         * A watchdog renewal going out: sent now, and renewed (or given up) for the leases the
         * kit holds under its keys when its reply comes — even if a lease was released while
         * the reply was on its way: it went out while held, which shows the watchdog alive.
         */
        private void renewal(CommandData<?, ?> c) {
            Commands.sent(c.getCommand().getName());
            long sent = System.nanoTime();
            Object[] p = c.getParams();
            int keys = p.length > 1 && p[1] instanceof Number n ? n.intValue() : 0;
            Map<String, String> tokens = new HashMap<>();  // token → the lock's name
            Driver.leases().forEach((token, lease) -> {
                if (lease instanceof RLock lock) {
                    for (int i = 2; i < 2 + keys && i < p.length; i++) {
                        if (lock.getName().equals(String.valueOf(p[i]))) tokens.put(token, lock.getName());
                    }
                }
            });
            c.getPromise().whenComplete((result, error) -> {
                if (error != null || !(result instanceof List<?> renewed)) return;
                // Redisson decodes the script's reply into the names it renewed. A name missing:
                // that lease ran out before the renewal reached Redis, and Redisson gives it up.
                tokens.forEach((token, name) -> Driver.renewed(token, renewed.contains(name) ? ttlMs : 0, sent));
            });
        }
    }
}
