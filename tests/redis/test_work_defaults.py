"""What a holder does by default: work follows the TTL, and a lock that can extend is
extended while it works — so raising ``--ttl-ms`` does not shrink the window faults can hit,
and an ``extend`` that is broken cannot hide behind a run that never calls it."""

from __future__ import annotations

from pathlib import Path

from chaos import history as h
from chaos.campaign import WORK_TTL_SHARE, Campaign
from chaos.experiments.execute import run_campaign


def _ops(history: Path, f: str) -> int:
    return sum(1 for e in h.iter_events(history) if e.f == f and e.type == h.INVOKE)


def _start(history: Path) -> dict[str, object]:
    first = next(h.iter_events(history))
    assert first.f == h.START and isinstance(first.value, dict)
    return first.value


def test_work_time_follows_the_ttl_unless_given(tmp_path: Path) -> None:
    assert Campaign("lua", ttl_ms=1000).holder_work_ms == WORK_TTL_SHARE * 1000
    assert Campaign("lua", ttl_ms=1000, work_ms=30).holder_work_ms == 30
    outcome = run_campaign(Campaign("lua", ttl_ms=400, clients=2, duration_s=1.5), tmp_path)
    assert _start(outcome.run_dir / "history.jsonl")["work_ms"] == WORK_TTL_SHARE * 400


def test_a_lock_with_extend_is_extended_while_it_works_by_default(tmp_path: Path) -> None:
    """Work of 1.5 TTLs, extended every TTL/3: the lease outlives the work. At a 1 s TTL (a
    holder would have to stall 2/3 s between two extends to outlive its lease: lua-extend ×
    slow-work matched 20/20 there in docs/results.md, 19/20 at 200 ms), so no soft overlap."""
    default = run_campaign(Campaign("redis-py", ttl_ms=1000, work_ms=1500, clients=2,
                                    duration_s=3.5), tmp_path / "default")
    assert _ops(default.run_dir / "history.jsonl", h.EXTEND) > 0
    assert default.verdict.soft_violations == 0  # extended: the lease outlives the work
    off = run_campaign(Campaign("redis-py", ttl_ms=1000, work_ms=1500, clients=2,
                                duration_s=1.5, extend_during_work=False), tmp_path / "off")
    assert _ops(off.run_dir / "history.jsonl", h.EXTEND) == 0


def test_a_lock_without_extend_just_works(tmp_path: Path) -> None:
    outcome = run_campaign(Campaign("lua", clients=2, duration_s=1.0), tmp_path)
    assert _ops(outcome.run_dir / "history.jsonl", h.EXTEND) == 0
    assert outcome.completed_ops > 0
