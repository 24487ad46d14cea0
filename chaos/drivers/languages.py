"""The driver kits, one per language (``kits/<lang>/`` next to this module, package data).

A kit is what a driver in that language is written on (docs/driver-protocol.md, "Driver
kits"): ``build.sh`` builds and installs each into ``kits/<lang>/`` of the drivers' build
directory (``build_kit_<lang>``, which writes a ``.stamp`` last); ``lockchaos driver new``
copies a kit's skeleton; ``lockchaos doctor`` lists the kits; the conformance tests run each
kit's ``conformance/`` driver. This module says, per language, what those need: the clients
it has a skeleton for, the programs its build and its drivers run.

A skeleton is ``kits/<lang>/skeleton/<client>/`` (or ``skeleton/`` for a language with one
client): files copied as they are but for the placeholders below, a ``build.sh`` if the
language needs a build (run once by ``driver new``), and ``exec.txt``, one line: the command
that runs the built driver (not copied; ``driver new`` prints it as ``exec:…``).
"""

from __future__ import annotations

import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from chaos.drivers.catalog import build_dirs

KITS_DIR = Path(__file__).with_name("kits")
EXEC_TEMPLATE = "exec.txt"
# What a skeleton's files may say, filled in by ``lockchaos driver new``: the driver's name
# (its directory's), its directory, the built kit's directory, the kit's sources in the package,
# and the Python that runs lockchaos (which has redis-py). All paths absolute.
PLACEHOLDERS = ("@NAME@", "@DIR@", "@KIT@", "@KIT_SRC@", "@PYTHON@")
STAMP = ".stamp"  # written last by build_kit_<lang>: the kit is built


@dataclass(frozen=True)
class Language:
    name: str
    clients: tuple[str, ...]  # the Redis clients it has a skeleton for; the first by default
    tools: tuple[str, ...]  # the programs its kit's build and its drivers need on PATH
    # Files of the kit a new driver gets a copy of (the Python kit is one file, imported from
    # the driver's own directory); the other kits are installed where their tools look.
    kit_files: tuple[str, ...] = ()

    @property
    def source(self) -> Path:
        return KITS_DIR / self.name

    def skeleton(self, client: str) -> Path | None:
        """The skeleton directory for ``client`` (None: this kit has none)."""
        for candidate in (self.source / "skeleton" / client, self.source / "skeleton"):
            if (candidate / EXEC_TEMPLATE).is_file():
                return candidate
        return None

    def missing_tools(self) -> list[str]:
        return [tool for tool in self.tools if shutil.which(tool) is None]

    def built(self) -> Path | None:
        """Where its kit is built (the first build directory searched that has it)."""
        for root in build_dirs():
            if (root / "kits" / self.name / STAMP).is_file():
                return root / "kits" / self.name
        return None

    def conformance(self) -> Path | None:
        """Its conformance driver's launcher (``conformance/run``), if the kit has one."""
        launcher = self.source / "conformance" / "run"
        return launcher if launcher.is_file() else None


LANGUAGES: dict[str, Language] = {
    language.name: language
    for language in (
        Language("java", ("jedis", "lettuce"), ("java", "javac", "mvn")),
        Language("go", ("go-redis",), ("go",)),
        Language("node", ("ioredis", "node-redis"), ("node", "npm")),
        Language("rust", ("redis-rs",), ("cargo",)),
        Language("python", ("redis-py",), (), kit_files=("lockchaos_driver.py",)),
    )
}


def fill(text: str, values: dict[str, str], *, quote: bool = False) -> str:
    """``text`` with each placeholder replaced (shell-quoted with ``quote``: a command line)."""
    for placeholder, value in values.items():
        text = text.replace(placeholder, shlex.quote(value) if quote else value)
    return text


def placeholders(name: str, directory: Path, language: Language) -> dict[str, str]:
    """The values of ``PLACEHOLDERS`` for a driver called ``name`` in ``directory``."""
    built = language.built()
    return {
        "@NAME@": name,
        "@DIR@": str(directory.resolve()),
        "@KIT@": str(built) if built else "",
        "@KIT_SRC@": str(language.source),
        "@PYTHON@": sys.executable,
    }


__all__ = ["EXEC_TEMPLATE", "KITS_DIR", "LANGUAGES", "PLACEHOLDERS", "Language", "fill",
           "placeholders"]
