"""``lockchaos run``'s real option parsing, stopped just before it would run: the Campaign a
command line (a printed replay, the declaration's own words) describes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaos.campaign import Campaign
from chaos.cli import main
from chaos.commands import run as run_command


class _Parsed(Exception):
    """Raised by the stand-in campaign runner: the command line parsed into ``campaign``."""

    def __init__(self, campaign: Campaign) -> None:
        super().__init__(campaign)
        self.campaign = campaign


def parse_run(words: list[str], monkeypatch: pytest.MonkeyPatch) -> Campaign:
    """The Campaign ``lockchaos run WORDS`` builds."""

    def parsed(campaign: Campaign, out: Path, schedule: object = None) -> Any:
        raise _Parsed(campaign)

    with monkeypatch.context() as patch:
        patch.setattr(run_command, "run_campaign", parsed)
        with pytest.raises(_Parsed) as caught:
            main(["run", *words])
    return caught.value.campaign
