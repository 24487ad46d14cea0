"""Failed image builds, remembered: a build that failed is not tried again with the same
inputs on every `make test` (each try can cost a debootstrap and minutes) until someone asks.

``.cache/images/failures.json`` maps an image's name to its last failure: the recipe hash it
was built for (``recipes.recipe_hash``: the recipe, the mirror, what it copies in), the
one-line reason and when. ``build`` skips a remembered image while its recipe hash is the
same, saying so in one line; a changed recipe (another mirror, a new toxiproxy-server, a
changed source tree…), ``--retry`` (``LOCKCHAOS_RETRY=1 make setup``) or ``--force`` tries
it again; a success forgets it.
"""

from __future__ import annotations

import time
from pathlib import Path

import msgspec

from chaos.topology import binaries

FAILURES = binaries.CACHE / "images" / "failures.json"
RETRY_HINT = "after a fix, " + (
    "`LOCKCHAOS_RETRY=1 make setup` (or `python -m chaos.images build --retry`) tries again"
    if binaries.IN_CHECKOUT
    else "`python -m chaos.images build --retry` tries again"  # an installed lockchaos
)


class Failure(msgspec.Struct, frozen=True):
    recipe: str  # the recipe hash of the build that failed
    reason: str  # its one-line error
    at: str  # when, UTC


def not_retried(
    name: str, recipe: str | None, failures: dict[str, Failure], *, retry: bool
) -> Failure | None:
    """The remembered failure that stops building ``name`` now: one with the same recipe hash
    (None: none could be computed, so nothing can match), unless ``retry``."""
    failure = failures.get(name)
    if retry or failure is None or recipe is None or failure.recipe != recipe:
        return None
    return failure


def load(path: Path = FAILURES) -> dict[str, Failure]:
    """The remembered failures (none when the file is absent or unreadable)."""
    try:
        return msgspec.json.decode(path.read_bytes(), type=dict[str, Failure])
    except (OSError, msgspec.DecodeError):
        return {}


def record(name: str, recipe: str | None, reason: str, path: Path = FAILURES) -> Failure:
    """Remember that building ``name`` from ``recipe`` failed with ``reason``."""
    failure = Failure(recipe or "", reason, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    _save({**load(path), name: failure}, path)
    return failure


def forget(name: str, path: Path = FAILURES) -> None:
    """``name`` built: its failure, if any, is history."""
    failures = load(path)
    if failures.pop(name, None) is not None:
        _save(failures, path)


def _save(failures: dict[str, Failure], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp")
    partial.write_bytes(msgspec.json.format(msgspec.json.encode(failures)))
    partial.replace(path)  # never half a file
