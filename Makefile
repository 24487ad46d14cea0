# lockchaos: `make demo` and `make test` are the two commands a newcomer needs.
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
# Two pytest workers, a test file each at a time (--dist loadfile: a file's module-scoped
# topologies and cell runs stay in one process). The tests mostly wait on Redis, containers
# and clients' work, so two at once take about half the time on 2 cores; every timing claim
# is made to hold under that load (docs/results.md, "The suite"). JOBS=0 runs serially.
JOBS ?= 2

.PHONY: setup test demo lint typecheck bench clean

setup:
	@bash scripts/setup.sh

test: setup
	$(PY) -m pytest -n $(JOBS) --dist loadfile $(PYTEST_ARGS)

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
