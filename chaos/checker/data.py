"""Data: acknowledged writes that the resource no longer holds at the end (lost updates).

The workload's resource is a list every critical section rewrites whole (read, append its op
id, write back), so two holders at once make one of them overwrite the other's update. A
write the client saw succeed (``ok``) before the harness's final read must appear in it.

Without a final read nothing can be said (the verdict says ``null`` rather than guess).
Writes acknowledged after the final read was taken are not judged either.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaos.checker.timeline import Timeline


@dataclass(frozen=True, slots=True)
class LostWrite:
    op: str
    process: str
    acked: int


def lost_writes(timeline: Timeline, read_at: int, present: list[str]) -> list[LostWrite]:
    """Writes acknowledged before the final read (taken at ``read_at``, finding ``present``)
    and missing from it, in acknowledgement order."""
    survivors = set(present)
    lost: dict[str, LostWrite] = {}  # by op id: a write acknowledged twice is lost once
    for index, op in enumerate(timeline.acked_ops):
        if op not in survivors and op not in lost and timeline.acked_at[index] <= read_at:
            lost[op] = LostWrite(op, timeline.acked_by[index], timeline.acked_at[index])
    return sorted(lost.values(), key=lambda write: (write.acked, write.op))
