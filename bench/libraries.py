"""The corpus of real lock libraries, each audited as a CI user would audit it, against what its
own source predicts: the table behind docs/libraries.md.

Every library of ``CORPUS`` (a bundled lock: ``lockchaos list`` shows its library, version and
language) is audited with the audit's own fault choice, ``--budget 60`` and nothing but its
deployment, once per seed. A row holds the audit's exit status and worst verdict, the first
violation's explanation, the campaign that found it and the command that replays it (the
``lockchaos run`` of that campaign), and the time to the first hard violation. A library is
judged as its source predicts (``Library.expected``) when every seed's audit says so: a sound
one passes (exit 0: no violation at or above ``hard``, everything it asked for exercised —
soft and lost writes are the known limit of a lease without fencing), a broken one fails
(exit 1, hard) for the reason its source gives: the checker names one of ``Library.flaw``
as the first hard violation's cause. A library whose source predicts a liveness flaw and no
safety one starves (``STARVES``): no audit finds a hard violation, and each names one of
``Library.flaw`` as the cause of its worst (liveness) verdict, whether or not the flaw wedged
the lock for good within the budget (exit 1) or not (exit 0): when it does is luck, what it is
is not.

An hour of audits belongs on several machines, so it shards like ``compare``: each of N jobs
(a CI matrix, a Kubernetes Indexed Job running the lockchaos image) runs every N-th audit from
the K-th and writes one JSON file per audit; ``merge`` joins the files of every shard and
writes the page, stamped with the commit it was made at:

    python bench/libraries.py run [--seeds 5] [--budget 60] [--libraries a,b] [--shard K/N] \
        --out DIR
    python bench/libraries.py merge DIR [DIR …] [--page docs/libraries.md]
"""

from __future__ import annotations

import argparse
import functools
import json
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chaos.campaign import Campaign
from chaos.campaign.rundir import load_campaign
from chaos.experiments.audit import AuditPlan, run_audit
from chaos.experiments.shard import parse_shard, take_shard
from chaos.lockspec import resolve
from chaos.report.audit_page import AUDIT, load_audit
from chaos.topology import conntrack

PASSES, FAILS, STARVES = "passes", "fails", "starves"
ROOT = Path(__file__).resolve().parents[1]
ROOM_SHARE = 0.5  # of the kernel's connection-tracking table, free before each audit
ROOM_WAIT_S = 180.0  # at most: its entries outlive their connections by 120 s
ROOM_POLL_S = 2.0


@dataclass(frozen=True)
class Library:
    """One library of the corpus: the bundled lock that wraps it, and what its source says
    the audit must find — ``expected`` (``passes``/``fails``/``starves``), ``because`` (one
    sentence, the mechanism), ``cites`` (the source lines and tracker threads that say so),
    and for a flawed one ``flaw``: the causes (``Violation.cause``) the checker gives that
    mechanism. A violation of another cause is a finding the source does not predict, not
    the flaw."""

    lock: str
    expected: str
    because: str
    cites: str
    flaw: tuple[str, ...] = ()


