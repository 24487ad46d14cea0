"""Writing to a terminal, or to a CI log (no terminal: rich takes ``COLUMNS``, else 80): lines
wrap at spaces only, never inside a token — a lock's or a fault's name, a path, an image
tag, ``client-pause-at:command=DEL`` — and a token longer than the line overflows it whole.
A command line a user pastes (``replay: …``) is never wrapped at all.

rich alone cannot do this: its word wrap folds a word longer than the width, a table column
narrower than its longest word folds or crops it (``redis-se|rver``, ``lockchaos/redis:7.|0``),
and ``overflow="ignore"`` turns wrapping off altogether. So prose goes through ``say`` (rich
markup in, wrapped here at spaces), commands through ``command``, and tables through
``print_table``: a table only when every column fits its longest token, else one block per
row, its first cell as a heading and the others under it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

INDENT = "  "  # a block's lines under its heading, and a wrapped line's continuation
# A token: a run of anything but spaces — except that a CJK character is one on its own
# (those scripts put no spaces between words, and a line may break between any two).
_CJK = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_TOKEN = re.compile(f"[{_CJK}]|[^\\s{_CJK}]+")
# What a table adds around its cells: a border per column and one more, a space each side.
_BORDER, _PADDING = 1, 2


def terminal(*, stderr: bool = False) -> Console:
    """A console for lockchaos's output: no highlighting of numbers and paths (styles come
    from ``chaos.report.style``), its width rich's (the terminal's, ``COLUMNS``, or 80)."""
    return Console(stderr=stderr, highlight=False)


def _text(line: str | Text) -> Text:
    return Text.from_markup(line) if isinstance(line, str) else line


def wrap(line: str | Text, width: int, indent: str = "") -> list[Text]:
    """``line`` (rich markup, or a ``Text``) as lines of at most ``width`` cells, broken only
    at spaces, each paragraph's continuation lines ``indent``-ed; a token longer than that
    stands alone on its line."""
    lines: list[Text] = []
    for paragraph in _text(line).split("\n", allow_blank=True):
        plain, start, started = paragraph.plain, 0, False
        breaks: list[int] = []
        for token in _TOKEN.finditer(plain):
            room = width - (cell_len(indent) if breaks else 0)
            if started and cell_len(plain[start:token.end()]) > room:
                breaks.append(token.start())
                start = token.start()
            started = True
        for number, part in enumerate(paragraph.divide(breaks)):
            part.rstrip()
            lines.append(Text(indent) + part if number else part)
    return lines


def say(console: Console, line: str | Text, indent: str = "") -> None:
    """Print ``line`` (rich markup, or a ``Text``) wrapped at spaces to the console's width;
    its continuation lines ``indent``-ed."""
    for part in wrap(line, console.width, indent):
        console.print(part, soft_wrap=True)


def command(console: Console, label: str, words: str) -> None:
    """``label words`` on one line whatever its length: a command to paste."""
    console.print(Text(f"{label}{words}"), soft_wrap=True)


def longest_token(value: Any) -> int:
    """The widest token of ``value``'s text, in cells."""
    return max((cell_len(token) for token in _TOKEN.findall(_text(str(value)).plain)), default=0)


def print_table(console: Console, title: str, columns: Mapping[str, str],
                rows: Sequence[Mapping[str, Any]]) -> None:
    """``rows`` (each a mapping with every field ``columns`` names, ``{label: field}``, values
    rich markup) as a table titled ``title`` when each column can be as wide as its longest
    token and the table still fits the console; else as blocks (``print_blocks``)."""
    widths = [max([longest_token(label), *(longest_token(row[field]) for row in rows)])
              for label, field in columns.items()]
    if sum(widths) + len(widths) * (_BORDER + _PADDING) + _BORDER > console.width:
        print_blocks(console, title, columns, rows)
        return
    table = Table(title=title)
    for (label, _), width in zip(columns.items(), widths, strict=True):
        table.add_column(label, min_width=width, overflow="fold")  # folds only CJK
    for row in rows:
        table.add_row(*(str(row[field]) for field in columns.values()))
    console.print(table, crop=False)


def print_blocks(console: Console, title: str, columns: Mapping[str, str],
                 rows: Sequence[Mapping[str, Any]]) -> None:
    """Per row, its first column as a bold heading and each other one that is not empty as
    an indented ``label: value`` line, wrapped at spaces under itself."""
    say(console, Text(title, style="italic"))
    (_, first), *others = columns.items()
    for row in rows:
        say(console, Text.assemble((_text(str(row[first])).plain, "bold")))
        for label, field in others:
            if row[field] in ("", None):
                continue
            for line in _block_line(console, label, row[field]):
                console.print(line, soft_wrap=True)
    console.print()


def _block_line(console: Console, label: str, value: Any) -> Iterator[Text]:
    line = Text.assemble((f"{label}: ", "dim"), _text(str(value)))
    for part in wrap(line, console.width - len(INDENT), INDENT):
        yield Text(INDENT) + part
