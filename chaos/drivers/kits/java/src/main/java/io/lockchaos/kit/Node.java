package io.lockchaos.kit;

import java.util.List;

/**
 * One Redis node as a lock sees it, for a client library whose connections the kit opens
 * (Jedis, Lettuce): a connection opened in the background once the node is made — a JVM answers
 * hello before it connects, and its first request does not carry a cold client's class loading
 * (a first Lettuce connection took 1.5 s on a loaded machine) — or else when the lock first
 * needs it, replaced once broken — as a pool would — and, with Sentinel, the master found again
 * after a failover, through this client's proxy for it ({@link Hello#routed}). Failing to
 * connect sends nothing: {@link NotSent}.
 *
 * @param <C> the library's connection
 */
public abstract class Node<C extends AutoCloseable> {
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

    /** One node per data node of the hello (a Redlock's masters), each connecting in the background. */
    public static <N extends Node<?>> List<N> each(Hello hello, Maker<N> maker) {
        return hello.nodes().stream().map(a -> connecting(maker.make(hello, a))).toList();
    }

    /**
     * {@code node}, its connection opened on a daemon thread meanwhile (its set-up is no
     * request's: nothing is announced or reported). A request that needs it first waits for it;
     * a failure leaves the request to connect again.
     */
    public static <N extends Node<?>> N connecting(N node) {
        Thread t = new Thread(() -> {
            try {
                ((Node<?>) node).connection();
            } catch (NotSent e) {
                // the first request connects (or fails, definitely) itself
            }
        }, "lockchaos-connect");
        t.setDaemon(true);
        t.start();
        return node;
    }
}
