"""The explorer's pure parts: the model that decides who a step goes to, the program's words
and JSON, and the candidates the shrinker tries. No processes: these never touch Redis."""

from __future__ import annotations

from chaos.explore.model import Model
from chaos.explore.program import Program, Step
from chaos.explore.shrink import AS_IS, DROP, PLAIN, candidate

DEL = {"command": "DEL", "op": "release"}


def model_after(*steps: Step) -> Model:
    model = Model.of(["c1", "c2", "c3"])
    for step in steps:
        model.apply(step)
    return model


def test_the_most_telling_client_comes_first() -> None:
    model = model_after(Step("acquire", "c1"), Step("acquire", "c2"))
    assert model.pick(0, "release") == "c1"  # the oldest asker: likely the stale holder
    assert model.pick(1, "release") == "c2"
    assert model.pick(0, "acquire") == "c3"  # one that has not asked yet
    assert model.contenders() == ["c3", "c2", "c1"]  # then the latest asker: likely refused


def test_a_client_stopped_in_its_release_resumes_last_and_is_never_paused() -> None:
    model = model_after(Step("acquire", "c1"), Step("release", "c1", ref="f1", params=DEL))
    assert model.clients["c1"].stopped
    assert model.contenders() == ["c2", "c3", "c1"]
    assert "c1" not in [model.pick(i, "pause") for i in range(3)]
    model.apply(Step("acquire", "c1"))  # its next step resumes it first
    assert not model.clients["c1"].stopped
    assert model.fired == 1 and model.next_ref() == "f2"


def test_a_heal_goes_to_the_latest_fault_of_its_kind_that_is_still_on() -> None:
    model = model_after(
        Step("fault-on", fault="partition", ref="f1", client="c1", nodes=(0,)),
        Step("fault-on", fault="partition", ref="f2", client="c2", nodes=(0,)),
        Step("fault-on", fault="crash-restart", ref="f3", nodes=(0,)),  # heals itself
    )
    assert model.open_ref("partition") == "f2"
    assert model.open_ref("crash-restart") is None
    model.apply(Step("fault-off", fault="partition", ref="f2"))
    assert model.open_ref("partition") == "f1"


def program(*steps: Step) -> Program:
    return Program("get-then-del", ttl_ms=100, clients=2, topology="standalone", nodes=1,
                   steps=steps)  # fmt: skip


def test_a_program_reads_as_numbered_steps_and_survives_json() -> None:
    shown = program(
        Step("contend", params={"order": ["c1", "c2"]}),
        Step("release", "c1", ref="f1", params=DEL),
        Step("sleep", "c2", ttls=1.5, ref="f2"),
        Step("fault-on", fault="clock-jump", ref="f3", nodes=(0,), params={"offset_ms": 150}),
    )
    assert shown.numbered(["c1 granted; c2 refused", "stopped at its pause point"]) == [
        "1. c1, c2 ask for the lock, in that order → c1 granted; c2 refused",
        "2. c1 releases the lock, stopping before its DEL [f1] → stopped at its pause point",
        "3. wait 1.5×TTL (150 ms) with c2 paused (SIGSTOP, a stop-the-world GC) [f2]",
        "4. clock-jump f3 on n0: offset_ms=+150 (+1.5×TTL)",
    ]
    assert Program.from_json({**shown.to_json(), "outcomes": ["ignored"]}) == shown


def test_a_candidate_drops_or_plains_steps_and_renumbers_their_faults() -> None:
    found = program(
        Step("fault-on", fault="partition", ref="f1", client="c2", nodes=(0,)),
        Step("acquire", "c1", ref="f2", params={"command": "*", "nth": 2, "op": "acquire"}),
        Step("sleep", "c1", ttls=1.5, ref="f3"),
        Step("fault-off", fault="partition", ref="f1"),
    )
    shrunk = candidate(found, [DROP, PLAIN, AS_IS, AS_IS])
    assert shrunk.steps == (
        Step("acquire", "c1"),
        Step("sleep", "c1", ttls=1.5, ref="f1"),
        Step("fault-off", fault="partition"),  # its fault was dropped: it heals nothing
    )


def test_an_ask_overfills_what_the_other_askers_may_hold_first() -> None:
    """A semaphore of 3: with nobody asking, all three permits first (the next ask must be
    refused); once c1 asked 2, the 2 that overfill; a read-write lock's mode clashes with the
    other askers' (a write against reads, a read against a write), one permit each."""
    semaphore = Model.of(["c1", "c2"], capacity=3, modes=("shared",))
    assert semaphore.asks("c1") == [("shared", 3), ("shared", 1), ("shared", 2)]
    semaphore.apply(Step("acquire", "c1", mode="shared", permits=2))
    assert semaphore.asks("c2")[0] == ("shared", 2)
    assert semaphore.asks("c1")[0] == ("shared", 3)  # its own ask is not counted against it
    semaphore.apply(Step("release", "c1"))
    assert semaphore.asks("c2")[0] == ("shared", 3)
    one = Model.of(["c1", "c2"], capacity=5, modes=("shared",), max_permits=1)
    assert one.asks() == [("shared", 1)]
    rw = Model.of(["c1", "c2"], capacity=None, modes=("exclusive", "shared"))
    rw.apply(Step("acquire", "c1", mode="shared", permits=1))
    assert rw.asks("c2") == [("exclusive", 1), ("shared", 1)]
    rw.apply(Step("crash", "c1"))
    rw.apply(Step("acquire", "c1", mode="exclusive", permits=1))
    assert rw.asks("c2") == [("shared", 1), ("exclusive", 1)]


def test_a_programs_asks_read_as_words_and_survive_json() -> None:
    shown = Program(lock="lua-semaphore", ttl_ms=100, clients=2, topology="standalone",
                    nodes=1, capacity=3, steps=(
                        Step("acquire", "c1", mode="shared", permits=2),
                        Step("contend", mode="exclusive", permits=1,
                             params={"order": ["c2", "c1"]}),
                    ))
    assert shown.numbered() == [
        "1. c1 acquires 2 shared permits",
        "2. c2, c1 ask for the lock exclusively, in that order",
    ]
    assert Program.from_json(shown.to_json()) == shown
    mutex = program(Step("acquire", "c1"))
    assert "capacity" not in mutex.to_json()  # a mutex's program reads as it always did
    assert "mode" not in mutex.to_json()["steps"][0]
    assert Program.from_json(mutex.to_json()).capacity == 1
