"""The run directory of an exploration that broke the lock.

``history.jsonl`` and ``verdict.json`` are the minimal failing example's (so ``check-history``
and the reports read it like any run's); ``program.json`` holds its steps and outcomes;
``test_replay.py`` is a standalone pytest file that replays the steps on a fresh topology and
fails the same way for as long as the lock has the bug.
"""

from __future__ import annotations

import json
import pprint
from pathlib import Path
from typing import Any

from chaos.campaign import HISTORY, Campaign, run_dir_for
from chaos.explore.machine import Failure
from chaos.explore.replay import effective_refs
from chaos.report import save_verdict, write_run_reports

PROGRAM = "program.json"
REPLAY = "test_replay.py"

_REPLAY_TEMPLATE = '''"""Replays the smallest program `lockchaos explore` found that breaks {lock}.

Run it with `pytest {replay}` from any directory: it fails while the lock still breaks this
way ({verdict}), fails as inconclusive when a step's fault no longer does anything to the lock
(a pause point the lock no longer reaches: then it tests nothing), and passes once the lock
holds. It starts its own topology on 127.0.0.1.

The program:
{numbered}
"""

from chaos.explore.replay import assert_lock_holds

FAIL_ON = {fail_on!r}
# Where `lockchaos explore` ran, an absolute path: the replay runs from there, so the lock
# {lock!r} is found as it was, whatever the working directory. Change it if the project moves.
ROOT = {root!r}
# The steps' faults that did something to the lock when the program was found: each must again.
EFFECTIVE = {effective!r}
PROGRAM = {program}


def test_replay() -> None:
    assert_lock_holds(PROGRAM, fail_on=FAIL_ON, seed={seed!r}, effective=EFFECTIVE, root=ROOT)
'''


def write_run_dir(
    out: Path, campaign: Campaign, failure: Failure, summary: dict[str, Any]
) -> Path:
    """Write the run directory for ``failure`` under ``out``; returns its path."""
    run_dir = run_dir_for(out, campaign)
    run_dir.mkdir(parents=True)
    (run_dir / HISTORY).write_bytes(failure.history)
    save_verdict(run_dir, failure.verdict)
    program = failure.program.to_json()
    document = {
        **program,
        "outcomes": failure.outcomes,
        "fail_on": campaign.fail_on,
        "seed": campaign.seed,
        "exploration": summary,
    }
    (run_dir / PROGRAM).write_text(json.dumps(document, indent=2) + "\n")
    numbered = "\n".join(f"    {line}" for line in failure.program.numbered(failure.outcomes))
    (run_dir / REPLAY).write_text(
        _REPLAY_TEMPLATE.format(
            lock=failure.program.lock,
            replay=REPLAY,
            verdict=failure.verdict.verdict,
            numbered=numbered,
            fail_on=campaign.fail_on,
            program=pprint.pformat(program, indent=4, sort_dicts=False),
            seed=campaign.seed,
            root=str(Path.cwd()),
            effective=effective_refs(run_dir / HISTORY),
        )
    )
    write_run_reports(run_dir)
    return run_dir
