"""The one pass over the events that turns a history into a ``Timeline``.

Everything here is per-process bookkeeping: a process's hold, its outstanding operation and
its crashes only ever depend on that process's own earlier events. Relations *between*
processes (overlaps, gaps, who released whose key) are computed afterwards from the sorted
timeline. So the pass does not need the whole history sorted by time, only each process's
events in time order: a history file almost always is (every process stamps and writes its
own events in sequence), and then it can be checked while streaming, never held in memory.
When a process's events do go backwards (a watchdog thread racing its main thread, say),
``scan`` raises ``OutOfOrder`` and the caller sorts the whole history first.

This loop runs once per event, millions of times: it keeps its state in locals and small
slot objects and decodes an event's ``value`` only for the few kinds of events that need it.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any

from chaos.checker.holds import NEVER, REACQUIRE, UNTIL_DEADLINE, Hold, Level
from chaos.checker.reader import AnyEvent, has_value, value_of
from chaos.checker.timeline import (
    Dropped,
    FaultSpan,
    FinalKey,
    LockBugs,
    PauseReached,
    Raised,
    Release,
    Timeline,
    UnsureAcquire,
)
from chaos.history import (
    ACQUIRE,
    COMMAND,
    CRASH,
    DROPPED,
    EFFECT,
    END,
    EXCLUSIVE,
    EXTEND,
    FAIL,
    FINAL_KEY,
    FINAL_READ,
    GAVE_UP,
    HARNESS,
    INFO,
    INVALIDATED,
    INVOKE,
    KEPT,
    LEASE,
    LOCK_READY,
    LOCK_UNUSABLE,
    NEMESIS,
    OK,
    PAUSE_POINT,
    RELEASE,
    RENEW,
    REVOKED,
    STALE_TOKEN,
    STALL,
    START,
    STOP,
    WRITE,
)


class OutOfOrder(Exception):
    """A process's events are not in time order; sort the history and scan again."""


class _Process:
    """What the pass remembers about one process id between its events."""

    __slots__ = ("first", "hold", "last", "name", "op", "op_t", "op_token", "op_value",
                 "ops_done", "ops_invoked", "released")

    def __init__(self, name: str, t: int) -> None:
        self.name = name  # one string per process for every record, not one per event
        self.first = t
        self.last = t
        self.hold: Hold | None = None
        self.op: str | None = None  # the outstanding invoke's f and time (and for an extend
        # its token, for a write its op id)
        self.op_t = t
        self.op_token: str | None = None
        self.op_value: Any = None
        # What the outstanding release invoke ended: a hold, or a nested level inside one
        self.released: Hold | Level | None = None
        # When its lock operations were invoked and completed (``Timeline.in_flight``)
        self.ops_invoked: array[int] = array("q")
        self.ops_done: array[int] = array("q")

    def completed(self, t: int) -> None:
        """Its outstanding operation completed at ``t`` (a lock operation is remembered)."""
        if self.op in _LOCK_OPS:
            self.ops_invoked.append(self.op_t)
            self.ops_done.append(t)
        self.op = None


