"""``lockchaos list``: every bundled lock and fault with its one-line description, what each lock
is made with (language, library, version) and grants (a mutex, a semaphore's permits, a
read-write lock's modes), the parameters each fault takes with their defaults, and the
checker's rules (``--rules``: those alone)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import typer
from rich.markup import escape

from chaos import lockspec
from chaos.checker.rules import RULES
from chaos.locks.contract import SHARED, LockInfo
from chaos.nemesis import FAULTS
from chaos.nemesis.fault import Fault
from chaos.report.terminal import print_table, terminal

# Workload options a seed's claim needs (a lock or a fault cannot express them): the option,
# what it does, the seed it comes from. ``run`` takes them; truth-table cells set them.
SEED_OPTIONS = (
    ("--nest-depth K", "acquire K times per critical section, the inner ones while holding: "
     "a reentrant lock lets its holder in, a string lock refuses it (self-deadlock)",
     "003_ad4e3d3f63ce056d.txt, 可重入性"),
    ("--ttl-ms, --work-ms, --clients", "the lock's TTL, the holder's work, the contention: "
     "e.g. a 1.5 s TTL that int(expire) truncates to EX 1 (001), 10 clients as in 002's demo",
     "001 / 002"),
)


# How many occurrences ``defaults`` draws to see a fault's default parameters, at two TTLs.
DRAWS = 2000
TTLS_MS = (1000, 2000)


def defaults(fault: Fault) -> dict[str, str]:
    """What ``fault`` applies for each parameter nobody set, read off its own ``params``.

    A fault draws its parameters per occurrence from the run's seeded RNG (``Fault.params``),
    so a default is a range, often in TTLs. Drawing them here (DRAWS occurrences at two TTLs) keeps
    this text from ever disagreeing with what a run does."""
    rngs = [random.Random(0) for _ in TTLS_MS]  # the same draws at each TTL
    draws: list[list[dict[str, Any]]] = [[] for _ in TTLS_MS]
    for _ in range(DRAWS):
        for rng, ttl, drawn in zip(rngs, TTLS_MS, draws, strict=True):
            drawn.append(fault.params(rng, ttl))
    keys = dict.fromkeys(key for d in draws[0] for key in d)
    return {key: _default(key, draws) for key in keys}


def _default(key: str, draws: list[list[dict[str, Any]]]) -> str:
    values = [d[key] for d in draws[0] if key in d]
    scaled = [(d[key], e[key]) for d, e in zip(draws[0], draws[1], strict=True) if key in d]
    share = round(10 * len(values) / DRAWS) * 10
    sometimes = "" if len(values) == DRAWS else f" (in about {share}% of occurrences)"
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        kinds = sorted(set(map(str, values)))
        shown = kinds[0] if len(kinds) == 1 else "one of " + ", ".join(kinds) + ", drawn"
        return shown + sometimes
    unit = ""
    low, high = TTLS_MS
    grows = any(a != b for a, b in scaled)
    if grows and all(abs(b - a * high / low) <= 1 for a, b in scaled):
        values, unit = [v / low for v in values], "×TTL"  # it grows with the TTL
    sign = "±" if min(values) < 0 < max(values) else ""
    magnitudes = [abs(v) for v in values]
    lo, hi = _round(min(magnitudes)), _round(max(magnitudes))
    span = lo if lo == hi else f"{lo}–{hi}"
    return f"{sign}{span}{unit}" + ("" if lo == hi else ", drawn") + sometimes


def _round(value: float) -> str:
    return f"{round(value, 1):g}"


def parameter_rows(fault: Fault) -> Iterator[dict[str, str]]:
    """One row per ``--faults name:key=value`` parameter: the values it takes, its default."""
    drawn = defaults(fault)
    for key, param in fault.parameters.items():
        yield {"name": key, "values": param.describe(), "default": drawn.get(key, "not set")}


def grants(info: LockInfo) -> str:
    """What ``info``'s lock grants, in a few words: ``mutex``; ``3 shared permits``
    (``--capacity`` changes the 3), ``, 1 per acquire`` when one acquire may not ask for more;
    ``exclusive or shared (unbounded)`` for a read-write lock; ``, FIFO`` when it claims to
    grant waiters in the order they asked."""
    modes = ["mutex"] if info.mutex else [
        mode if mode != SHARED else "shared (unbounded)" if info.capacity is None
        else f"{info.capacity} shared permit{'s' * (info.capacity != 1)}"
        for mode in info.modes
    ]
    words = [" or ".join(modes)]
    if info.max_permits is not None and not info.mutex:
        words.append(f"{info.max_permits} per acquire")
    if info.fair:
        words.append("FIFO")
    return ", ".join(words)


def made_with(info: LockInfo) -> str:
    """What ``info``'s lock is made with, in a few words: ``sherlock 0.4.1 (python)``; a
    hand-written lock names the client it is written on (``redis-py 5.3.1 (python)``)."""
    return " ".join(part for part in (info.library, info.version, f"({info.language})") if part)


def catalog() -> dict[str, Any]:
    return {
        "locks": [
            {
                "name": info.name,
                "summary": info.summary,
                "seed": info.seed,
                "flaw": info.flaw,
                "topology": info.topology,
                "grants": grants(info),
                "capacity": info.capacity,
                "modes": list(info.modes),
                "fair": info.fair,
                "max_permits": info.max_permits,
                "language": info.language,
                "library": info.library,
                "version": info.version,
                "made_with": made_with(info),
            }
            for info in lockspec.catalog()
        ],
        "faults": [
            {
                "name": fault.name,
                "summary": fault.summary,
                "topology": fault.needs,
                "parameters": list(parameter_rows(fault)),
            }
            for fault in FAULTS.values()
        ],
        "options": [
            {"name": name, "summary": summary, "seed": seed} for name, summary, seed in SEED_OPTIONS
        ],
        "rules": rules(),
    }


def rules() -> list[dict[str, Any]]:
    """The checker's rules, in the order it applies them (``chaos.checker.rules.RULES``)."""
    return [{"name": rule.name, "kinds": list(rule.kinds), "summary": rule.summary}
            for rule in RULES]


