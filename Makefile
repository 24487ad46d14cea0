# lockchaos: `make demo` and `make test` are the two commands a newcomer needs.
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: setup test demo lint typecheck bench clean

setup:
	@bash scripts/setup.sh

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

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