def scan(events: Iterable[AnyEvent]) -> Timeline:
    """Build the (sealed) timeline of ``events``; each process's events must be in time
    order, else ``OutOfOrder`` is raised."""
    timeline = Timeline()
    procs: dict[str, _Process] = {}
    outcomes = timeline.outcomes  # completions by type and f; invokes are only counted
    oks, fails, infos = (outcomes.setdefault(typ, {}) for typ in (OK, FAIL, INFO))
    invoked = 0
    holds = timeline.holds
    failed_at = timeline.failed_at
    failed_invoked = timeline.failed_invoked
    failed_by = timeline.failed_by
    acked_ops, acked_at, acked_by = timeline.acked_ops, timeline.acked_at, timeline.acked_by
    lease_from_ttl: list[tuple[Hold, int, int]] = []  # (hold, lease index, base time)
    revoked: list[tuple[Hold, int]] = []  # (hold, its revoking extend's invoke), applied last
    open_faults: dict[str, FaultSpan] = {}
    stale = 0
    shaped = False  # the run's lock is not a mutex: holds carry a mode and permits
    only_mode = EXCLUSIVE  # a hold's mode when its acquire said none (the lock's, if one)
    p_last = ""
    st = _Process("", 0)

    for ev in events:
        t = ev.t
        p = ev.process
        if p != p_last:  # consecutive events often share a process: skip the dict
            p_last = p
            found = procs.get(p)
            if found is None:
                found = procs[p] = _Process(p, t)
            st = found
        if t < st.last:
            raise OutOfOrder(f"{p}'s events are not in time order")
        st.last = t
        typ = ev.type
        f = ev.f

        if typ == INVOKE:
            invoked += 1
            st.op = f
            st.op_t = t
            if f == WRITE:
                st.op_value = value_of(ev.value)
            elif f == RELEASE:
                hold = st.hold
                level = None if hold is None or hold.levels is None else hold.open_level()
                if hold is not None and level is not None:  # an inner release: it still holds
                    level.end = t
                    st.released = level
                    if not level.reentered:  # its own key's lease ends with it
                        hold.leases.append((t, level.outer_deadline))
                else:
                    st.released = hold
                    if hold is not None:
                        hold.end = t
                        hold.ended_by = RELEASE
                        st.hold = None
            elif f == EXTEND:
                st.op_token = ev.token
            elif f == ACQUIRE:
                # Raw (usually absent): whether it is nested, its mode and permits, decoded
                # when needed.
                st.op_value = ev.value
            continue

        if typ == OK:
            try:
                oks[f] += 1
            except KeyError:
                oks[f] = 1
            if f == ACQUIRE:
                hold = st.hold
                if (hold is not None and not shaped and st.op == ACQUIRE
                        and _nested(st.op_value)):
                    _nest(hold, t, ev, st.op_t, lease_from_ttl)  # the hold goes on
                else:
                    if hold is not None:
                        hold.end = t
                        hold.ended_by = REACQUIRE
                    valid_until = ev.valid_until
                    hold = st.hold = Hold(
                        st.name, ev.token, st.op_t if st.op == ACQUIRE else t, t,
                        [(t, NEVER if valid_until is None else valid_until)],
                    )
                    holds.append(hold)
                    if valid_until is None:
                        lease_from_ttl.append((hold, 0, hold.invoked))
                    if shaped:
                        _shape(hold, st.op_value if st.op == ACQUIRE else None, only_mode)
            elif f == WRITE:
                op_id = st.op_value if st.op == WRITE else value_of(ev.value)
                if isinstance(op_id, str):
                    acked_ops.append(op_id)
                    acked_at.append(t)
                    acked_by.append(st.name)
            elif f == RELEASE:
                if st.op == RELEASE:
                    released = st.released
                    kept = _kept(ev) if has_value(ev.value) else None
                    if released is None:
                        if kept is None:
                            timeline.orphan_releases.append(
                                Release(st.name, st.op_t, t, None))
                    else:
                        released.released = OK
                        if kept is None:  # it removed a key (a kept one removed none)
                            released.release_acked = t
                        elif isinstance(released, Hold):
                            released.kept_until = kept
            elif f in (EXTEND, RENEW):
                if f == RENEW:
                    _renewal_sent(timeline, st.name, t, ev)
                hold = st.hold
                extending = f == EXTEND and st.op == EXTEND
                token = ev.token or (st.op_token if extending else None)
                if hold is not None and (token == hold.token or (
                        hold.levels is not None and hold.has_token(token))):
                    _add_lease(hold, t, ev.valid_until, st.op_t if extending else t,
                               lease_from_ttl)
                    if extending:
                        timeline.extended.add((st.name, t))
            elif f == FINAL_READ:
                final = value_of(ev.value)
                if isinstance(final, list):
                    timeline.final_read = (t, [str(op) for op in final])
            elif f == FINAL_KEY:
                _final_key(timeline, value_of(ev.value))
        elif typ == FAIL:
            try:
                fails[f] += 1
            except KeyError:
                fails[f] = 1
            if f == ACQUIRE:
                failed_at.append(t)
                failed_invoked.append(st.op_t if st.op == ACQUIRE else t)
                failed_by.append(st.name)
                if shaped:
                    timeline.failed_permits.append(
                        _permits(st.op_value) if st.op == ACQUIRE else 1)
                if ev.error == GAVE_UP:
                    timeline.gave_up.append((st.name, failed_invoked[-1], t))
                hold = st.hold  # a nested acquire, refused while its own lease was valid
                if hold is not None and hold.leases[-1][1] > t and _nested(ev.value):
                    timeline.refused_own.append(
                        (st.name, st.op_t if st.op == ACQUIRE else t, t, hold.start)
                    )
            elif f == RENEW:
                _renewal_sent(timeline, st.name, t, ev)
            elif ev.error == STALE_TOKEN:
                stale += 1
            elif f == RELEASE and st.op == RELEASE and st.released is not None:
                st.released.released = FAIL
            elif f == EXTEND and st.op == EXTEND and has_value(ev.value):
                _lease_lost(st, ev, t, revoked)
        elif typ == INFO:
            infos[f] = infos.get(f, 0) + 1
            if f == EXTEND and st.op == EXTEND and has_value(ev.value):
                _lease_lost(st, ev, t, revoked)
            _info(timeline, st, open_faults, ev)
            if f == START and p == HARNESS:
                shaped = not timeline.mutex
                modes = timeline.modes
                only_mode = modes[0] if len(modes) == 1 else EXCLUSIVE
        else:  # not in the vocabulary: counted, otherwise ignored
            other = outcomes.setdefault(typ, {})
            other[f] = other.get(f, 0) + 1
        if f == st.op:
            st.completed(t)

    timeline.events = invoked + sum(n for by_f in outcomes.values() for n in by_f.values())
    timeline.stale_rejected = stale
    if procs:
        if not timeline.has_start_event:
            timeline.start = min(st.first for st in procs.values())
        timeline.end = max(st.last for st in procs.values())
    for st in procs.values():
        st.completed(timeline.end)  # an operation still in flight when the history ends
        if st.ops_invoked:
            timeline.ops_invoked[st.name] = st.ops_invoked
            timeline.ops_done[st.name] = st.ops_done
    ttl = timeline.ttl_ns
    if ttl is not None:
        for hold, index, base in lease_from_ttl:
            hold.leases[index] = (hold.leases[index][0], base + ttl)
    for hold, at in revoked:  # once every lease is filled in: a revocation cuts them all
        hold.revoke(at)
    timeline.seal()
    return timeline


