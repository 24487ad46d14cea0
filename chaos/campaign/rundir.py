"""A run directory's layout: the files one campaign leaves, and where a new one goes.

``chaos.experiments`` writes them, ``chaos.explore`` writes an exploration's, and
``chaos.report`` reads them back; each names the files from here.
"""

from __future__ import annotations

import hashlib
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


# A directory's name is at most 255 bytes: an ``exec:`` lock's command, with the paths of a
# deep checkout, made one longer (a fresh clone under /tmp/ci-check.XXXXXX: "File name too
# long"). The lock's part is cut to MAX_LOCK_CHARS with a hash of the whole; the rest
# (faults, seed) to MAX_SLUG_CHARS, leaving room for the stamp and a ``-N`` suffix.
MAX_LOCK_CHARS = 80
MAX_SLUG_CHARS = 200


def run_dir_for(out: Path, campaign: Campaign) -> Path:
    """A new run directory for ``campaign`` under ``out``, named after its lock, faults and
    seed (not created here)."""
    names = "+".join(campaign.fault_names) or "no-faults"
    lock = re.sub(r"[^A-Za-z0-9_.+-]+", "_", campaign.lock)
    if len(lock) > MAX_LOCK_CHARS:  # an exec: command with its paths: a name, not a path
        digest = hashlib.sha256(campaign.lock.encode()).hexdigest()[:8]
        lock = f"{lock[:MAX_LOCK_CHARS - 9]}-{digest}"
    slug = re.sub(r"[^A-Za-z0-9_.+-]+", "_", f"{lock}-{names}-s{campaign.seed}")
    return stamped_path(out, slug[:MAX_SLUG_CHARS])


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
