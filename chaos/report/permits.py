"""What a semaphore or a read-write lock held over time, for the timeline's permits panel.

A mutex's lanes already say everything (one holder at a time or a violation), but a
semaphore's promise is a count: at no instant do valid leases hold more permits than its
capacity. So for a lock that is not a mutex the timeline adds, above the client lanes, the
permits held in each mode as step functions of time, drawn the way the lanes draw a hold:

* *held*: every hold from its acquire ``ok`` to its release invoke (``chaos.checker.holds``),
  whether or not its lease had run out;
* *valid*: only the stretches in which each holder was within its claimed lease.

Where *held* rises above the capacity while *valid* stays under, a holder outlived its lease
(soft); where *valid* itself crosses it, the lock broke its promise (hard), as
``chaos.checker.permits`` judges. The counts come from the checker's own holds, so the
panel cannot disagree with the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chaos.checker.explain import Clock
from chaos.checker.holds import Hold, Span


@dataclass(frozen=True)
class Steps:
    """A step function: the count from ``x[i]`` (seconds) until ``x[i + 1]`` is ``y[i]``
    (plotly's ``line.shape = "hv"``); the last point closes it at the window's end."""

    x: list[float] = field(default_factory=list)
    y: list[int] = field(default_factory=list)

    @property
    def most(self) -> int:
        return max(self.y, default=0)


def held(holds: list[Hold], mode: str, clock: Clock, span: Span, valid: bool) -> Steps:
    """The permits that ``mode``'s ``holds`` took at each instant of ``span`` (monotonic ns):
    over each whole hold, or (``valid``) only within its leases."""
    lo, hi = span
    edges: list[tuple[int, int]] = []  # (time, +permits at a start / -permits at an end)
    for hold in holds:
        if hold.mode != mode or hold.start >= hi or hold.end <= lo:
            continue
        for start, end in hold.valid_spans() if valid else [(hold.start, hold.end)]:
            start, end = max(start, lo), min(end, hi)
            if start < end:
                edges += [(start, hold.permits), (end, -hold.permits)]
    edges.sort()  # at one instant, ends (negative) before starts: holds are half-open
    steps = Steps([clock.seconds(lo)], [0])
    count = 0
    for t, change in edges:
        count += change
        at = clock.seconds(t)
        if steps.x[-1] == at:  # several edges at one instant: one step, to the final count
            steps.y[-1] = count
        elif steps.y[-1] != count:
            steps.x.append(at)
            steps.y.append(count)
    steps.x.append(clock.seconds(hi))
    steps.y.append(count)
    return steps