def _info(
    timeline: Timeline, st: _Process, open_faults: dict[str, FaultSpan], ev: AnyEvent
) -> None:
    """The rare events: indeterminate outcomes, crashes, pause points, faults, run start."""
    t, p, f = ev.t, st.name, ev.f
    if f in _LOCK_OPS and ev.error is not None:
        _raised(timeline, p, t, f, ev)
    if f == ACQUIRE:
        invoked = st.op_t if st.op == ACQUIRE else t
        timeline.unsure_acquires.append(UnsureAcquire(p, invoked, error=ev.error))
    elif f == RELEASE and st.op == RELEASE:
        hold = st.released
        if hold is not None:
            hold.released = INFO
        outer = hold if isinstance(hold, Hold) else st.hold
        timeline.unanswered_releases.append(Release(p, st.op_t, t, outer, answered=False))
    elif f == CRASH:
        timeline.crashes.append((p, t))
        if st.hold is not None:
            st.hold.end = t
            st.hold.ended_by = CRASH
            st.hold = None
        if st.op == ACQUIRE:
            timeline.unsure_acquires.append(UnsureAcquire(p, st.op_t, crashed=t))
        st.completed(t)  # a fresh process may take the id over: it starts with nothing
        st.released = None
        first = timeline.crash_error
        if ev.error is not None and (first is None or t < first.t):
            timeline.crash_error = Raised(p, t, ev.error, ev.traceback)
        crash = value_of(ev.value)
        if isinstance(crash, dict) and crash.get("fault"):
            timeline.kills.append((str(crash["fault"]), p, t))
    elif f == LOCK_UNUSABLE:
        timeline.unusable.append(Raised(p, t, ev.error or "unknown error", ev.traceback))
    elif f == PAUSE_POINT:
        point = value_of(ev.value) or {}
        reached = PauseReached(t, str(point.get("command", "?")), str(point.get("action", "?")))
        timeline.pause_points.setdefault(p, []).append(reached)
        if point.get("fault"):
            verb = "crashed" if reached.action == "crash" else "stopped"
            timeline.fault_effects.setdefault(str(point["fault"]), []).append(
                f"{p} {verb} before {reached.command}")
    elif f == STALL:
        since = (value_of(ev.value) or {}).get("since")
        if isinstance(since, int) and since < t:
            timeline.stalls.setdefault(p, []).append((since, t))
    elif f == EFFECT:
        effect = value_of(ev.value) or {}
        timeline.fault_effects.setdefault(str(effect.get("id")), []).append(
            str(effect.get("what", "")))
    elif f == COMMAND:
        sent = value_of(ev.value) or {}
        commands = timeline.surface.setdefault(str(sent.get("op")), [])
        if (command := str(sent.get("command"))) not in commands:
            commands.append(command)
    elif f == LOCK_READY:
        ready = value_of(ev.value)
        timeline.can_extend |= isinstance(ready, dict) and ready.get("extend") is True
    elif p == NEMESIS:
        _nemesis(timeline, open_faults, t, f, value_of(ev.value) or {})
    elif p == HARNESS and f == START:
        timeline.params = value_of(ev.value) or {}
        timeline.has_start_event = True
        timeline.start = t
    elif p == HARNESS and f == END:
        timeline.has_end_event = True


