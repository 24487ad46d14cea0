package lockchaos;

import java.util.Collections;
import java.util.List;

import io.lockchaos.kit.Description;
import io.lockchaos.kit.Driver;
import io.lockchaos.kit.Lock;
import io.lockchaos.kit.Outcome;
import io.lockchaos.kit.Request;
import io.lockchaos.kit.jedis.JedisNode;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.SetParams;

/**
 * Seed 004's Java locks (and 003's Lua SETNX+EXPIRE) run as Java, over Jedis, on lockchaos's
 * Java driver kit (chaos/drivers/kits/java: the protocol, the connection and its command hook).
 * One variant per lock name; the lock code is the posts' own, with {@code jedis},
 * {@code lockKey}, {@code requestId} (the kit's token) and {@code expireTime} as they name them.
 *
 *   java lockchaos.JedisDriver setnx-expire|getset-timestamp|del-release|get-then-del|lua
 */
public final class JedisDriver {
    // --- the posts' code ---------------------------------------------------------------------

    /** 004 错误示例1 wrongGetLock1: setnx, then expire in a second round trip. */
    @SuppressWarnings("deprecation")  // setnx, as the post calls it
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
    @SuppressWarnings("deprecation")  // setnx and getSet, as the post calls them
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

    // --- on the lockchaos driver kit (io.lockchaos.kit) ------------------------------------------

    interface Acquire { boolean run(Jedis jedis, String requestId) throws Exception; }
    interface Release { boolean run(Jedis jedis, String requestId) throws Exception; }

    /** A variant: the post's acquire and release on this client's connection (its proxy). */
    static Lock<Void> lock(JedisNode redis, Acquire acquire, Release release, int validityMs) {
        return new Lock<>() {
            public Outcome acquire(Request request) throws Exception {
                return redis.call(j -> acquire.run(j, request.token())) ? Outcome.granted(validityMs) : Outcome.refused();
            }

            public Outcome release(Request request, Void lease) throws Exception {
                return redis.call(j -> release.run(j, request.token())) ? Outcome.released() : Outcome.refused();
            }
        };
    }

    public static void main(String[] args) {
        String variant = args.length > 0 ? args[0] : "";
        Driver.serve(Description.of("jedis-" + variant, "jedis 8.0.2"), hello -> {
            String lockKey = hello.lockName();
            int ttl = hello.ttlMs();
            if (variant.equals("null")) {  // no Redis at all: bench/throughput.py times the protocol with it
                return new Lock<Void>() {
                    public Outcome acquire(Request request) { return Outcome.granted(ttl); }
                    public Outcome release(Request request, Void lease) { return Outcome.released(); }
                };
            }
            JedisNode redis = JedisNode.master(hello);
            switch (variant) {
                case "setnx-expire":
                    return lock(redis, (j, id) -> wrongGetLock1(j, lockKey, id, ttl),
                                (j, id) -> releaseDistributedLock(j, lockKey, id), ttl);
                case "getset-timestamp":
                    return lock(redis, (j, id) -> wrongGetLock2(j, lockKey, ttl), (j, id) -> wrongReleaseLock1(j, lockKey), ttl);
                case "del-release":
                    return lock(redis, (j, id) -> tryGetDistributedLock(j, lockKey, id, ttl),
                                (j, id) -> wrongReleaseLock1(j, lockKey), ttl);
                case "get-then-del":
                    return lock(redis, (j, id) -> tryGetDistributedLock(j, lockKey, id, ttl),
                                (j, id) -> wrongReleaseLock2(j, lockKey, id), ttl);
                case "lua":
                    int seconds = Math.max(1, (ttl + 999) / 1000);
                    return lock(redis, (j, id) -> luaGetLock(j, lockKey, id, seconds),
                                (j, id) -> releaseDistributedLock(j, lockKey, id), seconds * 1000);
                default:
                    throw new IllegalArgumentException("unknown variant '" + variant
                        + "' (setnx-expire, getset-timestamp, del-release, get-then-del, lua)");
            }
        });
    }
}
