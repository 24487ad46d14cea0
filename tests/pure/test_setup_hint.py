"""The set-up command an error line names: `lockchaos setup` with the flag for what is missing,
and in a checkout the make target that does the same (the docker provider is `make docker`'s,
not `make setup`'s)."""

from __future__ import annotations

import pytest

from chaos.topology import binaries


@pytest.mark.parametrize("flag, make", [("", "make setup"), ("--drivers", "make setup"),
                                        ("--docker", "make docker")])
def test_the_hint_names_the_command_that_sets_it_up(
    monkeypatch: pytest.MonkeyPatch, flag: str, make: str
) -> None:
    monkeypatch.setattr(binaries, "IN_CHECKOUT", True)
    command = f"lockchaos setup {flag}".strip()
    assert binaries.setup_hint(flag) == f"run `{command}` (or `{make}` in this checkout)"
    monkeypatch.setattr(binaries, "IN_CHECKOUT", False)
    assert binaries.setup_hint(flag) == f"run `{command}`"
