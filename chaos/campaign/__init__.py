"""What a run is, below everything that runs one: the ``Campaign`` declaration, the topology
it needs (``Layout``) and the run directory it leaves.

``chaos.experiments`` (a campaign run, compared, searched, audited) and ``chaos.explore``
both build on this; ``chaos.report`` reads the run directories it lays out. It imports
neither of them.
"""

from chaos.campaign.layout import REDLOCK_NODES, TOPOLOGIES, Layout, choose_layout, open_topology
from chaos.campaign.rundir import (
    CAMPAIGN,
    HISTORY,
    REPORT,
    SCHEDULE,
    VERDICT,
    CampaignFile,
    load_campaign,
    run_dir_for,
    save_campaign,
    stamped_path,
)
from chaos.campaign.spec import DEFAULTS, KNOBS, WORK_TTL_SHARE, Campaign, Knob

__all__ = [
    "CAMPAIGN",
    "DEFAULTS",
    "HISTORY",
    "KNOBS",
    "REDLOCK_NODES",
    "REPORT",
    "SCHEDULE",
    "TOPOLOGIES",
    "VERDICT",
    "WORK_TTL_SHARE",
    "Campaign",
    "CampaignFile",
    "Knob",
    "Layout",
    "choose_layout",
    "load_campaign",
    "open_topology",
    "run_dir_for",
    "save_campaign",
    "stamped_path",
]
