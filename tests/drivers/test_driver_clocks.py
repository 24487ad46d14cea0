"""``client-clock`` on a bundled driver whose binary ignores libfaketime (redsync: pure Go
reads the clock through the vDSO) is refused up front, not run on the true clock and passed.
(Pure checks of the same rule: tests/pure/test_driver_deployment.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.cli import main


def test_run_refuses_client_clock_on_redsync_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = main(["run", "--lock", "redsync", "--faults", "client-clock", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("lockchaos: lock 'redsync': client-clock needs a driver with the "
                          "'faked-clock' capability"), err
    assert not out.exists()
