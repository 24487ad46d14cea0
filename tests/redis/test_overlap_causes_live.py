"""What broke exclusion, named on real runs: a holder's extend that re-armed the next holder's
key is said first, before how its own lease ran out (chaos.checker.explain)."""

from __future__ import annotations

import re
from pathlib import Path

from seeds import first_failed_run

EXTENDED = re.compile(
    r"(c\d)'s extend at [\d.]+ s succeeded although (c\d) had held the lock since [\d.]+ s: "
    r"the extend does not check whose key it extends\. Before it, \1's lease expired at ")


def test_an_owner_less_extend_is_named_as_what_broke_exclusion(tmp_path: Path) -> None:
    """``SET key token XX PX ttl`` (tests/redis/broken_locks.py): a holder paused past its
    lease resumes and extends the key another client took meanwhile. Before, the explanation
    said only that the holder's lease had expired, "both leases valid from …". Seed 1 found
    it at 5.5 s (2026-11-27); the next seeds are there for a loaded machine."""
    verdict = first_failed_run(
        ["run", "--lock", "broken_locks:extend_sets_anyones_key", "--faults", "client-pause",
         "--extend-during-work", "--work-ms", "400", "--clients", "3", "--duration", "15"],
        tmp_path,
    )  # fmt: skip
    hard = [v for v in verdict["violations"] if v["kind"] == "hard"]
    assert hard and hard[0]["cause"] == "foreign-extend", verdict["explanations"]
    assert EXTENDED.search(hard[0]["explanation"]), hard[0]["explanation"]
