"""The explorer's acceptance numbers: time to find, shrunk length, and replay determinism.

Cases (issue 6):

* ``del-release``: finds "A releases B's lock" (cause ``foreign-release``, or
  ``in-flight-release`` when the stale DEL was stopped on its way) and shrinks it to at most 6
  steps within 60 s; the run directory's ``test_replay.py`` fails under pytest;
* ``get-then-del``: finds the pause-before-DEL story (a release stopped before its DEL);
* ``lua``: 200 programs on a single node, no hard violation;
* ``redlock-clock-jump``: ``--faults clock-jump`` finds Kleppmann's scenario (cause
  ``clock-jump``).

Every program found is replayed ``--replays`` times on a fresh topology; the verdict (its
kind and the cause of its first violation) must be the same every time. Each run reports its
programs per second. ``--ttl-ms 100,50`` runs every case at each TTL in one go and prints the
ratio of programs per second (and whether the shrunk programs have the same lengths).

``--baseline-ref REF`` measures the speed-up over an older version in the same invocation:
each case runs first on a ``git worktree`` of ``REF`` (its own ``bench/explore.py``, which
ran the same cases, in a subprocess with that tree on ``PYTHONPATH``, the same venv and the
same Redis and Toxiproxy binaries), then on this tree, case after case, so both see the same
load on a shared machine; the output gives programs per second of both and their ratio, the
shrunk lengths of both, and the load average before each run.

Prints JSON (and a line per run on stderr).

    python bench/explore.py [--cases del-release,lua] [--seeds 1,2,3] [--replays 5] \
        [--ttl-ms 100,50] [--baseline-ref 2d11918]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.campaign import Campaign
from chaos.checker import Verdict
from chaos.explore import explore, replay
from chaos.explore.explorer import EXPLORE_TTL_MS
from chaos.explore.rundir import REPLAY
from chaos.nemesis import parse_faults


@dataclass(frozen=True)
class Case:
    name: str
    lock: str
    faults: str = ""
    max_examples: int = 100
    causes: tuple[str, ...] = ()  # the first violation's cause, one of; (): none expected
    max_steps: int | None = None
    within_s: float | None = None
    stops_before: str | None = None  # a step of the program stops before this command


CASES = {
    case.name: case
    for case in (
        Case(
            "del-release",
            "del-release",
            causes=("foreign-release", "in-flight-release"),
            max_steps=6,
            within_s=60,
        ),
        Case("get-then-del", "get-then-del", causes=("in-flight-release",), stops_before="DEL"),
        Case("lua", "lua", max_examples=200),
        Case("redlock-clock-jump", "redlock", faults="clock-jump", causes=("clock-jump",)),
    )
}


def story(verdict: Verdict) -> tuple[str, str | None]:
    """The verdict and the cause of its first (most severe) violation."""
    first = verdict.violations[0] if verdict.violations else None
    return verdict.verdict, first.cause if first else None


def run_case(case: Case, seed: int, replays: int, out: Path, ttl_ms: int) -> dict[str, Any]:
    campaign = Campaign(
        lock=case.lock, faults=parse_faults(case.faults), seed=seed, ttl_ms=ttl_ms, clients=2
    )
    result = explore(campaign, max_examples=case.max_examples, out=out)
    row: dict[str, Any] = {"case": case.name, "seed": seed, "ttl_ms": ttl_ms,
                           **result.summary(),
                           "programs_per_s": round(result.examples / result.elapsed_s, 2)}
    problems = []
    found = result.failure
    if found is None:
        if case.causes:
            problems.append("not found")
        row["problems"] = problems
        return row
    row["verdict"], row["cause"] = story(found.verdict)
    row["program"] = found.program.numbered(found.outcomes)
    if not case.causes:
        problems.append(f"unexpected {row['verdict']}")
    elif row["cause"] not in case.causes:
        problems.append(f"cause {row['cause']}, expected one of {case.causes}")
    if case.max_steps is not None and len(found.program.steps) > case.max_steps:
        problems.append(f"{len(found.program.steps)} steps > {case.max_steps}")
    if case.within_s is not None and result.elapsed_s > case.within_s:
        problems.append(f"took {result.elapsed_s:.1f} s > {case.within_s:g} s")
    if case.stops_before and not any(
        s.params.get("command") == case.stops_before for s in found.program.steps
    ):
        problems.append(f"no step stops before {case.stops_before}")
    replayed = [story(replay(found.program, seed=seed)[0]) for _ in range(replays)]
    row["replays"] = [f"{kind}/{cause}" for kind, cause in replayed]
    row["replays_agree"] = all(r == (row["verdict"], row["cause"]) for r in replayed)
    if not row["replays_agree"]:
        problems.append("a replay's verdict differed")
    if result.run_dir is not None:
        command = [sys.executable, "-m", "pytest", "-q", str(result.run_dir / REPLAY)]
        pytest = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        row["replay_pytest_exit"] = pytest.returncode
        if pytest.returncode != 1:
            problems.append(f"test_replay.py exited {pytest.returncode}, expected 1 (failed)")
    row["problems"] = problems
    return row


@contextmanager
def worktree(ref: str, parent: Path) -> Iterator[Path]:
    """A checkout of ``ref`` in ``parent`` (``git worktree``, removed afterwards) that finds
    the same Redis and Toxiproxy builds as this checkout (its ``.cache``)."""
    repo = Path(__file__).resolve().parents[1]
    tree = parent / "baseline"
    git = ["git", "-C", str(repo), "worktree"]
    subprocess.run([*git, "add", "--detach", str(tree), ref], check=True, capture_output=True)
    try:
        (tree / ".cache").symlink_to(repo / ".cache")
        yield tree
    finally:
        subprocess.run([*git, "remove", "--force", str(tree)], check=False, capture_output=True)


def run_baseline(tree: Path, case: str, seed: int, replays: int) -> dict[str, Any]:
    """``case`` as the baseline's own bench runs it (its TTL, its explorer): its JSON row."""
    command = [sys.executable, str(tree / "bench" / "explore.py"), "--cases", case,
               "--seeds", str(seed), "--replays", str(replays)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    try:
        (row,) = json.loads(done.stdout)["runs"]
    except (ValueError, KeyError) as exc:
        raise SystemExit(f"the baseline's bench failed ({exc}): {done.stderr[-2000:]}") from None
    row["programs_per_s"] = round(row["examples"] / row["elapsed_s"], 2)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--seeds", default="1", help="comma-separated exploration seeds")
    parser.add_argument("--replays", type=int, default=5)
    parser.add_argument("--ttl-ms", default=str(EXPLORE_TTL_MS), help="comma-separated TTLs")
    parser.add_argument("--baseline-ref", help="also run every case on this commit, interleaved")
    args = parser.parse_args()
    ttls = [int(t) for t in args.ttl_ms.split(",")]
    rows: list[dict[str, Any]] = []
    baseline: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="lockchaos-bench-explore-") as tmp, (
        worktree(args.baseline_ref, Path(tmp)) if args.baseline_ref else nullcontext()
    ) as tree:
        for name in args.cases.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                if tree is not None:
                    load = os.getloadavg()[0]
                    row = run_baseline(tree, name, seed, args.replays)
                    baseline.append({**row, "load_before": load})
                    _report(f"{name} seed {seed} at {args.baseline_ref}", row)
                for ttl in ttls:
                    load = os.getloadavg()[0]
                    row = run_case(CASES[name], seed, args.replays, Path(tmp), ttl)
                    rows.append({**row, "load_before": load})
                    _report(f"{name} seed {seed} TTL {ttl} ms", row)
    result: dict[str, Any] = {"runs": rows, "ok": not any(row["problems"] for row in rows)}
    if len(ttls) > 1:
        result["speedup"] = _speedups(rows, ttls)
    if baseline:
        result["baseline"] = {"ref": args.baseline_ref, "runs": baseline,
                              "speedup": _over_baseline(baseline, rows)}
        for line in result["baseline"]["speedup"]:
            print(f"{line['case']} seed {line['seed']} TTL {line['ttl_ms']} ms: "
                  f"{line['ratio']}× the programs/s of {args.baseline_ref} "
                  f"({line['programs_per_s'][1]} vs {line['programs_per_s'][0]}), shrunk steps "
                  f"{line['steps'][1]} vs {line['steps'][0]}", file=sys.stderr)
    loads = [row["load_before"] for row in rows + baseline]
    result["load_average"] = [min(loads, default=0.0), max(loads, default=0.0)]
    print(json.dumps(result, indent=2))
    return 0 if all(not row["problems"] for row in rows) else 1


