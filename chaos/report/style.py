"""How each verdict (and each kind of violation) looks wherever it is shown.

One declaration: the colour of every page (run report, compare index, demo, audit) and of the
timeline's bars, the rich style of every command's terminal output, and the phrase legends
and page headers use. A kind reads the same on a terminal, in a badge and on the timeline,
and a new kind is added here once.
"""

from __future__ import annotations

from dataclasses import dataclass

INK = "#1d2433"  # dark text, on the light colours
WHITE = "#ffffff"


@dataclass(frozen=True)
class Look:
    """How one verdict is shown."""

    color: str  # on pages: badges, tints, the timeline's bars and marks (CSS hex)
    ink: str  # text written on ``color``
    terminal: str  # rich style (the nearest a terminal has to ``color``)
    words: str  # the verdict in a phrase, for legends and page headers


# Keyed as ``chaos.checker.verdict.RANK``, least severe first.
LOOKS: dict[str, Look] = {
    "ok": Look("#2b9348", WHITE, "bold green", "no violation"),
    "inconclusive": Look("#f0ad4e", INK, "bold yellow",
                         "the run did not exercise the lock (inconclusive)"),
    "soft": Look("#f2b705", INK, "yellow", "overlaps only past a lease (soft)"),
    "fairness": Look("#4d9de0", WHITE, "bold blue",
                     "a waiter was overtaken by a later one (fairness)"),
    "liveness": Look("#f46036", WHITE, "bold dark_orange",
                     "the lock stayed unavailable (liveness)"),
    "data": Look("#7b2cbf", WHITE, "bold magenta", "acknowledged writes were lost (data)"),
    "hard": Look("#d7263d", WHITE, "bold red",
                 "the lock granted overlapping valid leases (hard)"),
}


def marked(verdict: str, width: int = 0) -> str:
    """``verdict`` in its terminal style as rich markup, right-aligned in ``width``."""
    return f"[{LOOKS[verdict].terminal}]{verdict:>{width}}[/]"


def reasons_label(verdict: str) -> str:
    """What a verdict's ``inconclusive_reasons`` are called beside it: why an inconclusive run
    tested nothing, or, beside violations, what the run asked for and did not test."""
    return "inconclusive" if verdict == "inconclusive" else "not tested"