_LOCK_OPS = (ACQUIRE, RELEASE, EXTEND)


def _final_key(timeline: Timeline, said: Any) -> None:
    """The lock's key at the end of the run (``final-key``): its name, and its PTTL on each
    node that had it."""
    if not isinstance(said, dict) or not isinstance(pttl := said.get("pttl"), dict):
        return
    timeline.final_key = FinalKey(str(said.get("key")), {
        str(node): left for node, left in pttl.items() if isinstance(left, int)})


def _kept(ev: AnyEvent) -> int | None:
    """Until when a release ``ok`` kept its key on purpose (``value.lease`` ``kept``): its
    ``valid_until``, else ``UNTIL_DEADLINE``; None for a release that removed its key."""
    said = value_of(ev.value)
    if not isinstance(said, dict) or said.get(LEASE) != KEPT:
        return None
    return UNTIL_DEADLINE if ev.valid_until is None else ev.valid_until


def _lease_lost(st: _Process, ev: AnyEvent, t: int, revoked: list[tuple[Hold, int]]) -> None:
    """An extend whose completion says its lease is beyond the client's reach
    (``value.lease``): ``revoked`` (the lock gave it up: valid no more from the extend's invoke,
    applied once the scan is done) or ``invalidated`` (nothing more can be sent for it: its key
    stays until its deadline). Either way the client let go: its hold ends here."""
    said = value_of(ev.value)
    lost = said.get(LEASE) if isinstance(said, dict) else None
    hold = st.hold
    if lost not in (REVOKED, INVALIDATED) or hold is None or not hold.has_token(
            ev.token or st.op_token):
        return
    hold.end = t
    hold.ended_by = lost
    st.hold = None
    if lost == REVOKED:
        revoked.append((hold, st.op_t))
    else:
        hold.kept_until = UNTIL_DEADLINE


def _nested(raw: Any) -> bool:
    """Whether an acquire event's ``value`` marks it nested (``{"depth": d}``)."""
    value = value_of(raw)
    return isinstance(value, dict) and "depth" in value


def _nest(hold: Hold, t: int, ev: AnyEvent, invoked: int,
          lease_from_ttl: list[tuple[Hold, int, int]]) -> None:
    """A nested grant of a mutex (an acquire marked nested, granted while its client holds):
    one more level inside ``hold``, and a new deadline from ``t`` on, as an extend's — the
    lock vouched for its holder again (a reentrant lock re-arms its one key's TTL). A grant
    that came back after the hold's deadline had passed vouches only for its own level
    (``Level.reentered``).

    Only a mutex: it has one key, so a grant to its holder can only be that key re-entered.
    A lock that is not one (a semaphore, a read-write lock) may grant its holder a second,
    independent permit with a lease of its own, which neither renews the first nor is
    released with it; its nested grant still ends the hold (``REACQUIRE``), as it always did.
    """
    deadline = hold.leases[-1][1]
    level = Level(ev.token, t) if deadline >= t else Level(
        ev.token, t, reentered=False, outer_deadline=deadline)
    if hold.levels is None:
        hold.levels = [level]
    else:
        hold.levels.append(level)
    _add_lease(hold, t, ev.valid_until, invoked, lease_from_ttl)