CORPUS = (
    Library("redis-py", PASSES,
            "SET NX PX to acquire, a Lua compare-and-delete to release and compare-and-PEXPIRE "
            "to extend: only a holder that outlives its lease (soft) is possible",
            "redis-py 5.x `redis/lock.py` (`LUA_RELEASE_SCRIPT`, `LUA_EXTEND_SCRIPT`)"),
    Library("sherlock", PASSES,
            "SETNX and EXPIRE in one script, owner-checked Lua release and renew: sound, in "
            "whole seconds",
            "sherlock 0.4.1 `sherlock/lock.py:414-442`"),
    Library("sherlock-no-expire", FAILS,
            "with no `expire`, its acquire script compares the string \"-1\" with the number "
            "-1 (always unequal in Lua) and runs `EXPIRE key -1`, which deletes the key it just "
            "set: every acquire succeeds",
            "sherlock 0.4.1 `sherlock/lock.py:416,484-485`; py-sherlock/sherlock PR #37",
            # the acquire deleted its own key: no command the history shows removed it
            flaw=("unexplained",)),
    Library("pottery-redlock", PASSES,
            "Redlock on 5 masters: a quorum of SET NX PX, validity checked against the time "
            "spent; the audit assumes crash-restart and clock jumps away (Kleppmann)",
            "pottery 3.0.1 `pottery/redlock.py:318-353,503-599`"),
    Library("python-redis-lock", FAILS,
            "its renewal thread has no error handling: one failed renewal (a reset, a lost "
            "reply) ends it for good, and the lease lapses under a holder that runs on",
            "python-redis-lock 4.0.1 `redis_lock/__init__.py:272-286`; "
            "ionelmc/python-redis-lock#85",
            flaw=("dead-watchdog",)),
    Library("bsm-redislock", PASSES,
            "SET NX PX in Lua, compare-and-PEXPIRE to refresh, compare-and-DEL to release",
            "github.com/bsm/redislock v0.9.4 `redislock.go:18-26,56-207`"),
    Library("redsync", PASSES,
            "Redlock on N masters: SET NX PX on each, granted only with a quorum while "
            "expiry − time spent − drift is still ahead, a Lua compare-and-delete to release; "
            "the audit assumes crash-restart and clock jumps away (Kleppmann)",
            "github.com/go-redsync/redsync/v4 v4.13.0 `mutex.go:104-119,221-258`"),
    Library("node-redis-lock", FAILS,
            "its release checks the lease against the client's own clock, then sends a plain "
            "DEL with no owner check: a holder stopped past its lease deletes the next "
            "holder's lock",
            "npm redis-lock 1.0.0 `index.js:13,41-45`; errorception/redis-lock#29, #39",
            flaw=("in-flight-release", "foreign-release")),
    Library("sesame-redlock", PASSES,
            "Redlock in Lua scripts on N masters; it hands over a lock whose validity the "
            "time spent ate (validity ≤ 0), which claims no instant, so no overlap with it "
            "is hard",
            "@sesamecare-oss/redlock 1.4.0 `src/index.ts:212-296`, `src/scripts.ts:10-62`"),
    Library("node-redlock", PASSES,
            "Redlock in Lua scripts on N masters (EXISTS, then SET PX), a lease of start + "
            "duration − drift, a Lua compare-and-delete to release; like sesame-redlock it "
            "hands over a lock whose validity the time spent ate, which claims no instant",
            "npm redlock 5.0.0-beta.2 `dist/cjs/index.js:10-55,205-242`"),
    Library("redisson", PASSES,
            "owner hash and PEXPIRE in one script, a watchdog that renews every third of the "
            "lease and stops when it finds the lease gone",
            "Redisson 3.45.1 `RedissonLock.java:218-228,344-368`, `RenewalTask.java:171-176`"),
    Library("redisson-fenced", PASSES,
            "Redisson's lock with a fencing token (INCR in the granting script): stale holders' "
            "writes can be refused",
            "Redisson 3.45.1 `RedissonFencedLock.java:77-79,107-128,151-156`"),
    Library("redisson-lease", PASSES,
            "one script takes the owner hash (client UUID:thread) and sets PEXPIRE to the "
            "lease, no watchdog; unlock decrements only the owner's field; lock scripts go "
            "out once (no-retry, retryAttempts 0): only a holder past its lease (soft)",
            "Redisson 3.45.1 `RedissonLock.java:199-206,218-228,344-368`, "
            "`RedisExecutor.java:399-401,479-483`"),
    Library("redisson-fair", PASSES,
            "RLock's owner hash behind a FIFO queue: one script grants only when the key is "
            "absent and this thread heads the queue, with PEXPIRE = lease; unlock checks the "
            "owner field; nothing re-sent. The queue's timeouts use the client's clock: "
            "fairness, not safety",
            "Redisson 3.45.1 `RedissonFairLock.java:103-153,156-233,238-289`, "
            "`RedissonLock.java:231-308`"),
    Library("redisson-rwlock", PASSES,
            "one hash per lock: a write is granted only when it is empty (or its own), a read "
            "while it is in read mode; each reader's lease is its own key and the hash "
            "outlives the longest; unlock scripts check the owner field; nothing re-sent",
            "Redisson 3.45.1 `RedissonWriteLock.java:53-117`, `RedissonReadLock.java:55-140`; "
            "redisson/redisson#2144, #1110 (fixed)"),
    Library("redisson-permit-expirable-semaphore", PASSES,
            "each permit is a random id ZADDed, scored currentTimeMillis + lease of the "
            "acquiring client, in the script that takes it from the counter and first "
            "reclaims expired ids; tryRelease ZREMs that id only; nothing re-sent; the audit "
            "assumes client clock jumps away",
            "Redisson 3.45.1 `RedissonPermitExpirableSemaphore.java:330-335,377-429,622-642`"),
    Library("redisson-semaphore", STARVES,
            "permits are a bare counter, DECRBY to take and INCRBY to give back, with no "
            "owner and no lease: a paused holder keeps its permits (no excess), but a crash "
            "or a lost acquire reply leaks them for good (liveness; all leaked wedges it)",
            "Redisson 3.45.1 `RedissonSemaphore.java:269-278,454-472,507-517`; "
            "redisson/redisson#4462, #2213",
            flaw=("leaked-permits", "wedged")),
    Library("node-semaphore", PASSES,
            "one script drops entries older than the client's Date.now() − TTL and ZADDs the "
            "token below the limit; the 0.8-TTL refresh re-scores only a token still there, "
            "release ZREMs it; ioredis re-sends nothing; the audit assumes client clock "
            "jumps away",
            "npm redis-semaphore 5.8.0 `lib/semaphore/acquire/index.js:11-38`, "
            "`acquire/lua.js:5-21`, `refresh/lua.js:5-21`, `semaphore/release.js:9-13`, "
            "`Lock.js:45-75`; swarthy/redis-semaphore#175 (fixed)"),
    Library("rust-redlock", FAILS,
            "its validity is a `usize` computed as TTL − drift − elapsed: an acquire that "
            "outlasts the TTL wraps around, and a lease already expired is returned as valid "
            "for about 1.8·10¹⁹ ms",
            "crate redlock 2.0.0 `src/redlock.rs:145,150-155`; badboy/redlock-rs#20, PR #21",
            flaw=("acquire-outlasted-lease",)),
)
BY_LOCK = {library.lock: library for library in CORPUS}


