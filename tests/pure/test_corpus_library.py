"""A corpus lock (a third-party library, ``LockInfo.extra``) whose library is missing, or
installed at another version than its entry pins, is refused in one line naming the install
command, exit 2, before anything starts; ``lockchaos list`` does not need the libraries."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from chaos import lockspec
from chaos.errors import UsageError

CORPUS = [info for info in lockspec.catalog() if info.extra]
INSTALL = "pip install 'lockchaos[corpus]'"


def test_the_corpus_is_pinned_in_the_corpus_extra() -> None:
    """Each corpus entry names its PyPI distribution and the version pyproject.toml pins."""
    pinned = Path(__file__).parents[2].joinpath("pyproject.toml").read_text()
    assert {info.name for info in CORPUS} >= {
        "sherlock", "sherlock-no-expire", "pottery-redlock", "python-redis-lock"}
    for info in CORPUS:
        assert info.extra == "corpus", info.name
        assert f'"{info.library}=={info.version}"' in pinned, info.name


def test_a_library_that_is_not_installed_is_one_line_naming_the_install() -> None:
    absent = replace(CORPUS[0], library="lockchaos-no-such-library")
    with pytest.raises(UsageError) as refused:
        lockspec.check_library(absent.name, absent)
    assert str(refused.value) == (
        f"lock {absent.name!r} wraps lockchaos-no-such-library {absent.version}, but it is "
        f"not installed: {INSTALL}")


def test_another_version_installed_is_refused_by_run_and_listed_by_list(tmp_path: Path) -> None:
    """A ``sherlock`` 0.0.1 found first on the path (its metadata: what pip would leave)."""
    metadata = tmp_path / "sherlock-0.0.1.dist-info" / "METADATA"
    metadata.parent.mkdir()
    metadata.write_text("Metadata-Version: 2.1\nName: sherlock\nVersion: 0.0.1\n")
    lockchaos = [sys.executable, "-c", "from chaos.cli import main; raise SystemExit(main())"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = subprocess.run([*lockchaos, "run", "--lock", "sherlock", "--ttl-ms", "1000",
                          "--out", str(tmp_path / "runs")],
                         capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 2, run.stderr
    assert run.stderr == (f"lockchaos: lock 'sherlock' wraps sherlock 0.4.1, but 0.0.1 is "
                          f"installed: {INSTALL}\n")
    assert not (tmp_path / "runs").exists()
    listed = subprocess.run([*lockchaos, "list", "--json"], capture_output=True, text=True,
                            timeout=60, env=env)
    assert listed.returncode == 0 and '"name": "sherlock"' in listed.stdout, listed.stderr