def _permits(value: Any) -> int:
    """The permits an acquire invoke's ``value`` asked (absent: 1)."""
    asked = value_of(value)
    permits = asked.get("permits") if isinstance(asked, dict) else None
    return permits if isinstance(permits, int) and permits >= 1 else 1


def _shape(hold: Hold, value: Any, only_mode: str) -> None:
    """A granted hold's mode and permits, from its acquire invoke's ``value``; absent, one
    permit of the lock's only mode (exclusive when it has both)."""
    asked = value_of(value)
    mode = asked.get("mode") if isinstance(asked, dict) else None
    permits = asked.get("permits") if isinstance(asked, dict) else None
    hold.mode = mode if isinstance(mode, str) else only_mode
    if isinstance(permits, int) and permits >= 1:
        hold.permits = permits


def _raised(timeline: Timeline, p: str, t: int, f: str, ev: AnyEvent) -> None:
    """An acquire, release or extend that raised: the first of each (by time: the file is
    only in time order per process), every error type, and the ones the client marked as
    bugs in the lock (the earliest is its process's first, which carries the traceback)."""
    error = ev.error or ""
    raised = Raised(p, t, error, ev.traceback)
    first = timeline.raised.get(f)
    if first is None or t < first.t:
        timeline.raised[f] = raised
    timeline.raised_types.setdefault(f, set()).add(error.partition(":")[0])
    if ev.bug:
        bugs = timeline.lock_bugs.get(f)
        if bugs is None:
            timeline.lock_bugs[f] = LockBugs(1, raised)
        else:
            bugs.count += 1
            if t < bugs.first.t:
                bugs.first = raised


def _renewal_sent(timeline: Timeline, p: str, t: int, ev: AnyEvent) -> None:
    """When a background renewal was sent: its ``value.invoked``, else (older histories) its
    event's time, which is no earlier; and, unless it raised (a ``fail`` with an ``error``: no
    answer), that it was answered."""
    value = value_of(ev.value)
    invoked = value.get("invoked") if isinstance(value, dict) else None
    sent = invoked if isinstance(invoked, int) and invoked <= t else t
    timeline.renewals_sent.setdefault(p, []).append(sent)
    if ev.type == OK or ev.error is None:
        timeline.renewals_answered.setdefault(p, []).append(sent)


def _add_lease(
    hold: Hold, t: int, valid_until: int | None, base: int,
    lease_from_ttl: list[tuple[Hold, int, int]],
) -> None:
    """A new deadline from ``t`` on: the one the lock claimed, else ``base`` + the run's TTL
    (filled in once the whole history is read), else unbounded."""
    if valid_until is None:
        lease_from_ttl.append((hold, len(hold.leases), base))
        valid_until = NEVER
    hold.leases.append((t, valid_until))


def _nemesis(
    timeline: Timeline, open_faults: dict[str, FaultSpan], t: int, f: str, value: dict[str, Any]
) -> None:
    """Pair a fault's start and stop by id (by fault name when the id is missing)."""
    key = str(value.get("id") or value.get("fault"))
    if f == DROPPED:
        since, requests, replies = (value.get(k) for k in ("since", "requests", "replies"))
        if isinstance(since, int) and isinstance(requests, int) and isinstance(replies, int):
            timeline.dropped.setdefault(key, []).append(Dropped(
                str(value.get("client")), str(value.get("node")), since, t, requests, replies))
    elif f == START:
        effects = value.get("effects")
        fault = FaultSpan(
            key, str(value.get("fault", "fault")), value.get("target"), value.get("params"), t,
            frozenset(map(str, effects)) if isinstance(effects, list) else frozenset(),
            evidence=str(value.get("evidence") or ""),
        )
        open_faults[key] = fault
        timeline.faults.append(fault)
    elif f == STOP and key in open_faults:
        open_faults.pop(key).stop = t
