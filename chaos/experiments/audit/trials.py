"""The trial planner: which campaigns an audit runs, in what order, each how long, within its
budget (singles aimed before each command learned, the capabilities, pairs; and again).

When their faults fire is the one generator's (``chaos.nemesis.generator``): each campaign's
schedule is the seeded one its seed makes, in rounds (``Trial.in_order``: in the order listed),
and the planner builds on what that generator promises — a schedule's first fault has
started by ``FIRST_AT_S``'s end (``extend_work_ms``) — and takes its own one choice, the order
of the pairs, from the same ``Seeded`` choices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from itertools import combinations, zip_longest

from chaos.campaign import Campaign
from chaos.checker.exercised import RELOADS
from chaos.checker.renewals import MIN_TOLERANCE_NS, dead_after_ns
from chaos.experiments.audit.plan import AIMED, AuditPlan, Trial
from chaos.experiments.surface import WARM_UP_NEST_DEPTH, Learned
from chaos.history import DISTURBS_NETWORK, KILLS_CLIENT, STALLS_CLIENT
from chaos.locks.context import DEFAULT_SOCKET_TIMEOUT_S
from chaos.nemesis import FAULTS, FaultEvent, FaultSpec, generate
from chaos.nemesis.client_faults import ClientCrash, ClientPause
from chaos.nemesis.fault import AIM_WAIT_S, DURATION, THEN_WORK
from chaos.nemesis.generator import FIRST_AT_S, Seeded
from chaos.nemesis.link_faults import Latency
from chaos.nemesis.server_faults import ScriptFlush

# The fault that makes a lock send a command it sends only on demand (``RELOADS``): a point
# aimed there is armed on every client, then the fault comes (``Trial.in_order``), and the
# first client to run a script after it stops there. Aimed alone, the point waited for a
# ``SCRIPT LOAD`` that redis-py sends only at a script's first run on a fresh node, before
# any fault's first turn: never reached, in 3 audits of 3. A lock that loads its scripts once
# per process (``lua-loaded-once``) sends it again only from a new one: then ``RESTARTED_BY``
# crashes ``c1`` at its next acquire, and its replacement, armed too (``replaced=1``), loads
# them.
REACHED_BY = dict.fromkeys(RELOADS, ScriptFlush.name)
RESTARTED_BY = ClientCrash.name
RESTARTED = "c1"
# The operations a fault can make fail, and how: a holder stopped ``OUTLAST_TTLS`` loses its
# lease, another client takes the lock, and its next extend (or its release) finds its key
# gone. A command the warm-up saw only in such an operation (``Learned.on_failure``: Redis in
# Action's semaphore cleans up with MULTI/ZREM/EXEC when its refresh finds its entry gone) is
# aimed at on every client, then the holder is stopped. Aimed alone, the point waited for an
# extend that no fault made fail: never reached, in 2 audits of 10. (An acquire fails
# without a fault: another client holds the lock.)
FAILED_BY = {"extend": ClientPause.name, "release": ClientPause.name}
CELL_STEP_S = 0.1
# A fresh topology, the checker and the reports, per campaign, at least: the runner measures
# what a campaign of the lock really costs beyond its length (the warm-up's first: five JVMs
# starting on two busy cores took 6 s a campaign), and plans and cuts with that.
CELL_OVERHEAD_S = 0.8
CAMPAIGN_SHARE = 0.6  # of the budget, for the campaigns beyond those that come first
# ... and those (``Trial.required``) no further than this share: the rest of the budget always
# explores. Two audits of a Spring lock (JVMs) took 142 and 144 s of a 60 s budget and
# explored nothing: the campaigns that ran whatever the budget did not fit in it.
REQUIRED_SHARE = 0.75
# A campaign that did not do what it was there for — its fault, alone, had no effect; its point
# was never reached — runs again with a new seed, in up to this many rounds, whatever the
# budget. One reset of 100 ms on a Redisson holder whose renewal, late on a loaded machine,
# went out 4 ms after it ended did nothing, and the audit had no other reset campaign in its
# budget: inconclusive, 1 seed of 10.
AGAIN_ROUNDS = 2
AGAIN_SEED_OFFSET = 2000  # above every planned campaign's and the explorations' (1000 + i)
# The seed of the campaign carrying the faults no campaign ran (the runner's, at the end).
LATE_SEED_OFFSET = 3000
# Extending holders' work, alternately long (extends keep the lease alive through work
# longer than the TTL, every TTL/3) and short (``EXTEND_SHORT_TTLS``: one extend, halfway). In
# a long one a fault that stays on lasts ``OUTLAST_TTLS``: longer than what the last extend
# left of the lease, so another client takes the lock meanwhile, and short enough that the
# holder goes on to extend after it — an extend that does not check whose key it extends then
# claims the other's lock. The long work lasts until a short campaign's first fault has
# started (``FIRST_AT_S``: 0.2–0.6 s in, whatever the TTL) and ``EXTEND_AFTER_FAULT_TTLS``
# more: a pause aimed at the extend fires at the next one (TTL/3), lasts ``OUTLAST_TTLS``, and
# the holder extends again within TTL/3 of its end, with a TTL to spare. With one TTL after
# it (4 TTLs at 200 ms) a pause often ended after the holder's work had, and no extend
# followed (6 of 10 seeds). Counted in TTLs alone (8), the work held a holder 8 s at a 1 s
# TTL: each such campaign took 9.5 s of its 3.
EXTEND_AFTER_FAULT_TTLS = 3.0
EXTEND_SHORT_TTLS = 0.25
OUTLAST_TTLS = 1.25
# Nesting holders' work, in TTLs: the outer hold works a quarter of it after the inner
# release (``Worker.hold``), a window in which a lock whose inner release freed the whole
# lock is taken by another client while the outer lease is still valid. At the default
# (a quarter TTL) that window, 12 ms, was shorter than the waiters' retry.
NEST_WORK_TTLS = 0.5
# A pause aimed inside an acquire, in TTLs: shorter than the lease, which is measured from
# the acquire's invoke. At the fault's default (1.5-3 TTLs, to outlast a holder's lease before
# its release) the paused acquire was granted a lease already lapsed, and what it overlapped
# was soft at most: Redis in Action's fair semaphore, paused before its ZADD, never hard.
# Shorter, the others acquire meanwhile (their back-off is milliseconds) and the paused client
# then acts on what it checked before, its lease still valid: a check-then-act race is hard
# (the truth table's cells pause 0.3 and 0.5 TTLs there).
ACQUIRE_PAUSE_TTLS = 0.3
MIN_CAPABILITY_TRIALS = 3  # capability campaigns that come first, at least
EARLY_CAPABILITY_TRIALS = 3  # of those, run right after the warm-up, before the singles
# In a campaign carrying several faults (``packed``) each is on for this long at most: at a
# 2 s TTL, eight faults of 2.5 s each took 24 s, a budget's campaigns.
CARRIED_ON_S = 1.0
# A failing campaign's latency, in the client's timeouts (``DEFAULT_SOCKET_TIMEOUT_S``): an
# extend or a renewal under it times out. At its default (0.3-0.6 TTLs) every extend of a
# 200 ms lease arrived late and succeeded; a lock whose failed extend deletes its still-valid
# lease was never made to fail one.
FAILING_LATENCY_TIMEOUTS = 1.5
FAILING_THEN_WORK_S = 0.25  # ``failing_then_work_ms``'s spare, beyond the checker's own
# Of those, the one whose default does something no point does (kill a holder mid-work):
# its default campaign runs too.
KEEPS_DEFAULT = (ClientCrash.name,)


def cell_seconds(plan: AuditPlan, first: list[Trial], available_s: float,
                 overhead_s: float = CELL_OVERHEAD_S) -> float:
    """How long each campaign may run: the longest of ``AuditPlan.cell_bounds``, or less
    (a ``CELL_STEP_S`` at a time, never under the shortest) when the campaigns that come
    first (``first``) would not otherwise fit in ``available_s``, each costing
    ``campaign_cost``."""
    shortest, cell = plan.cell_bounds
    while cell > shortest and sum(campaign_cost(plan.trial_campaign(0, trial, cell),
                                                overhead_s) for trial in first) > available_s:
        cell = max(shortest, round(cell - CELL_STEP_S, 3))
    return cell


def _aimed(fault: FaultSpec, op: str, command: str, ttl_ms: int,
           everyone: bool = False) -> FaultSpec:
    """``fault`` aimed at the first ``command`` of each ``op`` (``nth=1``: not the second
    round trip a crash's default aims at), at every client (``everyone``) for a command sent
    only after another fault (``REACHED_BY``, ``FAILED_BY``: whoever sends it) — and at
    their replacements, for one sent on demand (a process loading its scripts); a pause in an
    acquire, unless told how long, ``ACQUIRE_PAUSE_TTLS`` long."""
    name, overrides = fault
    aimed = {**overrides, "command": command, "op": op, "nth": 1}
    if everyone:
        aimed.setdefault("client", "*")
    if everyone and command in REACHED_BY:
        aimed.setdefault("replaced", 1)
    if op == "acquire" and "duration_ms" not in overrides and _stalls_for_a_while(name):
        aimed["duration_ms"] = round(ACQUIRE_PAUSE_TTLS * ttl_ms)
    return name, aimed


def _aim_order(learned: Learned) -> list[tuple[str, str]]:
    """The points the singles aim at: per operation (acquire's first), its commands last-sent
    first. A pause or a crash between a check and the act that trusts it stops the client
    before the act, which comes after; before an operation's first command it only stops the
    client before it asks, as ``client-pause`` and ``client-crash`` alone do. Redis in
    Action's fair semaphore sends eight commands in its acquire, the act (``ZADD``) sixth.
    A command sent only on demand (``RELOADS``, seen after the one that asked for it) or only
    when the operation failed comes after those sent every time (``Learned.every_time``); a
    point the audit need not reach (``Learned.optional``: a client's set-up, a command sent
    once) after every other."""
    points = learned.points()
    order = []
    for op in dict.fromkeys(op for op, _ in points):
        commands = [command for o, command in points if o == op]
        every_time = learned.every_time(op)
        order += [(op, command) for command in [*reversed(every_time),
                                                *(c for c in commands if c not in every_time)]]
    return sorted(order, key=lambda point: learned.optional(*point) is not None)



def single_trials(plan: AuditPlan, learned: Learned) -> list[Trial]:
    """Every tested fault alone; one of ``AIMED`` the user did not aim (no ``command=``)
    once before each command of each operation learned instead (``_aim_order``) — before an
    extend's with holders extending — and a crash also as its default. A command sent only
    after something went wrong is aimed at first, then comes the fault that makes the lock
    send it (``reached_by``)."""
    trials = []
    for fault in plan.tested():
        name, overrides = fault
        if name not in AIMED or "command" in overrides or not learned.points():
            trials.append(Trial([fault]))
            continue
        if name in KEEPS_DEFAULT:
            trials.append(Trial([fault]))
        for op, command in _aim_order(learned):
            then, work_ms = reached_by(op, command, learned, plan.base.ttl_ms)
            aimed = _aimed(fault, op, command, plan.base.ttl_ms, everyone=bool(then))
            trials.append(Trial([aimed, *then], extend=op == "extend", work_ms=work_ms,
                              in_order=bool(then)))
        if (late := _granted_late(fault, learned, plan.base.ttl_ms)) is not None:
            trials.append(Trial([late]))
    return trials


def _granted_late(fault: FaultSpec, learned: Learned, ttl_ms: int) -> FaultSpec | None:
    """For a lock on three nodes or more, ``fault`` (a pause) aimed before the acquire's act
    on its last node (``nth``: every attempt sends it, once its quorum is in hand), on for
    ``OUTLAST_TTLS``: the acquire then outlasts its lease — the keys it set first expire
    meanwhile, and the others take the lock — and a lock must not grant it (Redlock: the
    validity is TTL − time spent − drift, nothing left). The redlock crate computes that in
    an unsigned integer, which wraps: a lease already gone came back valid for 1.8·10¹⁹ ms.
    Aimed before the quorum's node instead, the others took the nodes the paused client had
    not reached and it was refused (never the crate's wrap, in 5 audits of 5); the pauses at
    an acquire's first command last ``ACQUIRE_PAUSE_TTLS``, shorter than the lease on
    purpose. Armed on every client: one client's next acquire is most often one the lock
    refuses (another holds it: nothing in hand at its last node), and the holder's next is
    one it wins."""
    nodes = learned.declared.nodes or 1
    act = learned.every_time("acquire")[-1:]
    if nodes // 2 + 1 >= nodes or not act or not _stalls_for_a_while(fault[0]) \
            or "command" in fault[1]:
        return None
    return fault[0], {**fault[1], "command": act[0], "op": "acquire", "nth": nodes,
                      "duration_ms": round(OUTLAST_TTLS * ttl_ms), "client": "*"}


def reached_by(op: str, command: str, learned: Learned,
               ttl_ms: int) -> tuple[list[FaultSpec], float | None]:
    """The faults that make ``op`` send ``command``, if it is sent only on demand
    (``REACHED_BY``: a script flush, then a client's crash) or only when ``op`` failed
    (``FAILED_BY``: a holder stopped past its lease, with work as long as an extending
    campaign's first, for an extend: a hold to stop it in); none for a command sent every
    time. And the holders' work it needs (None: the campaign's)."""
    if command in REACHED_BY:
        then: list[FaultSpec] = [(REACHED_BY[command], {})]
        if act := learned.every_time("acquire"):
            then.append((RESTARTED_BY, {"command": act[-1], "op": "acquire", "nth": 1,
                                        "client": RESTARTED}))
        return then, None
    if op in FAILED_BY and learned.only_on_failure(op, command):
        stop = (FAILED_BY[op], {"duration_ms": round(OUTLAST_TTLS * ttl_ms)})
        return [stop], extend_work_ms(0, ttl_ms) if op == "extend" else None
    return [], None


def capability_trials(plan: AuditPlan, learned: Learned) -> list[Trial]:
    """Every tested fault with holders extending (a lock that has extend; a lock that renews
    in the background: holding as long): first those that stop a client for a while, with
    long work, then the others with work alternately long and short against the TTL
    (``extend_work_ms``); interleaved with every tested fault with holders nesting (a
    reentrant lock, ``NEST_WORK_TTLS``). One of ``AIMED`` aims at the last command of the
    operation exercised: the extend's (the release's without one), the release's — the last
    it sends every time (``Learned.every_time``), not a ``SCRIPT LOAD`` seen after its first
    run, nor the clean-up of an extend that found its lease gone."""
    declared, tested = learned.declared, plan.tested()

    def aim(fault: FaultSpec, op: str) -> FaultSpec:
        commands = learned.every_time(op)
        if fault[0] not in AIMED or "command" in fault[1] or not commands:
            return fault
        return _aimed(fault, op, commands[-1], plan.base.ttl_ms)

    def extending(index: int, fault: FaultSpec) -> Trial:
        work_ms = extend_work_ms(index, plan.base.ttl_ms)
        name, overrides = aim(fault, "extend" if declared.extend else "release")
        if (work_ms > plan.base.ttl_ms and "duration_ms" not in overrides
                and FAULTS[name].parameters.get("duration_ms") is DURATION):
            overrides = {**overrides, "duration_ms": round(OUTLAST_TTLS * plan.base.ttl_ms)}
        return Trial([(name, overrides)], extend=declared.extend, work_ms=work_ms)

    # First the faults that stop the holder for a while (a pause; one aimed at the extend's
    # command, so always mid-work, first), each with long work: the holder outlives its
    # lease, another client takes the lock, and the holder then extends again — the one
    # history that tells an extend checking its owner from one that does not. Second, in
    # one campaign taking turns, those that make its commands fail (``failing_overrides``),
    # with long work too: its extends (or its watchdog's renewals) fail while it works, and
    # it works on after the heal — what a lock whose failed extend deleted its still-valid
    # lease, or whose renewal thread died, does next. The others after, alternately long
    # and short.
    stalling = sorted((fault for fault in tested if _stalls_for_a_while(fault[0])),
                      key=lambda fault: fault[0] not in AIMED)
    failing = [fault for fault in tested if _fails_commands(fault[0])]
    others = [fault for fault in tested if fault not in stalling and fault not in failing]
    failed = [Trial([extending(0, failing_overrides(fault, plan.base.ttl_ms)).faults[0]
                     for fault in failing], extend=declared.extend,
                    work_ms=extend_work_ms(0, plan.base.ttl_ms))] if failing else []
    # A lock that renews in the background gets the same campaigns: its watchdog, not the
    # holder, extends then (a renewal that does not check its owner shows the same way).
    stopped = [extending(0, fault) for fault in stalling]
    extend_trials = [*stopped[:1], *failed, *stopped[1:],
                     *(extending(i, fault) for i, fault in enumerate(others))] \
        if declared.extend or declared.renews else []
    nest_ms = NEST_WORK_TTLS * plan.base.ttl_ms
    nesting = [Trial([aim(fault, "release")], work_ms=nest_ms, nest_depth=WARM_UP_NEST_DEPTH)
               for fault in tested] if declared.reentrant else []
    mixed = [trial for pair in zip_longest(extend_trials, nesting) for trial in pair if trial]
    return mixed


def extend_work_ms(index: int, ttl_ms: int) -> float:
    """The ``index``-th extending campaign's work: long, then short, alternately."""
    if index % 2:
        return EXTEND_SHORT_TTLS * ttl_ms
    return FIRST_AT_S[1] * 1000 + EXTEND_AFTER_FAULT_TTLS * ttl_ms


def _stalls_for_a_while(name: str) -> bool:
    """A fault that stops a client for its ``duration_ms`` (a pause, a pause point)."""
    fault = FAULTS[name]
    return STALLS_CLIENT in fault.effects and fault.parameters.get("duration_ms") is DURATION


def _fails_commands(name: str) -> bool:
    """A fault on a client's links, under which its commands fail (a partition, a reset, a
    lost reply; a latency past its timeout: ``failing_overrides``)."""
    return DISTURBS_NETWORK in FAULTS[name].effects


def failing_overrides(fault: FaultSpec, ttl_ms: int) -> FaultSpec:
    """``fault`` as a failing campaign has it: a latency the user did not set past the
    client's timeout (``FAILING_LATENCY_TIMEOUTS``), on long enough for a holder's extend
    every TTL/3 to meet it whole and the lease to lapse (``OUTLAST_TTLS`` more); the others
    as they are (their commands fail at any setting); each with the holder it hits working
    through it and on after the heal (``then_work_ms``: ``failing_then_work_ms``)."""
    name, overrides = fault
    then = {THEN_WORK: failing_then_work_ms(ttl_ms)} \
        if THEN_WORK in FAULTS[name].parameters else {}
    if name != Latency.name or "latency_ms" in overrides:
        return name, {**then, **overrides}
    latency_ms = round(FAILING_LATENCY_TIMEOUTS * DEFAULT_SOCKET_TIMEOUT_S * 1000)
    return name, {"latency_ms": latency_ms,
                  "duration_ms": latency_ms + round(OUTLAST_TTLS * ttl_ms), **then, **overrides}


def failing_then_work_ms(ttl_ms: int) -> int:
    """How long a holder a failing fault hit works on after the heal: what the checker waits
    for before it calls a watchdog that never renewed again dead (``dead_after``: a TTL, the
    client's socket timeout, 250 ms), and 250 ms more and ``FAILING_THEN_WORK_S`` to spare
    on a loaded machine. A holder hit late in its section had let go first: the watchdog of
    python-redis-lock died of a failed renewal in every audit, and every audit passed."""
    dead_ns = dead_after_ns(ttl_ms * 1_000_000, DEFAULT_SOCKET_TIMEOUT_S)
    return round((dead_ns + MIN_TOLERANCE_NS) / 1e6 + FAILING_THEN_WORK_S * 1000)


def again_trials(trials: list[Trial], untested: set[str], round_: int) -> list[Trial]:
    """The first of ``trials`` there for each of ``untested`` (a fault that had no effect, a
    point never reached), to run again in round ``round_``, each with a new seed; one that
    ``carries`` several faults, with those of them only (one alone runs as its single
    would: a carrying campaign's length at a 2 s TTL, 24 s, never fitted again)."""
    again, left = [], set(untested)
    for trial in trials:
        if trial.tests() & left:
            if trial.carries:  # those of its faults only, one alone a plain single
                faults = [fault for fault in trial.faults if fault[0] in left]
                if works_failing(trial):  # on holders at their usual work, as they come
                    faults = [(name, {key: value for key, value in overrides.items()
                                      if key != THEN_WORK}) for name, overrides in faults]
                    trial = replace(trial, work_ms=None)
                trial = replace(trial, faults=faults, in_order=len(faults) > 1,
                                length_s=trial.length_s if len(faults) > 1 else None)
            left -= trial.tests()
            again.append(trial)
    return [replace(trial, again=True, seed_offset=AGAIN_SEED_OFFSET + round_ * len(trials) + index)
            for index, trial in enumerate(again)]


def plan_trials(plan: AuditPlan, learned: Learned, *, overhead_s: float = CELL_OVERHEAD_S,
                spent_s: float = 0.0) -> tuple[list[Trial], float]:
    """The campaigns to run, in order, and how long each may run (``cell_seconds``).

    First those that come first (``Trial.required``): the singles of the faults added to the
    defaults (``AuditPlan.added``: the user suspects them, or the lock's commands call for
    them — at a 1 s TTL the early capability campaigns' long holds took 19 s, and a
    ``+client-clock`` that broke the lock in its first second waited behind them), the first
    ``EARLY_CAPABILITY_TRIALS`` capability campaigns, every other single but those aimed at a
    point the audit need not reach, and the capability campaigns that stop or fail a holder
    at work (at least ``MIN_CAPABILITY_TRIALS``). Then, if time: the optional points' singles,
    the other capability campaigns, pairs in a seeded order.

    Each costs its length and ``overhead_s`` (what the warm-up showed a campaign of this lock
    costs beyond its length), and the budget left (``spent_s`` of it spent) runs those that
    come first within ``REQUIRED_SHARE`` of it, the others within ``CAMPAIGN_SHARE``. When
    those that come first do not fit, the singles of the faults added and the early
    capability campaigns run, as many as fit, then one campaign carrying every tested fault
    none of those had (``packed``): each fault still fires once; then the rest of them, as
    the time left allows (the runner lists those it had no time for as not tested)."""
    singles = single_trials(plan, learned)
    capabilities = capability_trials(plan, learned)
    tested = plan.tested()
    pairs = [Trial(list(pair)) for pair in combinations(tested, 2)]
    Seeded(plan.base.seed).shuffle(pairs)
    seeded = [replace(trial, seed_offset=i) for i, trial in
              enumerate([*singles, *capabilities, *pairs])]
    singles, capabilities, pairs = (seeded[:len(singles)],
                                    seeded[len(singles):len(singles) + len(capabilities)],
                                    seeded[len(singles) + len(capabilities):])
    capabilities = [packed(plan, trial, plan.cell_bounds[1], plan.budget_s * REQUIRED_SHARE)
                    if len(trial.faults) > 1 else trial for trial in capabilities]
    leading = [i for i, trial in enumerate(capabilities) if _leads(trial, plan.base.ttl_ms)]
    first_capabilities = min(len(capabilities),
                             max(MIN_CAPABILITY_TRIALS, leading[-1] + 1 if leading else 0))
    early = capabilities[:min(EARLY_CAPABILITY_TRIALS, first_capabilities)]
    late_first = capabilities[len(early):first_capabilities]
    optional = [trial for trial in singles if (aim := trial.aim()) and learned.optional(*aim)]
    added = plan.added()
    named = [replace(trial, named=True) for trial in singles
             if trial.faults[0][0] in added and trial not in optional]
    others = [trial for trial in singles if trial.faults[0][0] not in added
              and trial not in optional]
    first = [*named, *early, *others, *late_first]
    later = [*optional, *capabilities[first_capabilities:], *pairs]

    # Their campaigns as long as lets them fit in the campaigns' share; they may run on to
    # ``REQUIRED_SHARE`` (a loaded machine), explore keeping the rest.
    cell_s = cell_seconds(plan, first, plan.budget_s * CAMPAIGN_SHARE - spent_s - overhead_s,
                          overhead_s)
    available = plan.budget_s * REQUIRED_SHARE - spent_s - overhead_s

    def cost(trial: Trial) -> float:
        return campaign_cost(plan.trial_campaign(0, trial, cell_s), overhead_s)

    kept = _prefix(first, cost, available)
    if len(kept) < len(first):
        # The faults added and the early capability campaigns that fit beside one campaign
        # carrying every fault those did not, in which each fires (as many of them as leave
        # it room: at a 2 s TTL the early campaign that finds an extend's bug, 17 s, and one
        # carrying the other eight faults, 17 s, fit in 36), then the rest of those that
        # come first, as the time left allows: a campaign often costs less than the
        # warm-up's first did (a driver's processes start faster once cached).
        # The campaign that fails a working holder's commands goes first of the early ones,
        # and is the last of them to go: at a 1 s TTL it never fitted beside the carrying
        # one, and python-redis-lock's watchdog, dead after its first failed renewal,
        # passed every audit.
        ahead = [*named, *sorted(early, key=lambda trial: not works_failing(trial))]
        for count in range(len(ahead), -1, -1):
            head = _prefix(ahead[:count], cost, available - cell_s - overhead_s)
            # A fault alone in one of them has had its turn; the network faults taking turns
            # on holders working long have not: a holder whose library stops extending after
            # three (pottery's) sent nothing, and "partition had no effect on the lock".
            carried = {trial.faults[0][0] for trial in head if len(trial.faults) == 1}
            rest = [fault for fault in tested if fault[0] not in carried]
            room = available - sum(map(cost, head)) - overhead_s
            carried_rest = [carrying(plan, learned, rest, len(seeded), cell_s, room)] \
                if rest else []
            if all(map(partial(_all_fire, plan), carried_rest)):
                break
        kept = [*head, *carried_rest, *(trial for trial in first if trial not in head)]
    extra = plan.budget_s * CAMPAIGN_SHARE - spent_s - sum(map(cost, kept))
    return [*(replace(trial, required=True) for trial in kept),
            *_prefix(later, cost, extra)], cell_s


def campaign_cost(campaign: Campaign, overhead_s: float) -> float:
    """What running ``campaign`` is expected to take: its length, its holders' work (one
    may begin as it ends: the campaign waits for it), and ``overhead_s``."""
    return campaign.duration_s + campaign.holder_work_ms / 1000 + overhead_s


def _prefix(trials: list[Trial], cost: Callable[[Trial], float], room_s: float) -> list[Trial]:
    """The first of ``trials`` whose costs add up to ``room_s`` at most."""
    total = 0.0
    for index, trial in enumerate(trials):
        total += cost(trial)
        if total > room_s:
            return trials[:index]
    return trials


def _outlasting(fault: FaultSpec, ttl_ms: int) -> FaultSpec:
    """``fault`` on for ``OUTLAST_TTLS``, and ``CARRIED_ON_S`` at most (if it lasts a while
    and nobody said how long)."""
    name, overrides = fault
    if "duration_ms" in overrides or FAULTS[name].parameters.get("duration_ms") is not DURATION:
        return fault
    return name, {**overrides,
                  "duration_ms": round(min(OUTLAST_TTLS * ttl_ms, CARRIED_ON_S * 1000))}


def _all_fire(plan: AuditPlan, trial: Trial) -> bool:
    """Whether each fault of ``trial`` fires in its seeded schedule, as long as it runs, with
    room to act after its first firing ends (``ACT_ROOM_TTLS`` and the aim's wait for a
    holder, the work it asks of its holder after the heal: ``then_work_ms``, and for a point
    the holders' work before they reach it): a slow-work fired 4 ms before Redisson's
    carrying campaign ended "had no effect on the lock in any run", and a crash aimed at
    sherlock's release, its holders working 3.6 s, too."""
    length = plan.trial_length(trial, 0.0)
    schedule = generate(trial.faults, seed=plan.base.seed + (trial.seed_offset or 0),
                        duration_s=length, ttl_ms=plan.base.ttl_ms, in_order=trial.in_order)
    first: dict[str, FaultEvent] = {}
    for event in schedule.events:
        first.setdefault(event.fault, event)
    act_s = ACT_ROOM_TTLS * plan.base.ttl_ms / 1000
    work_s = (trial.work_ms or 0) / 1000
    # a point is reached when the holder gets to its command: after its work, at worst
    room_s = {name: AIM_WAIT_S + max(act_s, overrides.get(THEN_WORK, 0) / 1000)
              + (work_s if "command" in overrides else 0) for name, overrides in trial.faults}
    return set(first) >= {name for name, _ in trial.faults} and all(
        event.at_s + event.duration_s + room_s[event.fault] <= length
        for event in first.values())


def carry_now(rest: list[Trial], unfired: set[str], costs: list[float], now_s: float,
              end_s: float, ttl_ms: int) -> bool:
    """Whether the faults no campaign fired yet (``unfired``) are carried by one campaign
    now, before ``rest[0]``: one of them would not be reached by ``end_s`` by the campaigns
    left that come first (``rest``, costing ``costs`` each), from ``now_s`` — unless
    ``rest[0]`` is a capability campaign that comes first (``_leads``: a holder stopped past
    its lease, or made to fail its extends, at work). Those find what no carrying campaign
    can (an extend whose failure deletes a still-valid lease, a watchdog that dies); carried
    ahead of them on a loaded machine, the one that failed extends was never fitted, and an
    audit of such a lock passed (CI, and python-redis-lock in every audit of the corpus)."""
    if not rest or _leads(rest[0], ttl_ms):
        return False
    at, reached = now_s, dict[str, float]()
    for trial, cost in zip(rest, costs, strict=True):
        if trial.required:
            at += cost
            reached.update((name, at) for name, _ in trial.faults if name not in reached)
    return any(reached.get(name, float("inf")) > end_s for name in unfired)


def _leads(trial: Trial, ttl_ms: int) -> bool:
    """A capability campaign that comes first: a holder working long (extending, or renewing
    in the background) stopped past its lease, or made to fail its extends."""
    name = trial.faults[0][0]
    return (trial.nest_depth == 1 and trial.work_ms == extend_work_ms(0, ttl_ms)
            and (_stalls_for_a_while(name) or _fails_commands(name)))


def carrying(plan: AuditPlan, learned: Learned, faults: list[FaultSpec], seed_offset: int,
             cell_s: float, room_s: float) -> Trial:
    """One campaign carrying ``faults`` the budget could not try one by one (``packed``),
    those of ``AIMED`` aimed before the release's act (``Learned.every_time``): their
    defaults aim at a second round trip of an acquire and a release's ``DEL``, which a lock
    with neither never reaches — a crash in such a campaign "had no effect on the lock".

    A lock that renews in the background gets the faults on its holders' links at their
    failing settings (``failing_overrides``: its holder works through them and on after the
    heal, its watchdog talking to Redis all along): at a 1 s TTL the campaign that fails a
    working holder's renewals never fitted beside this one, and python-redis-lock's
    watchdog, dead after its first failed renewal, passed every audit. (A lock that only
    extends gets them as they are: a holder whose library stops extending after three,
    pottery's, held silent through a partition, and it "had no effect on the lock".)"""
    act = learned.every_time("release")[-1:]
    ttl_ms = plan.base.ttl_ms
    aimed = [_aimed(fault, "release", act[0], ttl_ms)
             if act and fault[0] in AIMED and "command" not in fault[1] else fault
             for fault in faults]
    if learned.declared.renews:
        aimed = [failing_overrides(fault, ttl_ms) if _fails_commands(fault[0]) else fault
                 for fault in aimed]
    return packed(plan, Trial(aimed, seed_offset=seed_offset), cell_s, room_s)


def works_failing(trial: Trial) -> bool:
    """The capability campaign that makes a working holder's commands fail, the faults on
    its links taking turns (``capability_trials``)."""
    return len(trial.faults) > 1 and trial.work_ms is not None and all(
        _fails_commands(name) for name, _ in trial.faults)


ACT_ROOM_TTLS = 2  # a carried fault's room to act after its first firing, past the aim's wait
STRETCH = 1.1  # ``packed``'s lengthening, a step: by a quarter, a 20 s campaign took 22.4
STRETCHES = 96  # ``packed``'s lengthenings at most: 1.5 s × 1.1**96 is past any budget


def packed(plan: AuditPlan, trial: Trial, cell_s: float, room_s: float) -> Trial:
    """``trial``, several faults taking turns in order, those that kill a client last, each
    on for ``OUTLAST_TTLS`` at most unless told (at a 2 s TTL a partition's default, up to
    10 s, took a budget's campaigns alone), as long as it takes every one of them to fire
    once in its seeded schedule — from ``cell_s``, ``STRETCH`` longer at a time, up to
    ``room_s``. A crash first left a lock with no expiry wedged, and every fault after it,
    waiting for a holder to hit, never fired."""
    faults = sorted((_outlasting(fault, plan.base.ttl_ms) for fault in trial.faults),
                    key=lambda fault: _carried_rank(fault[0]))
    trial = replace(trial, faults=faults, in_order=len(faults) > 1, length_s=cell_s)
    # Rounded as each length is: 9.481 < 9.481000000000002 stretched 9.481 to itself forever
    # (an audit under load hung here). Bounded too: from ``MIN_CELL_S`` by ``STRETCH`` at
    # a time, ``STRETCHES`` reach past the longest budget.
    longest = round(max(cell_s, room_s), 3)
    for _ in range(STRETCHES):
        if _all_fire(plan, trial) or trial.length_s is None or trial.length_s >= longest:
            break
        trial = replace(trial, length_s=round(min(longest, trial.length_s * STRETCH), 3))
    return trial


def _carried_rank(name: str) -> int:
    """Where ``name`` goes in a campaign carrying several faults: those that need a holder
    at work to hit (a network or a server fault) first, those that stop one (a pause, slow
    work) after, those that kill one last — a latency after a pause hit the paused holder,
    which sent nothing: "latency had no effect on the lock in any run"."""
    effects = FAULTS[name].effects
    return 2 if KILLS_CLIENT in effects else 1 if STALLS_CLIENT in effects else 0
