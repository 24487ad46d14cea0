"""A small builder for hand-written histories, shared by the checker tests (no tests here).

Times are milliseconds since the run start, so a test reads like a timeline:
``h.acquire("c1", 10, lease=200)`` is c1 acquiring at 10 ms with a 200 ms lease.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chaos.checker import Verdict, check
from chaos.history import Event, write_history
from chaos.nemesis import FAULTS

T0 = 1_000_000_000_000  # an arbitrary monotonic origin
MS = 1_000_000


def at(ms: float) -> int:
    return T0 + round(ms * MS)


class History:
    def __init__(
        self, *, ttl_ms: float | None = 200, lock: str = "test-lock", start: bool = True
    ) -> None:
        self.events: list[Event] = []
        self.tokens: dict[str, str] = {}
        if start:
            params: dict[str, Any] = {"lock": lock, "clients": ["c1", "c2", "c3"], "seed": 1}
            if ttl_ms is not None:
                params["ttl_ms"] = ttl_ms
            self.add(0, "info", "harness", "start", value=params)

    def add(self, ms: float, type: str, process: str, f: str, **fields: Any) -> History:
        self.events.append(Event(t=at(ms), type=type, process=process, f=f, **fields))
        return self

    # -- client operations -------------------------------------------------------------

    def acquire(
        self, p: str, ms: float, *, lease: float | None = 200, token: str | None = None,
        invoked: float | None = None,
    ) -> History:
        """Invoke (at ``invoked``, default ``ms``) and ok at ``ms``; ``lease`` ms of validity
        from the invoke (None: no ``valid_until``)."""
        token = token or f"{p}-{len(self.events)}"
        self.tokens[p] = token
        invoked = ms if invoked is None else invoked
        self.add(invoked, "invoke", p, "acquire")
        until = {} if lease is None else {"valid_until": at(invoked + lease)}
        return self.add(ms, "ok", p, "acquire", token=token, **until)

    def nest(self, p: str, ms: float, *, lease: float = 200, depth: int = 2,
             invoked: float | None = None) -> History:
        """A nested acquire (marked ``{"depth": depth}``) granted at ``ms`` to ``p``, which
        holds: invoked at ``invoked`` (default ``ms``), ``lease`` ms of validity from it."""
        invoked = ms if invoked is None else invoked
        self.add(invoked, "invoke", p, "acquire", value={"depth": depth})
        return self.add(ms, "ok", p, "acquire", token=f"{p}-{len(self.events)}",
                        valid_until=at(invoked + lease))

    def attempt(self, p: str, ms: float, done: float | None = None, *, outcome: str = "fail",
                error: str | None = None) -> History:
        """An acquire that did not succeed: invoke at ``ms``, ``outcome`` at ``done``."""
        self.add(ms, "invoke", p, "acquire")
        extra = {} if error is None else {"error": error}
        return self.add(ms if done is None else done, outcome, p, "acquire", **extra)

    def release(self, p: str, ms: float, done: float | None = None, *, outcome: str = "ok"
                ) -> History:
        token = self.tokens.get(p)
        self.add(ms, "invoke", p, "release", token=token)
        return self.add(ms if done is None else done, outcome, p, "release", token=token)

    def renew(self, p: str, ms: float, until: float, *, token: str | None = None) -> History:
        return self.add(ms, "ok", p, "renew", token=token or self.tokens[p],
                        valid_until=at(until))

    def extend(self, p: str, ms: float, until: float, *, outcome: str = "ok") -> History:
        token = self.tokens[p]
        self.add(ms, "invoke", p, "extend", token=token)
        return self.add(ms, outcome, p, "extend", valid_until=at(until))

    def write(self, p: str, ms: float, op: str, done: float | None = None, *,
              outcome: str = "ok", error: str | None = None) -> History:
        self.add(ms, "invoke", p, "write", value=op)
        extra = {} if error is None else {"error": error}
        return self.add(ms if done is None else done, outcome, p, "write", **extra)

    def read(self, p: str, ms: float, *, outcome: str = "ok", error: str | None = None,
             value: list[str] | None = None) -> History:
        self.add(ms, "invoke", p, "read")
        extra: dict[str, Any] = {} if error is None else {"error": error}
        if outcome == "ok":
            extra["value"] = value or []
        return self.add(ms, outcome, p, "read", **extra)

    def crash(self, p: str, ms: float, *, fault: str | None = None) -> History:
        """A crash; ``fault``: the id of the fault that killed it (as the pool records)."""
        value = {"by": "nemesis", "fault": fault} if fault else None
        return self.add(ms, "info", p, "crash", value=value)

    def pause_point(self, p: str, ms: float, command: str, action: str = "pause", *,
                    fault: str | None = None) -> History:
        value = {"command": command, "action": action, **({"fault": fault} if fault else {})}
        return self.add(ms, "info", p, "pause-point", value=value)

    def stall(self, p: str, since: float, until: float) -> History:
        """``p``'s process did not run from ``since`` to ``until`` (chaos.workload.stalls)."""
        return self.add(until, "info", p, "stall", value={"since": at(since)})

    def command(self, p: str, ms: float, op: str, command: str) -> History:
        """``p`` sent ``command`` for the first time in an ``op`` (the lock's surface)."""
        return self.add(ms, "info", p, "command", value={"op": op, "command": command})

    # -- nemesis and harness -----------------------------------------------------------

    def fault(self, fault_id: str, name: str, start: float, stop: float | None = None, *,
              target: Any = None, params: dict[str, Any] | None = None,
              effects: list[str] | None = None) -> History:
        """A fault's start (and stop); its ``effects`` and ``evidence`` default to what the
        catalog's fault of that name declares, as the nemesis writes them."""
        if effects is None:
            effects = sorted(FAULTS[name].effects) if name in FAULTS else []
        value = {"fault": name, "id": fault_id, "target": target, "params": params or {},
                 "effects": effects}
        if name in FAULTS:
            value["evidence"] = FAULTS[name].evidence
        self.add(start, "info", "nemesis", "start", value=value)
        if stop is not None:
            self.add(stop, "info", "nemesis", "stop", value={"fault": name, "id": fault_id})
        return self

    def effect(self, ms: float, fault_id: str, what: str, *, p: str = "nemesis") -> History:
        """What fault ``fault_id`` did, as whoever saw it records it."""
        return self.add(ms, "info", p, "effect", value={"id": fault_id, "what": what})

    def dropped(self, ms: float, fault_id: str, p: str, since: float, *, requests: int = 57,
                replies: int = 0) -> History:
        """Bytes fault ``fault_id`` dropped on ``p``'s link to n0, as Toxiproxy counted them
        between ``since`` and ``ms`` (chaos.nemesis.link_faults.DropCounter)."""
        return self.add(ms, "info", "nemesis", "dropped", value={
            "id": fault_id, "client": p, "node": "n0", "since": at(since),
            "requests": requests, "replies": replies})

    def final_read(self, ms: float, ops: list[str]) -> History:
        self.add(ms, "ok", "harness", "final-read", value=ops)
        return self.add(ms, "info", "harness", "end")

    # -- using it ----------------------------------------------------------------------

    def check(self, **options: Any) -> Verdict:
        return check(self.events, **options)

    def save(self, path: Path) -> Path:
        write_history(path, self.events)
        return path
