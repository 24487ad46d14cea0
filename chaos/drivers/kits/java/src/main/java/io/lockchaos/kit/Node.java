package io.lockchaos.kit;

import java.util.List;

/**
 * One Redis node as a lock sees it, for a client library whose connections the kit opens
 * (Jedis, Lettuce): a connection opened once the node is made, before the hello is answered
 * (a client is ready when it can send: a cold Lettuce's first connection took 1.5 s on a
 * loaded machine, and over four on a busier one, where it ran out the first requests' bound
 * before they sent anything), or else when the lock first needs it, replaced once broken — as
 * a pool would — and, with Sentinel, the master found again after a failover, through this
 * client's proxy for it ({@link Hello#routed}). Failing to connect sends nothing:
 * {@link NotSent}.
 *
 * @param <C> the library's connection
 */
public abstract class Node<C extends AutoCloseable> {
    /** All nodes' first connections, within the harness's 30 s bound on hello (a JVM's start and the factory's share of it). */
    private static final long CONNECT_BOUND_MS = 10_000;
    private static final long CONNECT_RETRY_MS = 50;
    private static final int MAX_CONNECT_ATTEMPTS = 200;

    protected final Hello hello;
    private final Address fixed;
    private C connection;

    /** {@code at}: a standalone node; null: the master the hello's Sentinels report. */
    protected Node(Hello hello, Address at) {
        this.hello = hello;
        this.fixed = at;
    }

    /** A connection to {@code at}, with the hook installed; throws {@link NotSent} if none can be opened. */
    protected abstract C connect(Address at) throws NotSent;

    /** Whether the connection can still carry a command. */
    protected abstract boolean usable(C connection);

    /** The master's {@code [host, port]} as the Sentinel at {@code sentinel} reports it (null: unknown). */
    protected abstract List<String> askSentinel(Address sentinel, String masterName) throws Exception;

    /** Whether {@code error} leaves the connection useless (broken, or on a replica after a failover). */
    protected abstract boolean breaks(Exception error);

    /** A call on the node's connection. */
    @FunctionalInterface
    public interface Call<C, T> {
        T run(C connection) throws Exception;
    }

    /** Runs {@code call} on this node's connection, opened (or found again) first if need be. */
    public final <T> T call(Call<C, T> call) throws Exception {
        C c = connection();
        try {
            return call.run(c);
        } catch (Exception e) {
            if (breaks(e)) drop();
            throw e;
        }
    }

    private synchronized C connection() throws NotSent {
        if (connection != null && usable(connection)) return connection;
        drop();
        connection = connect(fixed != null ? fixed : master());
        return connection;
    }

    /** Closes the connection: the next call opens another. */
    public final synchronized void drop() {
        if (connection == null) return;
        try {
            connection.close();
        } catch (Exception e) {
            // a broken connection may fail to close: it is gone either way
        }
        connection = null;
    }

    /** This client's proxy for the master the Sentinels report. */
    private Address master() throws NotSent {
        if (hello.sentinels().isEmpty()) {
            if (hello.nodes().isEmpty()) throw new NotSent("the hello has no nodes");
            return hello.nodes().get(0);
        }
        for (Address sentinel : hello.sentinels()) {
            List<String> reported;
            try {
                reported = askSentinel(sentinel, hello.masterName());
            } catch (Exception e) {
                continue;  // the next Sentinel
            }
            if (reported == null || reported.size() < 2) continue;
            Address mine = hello.routed(reported.get(0), Integer.parseInt(reported.get(1)));
            if (mine == null) throw new NotSent("no proxy for the master " + reported + " in the hello's route");
            return mine;
        }
        throw new NotSent("no Sentinel answered for " + hello.masterName());
    }

    /** The node for {@code at}, or the master with Sentinel when {@code at} is null. */
    public interface Maker<N> {
        N make(Hello hello, Address at);
    }

    /** One node per data node of the hello (a Redlock's masters), each connected first. */
    public static <N extends Node<?>> List<N> each(Hello hello, Maker<N> maker) {
        long deadline = System.nanoTime() + CONNECT_BOUND_MS * 1_000_000L;
        return hello.nodes().stream().map(a -> connected(maker.make(hello, a), deadline)).toList();
    }

    /** {@code node}, connected first (see {@link #connected(Node, long)}). */
    public static <N extends Node<?>> N connected(N node) {
        return connected(node, System.nanoTime() + CONNECT_BOUND_MS * 1_000_000L);
    }

    /**
     * {@code node}, its connection opened now, an attempt that failed (a cold client's
     * handshake can outlast the socket timeout on a busy machine) tried again until
     * {@code deadline} ({@link System#nanoTime}); a node still unreachable then, or one that
     * refused the connection (nothing listens there: a node down, which waiting for would
     * hold the hello 10 s), is left to the first request, which connects (or fails,
     * definitely) itself. Its set-up is no request's: nothing is announced or reported.
     */
    private static <N extends Node<?>> N connected(N node, long deadline) {
        for (int attempt = 0; attempt < MAX_CONNECT_ATTEMPTS; attempt++) {
            try {
                ((Node<?>) node).connection();
                return node;
            } catch (NotSent | RuntimeException e) {  // a library's own timeout, say
                if (refused(e) || System.nanoTime() >= deadline) return node;
            }
            try {
                Thread.sleep(CONNECT_RETRY_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return node;
            }
        }
        return node;
    }

    /**
     * Whether {@code error} came of a refused connection: a {@link java.net.ConnectException}
     * among its causes (Lettuce's) or what they suppressed (Jedis adds each address's failure
     * so), ten deep at most.
     */
    private static boolean refused(Throwable error) {
        Throwable cause = error;
        for (int depth = 0; cause != null && depth < 10; depth++, cause = cause.getCause()) {
            if (cause instanceof java.net.ConnectException) return true;
            for (Throwable suppressed : cause.getSuppressed()) {
                if (suppressed instanceof java.net.ConnectException) return true;
            }
        }
        return false;
    }
}
