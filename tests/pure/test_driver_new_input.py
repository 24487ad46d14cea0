"""``lockchaos driver new``: bad input is one line and exit status 2, before anything is
written; the Python skeleton lands with its kit beside it and its exec: value last. (Each
skeleton's run on real Redis: tests/drivers/test_driver_new.py.)"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from chaos.cli import main
from chaos.drivers.languages import LANGUAGES


def _new(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["driver", "new", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("args", "says"), [
    (["--lang", "cobol"], "--lang 'cobol': one of java, go, node, rust, python"),
    (["--lang", "java", "--client", "redisson"], "--client 'redisson': a java driver has a "
                                                 "skeleton for jedis or lettuce"),
    (["--lang", "python", "--client", "ioredis"], "--client 'ioredis'"),
])
def test_an_unknown_language_or_client_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    code, out, err = _new(capsys, *args, str(tmp_path / "d"))
    assert code == 2 and out == "" and err.count("\n") == 1 and says in err, err
    assert not (tmp_path / "d").exists()


def test_a_directory_that_is_not_empty_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    code, _, err = _new(capsys, "--lang", "python", str(tmp_path))
    assert code == 2 and "exists and is not empty" in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]


def test_a_missing_toolchain_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    code, _, err = _new(capsys, "--lang", "go", str(tmp_path / "d"))
    assert code == 2 and err == "lockchaos: a go driver needs go on PATH: go not found\n"
    assert not (tmp_path / "d").exists()


def test_the_python_skeleton_lands_with_its_kit_and_prints_its_exec_value_last(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "My Lock"  # a space: the printed command quotes it
    code, out, _ = _new(capsys, "--lang", "python", str(target))
    assert code == 0
    assert sorted(p.name for p in target.iterdir()) == ["driver.py", "lockchaos_driver.py"]
    driver = (target / "driver.py").read_text()
    assert 'name="my-lock"' in driver and "@" + "NAME@" not in driver
    kit = LANGUAGES["python"].source / "lockchaos_driver.py"
    assert (target / "lockchaos_driver.py").read_bytes() == kit.read_bytes()
    last = out.rstrip("\n").splitlines()[-1]
    assert last.startswith("exec:")
    assert shlex.split(last.removeprefix("exec:")) == [sys.executable,
                                                       str((target / "driver.py").resolve())]
    assert "working directory" in out
