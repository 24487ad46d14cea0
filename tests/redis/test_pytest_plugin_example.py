"""My lock under lockchaos: it must pass the audit, every fault a lock must survive."""

import pytest


@pytest.mark.lockchaos(lock="my_lock:make_lock")
def test_my_lock_passes_the_audit(lockchaos_audit):
    lockchaos_audit(budget=60)
