"""``--help`` as a CI log or an 80-column terminal can show it: click's plain layout (an
option, then its help beside or under it), its text wrapped only at spaces.

Typer's rich help draws the options as a table whose columns share the width: at 80 columns
``run --help``'s help column was 20 cells wide and cropped ``--allow-inconclus…`` and
``client-pause-at:co…``; click's own wrapper breaks words at hyphens and splits long ones
(``client-pause-`` / ``at:command=SCRIPT``). Here a paragraph is re-flowed and wrapped at
spaces (``chaos.report.terminal.wrap``), a token longer than the line overflows it, and the
commands list gives each command's first paragraph whole, not click's truncated one.
"""

from __future__ import annotations

from collections.abc import Iterable

import click
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

from chaos.report.terminal import wrap

FIRST_COLUMN_MAX = 30  # an option (or command) longer than this puts its help on the next line
GAP = 2


def _flowed(text: str, width: int) -> list[str]:
    """``text``'s paragraphs (split at blank lines), each re-flowed and wrapped at spaces to
    ``width``; a blank line between paragraphs."""
    lines: list[str] = []
    for paragraph in text.replace("\\[", "[").split("\n\n"):  # Typer escapes [ for rich
        if lines:
            lines.append("")
        lines += [line.plain for line in wrap(Text(" ".join(paragraph.split())), max(width, 10))]
    return lines


class HelpFormatter(click.HelpFormatter):
    """click's layout, wrapped at spaces only (see the module docstring)."""

    def write_text(self, text: str) -> None:
        indent = " " * self.current_indent
        for line in _flowed(text, self.width - self.current_indent):
            self.write(f"{indent}{line}\n" if line else "\n")

    def write_dl(self, rows: Iterable[tuple[str, str]], col_max: int = FIRST_COLUMN_MAX,
                 col_spacing: int = GAP) -> None:
        rows = list(rows)
        first = min(max((len(term) for term, _ in rows), default=0), col_max) + col_spacing
        indent = " " * self.current_indent
        under = " " * (self.current_indent + first)
        for term, definition in rows:
            self.write(f"{indent}{term}")
            if not definition:
                self.write("\n")
                continue
            self.write(" " * (first - len(term)) if len(term) <= first - col_spacing
                       else f"\n{under}")
            lines = _flowed(definition, self.width - self.current_indent - first)
            self.write("\n".join(line and (under + line if number else line)
                                 for number, line in enumerate(lines)) + "\n")


class Context(click.Context):
    formatter_class = HelpFormatter


class Command(TyperCommand):
    """A ``lockchaos`` sub-command: its ``--help`` in ``HelpFormatter``'s layout."""

    context_class = Context


class Group(TyperGroup):
    """The ``lockchaos`` command: its ``--help`` lists each command with its first paragraph,
    in the order registered (the order a user needs them)."""

    context_class = Context

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, (command.help or "").split("\n\n")[0])
                for name, command in self._shown(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def _shown(self, ctx: click.Context) -> Iterable[tuple[str, click.Command]]:
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                yield name, command
