"""A lock library's own logging goes to the run directory, never to lockchaos's terminal
(issue 34, point 11): a Python lock's ``logging`` into ``logs/<client>.log``, a driver's
stderr beside it. The terminal keeps the lines lockchaos prints."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chaos.cli import main

CHATTY = '''
import logging
import sys

from chaos.locks.lua import make as lua

log = logging.getLogger("chattylib")


class Chatty:
    def __init__(self, ctx):
        self.lock = lua(ctx)

    def acquire(self):
        return self.lock.acquire()

    def release(self, lease):
        log.warning("Can not unset lock %s", lease.token)
        return self.lock.release(lease)


def make(ctx):
    return Chatty(ctx)
'''

DRIVER = """
import sys
import lockchaos_driver as kit
sys.stderr.write("driver: something to say\\n")
from driver import Lock
kit.serve(kit.Driver(name="talks", library="redis-py"), Lock)
"""


def test_a_python_locks_logging_lands_in_the_run_directory(tmp_path: Path) -> None:
    """In its own process, as a user runs it: under pytest, the root logger's capture handler
    (inherited by the forked clients) would hide where the lines go."""
    module = tmp_path / "chatty.py"
    module.write_text(textwrap.dedent(CHATTY))
    done = subprocess.run(
        [sys.executable, "-m", "chaos.cli", "run", "--lock", f"{module}:make", "--duration",
         "2", "--clients", "2", "--out", str(tmp_path / "out"), "--json"],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "Can not unset lock" not in done.stdout + done.stderr
    logs = Path(json.loads(done.stdout)["run_dir"]) / "logs"
    said = "".join(path.read_text() for path in logs.glob("c*.log"))
    assert "chattylib WARNING Can not unset lock c" in said


def test_a_drivers_stderr_lands_in_the_run_directory(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    skeleton = Path(__file__).resolve().parents[2] / "chaos/drivers/kits/python"
    script = tmp_path / "talks.py"
    script.write_text(DRIVER)
    lock = (f"exec:env PYTHONPATH={skeleton}:{skeleton / 'skeleton'} {sys.executable} "
            f"{script}")
    code = main(["run", "--lock", lock, "--duration", "2", "--clients", "2",
                 "--out", str(tmp_path / "out"), "--json"])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "something to say" not in out + err
    logs = Path(json.loads(out)["run_dir"]) / "logs"
    assert any("driver: something to say" in path.read_text() for path in logs.iterdir())
