# lockchaos: `make demo` and `make test` are the two commands a newcomer needs.
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
# Two pytest workers (one per core), a test file each at a time (--dist loadfile: a file's
# module-scoped topologies and cell runs stay in one process). Under that load a truth-table
# cell whose run did not test its claim takes the next seed (tests/cells.py). JOBS=0: serially.
JOBS ?= 2

.PHONY: setup venv test test-fast demo lint typecheck bench clean

setup:
	@bash scripts/setup.sh

venv:
	@bash scripts/venv.sh

test: setup
	$(PY) -m pytest -n $(JOBS) --dist loadfile $(PYTEST_ARGS)

# The pure tests alone (tests/pure: nothing but Python, no Redis, Docker or drivers), under a
# minute; they need .venv only, not the rest of `make setup`.
test-fast: venv
	$(PY) -m pytest tests/pure $(PYTEST_ARGS)

demo: setup
	$(VENV)/bin/lockchaos demo

lint: setup
	$(VENV)/bin/ruff check chaos tests bench conftest.py
	$(VENV)/bin/mypy

bench: setup
	$(PY) bench/topology.py
	$(PY) bench/checker.py

clean:
	rm -rf .pytest_cache .mypy_cache .ruff_cache .hypothesis build *.egg-info
