"""The ``lockchaos`` command: a thin façade over topology, locks, workload, nemesis and checker.

Every command lives in its own ``chaos.commands`` module; this file only assembles them and
turns ``UsageError`` into one line on stderr and exit status 2.
"""

from __future__ import annotations

import hashlib
import sys
from importlib import metadata
from pathlib import Path

import click
import typer

from chaos.commands import (
    audit,
    check,
    compare,
    compose,
    demo,
    driver,
    explore,
    list_,
    merge,
    report,
    run,
    up,
)
from chaos.commands import doctor as doctor_command
from chaos.commands import setup as setup_command
from chaos.commands.help import Command, Group
from chaos.errors import UsageError

app = typer.Typer(
    name="lockchaos",
    help="Fault-injection correctness tester for Redis distributed locks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's layout, wrapped at spaces (chaos.commands.help)
    cls=Group,
)


def version() -> str:
    """``lockchaos 0.1.0 (set-up 1a2b3c4d)``: the package's version, and a digest of the set-up
    steps it ships (``chaos/commands/setup.sh``: which Redis and Toxiproxy ``lockchaos setup``
    builds). A CI cache of what ``lockchaos setup`` built is keyed on this line, so a new
    lockchaos — even an unreleased one with the same version — starts a new cache."""
    steps = (Path(setup_command.__file__).parent / "setup.sh").read_bytes()
    return (f"lockchaos {metadata.version('lockchaos')} "
            f"(set-up {hashlib.sha256(steps).hexdigest()[:8]})")


def _print_version(value: bool) -> None:
    if value:
        print(version())
        raise typer.Exit()


@app.callback()
def _root(
    _version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                  help="Print lockchaos's version and exit."),
) -> None:
    """Fault-injection correctness tester for Redis distributed locks."""


# In the order a user needs them: gate a lock, look closer, compare, then the tools.
app.command("audit", cls=Command)(audit.audit)
app.command("run", cls=Command)(run.run)
app.command("explore", cls=Command)(explore.explore_command)
app.command("compare", cls=Command)(compare.compare)
# `driver new`: a lock in another language, from a kit
app.add_typer(driver.app, name="driver", cls=Group)
app.command("list", cls=Command)(list_.list_)
app.command("doctor", cls=Command)(doctor_command.doctor)
app.command("setup", cls=Command)(setup_command.setup)
app.command("report", cls=Command)(report.report)
app.command("check-history", cls=Command)(check.check_history)
app.command("merge", cls=Command)(merge.merge)
app.command("demo", cls=Command)(demo.demo)
app.command("up", cls=Command)(up.up)
app.add_typer(compose.app, name="compose", hidden=True)  # the containers of compose/



def main(argv: list[str] | None = None) -> int:
    """Console entry point; returns the exit status (0 ok, 1 violation, 2 bad input,
    3 inconclusive: the run did not exercise the lock)."""
    try:
        # In non-standalone mode click returns the code of a ``typer.Exit`` instead of raising.
        code = app(args=argv, standalone_mode=False)
    except UsageError as exc:
        print(f"lockchaos: {exc}", file=sys.stderr)
        return 2
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:
        print("lockchaos: aborted", file=sys.stderr)
        return 130
    except click.ClickException as exc:
        print(f"lockchaos: {exc.format_message()}", file=sys.stderr)
        return 2
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
