"""The interactive timeline of one run (plotly): who held the lock when, and what went wrong.

One lane per client shows its holds (pale bars), the stretches in which its lease was valid
by the lock's own claim (dark stripes inside them: a hold sticking out of its stripe is a
holder that outlived its lease), renewals and extends (diamonds) and crashes (crosses), and
each operation that stalled in flight — an acquire from its invoke to its grant, a release
from its invoke to the moment it returned true, when that took ``STALLED_TTLS`` of the TTL
or more — as a bar of its own: the release paused before its DEL that deleted the next
holder's key is drawn across the whole time it was pending, not as an instant.
A lock that is not a mutex draws shared holds (a semaphore's, a reader's) green and exclusive
ones (a writer's) blue, and gets a panel above the lanes: the permits held in each mode over
time against the capacity (``chaos.report.permits``).
Above them the ``nemesis`` lane has one bar per fault, and each fault is also a faint band
across every lane; the ``checker`` lane has one bar per violation, coloured by kind. Overlaps
are highlighted on the two holders' lanes, and each violation's start is also a marker on
the checker lane and on the lanes it involves: a bar is a share of the window wide at
least, which a 9 ms overlap in a 20 s run still makes a sliver, while a marker keeps its
size at every zoom. Lost writes are marked where they were acknowledged; hovering or
clicking any of these shows the checker's explanation.

Everything is drawn from the checker's ``Timeline`` (holds, leases, faults, acknowledged
writes) and the verdict, never from raw events. A browser stays responsive up to a few
thousand bars, so a long run is drawn as a window of ``MAX_HOLDS`` holds around its first
hard violation (or its first violation, or its start); ``Window`` says which, for the page.
"""

from __future__ import annotations

import html
import json
import re
import textwrap
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go

from chaos.checker.explain import Clock
from chaos.checker.holds import NEVER
from chaos.checker.timeline import FaultSpan
from chaos.history import EXCLUSIVE, SHARED
from chaos.report import permits
from chaos.report.rundir import RunRecord
from chaos.report.style import INK, LOOKS

MAX_HOLDS = 3000  # holds drawn at most; a longer run is drawn as a window
MAX_VIOLATIONS = 400  # violations drawn at most (the most severe first); the table has all
MAX_BANDS = 300  # fault bands across the lanes; the nemesis lane still has every fault
MIN_WIDTH = 0.004  # an instantaneous fault or violation is drawn this share of the window wide
NEMESIS_LANE = "nemesis"
CHECKER_LANE = "checker"

HOLD_COLOR = "#b8cfee"
LEASE_COLOR = "#2e5eaa"
# A lock that is not a mutex: each mode's hold and lease colours (exclusive: a mutex's).
MODE_COLORS = {EXCLUSIVE: (HOLD_COLOR, LEASE_COLOR), SHARED: ("#bfe3c6", "#2f7d4a")}
FAULT_COLOR = "#8d99ae"
RENEW_COLOR = "#2a9d8f"
CRASH_COLOR = "#111111"
IN_FLIGHT_COLOR = "#e76f51"
# An acquire or release in flight for this share of the TTL or longer stalled (a pause, a
# slow link, a stopped server): drawn from its invoke to its outcome. An unhindered one
# takes a millisecond or two, and drawing every one would bury the one that matters.
STALLED_TTLS = 0.1
DIV_ID = "timeline"
LANE_PX = 34  # the height of one lane
PANEL_PX = 150  # the permits panel's height (a lock that is not a mutex) …
PANEL_GAP_PX = 36  # … and the gap between it and the lanes


@dataclass(frozen=True)
class Window:
    """The stretch of the run the timeline draws, in seconds since the run started."""

    start_s: float
    end_s: float
    total_s: float
    holds_shown: int
    holds_total: int
    focus: str = "the start"  # what the window was centred on

    @property
    def partial(self) -> bool:
        return self.holds_shown < self.holds_total


