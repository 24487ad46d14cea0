"""How fast the checker is, and how much memory it needs, on large synthetic histories.

    .venv/bin/python bench/checker.py [--sizes 1000000,10000000] [--clients 32]

For each size a history is generated into a temporary file, then each measurement runs in a
fresh subprocess, so that peak memory (``ru_maxrss``) belongs to that measurement alone (the
generator runs in a subprocess too: Linux carries ``ru_maxrss`` across fork and exec). Times
are wall clock and CPU time of the measuring process (on a shared machine the wall clock also
counts other tenants):

* ``check_file``: end to end from the file, the way ``lockchaos check-history`` runs (the
  generated history has each process's lines in time order, as real ones normally do, so it
  is streamed);
* ``check_file_unsorted``: the same history with two lines of one process swapped near the
  end, which forces the fallback: stream until the disorder, then load, sort and scan all;
* ``check``: ``chaos.checker.check`` alone on ``Event`` objects already in memory (loading
  them is timed separately and not counted).

The history mimics the workload: clients contend (several failed acquires per hold), each
holder reads, sometimes extends, writes and releases; occasionally a holder stalls past its
lease while the next one acquires (a soft violation and a lost write), a release fails or
times out, a client crashes, the nemesis starts and stops a fault. Reads carry a few op ids
rather than the whole resource, which would make the file grow quadratically.

Prints one JSON document: per size, events/s and peak RSS of each measurement.
``bytes_per_event`` is the peak RSS above the interpreter's baseline, per event.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from chaos.checker import check, check_file
from chaos.history import Event

MS = 1_000_000
TTL_MS = 200
BATCH = 50_000  # events encoded per write


class Generator:
    """Writes a realistic synthetic history of about ``size`` events, in time order."""

    def __init__(self, path: Path, size: int, clients: int, seed: int, swap_at: int | None):
        self.path = path
        self.size = size
        self.clients = [f"c{i}" for i in range(1, clients + 1)]
        self.rng = random.Random(seed)
        self.swap_at = swap_at  # event count near which two lines of one process are swapped
        self.t = 10**12
        self.written = 0
        self.batch: list[Event] = []
        self.ops: dict[str, int] = dict.fromkeys(self.clients, 0)
        self.acked: list[str] = []
        self.fence = 0
        self.faults = 0

    def run(self) -> int:
        encoder = msgspec.json.Encoder()
        with open(self.path, "wb") as out:
            self.emit("info", "harness", "start", value={
                "lock": "synthetic", "ttl_ms": TTL_MS, "work_ms": 5, "clients": self.clients,
                "seed": 1, "topology": "none", "faults": ["client-pause", "partition"]})
            while self.written + len(self.batch) < self.size:
                self.cycle()
                if len(self.batch) >= BATCH:
                    self.flush(out, encoder)
            self.emit("ok", "harness", "final-read", value=self.acked)
            self.emit("info", "harness", "end")
            self.flush(out, encoder)
        return self.written

    def flush(self, out: Any, encoder: msgspec.json.Encoder) -> None:
        if self.swap_at is not None and self.written <= self.swap_at < self.written + len(
                self.batch):
            self.swap_one_process(self.swap_at - self.written)
        out.write(encoder.encode_lines(self.batch))
        self.written += len(self.batch)
        self.batch = []

    def swap_one_process(self, index: int) -> None:
        """Swap two consecutive-in-time lines of one process (a thread race in the writer)."""
        first = self.batch[index]
        for j in range(index + 1, len(self.batch)):
            if self.batch[j].process == first.process:
                self.batch[index], self.batch[j] = self.batch[j], first
                return

    def emit(self, typ: str, process: str, f: str, **fields: Any) -> None:
        self.t += self.rng.randint(20_000, 400_000)
        self.batch.append(Event(t=self.t, type=typ, process=process, f=f, **fields))

    def cycle(self, busy: str | None = None) -> None:
        """One holder's critical section, with contention around it (``busy`` holds too)."""
        rng = self.rng
        holder = rng.choice([c for c in self.clients if c != busy] if busy else self.clients)
        if rng.random() < 0.0005:
            self.nemesis()
        if rng.random() < 0.0002:
            self.crash(holder)
            return
        self.emit("invoke", holder, "acquire")
        for loser in rng.sample(self.clients, rng.randint(0, 6)):
            if loser not in (holder, busy):
                self.emit("invoke", loser, "acquire")
                if rng.random() < 0.01:
                    self.emit("info", loser, "acquire", error="TimeoutError: timed out")
                else:
                    self.emit("fail", loser, "acquire")
        token = f"{holder}-{self.fence:x}"
        self.fence += 1
        self.emit("ok", holder, "acquire", token=token, valid_until=self.t + TTL_MS * MS,
                  fence=self.fence)
        stalled = rng.random() < 0.001
        if stalled:  # paused past its lease: the next holder overlaps it (soft)
            self.t += 2 * TTL_MS * MS
            self.cycle(busy=holder)
        self.critical_section(holder, token)
        self.emit("invoke", holder, "release", token=token)
        outcome = rng.random()
        if outcome < 0.002:
            self.emit("info", holder, "release", token=token, error="ConnectionError: reset")
        else:
            self.emit("fail" if stalled or outcome < 0.01 else "ok", holder, "release",
                      token=token)

    def critical_section(self, holder: str, token: str) -> None:
        rng = self.rng
        self.emit("invoke", holder, "read", fence=self.fence)
        if rng.random() < 0.005:
            self.emit("fail", holder, "read", error="stale-token", fence=self.fence)
            return
        self.emit("ok", holder, "read", value=self.acked[-3:], fence=self.fence)
        if rng.random() < 0.3:
            self.emit("invoke", holder, "extend", token=token)
            self.emit("ok", holder, "extend", token=token, valid_until=self.t + TTL_MS * MS)
        self.ops[holder] += 1
        op = f"{holder}:1:{self.ops[holder]}"
        self.emit("invoke", holder, "write", value=op, fence=self.fence)
        self.emit("ok", holder, "write", value=op, fence=self.fence)
        self.acked.append(op)

    def crash(self, client: str) -> None:
        self.emit("invoke", client, "acquire")
        self.emit("info", client, "pause-point", value={"command": "PEXPIRE", "action": "crash",
                                                        "op": "acquire"})
        self.emit("info", client, "crash", value={"at": "PEXPIRE"})

    def nemesis(self) -> None:
        self.faults += 1
        fault = self.rng.choice(["client-pause", "partition"])
        value = {"fault": fault, "id": f"f{self.faults}",
                 "target": {"client": self.rng.choice(self.clients)},
                 "params": {"duration_ms": 300}}
        self.emit("info", "nemesis", "start", value=value)
        self.emit("info", "nemesis", "stop", value={"fault": fault, "id": f"f{self.faults}"})


