package io.lockchaos.kit;

import java.util.concurrent.Callable;

/**
 * A multi-node lock's decision (Redlock), for acquire, release and extend alike
 * (docs/driver-protocol.md, "decides by quorum"). Each node votes:
 * <ul>
 * <li>{@code GRANTED}: it answered yes (set, deleted, extended);</li>
 * <li>{@code REFUSED}: it answered no (the key is someone else's, or gone);</li>
 * <li>{@code UNKNOWN}: the command may have reached it (a timeout, a reset, an error after
 *     writing) — and any node whose library cannot tell refused from failed;</li>
 * <li>{@code NOT_SENT}: nothing was sent to it (no connection): not granted there.</li>
 * </ul>
 * The outcome is definite only when the nodes that answered decide it whichever way the
 * unknown ones went: granted when the granted ones alone reach the quorum, refused when the
 * granted plus the unknown ones cannot, and indeterminate in between — a quorum lost to
 * timeouts is not a refusal, even if the library itself reports failure and unlocks.
 */
public final class Quorum {
    public enum Vote { GRANTED, REFUSED, UNKNOWN, NOT_SENT }

    private final int nodes;
    private final int needed;
    private int granted;
    private int unknown;
    private int counted;

    /** A majority of {@code nodes}. */
    public Quorum(int nodes) {
        this(nodes, nodes / 2 + 1);
    }

    public Quorum(int nodes, int needed) {
        this.nodes = nodes;
        this.needed = needed;
    }

    public synchronized Vote vote(Vote vote) {
        counted++;
        if (vote == Vote.GRANTED) granted++;
        else if (vote == Vote.UNKNOWN) unknown++;
        return vote;
    }

    /**
     * One node's command, voted by what it did: true granted, false refused, {@link NotSent}
     * not sent, any other exception unknown.
     */
    public Vote vote(Callable<Boolean> node) {
        try {
            return vote(node.call() ? Vote.GRANTED : Vote.REFUSED);
        } catch (NotSent e) {
            return vote(Vote.NOT_SENT);
        } catch (Exception e) {
            return vote(Vote.UNKNOWN);
        }
    }

    /** The granted votes alone reach the quorum. */
    public synchronized boolean won() {
        return granted >= needed;
    }

    /** Even with every unknown vote granted, it would not. */
    public synchronized boolean lost() {
        return granted + unknown + (nodes - counted) < needed;
    }

    /**
     * {@code ifWon} when won, refused when lost, else indeterminate; nodes not voted yet count
     * as unknown.
     */
    public synchronized Outcome decide(Outcome ifWon) {
        if (won()) return ifWon;
        String votes = "granted on " + granted + " of " + nodes + " nodes, unknown on "
            + (unknown + nodes - counted) + ", quorum " + needed;
        return lost() ? Outcome.refused(votes) : Outcome.unknown("undecided: " + votes);
    }
}