def list_(
    json_output: bool = typer.Option(False, "--json", help="print JSON"),
    locks: bool = typer.Option(False, "--locks", help="only the locks"),
    faults: bool = typer.Option(False, "--faults", help="only the faults and their parameters"),
    rules_only: bool = typer.Option(False, "--rules",
                                    help="only the checker's rules (what a verdict looks for)"),
) -> None:
    """Show every bundled lock and fault with its one-line description, each fault's
    parameters with their defaults, and the checker's rules (--locks, --faults, --rules: only
    those)."""
    asked = {key for key, given in (("locks", locks), ("faults", faults), ("rules", rules_only))
             if given}
    data: dict[str, Any] = {"rules": rules()} if asked == {"rules"} else catalog()
    shown = asked or set(data)
    if json_output:
        print(json.dumps({key: value for key, value in data.items() if key in shown}, indent=2))
        return
    console = terminal()
    sections = (
        ("locks (--lock NAME, or module:attr for your own; a semaphore's permits: --capacity N)",
         "locks", {"name": "name", "made with": "made_with", "grants": "grants",
                   "what it does": "summary", "seed": "seed", "known flaw": "flaw"}),
        ("faults (--faults a,b or a:key=value)", "faults",
         {"name": "name", "what it does": "summary", "needs": "topology"}),
        ("fault parameters (--faults name:key=value; unset ones take the default)", "parameters",
         {"fault": "fault", "parameter": "name", "values": "values", "default": "default"}),
        ("workload options (lockchaos run)", "options",
         {"option": "name", "what it does": "summary", "seed": "seed"}),
        ("checker rules (what a verdict looks for; docs/history-format.md)", "rules",
         {"rule": "name", "violations": "kinds", "what it finds": "summary"}),
    )
    if "faults" in data:
        data["parameters"] = [
            {"fault": fault["name"], **row}
            for fault in data["faults"] for row in fault["parameters"]
        ]
    data["rules"] = [{**rule, "kinds": ", ".join(rule["kinds"])} for rule in data["rules"]]
    for title, key, columns in sections:
        if key in shown or (key == "parameters" and "faults" in shown):
            print_table(console, title, columns, [_escaped(entry) for entry in data[key]])


def _escaped(entry: dict[str, Any]) -> dict[str, str]:
    """An entry's values as rich markup that shows them as they are (``[a-z]`` is text)."""
    return {key: "" if value is None else escape(str(value)) for key, value in entry.items()}
