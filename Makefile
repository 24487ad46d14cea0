# lockchaos: `make demo` and `make test` are the two commands a newcomer needs.
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
# JOBS=2: two pytest workers, a test file each at a time (--dist loadfile: a file's
# module-scoped topologies and cell runs stay in one process), about 11-13 minutes on 2 cores
# against about 20 serially. Serial by default: the last fresh-clone CI on two workers still
# had three timing claims fail under the doubled load (docs/results.md, "The suite").
JOBS ?= 0

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
