package lockchaos;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.SetParams;

/**
 * Seed 004's Java locks (and 003's Lua SETNX+EXPIRE) run as Java, over Jedis, behind the
 * lockchaos driver protocol. One variant per lock name; the lock code is the posts' own, with
 * {@code jedis}, {@code lockKey}, {@code requestId} and {@code expireTime} as they name them.
 *
 *   java lockchaos.JedisDriver setnx-expire|getset-timestamp|del-release|get-then-del|lua
 */
public final class JedisDriver {
    // --- the posts' code ---------------------------------------------------------------------

    /** 004 错误示例1 wrongGetLock1: setnx, then expire in a second round trip. */
    static boolean wrongGetLock1(Jedis jedis, String lockKey, String requestId, int expireTime) {
        Long result = jedis.setnx(lockKey, requestId);
        if (result == 1) {
            // 若在这里程序突然崩溃,则无法设置过期时间,将发生死锁
            if (expireTime % 1000 == 0) jedis.expire(lockKey, expireTime / 1000);
            else jedis.pexpire(lockKey, expireTime);  // the TTL is in ms here; the post's is seconds
            return true;
        }
        return false;
    }

    /** 004 错误示例2 wrongGetLock2: the value is the client's own expiry timestamp. */
    static boolean wrongGetLock2(Jedis jedis, String lockKey, int expireTime) {
        long expires = System.currentTimeMillis() + expireTime;
        String expiresStr = String.valueOf(expires);
        // 如果当前锁不存在,返回加锁成功
        if (jedis.setnx(lockKey, expiresStr) == 1) {
            return true;
        }
        // 如果锁存在,获取锁的过期时间
        String currentValueStr = jedis.get(lockKey);
        if (currentValueStr != null && Long.parseLong(currentValueStr) < System.currentTimeMillis()) {
            // 锁已过期,获取上一个锁的过期时间,并设置现在锁的过期时间
            String oldValueStr = jedis.getSet(lockKey, expiresStr);
            if (oldValueStr != null && oldValueStr.equals(currentValueStr)) {
                // 考虑多线程并发的情况,只有一个线程的设置值和当前值相同,它才有权利加锁
                return true;
            }
        }
        // 其他情况,一律返回加锁失败
        return false;
    }

    /** The posts' SET NX with an expiry (正确姿势's acquire), in milliseconds. */
    static boolean tryGetDistributedLock(Jedis jedis, String lockKey, String requestId, int expireTime) {
        String result = jedis.set(lockKey, requestId, SetParams.setParams().nx().px(expireTime));
        return "OK".equals(result);
    }

    /** 003 常规setnx方式实现 1: SETNX + EXPIRE in one Lua script (EXPIRE takes seconds). */
    static final String SETNX_EXPIRE = "if (redis.call('setnx', KEYS[1], ARGV[1]) == 1) then "
        + "redis.call('expire', KEYS[1], ARGV[2]) return true else return false end";

    static boolean luaGetLock(Jedis jedis, String lockKey, String requestId, int expireSeconds) {
        Object result = jedis.eval(SETNX_EXPIRE, Collections.singletonList(lockKey),
            List.of(requestId, String.valueOf(expireSeconds)));
        return Long.valueOf(1L).equals(result);
    }

    private static final Long RELEASE_SUCCESS = 1L;

    /** 004 正确姿势 releaseDistributedLock: Lua compare-and-delete. */
    static boolean releaseDistributedLock(Jedis jedis, String lockKey, String requestId) {
        String script = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
        Object result = jedis.eval(script, Collections.singletonList(lockKey), Collections.singletonList(requestId));
        if (RELEASE_SUCCESS.equals(result)) {
            return true;
        }
        return false;
    }

    /** 004 解锁 错误示例1 wrongReleaseLock1 (returns what DEL did, for the history). */
    static boolean wrongReleaseLock1(Jedis jedis, String lockKey) {
        return jedis.del(lockKey) > 0;
    }

    /** 004 解锁 错误示例2 wrongReleaseLock2: GET, compare, DEL. */
    static boolean wrongReleaseLock2(Jedis jedis, String lockKey, String requestId) {
        // 判断加锁与解锁是不是同一个客户端
        if (requestId.equals(jedis.get(lockKey))) {
            // 若在此时,这把锁突然不是这个客户端的,则会误解锁
            return jedis.del(lockKey) > 0;
        }
        return false;
    }

    // --- the harness side -----------------------------------------------------------------------

    /** A Jedis connection that announces every command (the pause-points capability). */
    static final class AnnouncingConnection extends Connection {
        private boolean ready;
        int sent;

        AnnouncingConnection(HostAndPort address, JedisClientConfig config) {
            super(address, config);
            ready = true;
        }

        @Override
        public void sendCommand(CommandArguments args) {
            if (ready) {
                sent++;
                try {
                    Protocol.before(new String(args.getCommand().getRaw(), StandardCharsets.UTF_8));
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            }
            super.sendCommand(args);
        }
    }

    static JedisClientConfig config;
    static AnnouncingConnection connection;
    static Jedis jedis;

    /** Like taking a connection from a pool: a broken one is replaced by a fresh one. */
    static Jedis jedis() throws Protocol.Failure {
        if (jedis != null && !connection.isBroken() && connection.isConnected()) return jedis;
        if (connection != null) connection.close();
        jedis = null;
        HostAndPort master = master();
        try {
            connection = new AnnouncingConnection(master, config);
        } catch (JedisConnectionException e) {
            // Nothing was sent: certainly not done.
            throw new Protocol.Failure("cannot connect to " + master + ": " + e.getMessage(), true);
        }
        jedis = new Jedis(connection);
        return jedis;
    }

