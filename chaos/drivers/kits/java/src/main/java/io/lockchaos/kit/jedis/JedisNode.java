package io.lockchaos.kit.jedis;

import java.nio.charset.StandardCharsets;
import java.util.List;

import io.lockchaos.kit.Address;
import io.lockchaos.kit.Commands;
import io.lockchaos.kit.Hello;
import io.lockchaos.kit.Node;
import io.lockchaos.kit.NotSent;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * A Redis node through Jedis: {@code JedisNode.master(hello).call(jedis -> jedis.set(…))}.
 *
 * <p>The connection is configured as the protocol's rules ask: the hello's socket timeout for
 * connecting and reading, its password, no {@code CLIENT SETINFO}; plain Jedis never retries a
 * command. Each command goes through {@link Commands#sending} from a {@link Connection}
 * subclass (Jedis has no command listener), once the connection's own set-up is done. A
 * connection that breaks is replaced on the next call; a {@code READONLY} reply (the node
 * became a replica) finds the master again.
 */
public final class JedisNode extends Node<Jedis> {
    private final JedisClientConfig config;

    private JedisNode(Hello hello, Address at) {
        super(hello, at);
        this.config = DefaultJedisClientConfig.builder()
            .socketTimeoutMillis(hello.socketTimeoutMs())
            .connectionTimeoutMillis(hello.socketTimeoutMs())
            .password(hello.password())
            .clientSetInfoConfig(ClientSetInfoConfig.DISABLED)
            .build();
        Commands.hooked();
    }

    /** The first node, or with Sentinel this client's proxy for the master. */
    public static JedisNode master(Hello hello) {
        return Node.connected(new JedisNode(hello, null));
    }

    /** Every data node (a Redlock's independent masters). */
    public static List<JedisNode> each(Hello hello) {
        return Node.each(hello, JedisNode::new);
    }

    /** A connection whose commands pass the kit's hook once its set-up is done. */
    private static final class HookedConnection extends Connection {
        private final boolean ready;

        HookedConnection(HostAndPort address, JedisClientConfig config) {
            super(address, config);
            ready = true;  // false (the default) while the constructor runs the set-up
        }

        @Override
        public void sendCommand(CommandArguments args) {
            if (ready) Commands.sending(new String(args.getCommand().getRaw(), StandardCharsets.UTF_8));
            super.sendCommand(args);
        }
    }

    @Override
    protected Jedis connect(Address at) throws NotSent {
        try {
            return new Jedis(new HookedConnection(new HostAndPort(at.host(), at.port()), config));
        } catch (JedisConnectionException e) {
            throw new NotSent("cannot connect to " + at + ": " + e.getMessage(), e);
        }
    }

    @Override
    protected boolean usable(Jedis jedis) {
        Connection c = jedis.getConnection();
        return c.isConnected() && !c.isBroken();
    }

    @Override
    protected List<String> askSentinel(Address sentinel, String masterName) {
        try (Jedis s = new Jedis(new HostAndPort(sentinel.host(), sentinel.port()), DefaultJedisClientConfig.builder()
                .socketTimeoutMillis(hello.socketTimeoutMs()).connectionTimeoutMillis(hello.socketTimeoutMs())
                .clientSetInfoConfig(ClientSetInfoConfig.DISABLED).build())) {
            return s.sentinelGetMasterAddrByName(masterName);
        }
    }

    @Override
    protected boolean breaks(Exception error) {
        return error instanceof JedisConnectionException
            || (error instanceof JedisDataException && String.valueOf(error.getMessage()).startsWith("READONLY"));
    }
}
