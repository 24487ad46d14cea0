"""``lockchaos run``'s and ``audit``'s real option parsing, stopped just before they would
run: the Campaign (or AuditPlan) a command line (a printed replay, the declaration's own words)
describes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaos.campaign import Campaign
from chaos.cli import main
from chaos.commands import audit as audit_command
from chaos.commands import run as run_command
from chaos.experiments.audit import AuditPlan


class _Parsed(Exception):
    """Raised by the stand-in runner: the command line parsed into ``parsed``."""

    def __init__(self, parsed: Any) -> None:
        super().__init__(parsed)
        self.parsed = parsed


def _parse(command: str, words: list[str], monkeypatch: pytest.MonkeyPatch,
           module: object, runner: str) -> Any:
    def parsed(what: Any, out: Path, *args: Any, **kwargs: Any) -> Any:
        raise _Parsed(what)

    with monkeypatch.context() as patch:
        patch.setattr(module, runner, parsed)
        with pytest.raises(_Parsed) as caught:
            main([command, *words])
    return caught.value.parsed


def parse_run(words: list[str], monkeypatch: pytest.MonkeyPatch) -> Campaign:
    """The Campaign ``lockchaos run WORDS`` builds."""
    campaign: Campaign = _parse("run", words, monkeypatch, run_command, "run_campaign")
    return campaign


def parse_audit(words: list[str], monkeypatch: pytest.MonkeyPatch) -> AuditPlan:
    """The AuditPlan ``lockchaos audit WORDS`` builds."""
    plan: AuditPlan = _parse("audit", words, monkeypatch, audit_command, "run_audit")
    return plan
