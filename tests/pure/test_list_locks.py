"""``lockchaos list`` says what each lock grants (issue 19): a mutex, a semaphore's permits, a
read-write lock's modes, in the table and in ``--json``, read off each lock's ``INFO``."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from chaos.cli import app
from chaos.lockspec import catalog


def test_json_carries_what_each_lock_declares() -> None:
    result = CliRunner().invoke(app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    listed = {lock["name"]: lock for lock in json.loads(result.output)["locks"]}
    for info in catalog():
        lock = listed[info.name]
        assert (lock["capacity"], lock["modes"], lock["fair"], lock["max_permits"]) == (
            info.capacity, list(info.modes), info.fair, info.max_permits), info.name
    assert listed["lua"]["grants"] == "mutex"
    assert listed["lua-semaphore"]["grants"] == "3 shared permits"
    assert listed["book-semaphore"]["grants"] == "3 shared permits, 1 per acquire"
    assert listed["rwlock"]["grants"] == "exclusive or shared (unbounded)"


def test_the_table_shows_the_grants_on_each_lock_row() -> None:
    result = CliRunner().invoke(app, ["list"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines()
            if line.startswith("│") and line.split("│")[1].strip()}
    assert "3 shared permits" in rows["lua-semaphore"]
    assert "exclusive or shared (unbounded)" in rows["rwlock"]
    assert "mutex" in rows["redlock"]


def test_an_80_column_log_gets_one_block_per_lock_not_folded_columns() -> None:
    """Five columns in 80 (a CI log) folded a lock's flaw into 30 lines of 14 characters:
    each lock is a heading with its fields indented under it; the narrower sections keep
    their tables."""
    result = CliRunner().invoke(app, ["list"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = lines.index("redlock")
    assert lines[at + 1] == "  grants: mutex"
    assert lines[at + 2].startswith("  what it does: ")
    assert not any(line != line.rstrip() for line in lines[:at + 5])
    assert any(line.startswith("┃ name") and "what it does" in line for line in lines)  # faults
