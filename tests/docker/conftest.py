"""The docker tests' fixture: a directory for a run's reports, and after the test, nothing
of what the provider started left on the engine."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from leftovers import left_by


@pytest.fixture
def docker_out(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    assert left_by(os.getpid()) == []  # everything the provider started is gone
