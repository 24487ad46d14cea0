"""``--lock PATH.py:factory``: a file path works relative (with or without ``./``) and
absolute, as docs/writing-a-lock-adapter.md says (issue 34, point 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.lockspec import resolve

LOCK = "def make(ctx):\n    return None\n"


def test_a_file_path_works_with_or_without_dot_slash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "locks.py").write_text(LOCK)
    (tmp_path / "top.py").write_text(LOCK)
    monkeypatch.chdir(tmp_path)
    for spec in ("mypkg/locks.py:make", "./mypkg/locks.py:make", "top.py:make",
                 f"{tmp_path / 'top.py'}:make"):
        assert resolve(spec).factory.__name__ == "make", spec
