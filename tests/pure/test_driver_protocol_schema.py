"""The schema says what the harness reads (docs/driver-protocol.schema.json vs
chaos/drivers/protocol.py): a validity the library computed as zero or negative is the
protocol, taken as it is, on ``ok`` and ``renewed`` alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.drivers.protocol import Ok, Renewed, decode

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs/driver-protocol.schema.json").read_text()
)["$defs"]


@pytest.mark.parametrize("validity", [0, -3.5])
def test_a_validity_at_or_below_zero_is_read_as_it_is(validity: float) -> None:
    ok = decode(json.dumps({"type": "ok", "id": 1, "token": "c1:a", "validity_ms": validity}))
    assert isinstance(ok, Ok) and ok.validity_ms == validity
    renewed = decode(json.dumps({"type": "renewed", "token": "c1:a", "validity_ms": validity}))
    assert isinstance(renewed, Renewed) and renewed.validity_ms == validity
    for message in ("ok", "renewed"):
        assert "minimum" not in SCHEMA[message]["properties"]["validity_ms"]
