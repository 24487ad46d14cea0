"""How the image builder orders its work (chaos.images.build), without building: images at
once up to ``jobs``, each after the images it is made from, none made from one that was not
built; one build of a prefix at a time on a machine; the command line's one-line refusals.
(A real build from nothing, into scratch tags: docs/images.md.)"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from chaos.errors import UsageError
from chaos.images.__main__ import main
from chaos.images.build import _in_order, _one_build_at_a_time, check_prefix
from chaos.images.recipes import RECIPES, needs

Make = Callable[[str], "str | None"]


def _record(fail: set[str]) -> tuple[Make, dict[str, tuple[float, float]], list[int]]:
    """A ``make`` that notes when each image began and ended (failing those in ``fail``), and
    the most that ran at once; the first two wait for each other (5 s at most): two at once."""
    lock = threading.Lock()
    spans: dict[str, tuple[float, float]] = {}
    running = [0, 0, 0]  # now, most, begun
    first_two = threading.Barrier(2, timeout=5)

    def make(name: str) -> str | None:
        with lock:
            running[0] += 1
            running[1] = max(running[:2])
            running[2] += 1
            begun = running[2]
        began = time.monotonic()
        if begun <= 2:
            first_two.wait()
        time.sleep(0.01)
        with lock:
            running[0] -= 1
            spans[name] = (began, time.monotonic())
        return f"{name} failed: on purpose" if name in fail else None

    return make, spans, running


def test_images_are_made_at_once_up_to_jobs_each_after_what_it_is_made_from() -> None:
    todo = list(RECIPES)  # every image: the full one waits for lockchaos, python and redis-7.0
    make, spans, running = _record(fail=set())
    outcome = _in_order(todo, make, jobs=2)
    assert outcome == dict.fromkeys(todo)
    assert running[1] == 2  # two at once, never three
    for name in todo:
        for base in needs(RECIPES[name]):
            assert spans[base][1] <= spans[name][0], (base, name)


def test_an_image_made_from_one_that_failed_is_not_tried_and_says_why() -> None:
    todo = list(RECIPES)
    make, spans, _ = _record(fail={"python"})
    outcome = _in_order(todo, make, jobs=2)
    assert outcome["python"] == "python failed: on purpose"
    assert outcome["demo"] == "demo not built: it is made from python, not built"
    assert outcome["lockchaos-full"] == (
        "lockchaos-full not built: it is made from lockchaos, not built")
    assert "demo" not in spans and "lockchaos" not in spans and "lockchaos-full" not in spans
    assert all(outcome[n] is None for n in ("redis-7.0", "redis-8.0", "valkey-9.1", "toxiproxy"))


def test_one_build_of_a_prefix_at_a_time_the_second_waits_saying_so() -> None:
    prefix = "pytest-one-at-a-time/"
    said: list[str] = []
    order: list[str] = []
    held = threading.Event()

    def first() -> None:
        with _one_build_at_a_time(prefix, said.append):
            held.set()
            time.sleep(0.3)
            order.append("first done")

    thread = threading.Thread(target=first)
    thread.start()
    assert held.wait(5)
    with _one_build_at_a_time(prefix, said.append):
        order.append("second began")
    thread.join(5)
    assert order == ["first done", "second began"]
    assert len(said) == 1 and said[0].startswith("waiting for another build of lockchaos's images")


@pytest.mark.parametrize("prefix", ["", "scratch/", "ci.run-2/", "lc-"])
def test_a_prefix_that_can_begin_an_image_name_is_taken(prefix: str) -> None:
    assert check_prefix(prefix) == prefix


@pytest.mark.parametrize("prefix", ["scratch", "Scratch/", "/scratch/", "a b/"])
def test_a_prefix_that_cannot_begin_an_image_name_is_refused(prefix: str) -> None:
    with pytest.raises(UsageError, match="cannot begin an image name"):
        check_prefix(prefix)


@pytest.mark.parametrize(
    "argv",
    [["build", "--jobs", "two"], ["build", "--jobs", "0"], ["missing", "--prefix", "Bad/"],
     ["build", "--prefix"], ["build", "no-such-image"]],
)
def test_bad_arguments_are_one_line_and_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("images: "), err