    static HostAndPort address(Map<String, Object> m) {
        return new HostAndPort(String.valueOf(m.get("host")), Protocol.intField(m, "port", 6379));
    }

    /** The first node, or with Sentinels this client's proxy for the master they report. */
    @SuppressWarnings("unchecked")
    static HostAndPort master() throws Protocol.Failure {
        List<Map<String, Object>> sentinels = Protocol.addresses("sentinels");
        if (sentinels.isEmpty()) return address(Protocol.addresses("nodes").get(0));
        String name = String.valueOf(Protocol.hello.get("master_name"));
        Map<String, Object> route = (Map<String, Object>) Protocol.hello.get("route");
        for (Map<String, Object> s : sentinels) {
            HostAndPort at = address(s);
            try (Jedis sentinel = new Jedis(at, DefaultJedisClientConfig.builder()
                    .socketTimeoutMillis(Protocol.socketTimeoutMs).connectionTimeoutMillis(Protocol.socketTimeoutMs)
                    .clientSetInfoConfig(ClientSetInfoConfig.DISABLED).build())) {
                List<String> hp = sentinel.sentinelGetMasterAddrByName(name);
                if (hp == null || hp.size() < 2) continue;
                Object mine = route.get(hp.get(0) + ":" + hp.get(1));
                if (mine == null) throw new Protocol.Failure("no proxy for master " + hp, true);
                return address((Map<String, Object>) mine);
            } catch (JedisConnectionException e) {
                // try the next Sentinel
            }
        }
        throw new Protocol.Failure("no Sentinel answered", true);
    }

    /** Runs one operation; a connection error is indeterminate unless nothing was sent. */
    interface Op<T> { T run(Jedis jedis) throws Exception; }

    static <T> T call(Op<T> op) throws Exception {
        Jedis j = jedis();
        try {
            return op.run(j);
        } catch (JedisConnectionException e) {
            connection.close();
            jedis = null;
            throw new Protocol.Failure(e.getMessage(), false);  // it may have reached Redis
        } catch (JedisDataException e) {
            if (String.valueOf(e.getMessage()).startsWith("READONLY")) {  // failed over: rediscover
                connection.close();
                jedis = null;
            }
            throw new Protocol.Failure(e.getMessage(), false);
        }
    }

    public static void main(String[] args) throws Exception {
        String variant = args.length > 0 ? args[0] : "";
        List<String> capabilities = List.of("pause-points");
        Protocol.serve("jedis-" + variant, "jedis 8.0.2", capabilities, () -> {
            config = DefaultJedisClientConfig.builder()
                .socketTimeoutMillis(Protocol.socketTimeoutMs)
                .connectionTimeoutMillis(Protocol.socketTimeoutMs)
                .password((String) Protocol.hello.get("password"))
                .clientSetInfoConfig(ClientSetInfoConfig.DISABLED)
                .build();
            String lockKey = Protocol.lockName;
            int ttl = Protocol.ttlMs;
            switch (variant) {
                case "setnx-expire":
                    return lock(j -> { String id = Protocol.newToken();
                                       return wrongGetLock1(j, lockKey, id, ttl) ? id : null; },
                                (j, id) -> releaseDistributedLock(j, lockKey, id), ttl);
                case "getset-timestamp":
                    return lock(j -> wrongGetLock2(j, lockKey, ttl) ? Protocol.newToken() : null,
                                (j, id) -> wrongReleaseLock1(j, lockKey), ttl);
                case "del-release":
                    return lock(j -> { String id = Protocol.newToken();
                                       return tryGetDistributedLock(j, lockKey, id, ttl) ? id : null; },
                                (j, id) -> wrongReleaseLock1(j, lockKey), ttl);
                case "get-then-del":
                    return lock(j -> { String id = Protocol.newToken();
                                       return tryGetDistributedLock(j, lockKey, id, ttl) ? id : null; },
                                (j, id) -> wrongReleaseLock2(j, lockKey, id), ttl);
                case "lua":
                    int seconds = Math.max(1, (ttl + 999) / 1000);
                    return lock(j -> { String id = Protocol.newToken();
                                       return luaGetLock(j, lockKey, id, seconds) ? id : null; },
                                (j, id) -> releaseDistributedLock(j, lockKey, id), seconds * 1000);
                case "null":  // no Redis at all: bench/throughput.py times the protocol with it
                    return new Protocol.Lock() {
                        public Object[] acquire() { return new Object[] {Protocol.newToken(), ttl, null}; }
                        public boolean release(String token) { return true; }
                    };
                default:
                    throw new IllegalArgumentException("unknown variant '" + variant
                        + "' (setnx-expire, getset-timestamp, del-release, get-then-del, lua)");
            }
        });
    }

    interface Acquire { String run(Jedis jedis) throws Exception; }
    interface Release { boolean run(Jedis jedis, String token) throws Exception; }

    static Protocol.Lock lock(Acquire acquire, Release release, int validityMs) {
        return new Protocol.Lock() {
            public Object[] acquire() throws Exception {
                String token = call(acquire::run);
                return token == null ? null : new Object[] {token, validityMs, null};
            }

            public boolean release(String token) throws Exception {
                return call(j -> release.run(j, token));
            }
        };
    }
}
