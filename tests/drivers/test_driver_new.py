"""``lockchaos driver new --lang L --client C DIR`` then ``lockchaos run --lock <its last
line>`` passes, before any edit, for every skeleton a kit has (found by folder:
``chaos/drivers/kits/<lang>/skeleton[/<client>]/``), from a working directory that is neither
the checkout nor DIR (a driver runs in the working directory of the lockchaos that starts
it). A kit whose toolchain is here must be built: it fails, never skips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prerequisites import need

from chaos.cli import main
from chaos.drivers.languages import LANGUAGES

SKELETONS = [(name, client) for name, language in LANGUAGES.items()
             for client in language.clients if language.skeleton(client) is not None]


@pytest.mark.slow  # built from nothing: `make test-long`
@pytest.mark.timeout(600)  # a first Maven or cargo build of a skeleton downloads its world
@pytest.mark.parametrize(("lang", "client"), SKELETONS,
                         ids=[f"{lang}-{client}" for lang, client in SKELETONS])
def test_a_new_driver_passes_a_run_before_any_edit(
    lang: str, client: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    language = LANGUAGES[lang]
    missing = language.missing_tools()
    need(f"no {', '.join(missing)} on PATH: no {lang} driver here" if missing else "")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["driver", "new", "--lang", lang, "--client", client,
                 str(tmp_path / "mylock")]) == 0, capsys.readouterr().err
    lock = capsys.readouterr().out.rstrip("\n").splitlines()[-1]
    assert lock.startswith("exec:")
    code = main(["run", "--lock", lock, "--faults", "client-pause-at:command=EVAL",
                 "--duration", "4", "--out", str(tmp_path / "out"), "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert code == 0, printed
    assert printed["hard_violations"] == 0 and printed["counts"]["lock_cycles"] >= 2, printed


def test_the_python_skeleton_is_found() -> None:
    assert ("python", "redis-py") in SKELETONS