def _report(run: str, row: dict[str, Any]) -> None:
    print(
        f"{run}: found in {row['time_to_find_s']} s, {row['steps']} steps, "
        f"{row['elapsed_s']} s in all, {row['examples']} programs ({row['programs_per_s']}/s); "
        f"problems: {row['problems'] or 'none'}",
        file=sys.stderr,
    )


def _over_baseline(
    baseline: list[dict[str, Any]], rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Per case, seed and TTL: programs/s over the baseline's, and both shrunk lengths."""
    base = {(r["case"], r["seed"]): r for r in baseline}
    out = []
    for row in rows:
        was = base[row["case"], row["seed"]]
        out.append({"case": row["case"], "seed": row["seed"], "ttl_ms": row["ttl_ms"],
                    **_versus(was, row)})  # fmt: skip
    return out


def _versus(was: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """Programs/s, their ratio, shrunk lengths and times to find, before → now."""
    return {
        "programs_per_s": [was["programs_per_s"], now["programs_per_s"]],
        "ratio": round(now["programs_per_s"] / was["programs_per_s"], 2),
        "steps": [was["steps"], now["steps"]],
        "time_to_find_s": [was["time_to_find_s"], now["time_to_find_s"]],
    }


def _speedups(rows: list[dict[str, Any]], ttls: list[int]) -> list[dict[str, Any]]:
    """Per case and seed: programs/s at the last TTL over the first, and shrunk lengths."""
    out = []
    by = {(r["case"], r["seed"], r["ttl_ms"]): r for r in rows}
    for case, seed in dict.fromkeys((r["case"], r["seed"]) for r in rows):
        first, last = by[case, seed, ttls[0]], by[case, seed, ttls[-1]]
        out.append({"case": case, "seed": seed, **_versus(first, last)})
    return out


if __name__ == "__main__":
    sys.exit(main())
