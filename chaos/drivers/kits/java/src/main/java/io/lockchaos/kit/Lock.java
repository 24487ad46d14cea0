package io.lockchaos.kit;

/**
 * A lock under test: the three operations, each returning one {@link Outcome}. The kit calls
 * them one at a time, in the harness's order, on one thread of its own (so a library that ties
 * a lock to the thread that took it, as Redisson does, releases on the thread that acquired).
 *
 * @param <L> the library's object for one lease ({@link Outcome.Granted#lease}): the kit keeps
 *            it under the lease's token and hands it back to release and extend
 */
public interface Lock<L> {
    /**
     * One attempt (the harness owns the retry loop). {@link Request#token()} is this acquire's
     * token: store it as the lock's value where the library lets you choose one.
     */
    Outcome acquire(Request request) throws Exception;

    /** Release the lease {@code lease} (null when the acquire gave none). */
    Outcome release(Request request, L lease) throws Exception;

    /** Extend the lease; only asked of a lock whose {@link Description} says {@code extend()}. */
    default Outcome extend(Request request, L lease) throws Exception {
        return Outcome.notSent("this lock cannot extend");
    }

    /**
     * Builds the lock from the harness's hello, connected ({@link Node}): the hello is
     * answered when it returns, and the run starts once every client answered. One driver may
     * build locks of different lease types (its variants).
     */
    @FunctionalInterface
    interface Factory {
        Lock<?> create(Hello hello) throws Exception;
    }
}
