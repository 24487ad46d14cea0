# lockchaos: `make demo` and `make test` are the two commands a newcomer needs.
VENV := .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
# Three pytest workers on 2 cores (the tests mostly wait on TTLs and runs: about half a core
# each), a test file each at a time (--dist loadfile: a file's module-scoped topologies and
# cell runs stay in one process). Under that load a truth-table cell whose run did not test
# its claim takes the next seed (tests/cells.py). JOBS=0: serially.
JOBS ?= 3

.PHONY: setup docker venv test test-long test-fast demo lint bench clean

# What `make test` and `make demo` need: Redis (MALLOC=libc), Sentinel, Toxiproxy, .venv, the
# lock drivers, Chromium, the CI linters.
setup:
	@bash scripts/setup.sh

# The docker provider's engine, Compose v2 and lockchaos's images (built offline: minutes the
# first time, docs/images.md); `make test-long` runs it.
docker: setup
	@bash scripts/docker-setup.sh

venv:
	@bash scripts/venv.sh

# The Python side against real Redis, Sentinel and Toxiproxy: the pure, redis and browser
# groups, but for the long tests. `make test-long`, which CI runs after this (.ci/run), runs
# the rest: the docker and drivers groups (Docker topologies and images; the locks in Java,
# Go, Node and Rust), each a test file at a time as here, then the audits that run a sound
# lock's whole budget (a minute each, marker `budget`), the set-up proofs (a wheel installed
# into a fresh venv, the full image, the Compose demo, `lockchaos driver new` built from
# nothing) and the sweep over every server (marker `slow`).
QUICK := not budget and not slow
test: setup
	$(PY) -m pytest -n $(JOBS) --dist loadfile -m "$(QUICK) and not docker and not drivers" $(PYTEST_ARGS)

test-long: docker
	$(PY) -m pytest -n $(JOBS) --dist loadfile -m "$(QUICK) and (docker or drivers)" $(PYTEST_ARGS)
	$(PY) -m pytest -n $(JOBS) -m "budget or slow" $(PYTEST_ARGS)

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
