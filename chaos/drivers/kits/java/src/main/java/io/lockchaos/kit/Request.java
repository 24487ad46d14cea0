package io.lockchaos.kit;

/**
 * One acquire, release or extend, as the lock's method sees it, with the clock its validity is
 * measured by: the moment the kit read the request, on {@link System#nanoTime()} (Linux's
 * {@code CLOCK_MONOTONIC}, the history's clock). The harness's own invoke is a little earlier,
 * so a validity counted from here never claims more than the lease had.
 */
public final class Request {
    private final long id;
    private final String kind;
    private final String token;
    private final String mode;
    private final int permits;
    private final boolean announce;
    private final long startNanos = System.nanoTime();
    private volatile long lastSentNanos;

    Request(long id, String kind, String token, String mode, int permits, boolean announce) {
        this.id = id;
        this.kind = kind;
        this.token = token;
        this.mode = mode;
        this.permits = permits;
        this.announce = announce;
    }

    /** The harness's id (-1 for the kit's own release of a grant that came too late). */
    public long id() {
        return id;
    }

    /** "acquire", "release" or "extend". */
    public String kind() {
        return kind;
    }

    /**
     * The lease's token: for an acquire, the new one the kit made for it
     * ({@code <client_id>:<16 hex>}); for a release or an extend, the lease's.
     */
    public String token() {
        return token;
    }

    /** "exclusive" or "shared" for a lock that is not a mutex; null for a mutex. */
    public String mode() {
        return mode;
    }

    /** How many permits this acquire asks (1 for a mutex). */
    public int permits() {
        return permits;
    }

    /** Whether the harness asked for this request's commands to be announced. */
    public boolean announcing() {
        return announce;
    }

    public long startNanos() {
        return startNanos;
    }

    /** Milliseconds since the request was read. */
    public double elapsedMs() {
        return (System.nanoTime() - startNanos) / 1e6;
    }

    /**
     * The validity to answer for a library that reports what is left of the lease at its
     * return (TTL minus the time spent minus the drift): the time the request took is added
     * back, so the lease counts from the request. Floored to the millisecond: never rounded up.
     */
    public double validityLeftAtReturn(double leftMs) {
        return Math.floor(leftMs + elapsedMs());
    }

    /**
     * The validity to answer for a lease that runs from the last command this request sent
     * (a lock that waits, then grants in its last script: Redisson's fair lock), counted from
     * the request as the protocol asks. Floored to the millisecond.
     */
    public double validityFromLastCommand(double validityMs) {
        long last = lastSentNanos;
        return Math.floor(validityMs + (last == 0 ? 0 : (last - startNanos) / 1e6));
    }

    /** When this request's last command went out (System.nanoTime; 0: none yet). */
    public long lastSentNanos() {
        return lastSentNanos;
    }

    void sent() {
        lastSentNanos = System.nanoTime();
    }

    @Override
    public String toString() {
        return kind + " #" + id;
    }
}
