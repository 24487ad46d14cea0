package io.lockchaos.kit.lettuce;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.List;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisReadOnlyException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.event.command.CommandListener;
import io.lettuce.core.event.command.CommandStartedEvent;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.sentinel.api.StatefulRedisSentinelConnection;
import io.lockchaos.kit.Address;
import io.lockchaos.kit.Commands;
import io.lockchaos.kit.Hello;
import io.lockchaos.kit.Node;
import io.lockchaos.kit.NotSent;

/**
 * A Redis node through Lettuce: {@code LettuceNode.master(hello).sync(redis -> redis.set(…))}.
 *
 * <p>Lettuce is configured as the protocol's rules ask. Its defaults would break them: after a
 * reconnect it replays the commands that were in flight (a second {@code SET NX} whose first
 * reply was lost), and while disconnected it queues new ones. So: no automatic reconnect (the
 * kit opens a new connection on the next call, as for Jedis), no replay ({@code replayFilter}
 * drops every command), commands rejected while disconnected, the hello's socket timeout for
 * connecting and for each command.
 *
 * <p>The hook is Lettuce's {@link CommandListener}: {@code commandStarted} runs on the thread
 * that dispatches the command, before it is written — and before its timeout starts — so
 * waiting there for the harness's go costs the command none of its time. Only that callback is
 * used: {@code commandSucceeded} and {@code commandFailed} run on Netty's thread and can come
 * after the caller already has the result, so nothing the kit answers may wait for them.
 */
public final class LettuceNode extends Node<StatefulRedisConnection<String, String>> {
    private static ClientResources resources;  // one event loop group for the process, made on first use
    private final RedisClient client;

    private LettuceNode(Hello hello, Address at) {
        super(hello, at);
        this.client = RedisClient.create(resources());
        Duration timeout = Duration.ofMillis(hello.socketTimeoutMs());
        client.setOptions(ClientOptions.builder()
            .autoReconnect(false)
            .replayFilter(command -> true)
            .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
            .socketOptions(SocketOptions.builder().connectTimeout(timeout).build())
            .timeoutOptions(TimeoutOptions.enabled(timeout))
            .build());
        client.addListener(new CommandListener() {
            @Override
            public void commandStarted(CommandStartedEvent event) {
                Commands.sending(String.valueOf(event.getCommand().getType()));
            }
        });
        Commands.hooked();
    }

    private static synchronized ClientResources resources() {
        if (resources == null) resources = DefaultClientResources.builder().ioThreadPoolSize(2).computationThreadPoolSize(2).build();
        return resources;
    }

    /** The first node, or with Sentinel this client's proxy for the master. */
    public static LettuceNode master(Hello hello) {
        return Node.connected(new LettuceNode(hello, null));
    }

    /** Every data node (a Redlock's independent masters). */
    public static List<LettuceNode> each(Hello hello) {
        return Node.each(hello, LettuceNode::new);
    }

    /** Runs {@code call} with this node's synchronous commands. */
    public <T> T sync(Call<RedisCommands<String, String>, T> call) throws Exception {
        return call(connection -> call.run(connection.sync()));
    }

    private RedisURI uri(Address at) {
        RedisURI.Builder b = RedisURI.builder().withHost(at.host()).withPort(at.port())
            .withTimeout(Duration.ofMillis(hello.socketTimeoutMs()));
        if (hello.password() != null) b.withPassword(hello.password().toCharArray());
        return b.build();
    }

    @Override
    protected StatefulRedisConnection<String, String> connect(Address at) throws NotSent {
        try {
            return client.connect(uri(at));
        } catch (RedisConnectionException e) {
            throw new NotSent("cannot connect to " + at + ": " + e.getMessage(), e);
        }
    }

    @Override
    protected boolean usable(StatefulRedisConnection<String, String> connection) {
        return connection.isOpen();
    }

    @Override
    protected List<String> askSentinel(Address sentinel, String masterName) {
        RedisURI uri = RedisURI.builder().withHost(sentinel.host()).withPort(sentinel.port())
            .withTimeout(Duration.ofMillis(hello.socketTimeoutMs())).build();
        try (StatefulRedisSentinelConnection<String, String> s = client.connectSentinel(uri)) {
            SocketAddress master = s.sync().getMasterAddrByName(masterName);
            if (!(master instanceof InetSocketAddress a)) return null;
            return List.of(a.getHostString(), String.valueOf(a.getPort()));
        }
    }

    @Override
    protected boolean breaks(Exception error) {
        return error instanceof RedisConnectionException || error instanceof RedisReadOnlyException;
    }
}
