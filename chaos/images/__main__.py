"""``python -m chaos.images [build|present|missing] [--force|--retry] [--source DIR] [NAME…]``
(what ``scripts/docker-setup.sh`` runs): build the missing or outdated images (``--force``:
rebuild them all; ``--retry``: try again those whose build failed before with the same
recipe, which ``build`` otherwise skips: ``chaos.images.failures``), or list the names that
are up to date / would be built, one ``name image`` a line. ``--source DIR``: the lockchaos
source tree the demo image is wheeled from (default: the running package's)."""

from __future__ import annotations

import sys
from pathlib import Path

from chaos.errors import UsageError
from chaos.images.build import build, chosen, missing, present
from chaos.topology.images import image_for


def main(argv: list[str]) -> int:
    command, rest = (argv[0], argv[1:]) if argv else ("build", [])
    try:
        force, retry = "--force" in rest, "--retry" in rest
        names, source = _names_and_source([a for a in rest if a not in ("--force", "--retry")])
        if command == "build":
            built = build(names or None, lambda line: print(f"[images] {line}", flush=True),
                          force=force, retry=retry, source=source)  # fmt: skip
            if not built:
                all_of = chosen(names, source)
                print("[images] all present: " + ", ".join(image_for(n) for n in all_of))
        elif command in ("present", "missing"):
            query = present if command == "present" else missing
            for name in query(names or None, source=source):
                print(f"{name} {image_for(name)}")
        else:
            raise UsageError(f"unknown command {command!r}: build, present or missing")
    except (UsageError, RuntimeError) as exc:
        print(f"images: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    return 0


def _names_and_source(args: list[str]) -> tuple[list[str], Path | None]:
    """The image names (each one checked) and ``--source DIR`` of the arguments."""
    names: list[str] = []
    source = None
    pending = list(args)
    while pending:
        arg = pending.pop(0)
        if arg == "--source":
            if not pending:
                raise UsageError("--source needs a directory: a lockchaos source tree")
            source = Path(pending.pop(0))
        else:
            image_for(arg)  # UsageError naming the choices
            names.append(arg)
    return names, source


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
