"""``lockchaos list`` says what each lock grants (issue 19): a mutex, a semaphore's permits, a
read-write lock's modes, in the table and in ``--json``, read off each lock's ``INFO``."""

from __future__ import annotations

import json
from importlib.metadata import version

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


def test_every_lock_says_what_it_is_made_with() -> None:
    """Language, library and version, for every bundled lock: a third-party library at the
    version its entry pins, a hand-written lock the client it is written on, a driver its
    catalog entry's library."""
    result = CliRunner().invoke(app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    listed = {lock["name"]: lock for lock in json.loads(result.output)["locks"]}
    made = {name: (lock["language"], lock["library"], lock["version"])
            for name, lock in listed.items()}
    assert all(all(fields) for fields in made.values()), made
    assert made["sherlock"] == ("python", "sherlock", "0.4.1")
    assert made["pottery-redlock"] == ("python", "pottery", "3.0.1")
    assert made["python-redis-lock"] == ("python", "python-redis-lock", "4.0.1")
    assert made["lua"] == ("python", "redis-py", version("redis"))
    assert made["redisson"] == ("java", "Redisson", "3.45.1")
    assert made["redsync"] == ("go", "go-redsync", "v4.13.0")
    assert listed["sherlock"]["made_with"] == "sherlock 0.4.1 (python)"


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
    assert lines[at + 1] == f"  made with: redis-py {version('redis')} (python)"
    assert lines[at + 2] == "  grants: mutex"
    assert lines[at + 3].startswith("  what it does: ")
    assert not any(line != line.rstrip() for line in lines[:at + 6])
    assert any(line.startswith("┃ name") and "what it does" in line for line in lines)  # faults
