"""``lockchaos explore`` (and ``run --search``): bad input is one line and exit 2, before
anything starts."""

from __future__ import annotations

import pytest

from chaos.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["explore", "--lock", "nope"], "unknown lock 'nope'"),
        (["explore", "--lock", "lua", "--max-examples", "0"], "--max-examples must be between"),
        (["explore", "--lock", "lua", "--steps", "0"], "--steps must be between"),
        (["explore", "--lock", "lua", "--faults", "bogus"], "unknown fault 'bogus'"),
        (["explore", "--lock", "lua", "--faults", "client-pause"], "client-pause is always"),
        (["explore", "--lock", "lua", "--fail-on", "meh"], "--fail-on must be one of"),
        (["explore", "--lock", "lua", "--capacity", "2"], "lock 'lua' is a mutex: --capacity"),
        (["explore", "--lock", "rwlock", "--capacity", "2"], "without a limit: --capacity"),
        (["explore", "--lock", "lua-semaphore", "--capacity", "0"], "--capacity must be"),
        (["run", "--lock", "lua", "--search", "2"], "--search needs --faults"),
        (["run", "--lock", "lua", "--faults", "latency", "--search", "-1"], "--search must be"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
