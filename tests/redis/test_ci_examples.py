"""The CI examples a user copies (examples/github-actions.yml, github-actions-compare.yml,
gitlab-ci.yml) would run on a real runner: actionlint (with shellcheck over every ``run:``
script) finds nothing, and what a runner needs that a linter cannot see is checked here —
the token's permissions for the JUnit check run, no placeholder a user must guess, the lock
found by path (the user's repository need not be a package), lockchaos installed as a
package, and a cache keyed on the lockchaos that built it. ``make setup`` installs both
linters (scripts/ci-tools-setup.sh)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prerequisites import unavailable

from chaos.cli import main, version

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
GITHUB = ("github-actions.yml", "github-actions-compare.yml")
GUESSED = re.compile(r"your-org|your_org|example\.com|mypkg|<[a-z-]+>", re.IGNORECASE)


def _load(name: str) -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return loaded


def _scripts(steps: list[dict[str, Any]]) -> str:
    return "\n".join(str(step.get("run", "")) for step in steps)


def _actionlint(*workflows: Path) -> subprocess.CompletedProcess[str]:
    """actionlint over ``workflows``, with shellcheck over their scripts."""
    actionlint = REPO / ".cache" / "bin" / "actionlint"
    shellcheck = shutil.which("shellcheck")
    if not actionlint.exists() or shellcheck is None:
        unavailable("no actionlint or shellcheck: scripts/ci-tools-setup.sh installs them")
    return subprocess.run(
        [str(actionlint), f"-shellcheck={shellcheck}", *map(str, workflows)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_actionlint_and_shellcheck_find_nothing_in_the_github_workflows() -> None:
    done = _actionlint(*(EXAMPLES / name for name in GITHUB))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_linted_mistake_is_seen(tmp_path: Path) -> None:
    """The lint is not blind: an undefined step output and an unquoted expansion are found."""
    broken = (EXAMPLES / "github-actions.yml").read_text().replace(
        "steps.lockchaos.outputs.cache-key", "steps.lockchaos-install.outputs.cache-key"
    ).replace('--lock "$LOCKCHAOS_LOCK"', "--lock $LOCKCHAOS_LOCK")
    (tmp_path / "broken.yml").write_text(broken)
    done = _actionlint(tmp_path / "broken.yml")
    assert done.returncode == 1
    assert "lockchaos-install" in done.stdout and "SC2086" in done.stdout


@pytest.mark.parametrize("name", [*GITHUB, "gitlab-ci.yml"])
def test_nothing_to_guess_and_the_lock_is_found_by_path(name: str) -> None:
    text = (EXAMPLES / name).read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert not GUESSED.search(code), GUESSED.search(code)
    assert "pip install -q -e" not in code and "-e ." not in code  # no package of the user's
    assert "LOCKCHAOS_SPEC" in code  # lockchaos itself comes from where the user says
    if "audit" in code or "compare" in code:
        assert "LOCKCHAOS_LOCK" in code


def test_the_github_gate_can_publish_its_check_run_and_runs_once_per_change() -> None:
    workflow = _load("github-actions.yml")
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert set(triggers) == {"pull_request", "push"}
    assert triggers["push"]["branches"]  # a pull request's push is not audited twice
    assert workflow["permissions"] == {"contents": "read"}
    for name, job in workflow["jobs"].items():
        steps = job["steps"]
        reports = [s for s in steps if str(s.get("uses", "")).startswith("mikepenz/")]
        if reports:
            assert job["permissions"].get("checks") == "write", name
            # a fork's pull request has a read-only token: the step must not run there
            assert all("head.repo.full_name" in str(s.get("if", "")) for s in reports), name


def test_the_github_gate_installs_lockchaos_as_a_package_and_caches_by_its_version() -> None:
    job = _load("github-actions.yml")["jobs"]["audit"]
    commands = [str(step.get("run", "")) for step in job["steps"]]
    script = "\n".join(commands)
    assert "make -C" not in script and "make setup" not in script  # no checkout of lockchaos
    install = next(i for i, c in enumerate(commands) if '"$LOCKCHAOS_SPEC"' in c)
    setup = next(i for i, c in enumerate(commands) if c.strip().startswith("lockchaos setup"))
    audit = next(i for i, c in enumerate(commands) if "lockchaos audit" in c)
    assert install < setup < audit
    caches = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/cache")]
    keys = " ".join(str(s["with"]["key"]) for s in caches)
    assert "steps.lockchaos.outputs.cache-key" in keys
    assert 'lockchaos" --version' in commands[install]


def test_the_gitlab_job_audits_reports_junit_and_keeps_a_cache_per_lockchaos() -> None:
    job = _load("gitlab-ci.yml")["lockchaos-audit"]
    script = "\n".join(job["before_script"] + job["script"])
    assert "lockchaos --version" in script and "lockchaos setup --cache" in script
    assert any("lockchaos audit" in line for line in job["script"])
    assert job["artifacts"]["reports"]["junit"] == "lockchaos-runs/*/junit.xml"
    assert job["artifacts"]["when"] == "always"
    for path in job["cache"][0]["paths"]:
        assert not path.startswith(("/", "~"))  # GitLab caches only paths inside the project


def test_version_names_the_package_and_its_set_up_steps(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == version()
    assert re.fullmatch(r"lockchaos \d+\.\d+\.\d+\S* \(set-up [0-9a-f]{8}\)", printed), printed
