"""A failed image build is remembered (chaos.images.failures): the same recipe is not built
again on every `make test`; a changed recipe, ``--retry`` or ``--force`` builds it again, and
a success forgets the failure."""

from __future__ import annotations

from pathlib import Path

from chaos.images import failures


def test_the_same_inputs_are_not_retried_changed_inputs_or_the_switch_are(tmp_path: Path) -> None:
    path = tmp_path / "failures.json"
    assert failures.load(path) == {}
    failures.record("redis-8.0", "aaaa", "`apt-get source …` failed: 404", path)
    remembered = failures.load(path)
    failed = failures.not_retried("redis-8.0", "aaaa", remembered, retry=False)
    assert failed is not None and failed.reason == "`apt-get source …` failed: 404"
    assert failed.at.endswith(" UTC")
    assert failures.not_retried("redis-8.0", "bbbb", remembered, retry=False) is None  # changed
    assert failures.not_retried("redis-8.0", "aaaa", remembered, retry=True) is None  # asked
    assert failures.not_retried("redis-8.0", None, remembered, retry=False) is None  # no hash
    assert failures.not_retried("valkey-8.1", "aaaa", remembered, retry=False) is None  # other


def test_a_success_forgets_the_failure_and_a_damaged_file_remembers_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "failures.json"
    failures.record("redis-8.0", "aaaa", "failed", path)
    failures.record("toxiproxy", "cccc", "failed too", path)
    failures.forget("redis-8.0", path)
    assert set(failures.load(path)) == {"toxiproxy"}
    path.write_text("{not json")
    assert failures.load(path) == {}
