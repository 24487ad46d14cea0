"""``python -m chaos.images [build|present|missing] [--force|--retry] [--jobs N] [--prefix P]
[--source DIR] [NAME…]`` (what ``scripts/docker-setup.sh`` runs): build the missing or
outdated images (``--force``: rebuild them all; ``--retry``: try again those whose build failed
before with the same recipe, which ``build`` otherwise skips: ``chaos.images.failures``;
``--jobs N``: N images at once, default ``JOBS``), or list the names that are up to date /
would be built, one ``name image`` a line. ``--prefix P`` goes before every tag built or read
(``scratch/``: a build from nothing beside the images runs use, which it never touches).
``--source DIR``: the lockchaos source tree the demo image is wheeled from (default: the
running package's)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from chaos.errors import UsageError
from chaos.images.build import JOBS, build, check_prefix, chosen, missing, present
from chaos.topology.images import image_for


@dataclass
class Options:
    names: list[str] = field(default_factory=list)
    force: bool = False
    retry: bool = False
    jobs: int = JOBS
    prefix: str = ""
    source: Path | None = None


def main(argv: list[str]) -> int:
    command, rest = (argv[0], argv[1:]) if argv else ("build", [])
    try:
        opts = _options(rest)
        if command == "build":
            built = build(opts.names or None, lambda line: print(f"[images] {line}", flush=True),
                          force=opts.force, retry=opts.retry, source=opts.source,
                          prefix=opts.prefix, jobs=opts.jobs)  # fmt: skip
            if not built:
                all_of = chosen(opts.names, opts.source)
                print("[images] all present: "
                      + ", ".join(opts.prefix + image_for(n) for n in all_of))  # fmt: skip
        elif command in ("present", "missing"):
            query = present if command == "present" else missing
            for name in query(opts.names or None, source=opts.source, prefix=opts.prefix):
                print(f"{name} {opts.prefix}{image_for(name)}")
        else:
            raise UsageError(f"unknown command {command!r}: build, present or missing")
    except (UsageError, RuntimeError) as exc:
        print(f"images: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    return 0


def _options(args: list[str]) -> Options:
    """The image names (each one checked) and the options of the arguments."""
    opts = Options()
    pending = list(args)
    while pending:
        arg = pending.pop(0)
        if arg in ("--force", "--retry"):
            setattr(opts, arg[2:], True)
        elif arg in ("--source", "--prefix", "--jobs"):
            if not pending:
                raise UsageError(f"{arg} needs a value: --source DIR, --prefix P, --jobs N")
            value = pending.pop(0)
            if arg == "--source":
                opts.source = Path(value)
            elif arg == "--prefix":
                opts.prefix = check_prefix(value)
            elif not value.isdigit():  # build() refuses 0
                raise UsageError(f"--jobs needs a number of images at once (got {value!r})")
            else:
                opts.jobs = int(value)
        else:
            image_for(arg)  # UsageError naming the choices
            opts.names.append(arg)
    return opts


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
