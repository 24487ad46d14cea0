"""A run directory's layout: the files one campaign leaves, and where a new one goes.

``chaos.experiments`` writes them, ``chaos.explore`` writes an exploration's, and
``chaos.report`` reads them back; each names the files from here.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path

import msgspec

from chaos.campaign.layout import Layout
from chaos.campaign.spec import Campaign

HISTORY = "history.jsonl"  # the events, one JSON object a line (docs/history-format.md)
VERDICT = "verdict.json"  # the checker's verdict on the history
CAMPAIGN = "campaign.json"  # the campaign as it ran: its knobs, layout and images
SCHEDULE = "schedule.json"  # the seeded faults: at_s, fault, params
REPORT = "report.html"  # what people read (chaos.report)


def run_dir_for(out: Path, campaign: Campaign) -> Path:
    """A new run directory for ``campaign`` under ``out``, named after its lock, faults and
    seed (not created here)."""
    names = "+".join(campaign.fault_names) or "no-faults"
    slug = re.sub(r"[^A-Za-z0-9_.+-]+", "_", f"{campaign.lock}-{names}-s{campaign.seed}")
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


class CampaignFile(Campaign, frozen=True):
    """``campaign.json``: the campaign as it ran (``work_ms`` as its holders worked), the
    layout it ran on and the images it ran (the docker provider's, name → id). Flat, as
    earlier versions wrote it, so their run directories still read."""

    layout: Layout | None = None
    images: dict[str, str] = msgspec.field(default_factory=dict)


def save_campaign(run_dir: Path, campaign: Campaign, layout: Layout,
                  images: Mapping[str, str]) -> Path:
    """Write the run's ``campaign.json`` (indented: people read it too)."""
    ran = msgspec.structs.asdict(campaign) | {"work_ms": campaign.holder_work_ms}
    record = CampaignFile(**ran, layout=layout, images=dict(images))
    path = run_dir / CAMPAIGN
    path.write_bytes(msgspec.json.format(msgspec.json.encode(record), indent=2) + b"\n")
    return path


def load_campaign(run_dir: Path) -> CampaignFile | None:
    """The run's ``campaign.json``; None when it has none (an exploration's run directory)
    or one this version cannot read: the run's other files still make its reports."""
    try:
        return msgspec.json.decode((run_dir / CAMPAIGN).read_bytes(), type=CampaignFile)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
