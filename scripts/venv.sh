#!/usr/bin/env bash
# The checkout's Python virtualenv, .venv with `pip install -e .[dev]`, idempotently: what the
# pure tests need and nothing else (`make test-fast`), and a step of scripts/setup.sh. It is
# installed again only when pyproject.toml is newer than its stamp; otherwise it takes
# milliseconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
STAMP="$VENV/.lockchaos-installed"
say() { printf '[setup] %s\n' "$*"; }

if [ ! -x "$VENV/bin/python" ]; then
    say "creating .venv"
    python3 -m venv "$VENV"
fi
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ]; then
    say "pip install -e .[dev]"
    "$VENV/bin/pip" install -q --upgrade pip >/dev/null
    "$VENV/bin/pip" install -q -e "${ROOT}[dev]"
    touch "$STAMP"
fi
