"""``lockchaos driver new --lang LANG [--client CLIENT] DIR``: start a driver from a kit.

It copies that language's skeleton (``chaos/drivers/languages.py``: a correct compare-and-delete
lock on the kit, for the chosen Redis client) into ``DIR``, fills in its names and paths, runs
``DIR/build.sh`` where the language needs a build, and prints as its last line the ``exec:…``
value that runs the driver — every path in it absolute, since a driver runs in the working
directory of the ``lockchaos`` that starts it, wherever that is. ``lockchaos run --lock
<that value>`` passes on it before any edit.

Bad input (an unknown language or client, a ``DIR`` that exists and is not empty, a toolchain
that is missing, a kit not built) is one line and exit status 2; a skeleton whose build fails
is exit status 1, its build's output above.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import typer

from chaos.commands.help import Command
from chaos.drivers.languages import EXEC_TEMPLATE, LANGUAGES, Language, fill, placeholders
from chaos.errors import UsageError
from chaos.topology.binaries import setup_hint

app = typer.Typer(
    help="Drivers for locks in other languages (docs/driver-protocol.md).",
    no_args_is_help=True,
    rich_markup_mode=None,  # its --help as every command's (chaos.commands.help)
)
BUILD_TIMEOUT_S = 900  # a first Maven or cargo build downloads its dependencies


@app.command("new", cls=Command)
def new(
    directory: Path = typer.Argument(..., help="where to write it (new, or empty)"),
    lang: str = typer.Option(..., "--lang", help=f"one of {', '.join(LANGUAGES)}"),
    client: str | None = typer.Option(
        None, "--client", help="the Redis client the skeleton uses (default: the language's "
        "first: " + ", ".join(f"{n} {ls.clients[0]}" for n, ls in LANGUAGES.items()) + ")"),
) -> None:
    """Write a working driver skeleton for LANG into DIR (built, where LANG needs it) and
    print, as the last line, the exec:… value that runs it."""
    language = LANGUAGES.get(lang)
    if language is None:
        raise UsageError(f"--lang {lang!r}: one of {', '.join(LANGUAGES)}")
    client = client or language.clients[0]
    if client not in language.clients:
        raise UsageError(f"--client {client!r}: a {lang} driver has a skeleton for "
                         f"{' or '.join(language.clients)}")
    _check_directory(directory)
    missing = language.missing_tools()
    if missing:
        raise UsageError(f"a {lang} driver needs {', '.join(language.tools)} on PATH: "
                         f"{', '.join(missing)} not found")
    skeleton = language.skeleton(client)
    if skeleton is None:
        raise UsageError(f"this lockchaos has no {lang} skeleton for {client} "
                         f"({language.source / 'skeleton'} is missing): reinstall lockchaos")
    name = re.sub(r"[^a-z0-9]+", "-", directory.resolve().name.lower()).strip("-") or "driver"
    values = placeholders(name, directory, language)
    if not values["@KIT@"] and _mentions(skeleton, "@KIT@"):
        raise UsageError(f"the {lang} driver kit is not built: {setup_hint('--drivers')}")
    _copy(skeleton, directory, language, values)
    if (directory / "build.sh").is_file():
        _build(directory)
    command = fill((skeleton / EXEC_TEMPLATE).read_text().strip(), values, quote=True)
    print(f"wrote a {lang} driver on {client} into {values['@DIR@']}; it runs in the "
          "working directory of the lockchaos that starts it, so its paths are absolute:")
    print(f"exec:{command}")


def _check_directory(directory: Path) -> None:
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory} exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()):
        raise UsageError(f"{directory} exists and is not empty: give a new or empty directory")


def _mentions(skeleton: Path, placeholder: str) -> bool:
    return any(placeholder in _text(path) for path in skeleton.rglob("*") if path.is_file())


def _text(path: Path) -> str:
    """A skeleton file's text, or "" for a binary one (copied as it is)."""
    try:
        return path.read_text()
    except UnicodeDecodeError:
        return ""


def _copy(skeleton: Path, directory: Path, language: Language, values: dict[str, str]) -> None:
    """The skeleton's files (modes kept: a build.sh stays executable), placeholders filled;
    and the kit files a driver of this language keeps beside it."""
    shutil.copytree(skeleton, directory, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(EXEC_TEMPLATE, "__pycache__"))
    for name in language.kit_files:
        shutil.copy2(language.source / name, directory / name)
    for path in directory.rglob("*"):
        text = _text(path) if path.is_file() else ""
        if any(placeholder in text for placeholder in values):
            path.write_text(fill(text, values))


def _build(directory: Path) -> None:
    """Run ``DIR/build.sh`` in ``DIR``, its output on stderr (as it comes when stderr is a
    file; after it, when a caller captured stderr); exit 1 if it fails or outlasts
    ``BUILD_TIMEOUT_S``."""
    sys.stdout.flush()
    try:
        sink: int | None = sys.stderr.fileno()  # the build's output streams as it comes
    except (AttributeError, ValueError, OSError):  # a stderr that is no file (a test's capture)
        sink = None
    try:
        done = subprocess.run(["bash", "build.sh"], cwd=directory, timeout=BUILD_TIMEOUT_S,
                              check=False, text=True, stderr=subprocess.STDOUT,
                              stdout=subprocess.PIPE if sink is None else sink)
    except subprocess.TimeoutExpired:
        print(f"lockchaos: {directory}/build.sh took more than {BUILD_TIMEOUT_S} s",
              file=sys.stderr)
        raise typer.Exit(1) from None
    if sink is None:
        sys.stderr.write(done.stdout)
    if done.returncode != 0:
        print(f"lockchaos: {directory}/build.sh failed (exit status {done.returncode}): see "
              "its output above", file=sys.stderr)
        raise typer.Exit(1)
