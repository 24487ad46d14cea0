"""Reentrancy on real processes and a real Redis (the local provider), holders nesting two
deep: a hash lock whose release deletes the key whatever the count
(``broken_locks:reentrant_release_frees_outer``, python-zk/kazoo#291) frees the lock at its
holder's inner release, and another client takes it while the outer hold's lease is valid —
hard, naming that release; the bundled ``reentrant`` at the same settings keeps the lock for
the outer hold until its outermost release.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from chaos.cli import main

NESTED = ["--nest-depth", "2", "--clients", "3", "--duration", "3", "--seed", "1"]
FREED = re.compile(r"(c\d)'s inner release at \d+\.\d{3} s freed the lock its outer hold still "
                   r"had; (?!\1)(c\d) acquired it at \d+\.\d{3} s")


def _run(lock: str, out: Path) -> tuple[int, dict[str, Any]]:
    code = main(["run", "--lock", lock, *NESTED, "--out", str(out)])
    (verdict,) = out.rglob("verdict.json")
    return code, json.loads(verdict.read_text())


def test_a_release_that_frees_the_outer_hold_fails_hard(tmp_path: Path) -> None:
    code, verdict = _run("broken_locks:reentrant_release_frees_outer", tmp_path)
    assert code == 1, verdict["explanations"][:3]
    freed = [v for v in verdict["violations"] if v["cause"] == "inner-release"]
    assert freed and all(v["kind"] == "hard" for v in freed), verdict["explanations"][:3]
    assert FREED.search(freed[0]["explanation"]), freed[0]["explanation"]
    assert verdict["counts"]["reacquired"] > 0


def test_the_bundled_reentrant_lock_keeps_it_for_the_outer_hold(tmp_path: Path) -> None:
    code, verdict = _run("reentrant", tmp_path)
    assert code == 0 and verdict["hard_violations"] == 0, verdict["explanations"][:3]
    assert verdict["counts"]["reacquired"] > 0  # nested grants: reentrancy was tested
