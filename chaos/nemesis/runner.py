"""The nemesis: a thread that plays a schedule against a live run and heals what it broke."""

from __future__ import annotations

import itertools
import random
import threading
import time

from chaos.nemesis import record
from chaos.nemesis.fault import FAULTS, Heal
from chaos.nemesis.schedule import FaultEvent, Schedule
from chaos.workload.harness import WorkloadEnv


class ScheduledNemesis:
    """Implements ``chaos.workload.Nemesis`` for a ``Schedule``."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._active: dict[str, Heal] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.errors: list[str] = []

    def start(self, env: WorkloadEnv) -> None:
        self._env = env
        self._rng = random.Random(f"targets:{self.schedule.seed}")
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._play, name="nemesis", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop playing and heal every fault still on. Idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        with self._lock:
            active, self._active = self._active, {}
        for fault_id, heal in active.items():
            self._heal(fault_id, heal)

    def _play(self) -> None:
        """Fire each event at its time; after the first round (``Schedule.first_round``),
        never before the quiet gap the schedule leaves after the previous event's end has
        passed since that fault's heal: a heal that took longer than planned (a loaded
        machine's Toxiproxy, five clients' links) would otherwise eat the gap, and a lock
        that needs fault-free time to show what it does (recover, or stay wedged) would
        never get it. The first round keeps its times: the generator fitted it into the
        run, and a fault pushed past the run's end would test nothing."""
        events = self.schedule.events
        first_round = self.schedule.first_round
        healed_at = self._t0
        for i, event in enumerate(events):
            due = self._t0 + event.at_s
            if first_round is not None and 0 < first_round <= i:
                previous = events[i - 1]
                due = max(due, healed_at + event.at_s - previous.at_s - previous.duration_s)
            if self._stop.wait(max(0.0, due - time.monotonic())):
                return
            self._fire(event)
            healed_at = time.monotonic()

    def _fire(self, event: FaultEvent) -> None:
        env, fault = self._env, FAULTS[event.fault]
        fault_id = f"f{next(self._ids)}"
        try:
            _, heal = record.fire(
                env,
                fault_id,
                event.fault,
                event.params,
                lambda: fault.aim(env, self._rng, event.params),
            )
        except Exception as exc:  # a fault that cannot be applied is reported, not fatal
            self.errors.append(f"{fault_id} {event.fault}: {type(exc).__name__}: {exc}")
            return
        with self._lock:
            self._active[fault_id] = heal
        if not self._stop.wait(event.duration_s):
            with self._lock:
                self._active.pop(fault_id, None)
            self._heal(fault_id, heal)

    def _heal(self, fault_id: str, heal: Heal) -> None:
        try:
            record.heal(self._env, fault_id, heal)
        except Exception as exc:
            self.errors.append(f"{fault_id} heal: {type(exc).__name__}: {exc}")
