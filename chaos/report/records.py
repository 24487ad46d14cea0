"""The JSON records a comparison or an audit keeps (``matrix.json``, ``audit.json``): typed
msgspec Structs, written indented (people read them too) and read back with one line of
error when a file is not what it should be."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import msgspec

from chaos.errors import UsageError

R = TypeVar("R", bound=msgspec.Struct)


def save_record(path: Path, record: msgspec.Struct) -> Path:
    path.write_bytes(msgspec.json.format(msgspec.json.encode(record), indent=2) + b"\n")
    return path


def load_record(path: Path, kind: type[R], what: str) -> R:
    """``path`` decoded as ``kind``; ``UsageError`` naming ``what`` it should have been."""
    try:
        return msgspec.json.decode(path.read_bytes(), type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise UsageError(f"{path}: not a lockchaos {what} ({exc})") from None
