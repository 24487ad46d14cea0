"""bench/libraries.py keeps going when one audit dies: a row says so, and the page shows it."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_libraries", ROOT / "bench/libraries.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_an_audit_that_died_is_a_row_and_the_shard_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round 3 lost a shard's last nine audits to one topology that did not start (a
    ``TimeoutError`` out of an exploration)."""
    bench = _bench()
    done: list[tuple[str, int]] = []

    def audit_row(lock: str, seed: int, budget_s: float, out: Path) -> dict[str, object]:
        done.append((lock, seed))
        if seed == 1:
            raise TimeoutError("timed out after 15 s waiting for n0 to answer PING")
        return {"lock": lock, "seed": seed, "budget_s": budget_s, "exit_status": 0,
                "verdict": "data", "first_violation": None, "found_by": None, "replay": None,
                "first_hard_s": None, "wall_s": 1.0, "untested": [], "audit_dir": None,
                "commit": "c"}

    monkeypatch.setattr(bench, "audit_row", audit_row)
    bench.run(argparse.Namespace(libraries="redis-py", seeds=2, budget=60.0, shard=None,
                                 out=str(tmp_path)))
    assert done == [("redis-py", 1), ("redis-py", 2)]
    died = json.loads((tmp_path / "redis-py-s1.json").read_text())
    assert died["verdict"] == "error" and died["exit_status"] is None
    assert died["first_violation"] == ("TimeoutError: timed out after 15 s waiting for n0 to "
                                       "answer PING")
    page = bench.render({"redis-py": [died, json.loads((tmp_path / "redis-py-s2.json")
                                                       .read_text())]})
    assert "| error, data | 1/2 (passes) |" in page


def test_a_broken_library_is_judged_by_the_cause_its_source_predicts() -> None:
    """A hard violation is not enough: python-redis-lock's source predicts a renewal thread
    that dies (``dead-watchdog``); a hard overlap of another cause is a finding its source
    does not explain, and the page counts it so and says which cause each seed named."""
    bench = _bench()
    library = bench.BY_LOCK["python-redis-lock"]

    def row(seed: int, cause: str | None) -> dict[str, object]:
        return bench.row_of("python-redis-lock", seed, 60.0, exit_status=1, verdict="hard",
                            first_violation=f"hard: seed {seed}. More.", cause=cause,
                            found_by="latency")

    rows = [row(1, "unexplained"), row(2, "dead-watchdog")]
    assert [bench.judged(library, r) for r in rows] == [False, True]
    page = bench.render({"python-redis-lock": rows})
    assert "| hard, hard | 1/2 (fails) | hard: seed 2. | `dead-watchdog` | latency |" in page
    assert ("The cause the checker must name: `dead-watchdog`; named, seed by seed: "
            "`unexplained`, `dead-watchdog`.") in page


def test_every_row_of_a_run_is_stamped_with_the_commit_its_process_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit made while a shard runs moves the checkout's head, not the code the shard
    loaded: each row keeps the head the run started at."""
    bench = _bench()
    heads = iter(["aaaaaaa", "bbbbbbb", "ccccccc"])

    def rev_parse(*args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess([], 0, stdout=next(heads) + "\n", stderr="")

    def audit_row(lock: str, seed: int, budget_s: float, out: Path) -> dict[str, object]:
        raise TimeoutError("timed out")

    monkeypatch.setattr(bench.subprocess, "run", rev_parse)
    monkeypatch.setattr(bench, "audit_row", audit_row)
    bench.run(argparse.Namespace(libraries="redis-py", seeds=2, budget=60.0, shard=None,
                                 out=str(tmp_path)))
    stamped = {json.loads(path.read_text())["commit"] for path in tmp_path.glob("*.json")}
    assert stamped == {"aaaaaaa"}


def test_a_library_that_starves_is_judged_by_its_liveness_flaw_whatever_the_luck() -> None:
    """Redisson's RSemaphore keeps permits as a counter with no lease: a crashed holder's
    permits never come back. Whether every permit leaked within the budget (wedged for good,
    exit 1) or not (exit 0) is luck; a hard violation, an untested audit or a worst verdict
    of another cause is not that flaw."""
    bench = _bench()
    library = bench.BY_LOCK["redisson-semaphore"]
    assert library.expected == bench.STARVES

    def row(seed: int, exit_status: int, verdict: str, cause: str | None) -> dict[str, object]:
        return bench.row_of("redisson-semaphore", seed, 60.0, exit_status=exit_status,
                            verdict=verdict, first_violation=f"{verdict}: seed {seed}. More.",
                            cause=cause, found_by="client-crash")

    rows = [row(1, 0, "liveness", "leaked-permits"), row(2, 1, "liveness", "wedged"),
            row(3, 1, "hard", "leaked-permits"), row(4, 3, "liveness", "leaked-permits"),
            row(5, 0, "soft", "lease-expired")]
    assert [bench.judged(library, r) for r in rows] == [True, True, False, False, False]
    page = bench.render({"redisson-semaphore": rows})
    assert "| 2/5 (starves) | liveness: seed 1. | `leaked-permits` | client-crash |" in page
    assert ("named, seed by seed: `leaked-permits`, `wedged`, `leaked-permits`, —, —."
            in page)