def choose_window(run: RunRecord, max_holds: int = MAX_HOLDS) -> Window:
    """All of the run, or the ``max_holds`` holds around the first (hard) violation."""
    timeline, verdict = run.timeline, run.verdict
    clock = Clock(timeline)
    holds = timeline.holds
    total_s = clock.seconds(timeline.end)
    if len(holds) <= max_holds:
        return Window(0.0, total_s, total_s, len(holds), len(holds))
    focus, focus_s = "the start", 0.0
    if verdict.first_hard_violation_s is not None:
        focus, focus_s = "the first hard violation", verdict.first_hard_violation_s
    elif verdict.violations:
        focus, focus_s = "the first violation", min(v.start_s for v in verdict.violations)
    at = bisect_left(holds, timeline.start + int(focus_s * 1e9), key=lambda hold: hold.start)
    hi = min(len(holds), max(at - max_holds // 4, 0) + max_holds)
    lo = hi - max_holds
    start_s = clock.seconds(holds[lo].start) if lo > 0 else 0.0
    end_s = clock.seconds(holds[hi].start) if hi < len(holds) else total_s
    return Window(start_s, end_s, total_s, max_holds, len(holds), focus)


@dataclass
class _Bars:
    """One horizontal-bar trace being collected: a lane, a start and an end per bar."""

    name: str
    color: str
    width: float
    opacity: float = 1.0
    legend: bool = True
    group: str | None = None
    lanes: list[str] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    lengths: list[float] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    ids: list[int | None] = field(default_factory=list)

    def add(self, lane: str, start: float, end: float, text: str, ident: int | None = None,
            min_length: float = 0.0) -> None:
        self.lanes.append(lane)
        self.starts.append(start)
        self.lengths.append(max(end - start, min_length))
        self.texts.append(text)
        self.ids.append(ident)

    def trace(self) -> go.Bar:
        return go.Bar(
            name=self.name, orientation="h", y=self.lanes, x=self.lengths, base=self.starts,
            width=self.width, opacity=self.opacity, marker={"color": self.color, "line":
            {"width": 0}}, hovertext=self.texts, hovertemplate="%{hovertext}<extra></extra>",
            customdata=self.ids, showlegend=self.legend, legendgroup=self.group or self.name,
        )


@dataclass
class _Marks:
    """One marker trace being collected: a lane and an instant per mark."""

    name: str
    color: str
    symbol: str
    size: int = 9
    group: str | None = None
    legend: bool = True
    lanes: list[str] = field(default_factory=list)
    at: list[float] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    ids: list[int | None] = field(default_factory=list)

    def add(self, lane: str, at: float, text: str, ident: int | None = None) -> None:
        self.lanes.append(lane)
        self.at.append(at)
        self.texts.append(text)
        self.ids.append(ident)

    def trace(self) -> go.Scatter:
        return go.Scatter(
            name=self.name, mode="markers", y=self.lanes, x=self.at, customdata=self.ids,
            marker={"color": self.color, "symbol": self.symbol, "size": self.size,
                    "line": {"width": 1, "color": "white"}},
            hovertext=self.texts, hovertemplate="%{hovertext}<extra></extra>",
            legendgroup=self.group or self.name, showlegend=self.legend,
        )


def timeline_figure(run: RunRecord, window: Window) -> go.Figure:
    """The figure for ``window`` of the run; violation bars carry their index in the verdict's
    ``violations`` as ``customdata`` (the page shows the explanation on click)."""
    timeline = run.timeline
    span = (timeline.start + int(window.start_s * 1e9),
            timeline.end + 1 if not window.partial else timeline.start + int(window.end_s * 1e9))
    min_len = MIN_WIDTH * max(window.end_s - window.start_s, 1e-3)
    clock = Clock(timeline)
    bars, marks = _hold_traces(run, clock, span)
    in_flight = _in_flight_traces(run, clock, span, min_len)
    fault_bars, hits, bands = _fault_traces(run, clock, span, min_len)
    flagged, starts, lost = _violation_traces(run, clock, span, window, min_len)
    lanes = [CHECKER_LANE, NEMESIS_LANE, *_clients(run)]
    panel = [] if timeline.mutex else _permit_traces(run, clock, span)
    figure = go.Figure([b.trace() for b in (fault_bars, *bars, in_flight, *flagged) if b.lanes]
                       + [m.trace() for m in (*marks, hits, *starts, lost) if m.lanes]
                       + panel)
    pad = (window.end_s - window.start_s) * 0.01
    lanes_px = LANE_PX * len(lanes)
    figure.update_layout(
        template="plotly_white", barmode="overlay", hovermode="closest",
        height=150 + lanes_px, margin={"l": 80, "r": 24, "t": 36, "b": 48},
        shapes=bands, legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        hoverlabel={"align": "left", "bgcolor": "white", "font": {"size": 12}},
        font={"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"},
        xaxis={"title": "seconds since the run started", "range": [window.start_s - pad,
               window.end_s + pad], "zeroline": False, "showspikes": True,
               "spikemode": "across", "spikethickness": 1, "spikecolor": "#999"},
        yaxis={"type": "category", "categoryorder": "array", "fixedrange": True,
               "categoryarray": list(reversed(lanes)), "range": [-0.6, len(lanes) - 0.4]},
    )
    if panel:
        _add_panel(figure, lanes_px, max(max(trace.y) for trace in panel))
    return figure


def _hold_traces(run: RunRecord, clock: Clock, span: tuple[int, int]
                 ) -> tuple[list[_Bars], list[_Marks]]:
    """Holds, the stretches of valid lease inside them, renewals and crashes; a lock that is
    not a mutex gets a pair of hold and lease traces per mode, each in its mode's colours."""
    sec = clock.seconds
    timeline = run.timeline
    looks = {EXCLUSIVE: (_Bars("held the lock", HOLD_COLOR, 0.7),
                         _Bars("lease valid", LEASE_COLOR, 0.28))} if timeline.mutex else {
        mode: (_Bars(f"held {_mode_words(mode, timeline.modes)}", MODE_COLORS[mode][0], 0.7,
                     group=mode),
               _Bars(f"{mode} lease valid", MODE_COLORS[mode][1], 0.28, group=mode))
        for mode in sorted(MODE_COLORS) if mode in timeline.modes
    }
    renewals = _Marks("renewed / extended", RENEW_COLOR, "diamond", 8)
    crashes = _Marks("crashed", CRASH_COLOR, "x", 10)
    for hold in timeline.holds:
        if not span[0] <= hold.start < span[1]:
            continue
        holds, leases = looks.get(hold.mode) or next(iter(looks.values()))
        start, end = sec(hold.start), sec(hold.end)
        what = "held the lock" if timeline.mutex else _held(hold.mode, hold.permits)
        holds.add(hold.process, start, end, f"<b>{hold.process}</b> {what}<br>"
                  f"{start:.3f} → {end:.3f} s<br>{_ending(hold.ended_by, hold.released)}"
                  f"<br>token {html.escape(str(hold.token))}")
        for a, b in hold.valid_spans():
            leases.add(hold.process, sec(a), sec(b),
                       f"{hold.process}'s lease valid<br>{sec(a):.3f} → {sec(b):.3f} s")
        nested = {level.start for level in hold.levels or ()}  # grants that re-armed it
        for since, deadline in hold.leases[1:]:
            what = "acquired it again (nested)" if since in nested else "renewed its lease"
            renewals.add(hold.process, sec(since), f"{hold.process} {what} at "
                         f"{sec(since):.3f} s<br>valid until {sec(deadline):.3f} s")
        if hold.ended_by == "crash":
            crashes.add(hold.process, end, f"{hold.process} crashed at {end:.3f} s")
    return [bars for bars, _ in looks.values()] + [bars for _, bars in looks.values()], [
        renewals, crashes]


def _in_flight_traces(run: RunRecord, clock: Clock, span: tuple[int, int], min_len: float
                      ) -> _Bars:
    """Each acquire and release that was in flight ``STALLED_TTLS`` of the TTL or longer
    (an acquire until its grant, a release until it returned true), on its client's lane,
    with what stopped it: the pause points it reached, the stretches its process did not run
    (none when the TTL is unknown)."""
    timeline = run.timeline
    bars = _Bars("operation in flight (stalled)", IN_FLIGHT_COLOR, 0.42)
    if timeline.ttl_ns is None:
        return bars
    least = STALLED_TTLS * timeline.ttl_ns
    sec = clock.seconds
    for hold in timeline.holds:
        if not span[0] <= hold.start < span[1]:
            continue
        for op, since, until, outcome in (("acquire", hold.invoked, hold.start, "granted"),
                                          ("release", hold.end, hold.release_acked,
                                           "returned true")):
            if until is None or until >= NEVER or until - since < least:
                continue
            why = [f"stopped at pause point {point.command} at {sec(point.t):.3f} s"
                   for point in timeline.pauses_of(hold.process, since, until)]
            why += [f"did not run for {(end - start) / 1e6:.0f} ms from {sec(start):.3f} s"
                    for start, end in timeline.stalls_of(hold.process, since, until)]
            bars.add(hold.process, sec(since), sec(until),
                     f"<b>{hold.process}'s {op} in flight</b><br>invoked {sec(since):.3f} s, "
                     f"{outcome} at {sec(until):.3f} s ({(until - since) / 1e6:.0f} ms)"
                     + "".join(f"<br>{html.escape(line)}" for line in why),
                     min_length=min_len)
    return bars


def _mode_words(mode: str, modes: tuple[str, ...]) -> str:
    """A mode as the legend names its holds: ``shared``, or for a lock that grants both,
    ``shared (read)`` / ``exclusive (write)``."""
    if len(modes) < 2:
        return mode
    return f"{mode} ({'read' if mode == SHARED else 'write'})"


def _held(mode: str, count: int) -> str:
    if mode == EXCLUSIVE:
        return "held the lock exclusively"
    return f"held {count} shared permit{'s' * (count != 1)}"


def _permit_traces(run: RunRecord, clock: Clock, span: tuple[int, int]) -> list[go.Scatter]:
    """The permits panel (a lock that is not a mutex): per mode, the permits held (pale)
    and held within valid leases (dark), as areas over time in the colours of that mode's
    holds and leases in the lanes (whose legend entries show and hide them too); the
    capacity as a dashed line."""
    timeline = run.timeline
    span = (span[0], min(span[1], timeline.end))
    traces = []
    for mode in sorted(MODE_COLORS):
        if mode not in timeline.modes:
            continue
        pale, dark = MODE_COLORS[mode]
        for valid, color, fill in ((False, pale, pale), (True, dark, _translucent(dark))):
            steps = permits.held(timeline.holds, mode, clock, span, valid)
            name = _panel_name(mode, timeline.modes) + (" (valid leases)" if valid else "")
            traces.append(go.Scatter(
                name=name, x=steps.x, y=steps.y, yaxis="y2", mode="lines", fill="tozeroy",
                fillcolor=fill, line={"color": color, "width": 1.5, "shape": "hv"},
                legendgroup=mode, showlegend=False,
                hovertemplate=f"%{{y}} {name}<br>from %{{x:.3f}} s<extra></extra>",
            ))
    capacity = timeline.capacity
    if capacity is not None:
        ends = [clock.seconds(span[0]), clock.seconds(span[1])]
        traces.append(go.Scatter(
            name=f"capacity {capacity}", x=ends, y=[capacity, capacity], yaxis="y2",
            mode="lines", line={"color": INK, "width": 1.5, "dash": "dash"},
            hovertemplate=f"capacity: {capacity} permits<extra></extra>",
        ))
    return traces


def _panel_name(mode: str, modes: tuple[str, ...]) -> str:
    """What the panel counts in ``mode``: a semaphore's permits, a read-write lock's read
    permits and writers."""
    if len(modes) < 2:
        return "permits held"
    return "read permits held" if mode == SHARED else "writers holding"


def _add_panel(figure: go.Figure, lanes_px: int, most: int) -> None:
    """Put the permits panel above the lanes: the figure grows by its height."""
    total = lanes_px + PANEL_GAP_PX + PANEL_PX
    figure.update_layout(
        height=150 + total,
        legend={"traceorder": "normal"},  # one row, not a column per legend group
        yaxis={"domain": [0, lanes_px / total]},
        yaxis2={"domain": [(lanes_px + PANEL_GAP_PX) / total, 1], "title": "permits",
                "range": [0, most + 0.5], "fixedrange": True, "zeroline": False,
                "dtick": 1 if most <= 10 else None},
    )


def _translucent(color: str, alpha: float = 0.45) -> str:
    """``#rrggbb`` as an ``rgba()`` that lets what lies below show through."""
    red, green, blue = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def _fault_traces(run: RunRecord, clock: Clock, span: tuple[int, int], min_len: float
                  ) -> tuple[_Bars, _Marks, list[dict[str, Any]]]:
    """The nemesis lane's bars, a mark on each client a fault was aimed at, and the bands."""
    bars = _Bars("fault", FAULT_COLOR, 0.6)
    hits = _Marks("fault aimed here", FAULT_COLOR, "triangle-down", 11)
    bands: list[dict[str, Any]] = []
    for fault in run.timeline.faults:
        if not (fault.start < span[1] and fault.stop > span[0]):
            continue
        start, stop = clock.seconds(fault.start), clock.seconds(fault.stop)
        text = _fault_text(fault, start, stop)
        bars.add(NEMESIS_LANE, start, stop, text, min_length=min_len)
        for client in _targets(fault.target):
            hits.add(client, start, text)
        if len(bands) < MAX_BANDS:
            bands.append(_band(start, max(stop, start + min_len)))
    return bars, hits, bands


def _violation_traces(run: RunRecord, clock: Clock, span: tuple[int, int], window: Window,
                      min_len: float) -> tuple[list[_Bars], list[_Marks], _Marks]:
    """The checker lane's bars (one trace per kind, hard on top), the overlaps
    shaded on both holders' lanes, a marker where each violation starts (on the checker
    lane, and on the lanes of the clients it involves), and each lost write where it was
    acknowledged."""
    verdict = run.verdict
    # A data violation spans from the first lost write to the final read: drawn thin and
    # first, so the overlaps and outages within it stay visible.
    flagged = {kind: _Bars(f"{kind} violation", LOOKS[kind].color, 0.25 if kind == "data"
                           else 0.7, group=kind)
               for kind in ("data", "liveness", "fairness", "soft", "hard")}
    overlaps = {kind: _Bars(f"{kind} overlap", LOOKS[kind].color, 0.95, 0.4, legend=False,
                            group=kind)
                for kind in ("soft", "hard")}
    starts = {kind: _Marks(f"{kind} starts", LOOKS[kind].color, "diamond", 12, group=kind,
                            legend=False)
              for kind in flagged}
    shown = [(i, v) for i, v in enumerate(verdict.violations)
             if v.start_s <= window.end_s and v.end_s >= window.start_s][:MAX_VIOLATIONS]
    for index, violation in shown:
        text = f"<b>{violation.kind}</b> (click for details)<br>{_wrap(violation.explanation)}"
        flagged[violation.kind].add(CHECKER_LANE, violation.start_s, violation.end_s, text,
                                    index, min_len)
        for process in violation.processes if violation.kind in overlaps else []:
            overlaps[violation.kind].add(process, violation.start_s, violation.end_s, text,
                                         index, min_len)
        for lane in (CHECKER_LANE, *violation.processes):
            starts[violation.kind].add(lane, violation.start_s, text, index)
    lost = _Marks("lost write", LOOKS["data"].color, "star", 12)
    if verdict.lost_write_ids:
        data_index = next(i for i, v in enumerate(verdict.violations) if v.kind == "data")
        for op, at_ns, writer in _acked(run, set(verdict.lost_write_ids), span):
            at = clock.seconds(at_ns)
            lost.add(writer, at, f"<b>lost write</b> {html.escape(op)}<br>acknowledged to "
                     f"{writer} at {at:.3f} s, missing from the final read", data_index)
    return [*flagged.values(), *overlaps.values()], list(starts.values()), lost


def figure_html(figure: go.Figure) -> str:
    """The figure as a ``<div>`` and the script that draws it (plotly.js comes separately)."""
    return str(figure.to_html(
        full_html=False, include_plotlyjs=False, div_id=DIV_ID, default_width="100%",
        config={"displaylogo": False, "responsive": True},
    ))


def _clients(run: RunRecord) -> list[str]:
    """Every client lane, c1 … cN in numeric order (clients that never held included)."""
    names = {hold.process for hold in run.timeline.holds}
    names.update(c for c in run.timeline.params.get("clients") or [] if isinstance(c, str))
    for fault in run.timeline.faults:
        names.update(_targets(fault.target))
    return sorted(names, key=lambda name: [int(p) if p.isdigit() else p
                                           for p in re.split(r"(\d+)", name)])


def _targets(target: Any) -> list[str]:
    if isinstance(target, dict):
        target = target.get("client")
    if isinstance(target, str):
        return [target]
    return [t for t in target if isinstance(t, str)] if isinstance(target, list) else []


def _acked(run: RunRecord, ops: set[str], span: tuple[int, int]) -> list[tuple[str, int, str]]:
    """(op id, when acknowledged, to whom) for the acknowledged writes in ``ops``."""
    timeline = run.timeline
    return [(op, at, by) for op, at, by in zip(timeline.acked_ops, timeline.acked_at,
                                               timeline.acked_by, strict=True)
            if op in ops and span[0] <= at < span[1]]


def _ending(ended_by: str | None, released: str | None) -> str:
    if ended_by == "release":
        return f"then released it (release returned {released or 'nothing'})"
    if ended_by is None:
        return "still holding at the end"
    return {"crash": "then crashed", "reacquire": "then acquired again"}.get(ended_by, ended_by)


def _fault_text(fault: FaultSpan, start: float, stop: float) -> str:
    target = ", ".join(_targets(fault.target)) or json.dumps(fault.target)
    nodes = fault.target.get("nodes") if isinstance(fault.target, dict) else None
    params = ", ".join(f"{k}={v}" for k, v in (fault.params or {}).items())
    return (f"<b>{html.escape(fault.name)}</b> {html.escape(fault.id)}<br>{start:.3f} → "
            f"{stop:.3f} s<br>on {html.escape(target)}"
            + (f" (nodes {html.escape(', '.join(map(str, nodes)))})" if nodes else "")
            + (f"<br>{html.escape(params)}" if params else ""))


def _band(start: float, stop: float) -> dict[str, Any]:
    return {"type": "rect", "xref": "x", "yref": "paper", "x0": start, "x1": stop, "y0": 0,
            "y1": 1, "fillcolor": FAULT_COLOR, "opacity": 0.12, "line": {"width": 0},
            "layer": "below"}


def _wrap(text: str, width: int = 90) -> str:
    return "<br>".join(html.escape(line) for line in textwrap.wrap(text, width))