# -- measurements (each in its own subprocess) ------------------------------------------------


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(mode: str, path: Path) -> dict[str, Any]:
    base = peak_rss_mib()
    result: dict[str, Any] = {"mode": mode, "baseline_rss_mib": round(base, 1)}
    if mode == "check":
        start = time.perf_counter()
        gc.disable()  # millions of Events: the collector would dominate the load
        events = msgspec.json.Decoder(Event).decode_lines(path.read_bytes())
        gc.enable()
        result["load_s"] = round(time.perf_counter() - start, 3)
        result["loaded_rss_mib"] = round(peak_rss_mib(), 1)
        start, cpu = time.perf_counter(), time.process_time()
        verdict = check(events)
    else:
        start, cpu = time.perf_counter(), time.process_time()
        verdict = check_file(path)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    events_n = verdict.counts["events"]
    peak = peak_rss_mib()
    result.update(
        events=events_n,
        seconds=round(seconds, 3),
        cpu_seconds=round(cpu, 3),
        events_per_s=round(events_n / seconds),
        events_per_cpu_s=round(events_n / cpu),
        peak_rss_mib=round(peak, 1),
        bytes_per_event=round((peak - base) * 2**20 / events_n, 1),
        verdict=verdict.verdict,
        violations=len(verdict.violations),
    )
    return result


def in_subprocess(*args: str) -> dict[str, Any]:
    """Run this script with ``args`` in a fresh interpreter; its JSON output."""
    done = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True,
                          text=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def generate(path: Path, size: int, clients: int, seed: int, swap_at: int | None
             ) -> dict[str, Any]:
    start = time.perf_counter()
    written = Generator(path, size, clients, seed, swap_at).run()
    return {"events": written, "seconds": round(time.perf_counter() - start, 3),
            "file_mib": round(path.stat().st_size / 2**20, 1)}


def bench_size(size: int, clients: int, seed: int, workdir: Path) -> dict[str, Any]:
    results: dict[str, Any] = {"size": size}
    for name, swap_at in (("sorted", None), ("unsorted", int(size * 0.95))):
        path = workdir / f"history-{size}-{name}.jsonl"
        results[f"generate_{name}"] = in_subprocess(
            "--generate", str(path), str(size), str(clients), str(seed), str(swap_at or -1))
        modes = ["check_file", "check"] if swap_at is None else ["check_file"]
        for mode in modes:
            key = mode if swap_at is None else f"{mode}_unsorted"
            results[key] = in_subprocess("--measure", mode, str(path))
        path.unlink()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,10000000",
                        help="comma-separated numbers of events (default: 1000000,10000000)")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--generate", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]))))
        return
    if args.generate:
        path, size, clients, seed, swap_at = args.generate
        swap = int(swap_at) if int(swap_at) >= 0 else None
        print(json.dumps(generate(Path(path), int(size), int(clients), int(seed), swap)))
        return
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lockchaos-bench-") as workdir:
        sizes = [int(size) for size in args.sizes.split(",")]
        runs = [bench_size(size, args.clients, args.seed, Path(workdir)) for size in sizes]
    print(json.dumps({"python": sys.version.split()[0], "cpus": os.cpu_count(),
                      "wall_s": round(time.perf_counter() - started, 1), "runs": runs},
                     indent=2))


if __name__ == "__main__":
    main()