def audit_row(lock: str, seed: int, budget_s: float, out: Path) -> dict[str, Any]:
    """One audit of ``lock`` with ``seed`` into ``out``, as a row: what the page shows, the
    command that replays the finding, and the audit's directory (its index.html)."""
    started = time.monotonic()
    result = run_audit(AuditPlan(Campaign(lock, seed=seed), budget_s), out)
    worst = result.verdicts[0] if result.verdicts else None
    first, cause, found_by, replay = None, None, None, None
    if worst is not None and worst[1].violations:
        name, verdict, run_dir = worst
        first, cause = verdict.violations[0].explanation, verdict.violations[0].cause
        found_by = name
        campaign = load_campaign(run_dir)
        if campaign is not None:
            replay = "lockchaos " + shlex.join(["run", *campaign.options()])
    return row_of(lock, seed, budget_s, exit_status=result.exit_status,
                  verdict=result.verdict, first_violation=first, cause=cause,
                  found_by=found_by,
                  replay=replay, first_hard_s=result.first_hard_s,
                  wall_s=round(time.monotonic() - started, 1),
                  untested=[why for _, why in result.untested],
                  audit_dir=str(result.directory))


def wait_for_room(bound_s: float = ROOM_WAIT_S) -> None:
    """Before an audit, until the kernel's connection-tracking table is at most
    ``ROOM_SHARE`` full (``chaos.topology.conntrack``), for ``bound_s`` at most: the redlock
    crate opens a connection per command, ~4,000 entries a second through its kit's proxy
    and Toxiproxy, and four of its audits back to back filled the table (262,144 entries,
    each kept 120 s after its connection closed); the fifth died on a connection the kernel
    dropped, twice. An audit alone never fills it; back to back, they wait here."""
    deadline = time.monotonic() + bound_s
    while (used := conntrack.usage()) is not None and used[0] > ROOM_SHARE * used[1] \
            and time.monotonic() < deadline:
        time.sleep(ROOM_POLL_S)


