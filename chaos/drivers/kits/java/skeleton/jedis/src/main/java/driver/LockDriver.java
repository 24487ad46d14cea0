package driver;

import java.util.List;

import io.lockchaos.kit.Description;
import io.lockchaos.kit.Driver;
import io.lockchaos.kit.Hello;
import io.lockchaos.kit.Lock;
import io.lockchaos.kit.Outcome;
import io.lockchaos.kit.Request;
import io.lockchaos.kit.Scripts;
import io.lockchaos.kit.jedis.JedisNode;
import redis.clients.jedis.params.SetParams;

/**
 * @NAME@: a lock driver for lockchaos (docs/driver-protocol.md) on its Java kit, over Jedis.
 *
 * <p>As written, a correct compare-and-delete lock — SET NX PX, a Lua compare-and-delete
 * release, a Lua compare-and-PEXPIRE extend — which {@code lockchaos run} passes. Put your
 * lock's calls in the three methods. The kit does the rest: the protocol, the token
 * ({@code request.token()}: store it as the lock's value), the bounded waits, and the pause
 * points of every command sent through {@code JedisNode}, whose connection is this client's
 * proxy, with the rules' timeouts and no retries. An exception is an indeterminate outcome
 * (it may have happened); a failure to connect is a definite one. Rebuild with ./build.sh.
 */
public final class LockDriver {
    private LockDriver() { }

    public static void main(String[] args) {
        Driver.serve(Description.of("@NAME@", "jedis 8.0.2").extend(), LockDriver::lock);
    }

    /** This client's lock, built and connected when the harness says hello. */
    public static Lock<Void> lock(Hello hello) {
        JedisNode redis = JedisNode.master(hello);  // the first node, or the Sentinels' master
        String key = hello.lockName();
        int ttl = hello.ttlMs();
        return new Lock<>() {
            @Override
            public Outcome acquire(Request request) throws Exception {
                String set = redis.call(jedis -> jedis.set(key, request.token(), SetParams.setParams().nx().px(ttl)));
                return "OK".equals(set) ? Outcome.granted(ttl) : Outcome.refused();  // valid for the TTL from the request
            }

            @Override
            public Outcome release(Request request, Void lease) throws Exception {
                Object deleted = redis.call(jedis -> jedis.eval(Scripts.COMPARE_AND_DELETE, List.of(key), List.of(request.token())));
                return Long.valueOf(1).equals(deleted) ? Outcome.released() : Outcome.refused();
            }

            @Override
            public Outcome extend(Request request, Void lease) throws Exception {
                Object extended = redis.call(jedis -> jedis.eval(Scripts.COMPARE_AND_PEXPIRE, List.of(key), List.of(request.token(), String.valueOf(ttl))));
                return Long.valueOf(1).equals(extended) ? Outcome.granted(ttl) : Outcome.refused();
            }
        };
    }
}
