"""The schema says what the harness reads (docs/driver-protocol.schema.json vs
chaos/drivers/protocol.py): a validity the library computed as zero or negative is the
protocol, taken as it is, on ``ok`` and ``renewed`` alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.drivers.protocol import ANSWERS_ONLY, FromDriver, Ok, Renewed, decode

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


def _tagged(base: type[FromDriver]) -> list[type[FromDriver]]:
    """Every message class under ``base`` that is a line on the wire (a leaf: its bases are
    only the shapes several messages share)."""
    found: list[type[FromDriver]] = []
    for cls in base.__subclasses__():
        found += _tagged(cls) if cls.__subclasses__() else [cls]
    return found


def test_every_message_the_driver_may_write_is_in_the_schema_with_its_fields() -> None:
    """A reply added to protocol.py (revoked, invalidated, kept) is one a driver author finds
    in the schema, with every field the harness reads."""
    by_tag: dict[str, list[set[str]]] = {}
    for definition in SCHEMA.values():
        const = definition.get("properties", {}).get("type", {}).get("const")
        if const is not None:
            by_tag.setdefault(const, []).append(set(definition["properties"]))
    for cls in _tagged(FromDriver):
        fields = set(cls.__struct_fields__) | {"type"}
        assert any(fields <= props for props in by_tag[str(cls.__struct_config__.tag)]), cls


@pytest.mark.parametrize(("line", "answers"), [
    ('{"type": "revoked", "id": 3}', "extend"),
    ('{"type": "invalidated", "id": 3, "definite": false}', "extend"),
    ('{"type": "kept", "id": 2, "validity_ms": 900}', "release"),
])
def test_the_replies_that_answer_one_request_only_say_which(line: str, answers: str) -> None:
    message = decode(line)
    assert ANSWERS_ONLY[type(message)] == answers
