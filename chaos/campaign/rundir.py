"""A run directory's layout: the files one campaign leaves, and where a new one goes.

``chaos.experiments`` writes them, ``chaos.explore`` writes an exploration's, and
``chaos.report`` reads them back; each names the files from here.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from chaos.campaign.spec import Campaign

HISTORY = "history.jsonl"  # the events, one JSON object a line (docs/history-format.md)
VERDICT = "verdict.json"  # the checker's verdict on the history
CAMPAIGN = "campaign.json"  # the campaign as it ran: its knobs, layout and images
SCHEDULE = "schedule.json"  # the seeded faults: at_s, fault, params
REPORT = "report.html"  # what people read (chaos.report)


def run_dir_for(out: Path, campaign: Campaign) -> Path:
    """A new run directory for ``campaign`` under ``out``, named after its lock, faults and
    seed (not created here)."""
    faults = "+".join(campaign.fault_names) or "no-faults"
    slug = re.sub(r"[^A-Za-z0-9_.+-]+", "_", f"{campaign.lock}-{faults}-s{campaign.seed}")
    return stamped_path(out, slug)


def stamped_path(out: Path, slug: str) -> Path:
    """``out/<YYYYmmdd-HHMMSS>-<slug>``, or with ``-2``, ``-3``… appended where that exists
    (not created here)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = out / f"{stamp}-{slug}"
    suffix = 1
    while path.exists():
        suffix += 1
        path = out / f"{stamp}-{slug}-{suffix}"
    return path
