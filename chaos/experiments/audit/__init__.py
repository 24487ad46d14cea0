"""An audit: what lockchaos throws at a lock nobody has told it anything about, within a time
budget, ending in one verdict a CI gate can act on.

By default it uses every fault a lock must survive whatever its deployment (``MUST_SURVIVE``:
client pauses, pause points, crashes, slow work, latency, partitions, resets, lost replies,
server pauses);
``--faults`` replaces that set, and ``--faults +f`` adds to it the infrastructure faults an
algorithm claims to survive (``+crash-restart-delayed`` for Redlock). Every catalog fault left
out is *assumed away*, and the audit says so.

It first learns the lock (``chaos.experiments.surface``): a warm-up run with no fault, holders
extending and acquiring again while they hold, whose history says which commands each operation
sends — from whichever thread it used, on the lock's keys — and what the lock has (extend,
renewals, reentrancy, fences, nodes). audit.json lists both, and which commands are the
client's own rather than the lock's (``optional``: connection set-up, subscriptions, script
loading, a command sent once per process): shown, aimed at last, never a point the audit
must reach. A lock seen renewing is held to renewing in every phase (``--renews``: a lease
that lapses while its holder runs is hard), and one that sends EVALSHA is also flushed of its
scripts (``CALLED_FOR``); a lock that expresses its TTL in steps (whole seconds) is given one
it can keep (``kept_ttl``). Then the budget is spent in two phases. First short seeded
campaigns, each on a fresh topology and stopping at its first hard violation: every fault
alone — a pause point and a crash once before *each* command of each operation learned, its
last-sent first (an extend's with holders extending; a pause in an acquire shorter than the
TTL) —, then the capabilities under every fault: holders extending, their work alternately
long and short against the TTL, the network faults taking turns in one campaign that makes
their extends (or renewals) fail, and a reentrant lock's holders nesting; then pairs of
faults in a seeded order. The first ``EARLY_CAPABILITY_TRIALS`` capability campaigns run
before the singles: a bug in an extend or a nested release shows only when holders extend
or nest, and a dozen singles first would leave it half a minute unfound. Before them still,
each fault added to the defaults (``+f``: the user suspects it, or the lock's commands call
for it) runs alone, ``CELL_S`` (at a long TTL, ``NAMED_CELL_TTLS``) long.

Every campaign costs its length and what the warm-up (then each campaign) showed a campaign
of this lock costs beyond it — seconds, for a driver whose processes start slowly. Those that
come first (the singles, the first capability campaigns, and again, with a new seed, in up to
``AGAIN_ROUNDS`` rounds, the first campaign there for a fault that had no effect or a point
never reached: ``again_trials``) run within ``REQUIRED_SHARE`` of the budget, the others
within ``CAMPAIGN_SHARE``; when they cannot all fit, one campaign carries every fault they
could not try one by one (``packed``), so each still fires, and what had no time is listed
(``not_fitted``). The last quarter of the budget at least is ``explore`` (Hypothesis step
programs, shrunk) on one topology, as ``lockchaos explore`` does. Unless ``--full`` is
given, the audit ends at the first hard violation: nothing can make the verdict worse, and a
CI gate wants the answer fast. It reports per capability what its campaigns exercised
(``Exercised``).

The deployment a user gives (``--nodes``, ``--clients``, ``--ttl-ms``, ``--work-ms``) holds in
every phase; left unset, the campaigns run the campaign's defaults, the warm-up its own work
(``WARM_UP_WORK_TTLS``) and explore its own clients and TTL (two, a short one).
"""

from chaos.experiments.audit.judge import AuditResult
from chaos.experiments.audit.plan import (
    AUDIT_OPTIONS,
    DEPLOYMENT,
    EXPLORE_CLIENTS,
    MUST_SURVIVE,
    AuditPlan,
)
from chaos.experiments.audit.runner import run_audit, warm_up

__all__ = [
    "AUDIT_OPTIONS",
    "DEPLOYMENT",
    "EXPLORE_CLIENTS",
    "MUST_SURVIVE",
    "AuditPlan",
    "AuditResult",
    "run_audit",
    "warm_up",
]
