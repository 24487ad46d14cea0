"""A lock that gives a lease up, leaves it out of reach, or keeps its key on purpose, says so
(``REVOKED``, ``INVALIDATED``/``LeaseInvalidated``, ``Kept``; a driver's ``revoked``,
``invalidated``, ``kept``), and a real run records it and judges it (docs/history-format.md,
"Leases the lock gave up, lost or kept"). Real Redis, real client processes.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from chaos import history as h
from chaos.campaign import Campaign
from chaos.checker import Verdict
from chaos.experiments.execute import run_campaign

LOCKS = '''
from chaos.locks.contract import INVALIDATED, REVOKED, Kept, Lease, LockContext

OWNED = "if redis.call('get', KEYS[1]) == ARGV[1] then return "
RELEASE = OWNED + "redis.call('del', KEYS[1]) end return 0"
HOLD = OWNED + "redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"


class Lock:
    """SET NX PX, Lua compare-and-delete; ``fate`` says what its extends and releases do."""

    def __init__(self, ctx: LockContext, fate: str) -> None:
        self.ctx, self.redis, self.fate, self.extends = ctx, ctx.primary, fate, 0

    def acquire(self):
        token = self.ctx.new_token()
        if self.redis.set(self.ctx.lock_name, token, nx=True, px=self.ctx.ttl_ms):
            return Lease(token, validity_ms=self.ctx.ttl_ms)
        return None

    def release(self, lease):
        if self.fate == "kept":  # a minimum hold of 6 TTLs: the key stays that long
            hold = 6 * self.ctx.ttl_ms
            kept = self.redis.eval(HOLD, 1, self.ctx.lock_name, lease.token, hold)
            return Kept(validity_ms=hold) if kept else False
        return bool(self.redis.eval(RELEASE, 1, self.ctx.lock_name, lease.token))

    def extend(self, lease):
        self.extends += 1
        if self.fate == "revoked" and self.extends % 3 == 0:  # a failed extend that unlocks
            self.redis.eval(RELEASE, 1, self.ctx.lock_name, lease.token)
            return REVOKED
        if self.fate == "invalidated" and self.extends % 3 == 0:  # consumed its lock object
            return INVALIDATED
        if self.redis.eval(HOLD, 1, self.ctx.lock_name, lease.token, self.ctx.ttl_ms):
            return Lease(lease.token, validity_ms=self.ctx.ttl_ms)
        return None


def revoked(ctx):
    return Lock(ctx, "revoked")


def invalidated(ctx):
    return Lock(ctx, "invalidated")


def kept(ctx):
    return Lock(ctx, "kept")
'''


def _run(tmp_path: Path, factory: str, **options: Any) -> tuple[list[h.Event], Verdict]:
    module = tmp_path / "fates.py"
    module.write_text(textwrap.dedent(LOCKS))
    campaign = Campaign.from_options(f"{module}:{factory}", duration_s=4.0, **options)
    outcome = run_campaign(campaign, tmp_path / "out")
    return h.read_history(outcome.run_dir / "history.jsonl"), outcome.verdict


def _lease_fates(events: list[h.Event], f: str) -> list[h.Event]:
    return [e for e in events if e.f == f and isinstance(e.value, dict) and h.LEASE in e.value]


def test_a_revoked_lease_is_recorded_and_its_holder_lets_go_without_a_release(
    tmp_path: Path,
) -> None:
    """Every third extend unlocks and answers REVOKED: the holder writes nothing more and
    sends no release for it, and no overlap is hard (a loaded machine may let work outrun a
    lease: soft)."""
    events, verdict = _run(tmp_path, "revoked", work_ms=150, extend_during_work=True)
    revoked = _lease_fates(events, h.EXTEND)
    assert revoked and all(e.type == h.FAIL and e.value[h.LEASE] == h.REVOKED for e in revoked)
    for fate in revoked:
        later = [e for e in events if e.process == fate.process and e.t > fate.t
                 and e.f in (h.RELEASE, h.WRITE) and e.token in (None, fate.token)]
        first_acquire = next((e.t for e in events if e.process == fate.process
                              and e.t > fate.t and e.f == h.ACQUIRE), None)
        assert all(first_acquire is not None and e.t > first_acquire for e in later), fate
    assert verdict.hard_violations == 0, verdict.explanations
    assert verdict.counts["lock_cycles"] >= 2


def test_an_invalidated_lease_ends_the_hold_and_keeps_its_deadline(tmp_path: Path) -> None:
    events, verdict = _run(tmp_path, "invalidated", work_ms=150, extend_during_work=True)
    invalidated = _lease_fates(events, h.EXTEND)
    assert invalidated and all(e.value[h.LEASE] == h.INVALIDATED for e in invalidated)
    assert verdict.hard_violations == 0 and verdict.liveness_violations == 0, (
        verdict.explanations)


def test_a_release_that_keeps_its_key_for_a_minimum_hold_is_no_outage(tmp_path: Path) -> None:
    """Each release keeps the key 6 TTLs: the others fail to acquire all that time, which
    the lock said it would do — before ``Kept``, each was a liveness violation (6 > 5 TTLs)."""
    events, verdict = _run(tmp_path, "kept", ttl_ms=100)
    kept = _lease_fates(events, h.RELEASE)
    assert kept and all(e.type == h.OK and e.valid_until for e in kept)
    assert verdict.liveness_violations == 0, verdict.explanations
    assert verdict.counts["lock_cycles"] >= 2
