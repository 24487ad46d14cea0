package io.lockchaos.kit;

/**
 * What one acquire, release or extend came to. The kit turns it into the protocol's answer
 * (docs/driver-protocol.md, "acquire, release, extend"), adding the token and the request's id.
 *
 * <p>An exception thrown by a lock's method is an outcome too: {@link NotSent} is
 * {@code failed(true, …)} (nothing reached Redis), any other one {@code failed(false, …)}
 * (it may have happened).
 */
public sealed interface Outcome
        permits Outcome.Granted, Outcome.Refused, Outcome.Failed, Outcome.Revoked,
                Outcome.Invalidated, Outcome.Kept {

    /**
     * Granted (acquire), released (release) or extended (extend). {@code validityMs}: how long
     * the lease is valid, counted from when the request was sent (null: the TTL; ≤ 0 as the
     * library computed it, never raised). {@code lease}: the library's object for this lease,
     * given back to {@link Lock#release} and {@link Lock#extend} (an extend that returns one
     * replaces it).
     */
    record Granted(Double validityMs, Long fence, Object lease) implements Outcome {
        public Granted withFence(long fence) {
            return new Granted(validityMs, fence, lease);
        }

        public Granted withLease(Object lease) {
            return new Granted(validityMs, fence, lease);
        }
    }

    /** Not granted / certainly not ours any more / not extended. */
    record Refused(String message) implements Outcome { }

    /** {@code definite}: it certainly did not happen (as refused); else it may have. */
    record Failed(boolean definite, String message) implements Outcome { }

    /**
     * An extend's answer: not extended, and the library gave the lease up (it deleted the key
     * after a failed extend, or told its caller the lock is lost). The lease is valid no more
     * from the request on; the kit forgets it (a later release is answered, not sent).
     */
    record Revoked(String message) implements Outcome { }

    /**
     * An extend's answer: the library invalidated the lease's lock object, so nothing more can
     * be sent for it; its key stays until it expires. {@code definite}: the extend certainly
     * did not happen. The kit answers the lease's later release and extend itself: not sent.
     */
    record Invalidated(boolean definite, String message) implements Outcome { }

    /**
     * A release's answer: released, and the library keeps the key on purpose until
     * {@code validityMs} from when the request was sent (a minimum hold; null: until the
     * lease's deadline then in effect).
     */
    record Kept(Double validityMs) implements Outcome { }

    static Granted granted(double validityMs) {
        return new Granted(validityMs, null, null);
    }

    /** A grant valid for the TTL (the protocol's default). */
    static Granted granted() {
        return new Granted(null, null, null);
    }

    /** A release that happened. */
    static Granted released() {
        return new Granted(null, null, null);
    }

    static Refused refused() {
        return new Refused(null);
    }

    static Refused refused(String message) {
        return new Refused(message);
    }

    /** It certainly did not happen: nothing was sent (or nothing that could have done it). */
    static Failed notSent(String message) {
        return new Failed(true, message);
    }

    /** It may or may not have happened. */
    static Failed unknown(String message) {
        return new Failed(false, message);
    }

    static Revoked revoked(String message) {
        return new Revoked(message);
    }

    static Invalidated invalidated(boolean definite, String message) {
        return new Invalidated(definite, message);
    }

    static Kept kept(Double validityMs) {
        return new Kept(validityMs);
    }
}
