"""A run directory as the reports read it back (``RunRecord``: what a report may know about a
run — its history's timeline, its verdict and its parameters), and its ``verdict.json``.

Reports read only the run directory's ``history.jsonl`` and ``verdict.json`` (plus
``campaign.json`` and ``schedule.json`` for the parameters, when present). Holds and leases
come from the checker's own pure scan of the history (``chaos.checker.read_timeline``), so
the picture can never disagree with the verdict about who held the lock when.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from chaos.campaign.rundir import HISTORY, SCHEDULE, VERDICT, CampaignFile, load_campaign
from chaos.campaign.spec import fault_spec
from chaos.checker import Verdict, read_timeline
from chaos.checker.reader import HistoryReader
from chaos.checker.timeline import Timeline
from chaos.errors import UsageError
from chaos.history import HistoryError

HIDDEN_PARAMS = ("schedule", "faults")  # shown on their own, not as one long parameter


@dataclass(frozen=True)
class RunRecord:
    """One run directory, loaded: the timeline, the verdict and the parameters."""

    run_dir: Path
    timeline: Timeline
    verdict: Verdict
    campaign: CampaignFile | None  # campaign.json (None for runs that are not campaigns)
    schedule: list[dict[str, Any]]  # the seeded faults: at_s, fault, params

    @property
    def params(self) -> dict[str, Any]:
        """Run parameters: the history's start event, overridden by campaign.json."""
        ran = msgspec.to_builtins(self.campaign) if self.campaign is not None else {}
        return {**self.timeline.params, **ran}

    @property
    def lock(self) -> str:
        return str(self.verdict.lock or self.params.get("lock") or "unknown lock")

    @property
    def faults(self) -> str:
        """The faults as ``--faults`` takes them (``a,b:key=value``), or ``no faults``."""
        return ",".join(self.fault_specs) or "no faults"

    @property
    def fault_specs(self) -> list[str]:
        faults = self.params.get("faults") or []
        return [_fault_spec(fault) for fault in faults]

    @property
    def seed(self) -> Any:
        return self.params.get("seed")

    @property
    def fail_on(self) -> str:
        return str(self.params.get("fail_on") or "hard")

    @property
    def allow_inconclusive(self) -> bool:
        return bool(self.params.get("allow_inconclusive"))

    def replay(self) -> str | None:
        """The ``lockchaos run`` command that reruns a campaign as it ran: the same lock,
        faults (with their parameters), seed, duration and TTL give the same fault schedule,
        and the rest of ``campaign.json`` (provider, topology, clients, work…) the same
        setting. None for runs that are not campaigns."""
        if self.campaign is None:
            return None
        return "lockchaos " + shlex.join(["run", *self.campaign.options()])

    def shown_params(self) -> list[tuple[str, str]]:
        """The parameters a reader wants next to the verdict, as (name, text) rows."""
        rows = [("faults", self.faults)]
        for name, value in self.params.items():
            if name == "images" and isinstance(value, dict):
                if value:  # the docker provider's: image (short id), …
                    rows.append((name, ", ".join(
                        f"{image} ({_short_id(ident)})" for image, ident in value.items())))
            elif name == "server" and value is None:
                rows.append((name, "the provider's default"))
            elif name not in HIDDEN_PARAMS:
                text = value if isinstance(value, str) else json.dumps(value)
                rows.append((name, text))
        return rows


def save_verdict(run_dir: Path, verdict: Verdict) -> None:
    """Write the run's ``verdict.json``, as ``load_run`` reads it back."""
    (run_dir / VERDICT).write_text(json.dumps(verdict.to_dict(), indent=2) + "\n")


def load_run(run_dir: Path) -> RunRecord:
    """Read a run directory; ``UsageError`` (one line) when it is not one."""
    history, verdict_path = run_dir / HISTORY, run_dir / VERDICT
    for path in (history, verdict_path):
        if not path.is_file():
            raise UsageError(
                f"{run_dir}: no {path.name} here; give a run directory that `lockchaos run` "
                "wrote (it holds history.jsonl and verdict.json)"
            )
    try:
        verdict = msgspec.json.decode(verdict_path.read_bytes(), type=Verdict)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise UsageError(f"{verdict_path}: not a lockchaos verdict ({exc})") from None
    try:
        timeline = read_timeline(HistoryReader(history))
    except HistoryError as exc:
        raise UsageError(f"{exc}; expected a lockchaos history (one JSON event per line)") from None
    schedule = _json_or_empty(run_dir / SCHEDULE) or timeline.params.get("schedule") or {}
    return RunRecord(run_dir, timeline, verdict, load_campaign(run_dir),
                     list(schedule.get("events", [])))


def _json_or_empty(path: Path) -> dict[str, Any]:
    """An optional parameter file: absent or unreadable means "not known", not an error."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _short_id(ident: Any) -> str:
    """``sha256:b8407c5e6a9b…`` as ``docker images`` shows it: ``b8407c5e6a9b``."""
    return str(ident).removeprefix("sha256:")[:12]


def _fault_spec(fault: Any) -> str:
    """``"latency"`` (history) or ``["client-crash", {"nth": 2}]`` (campaign.json) as the
    command line spells it: ``client-crash:nth=2``."""
    if isinstance(fault, list | tuple) and fault:
        return fault_spec(str(fault[0]), dict(fault[1]) if len(fault) > 1 else {})
    return str(fault)
