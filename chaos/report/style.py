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
    meaning: str  # what it means for the lock, in a sentence (an audit's answer says it)


# What a lease without fencing cannot prevent, and where to read what can.
FENCING = ("the known limit of a lease without fencing: a holder stopped or slowed past its "
           "TTL still acts, after the next one took the lock (docs/fencing.md)")

# Keyed as ``chaos.checker.verdict.RANK``, least severe first.
LOOKS: dict[str, Look] = {
    "ok": Look("#2b9348", WHITE, "bold green", "no violation",
               "no two clients held the lock at once, nothing was lost, it stayed available"),
    "inconclusive": Look("#f0ad4e", INK, "bold yellow",
                         "the run did not exercise the lock (inconclusive)",
                         "no violation, because the lock was not exercised: it says nothing"),
    "soft": Look("#f2b705", INK, "yellow", "overlaps only past a lease (soft)",
                 f"two clients held the lock at once only once a lease had run out: {FENCING}"),
    "fairness": Look("#4d9de0", WHITE, "bold blue",
                     "a waiter was overtaken by a later one (fairness)",
                     "a lock that claims to be fair granted a later waiter first"),
    "liveness": Look("#f46036", WHITE, "bold dark_orange",
                     "the lock stayed unavailable (liveness)",
                     "nobody could take the lock for far longer than its TTL"),
    "data": Look("#7b2cbf", WHITE, "bold magenta", "acknowledged writes were lost (data)",
                 f"acknowledged writes were lost, with no two valid leases at once: {FENCING}"),
    "hard": Look("#d7263d", WHITE, "bold red",
                 "the lock granted overlapping valid leases (hard)",
                 "the lock granted two clients valid leases at once: the lock itself is "
                 "broken, however its holders behave"),
}


def marked(verdict: str, width: int = 0) -> str:
    """``verdict`` in its terminal style as rich markup, right-aligned in ``width``."""
    return f"[{LOOKS[verdict].terminal}]{verdict:>{width}}[/]"


def reasons_label(verdict: str) -> str:
    """What a verdict's ``inconclusive_reasons`` are called beside it: why an inconclusive run
    tested nothing, or, beside violations, what the run asked for and did not test."""
    return "inconclusive" if verdict == "inconclusive" else "not tested"