def row_of(lock: str, seed: int, budget_s: float, **values: Any) -> dict[str, Any]:
    """A row of the page, every field there (None where an audit did not say), stamped
    with the commit."""
    return {"lock": lock, "seed": seed, "budget_s": budget_s, "exit_status": None,
            "verdict": None, "first_violation": None, "cause": None, "found_by": None,
            "replay": None,
            "first_hard_s": None, "wall_s": None, "untested": [], "audit_dir": None,
            **values, "commit": commit()}


def judged(library: Library, row: dict[str, Any]) -> bool:
    """Whether one audit judged ``library`` as its source predicts: a sound one passed, a
    broken one failed hard for its flaw (a row written before rows kept the cause has none),
    one that starves found no hard violation and its worst was that flaw's liveness
    violation — wedged for good (exit 1) or not yet (exit 0), never untested (exit 3)."""
    if library.expected == PASSES:
        return bool(row["exit_status"] == 0)
    flawed = row.get("cause") in library.flaw
    if library.expected == STARVES:
        return bool(row["exit_status"] in (0, 1) and row["verdict"] == "liveness" and flawed)
    return bool(row["exit_status"] == 1 and row["verdict"] == "hard" and flawed)


def run(args: argparse.Namespace) -> None:
    chosen = [lock for lock in args.libraries.split(",") if lock] or list(BY_LOCK)
    unknown = [lock for lock in chosen if lock not in BY_LOCK]
    if unknown:
        sys.exit(f"bench/libraries.py: not in the corpus: {', '.join(unknown)}")
    jobs = [(lock, seed) for lock in chosen for seed in range(1, args.seeds + 1)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    commit()
    for lock, seed in take_shard(jobs, parse_shard(args.shard)):
        wait_for_room()
        try:
            row = audit_row(lock, seed, args.budget, out / "audits")
        except Exception as exc:  # one audit that died is a row, not the end of the shard
            # Round 3 lost a shard's last nine audits to one topology that did not start.
            why = conntrack.saturated()
            row = row_of(lock, seed, args.budget, verdict="error",
                         first_violation=f"{type(exc).__name__}: {exc}"
                         + (f" ({why})" if why else ""))
        (out / f"{lock}-s{seed}.json").write_text(json.dumps(row, indent=1))
        said = "as its source says" if judged(BY_LOCK[lock], row) else "NOT as its source says"
        print(f"{lock:22} seed {seed}: exit {row['exit_status']} {row['verdict']:12} "
              f"{row['wall_s'] or 0:6.1f} s  {said}", file=sys.stderr, flush=True)


def merge(args: argparse.Namespace) -> None:
    rows = [json.loads(path.read_text()) for folder in args.dirs
            for path in sorted(Path(folder).glob("*.json"))]
    by_lock: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_lock.setdefault(row["lock"], []).append(row)
    page = Path(args.page)
    page.write_text(render(by_lock))
    print(page)


@functools.cache
def commit() -> str:
    """The checkout's head when this process first asked, which ``run`` does before its
    first audit: the code it loaded. A commit made while a shard runs (a corpus takes
    three quarters of an hour) stamped the later rows with code they never ran."""
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def made_at(by_lock: dict[str, list[dict[str, Any]]]) -> str:
    """The commits the rows were audited at (a row written before rows kept it: this one)."""
    commits = sorted({row.get("commit") or commit() for rows in by_lock.values() for row in rows})
    return ", ".join(f"`{c}`" for c in commits)


def render(by_lock: dict[str, list[dict[str, Any]]]) -> str:
    """docs/libraries.md: the scoreboard, then each library's finding and its sources."""
    lines = [
        "# Redis lock libraries under lockchaos",
        "",
        "Each library below is a bundled lock (`lockchaos list` shows its library, version and",
        "language), audited as a CI gate would audit it — `lockchaos audit --lock NAME",
        "--budget 60`, the audit's own faults, no hints but the deployment — once per seed,",
        "and held against what its own source and tracker predict. *Passes*: no violation at or",
        "above `hard` and everything the audit asked for exercised (a holder that outlives its",
        "lease under a long pause, and the lost writes that follow, are the known limit of any",
        "lease without fencing: [fencing.md](fencing.md)). *Fails*: the audit found a hard",
        "violation, and the checker named the cause the source predicts (the *cause* column).",
        "*Starves*: no hard violation, and the worst is the liveness flaw the source predicts",
        "(a permit no holder gives back); the audit fails (exit 1) only where the flaw wedged",
        "the lock for good within its budget, which is luck, so either exit matches.",
        "",
        f"Audited at commit {made_at(by_lock)} by `python bench/libraries.py run --out DIR` "
        "(sharded:",
        "`--shard K/N` per job) and",
        "`python bench/libraries.py merge DIR… --page docs/libraries.md`.",
        "",
        "| library | language | verdict (seeds) | as its source predicts | first violation | "
        "cause | breaking fault | median to first hard |",
        "|---|---|---|---|---|---|---|---|",
    ]
    details = []
    for library in CORPUS:
        rows = sorted(by_lock.get(library.lock, []), key=lambda row: row["seed"])
        if not rows:
            continue
        info = resolve(library.lock).info
        name = f"{info.library} {info.version}" if info and info.library else library.lock
        language = info.language if info else ""
        verdicts = ", ".join(f"{row['verdict']}" for row in rows)
        matched = sum(judged(library, row) for row in rows)
        # a finding: an audit that failed, or one that found the flaw the source predicts
        found = [row for row in rows if row["first_violation"] and (
            row["exit_status"] == 1 or (bool(library.flaw) and judged(library, row)))]
        finding = next((row for row in found if judged(library, row)),
                       found[0] if found else None)
        firsts = [row["first_hard_s"] for row in rows if row["first_hard_s"] is not None]
        median = f"{statistics.median(firsts):.1f} s" if firsts else "—"
        lines.append(
            f"| `{library.lock}` ({name}) | {language} | {verdicts} | "
            f"{matched}/{len(rows)} ({library.expected}) | "
            f"{_first_sentence(finding['first_violation']) if finding else '—'} | "
            f"{_cause(finding)} | {finding['found_by'] if finding else '—'} | {median} |"
        )
        details += [f"## `{library.lock}`: {name}", "",
                    f"What its source says: {library.because} ({library.cites}).", ""]
        if library.flaw:
            named = ", ".join(_cause(row) if row in found else "—" for row in rows)
            details += [f"The cause the checker must name: {' or '.join(map(_code, library.flaw))}"
                        f"; named, seed by seed: {named}.", ""]
        if finding:
            details += ["The audit's first violation: " + finding["first_violation"], "",
                        "Replay it:", "", "```sh", replay(finding), "```", ""]
        untested = sorted({why for row in rows for why in row["untested"]})
        if untested:
            details += ["Not tested in some seed: " + "; ".join(untested) + ".", ""]
    return "\n".join([*lines, "", *details])


def replay(row: dict[str, Any]) -> str:
    """The command that shows a row's finding again: the run of the campaign that found it,
    or (found by explore, which has no campaign to run) the audit itself."""
    if row["replay"]:
        return str(row["replay"])
    record = Path(row.get("audit_dir") or "-") / AUDIT
    return load_audit(record).replay if record.exists() else ""


def _cause(row: dict[str, Any] | None) -> str:
    """The checker's name for what broke exclusion in a row's first violation."""
    return _code(row["cause"]) if row and row.get("cause") else "—"


def _code(text: str) -> str:
    return f"`{text}`"


def _first_sentence(text: str) -> str:
    return text.split(". ")[0].rstrip(".") + "."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    run_ = verbs.add_parser("run", help="audit the corpus (or one shard of it)")
    run_.add_argument("--seeds", type=int, default=5)
    run_.add_argument("--budget", type=float, default=60.0)
    run_.add_argument("--libraries", default="", help="only these locks (comma-separated)")
    run_.add_argument("--shard", default=None, help="K/N: every N-th audit from the K-th")
    run_.add_argument("--out", required=True, help="where each audit's row goes (JSON)")
    merge_ = verbs.add_parser("merge", help="join the shards' rows into the page")
    merge_.add_argument("dirs", nargs="+")
    merge_.add_argument("--page", default=str(ROOT / "docs" / "libraries.md"))
    args = parser.parse_args()
    (run if args.verb == "run" else merge)(args)


if __name__ == "__main__":
    main()
