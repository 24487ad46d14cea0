"""A ``schedule.json`` main wrote (tests/pinned.py) still loads and plays: every fault it
names is in the catalog and takes the parameters it gives, the campaign plays it against a
live run — each firing started with those parameters, aimed, and healed — and writes it
back byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

from pinned import SMOKE_SCHEDULE

from chaos import history as h
from chaos.campaign import Campaign
from chaos.experiments.execute import run_campaign
from chaos.nemesis import FAULTS, FaultEvent, Schedule, parse_faults


def test_a_schedule_json_main_wrote_loads_and_plays(tmp_path: Path) -> None:
    saved = json.loads(SMOKE_SCHEDULE)
    schedule = Schedule(saved["seed"], tuple(FaultEvent(**event) for event in saved["events"]))
    for event in schedule.events:
        FAULTS[event.fault].check_params(event.params)  # UsageError if it no longer takes them
    campaign = Campaign("lua", faults=parse_faults("client-pause,partition"), seed=3,
                        duration_s=5.0)
    outcome = run_campaign(campaign, tmp_path, schedule=schedule)
    assert (outcome.run_dir / "schedule.json").read_text() == SMOKE_SCHEDULE
    events = list(h.iter_events(outcome.run_dir / "history.jsonl"))
    starts = [e.value for e in events if e.process == h.NEMESIS and e.f == h.START]
    assert [(s["fault"], s["params"]) for s in starts] == [
        (event.fault, event.params) for event in schedule.events
    ]
    assert all(s["target"].get("client") for s in starts), starts  # each aimed at a client
    stops = [e.value for e in events if e.process == h.NEMESIS and e.f == h.STOP]
    assert sorted(s["id"] for s in stops) == sorted(s["id"] for s in starts)
    assert not any("error" in s for s in stops), stops
    assert outcome.nemesis_errors == []
    coverage = outcome.verdict.coverage
    assert (coverage["partition"].fired, coverage["client-pause"].fired) == (2, 2)
