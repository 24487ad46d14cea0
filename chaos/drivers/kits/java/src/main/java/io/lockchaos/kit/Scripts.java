package io.lockchaos.kit;

/**
 * The two scripts of a correct single-instance lock whose value is its token (the skeletons'):
 * KEYS[1] the key, ARGV[1] the token. Each acts only while the key still holds that token, so
 * a holder whose lease ran out and passed to another client cannot delete or extend it.
 */
public final class Scripts {
    /** Deletes the key if it holds ARGV[1]: 1 when it did, 0 when the lock was not ours. */
    public static final String COMPARE_AND_DELETE =
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

    /** Sets the key's expiry to ARGV[2] ms if it holds ARGV[1]: 1 when it did, 0 when the lock was not ours. */
    public static final String COMPARE_AND_PEXPIRE =
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

    private Scripts() { }
}
