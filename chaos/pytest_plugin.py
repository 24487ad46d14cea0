"""lockchaos as a pytest plugin: test your own lock from your own suite, against real Redis
behind Toxiproxy, with lockchaos's faults and its checker (docs/pytest.md).

Installed as the ``pytest11`` entry point ``lockchaos``. Fixtures — each test gets fresh
ones, and everything they start is torn down after it:

* ``lockchaos_lock`` — the lock under test: the ``lock=`` of ``@pytest.mark.lockchaos``, else
  ``--lock`` (a bundled name or ``module:attr``);
* ``lockchaos_topology`` — a running topology shaped for that lock and the marker's
  ``faults=`` (or its ``topology=``/``nodes=``), from ``--lockchaos-provider`` (``local`` by
  default; a fault the provider cannot do fails the test before anything starts), running
  ``--lockchaos-server`` (``chaos.topology.images.SERVERS``: the docker
  provider's server images);
* ``lockchaos_toxiproxy`` — Toxiproxy faults on one client's own links, by hand;
* ``lockchaos_nemesis`` — a seeded schedule of faults, played during a run;
* ``lockchaos_clients`` — runs client processes of the lock against the topology (with the
  marker's faults, unless given a nemesis) and returns the run's ``WorkloadResult``;
* ``lockchaos_checker`` — the pure checker on a run's history;
* ``lockchaos_audit`` — ``lockchaos audit`` of the lock within a budget, with the audit's own
  choice of faults: the test fails with the audit's answer unless the lock passes.

A failure shows lockchaos's explanation, not the plugin's frames (``__tracebackhide__``).

It also registers lockchaos's Hypothesis profiles (``lockchaos-dev``, ``lockchaos-ci``) but
loads none: a suite opts in with ``--hypothesis-profile lockchaos-ci`` (or
``chaos.explore.profiles.select_profile()`` in its conftest), so installing lockchaos never
changes the Hypothesis settings of a suite that did not ask.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from rich.text import Text

from chaos import checker, topology
from chaos.campaign import DEFAULTS, KNOBS, Campaign, choose_layout, open_topology
from chaos.errors import UsageError
from chaos.experiments.audit import AuditPlan, run_audit
from chaos.explore.profiles import register_profiles
from chaos.nemesis import ScheduledNemesis, generate, parse_faults
from chaos.nemesis.fault import Heal
from chaos.nemesis.link_faults import cut_client_links, toxic_on_client
from chaos.report.audit_answer import REPLAY, answer
from chaos.report.audit_page import AUDIT, AuditFile, load_audit
from chaos.report.matrix import INDEX
from chaos.workload import Nemesis, WorkloadResult, run_workload

MARKER = "lockchaos"
MARKER_HELP = (
    "lockchaos(lock=None, faults='', topology='auto', nodes=None, capacity=None, "
    "faults_in_order=False): the lock under test (module:attr or a bundled name; overrides "
    "--lock), the faults its clients run under (in the order given: faults_in_order), the "
    "topology's shape, and a semaphore's permits (overrides --lockchaos-capacity); "
    "lockchaos_audit audits the lock with the audit's own faults instead"
)


# The campaign options the plugin takes, as its own flags (the marker gives the rest).
PLUGIN_FLAGS = {
    "lock": "--lock",
    "provider": "--lockchaos-provider",
    "provider_config": "--lockchaos-provider-config",
    "server": "--lockchaos-server",
    "capacity": "--lockchaos-capacity",
}
NUMBERS = ("capacity",)  # the options that are integers on the command line
# The marker's campaign fields; ``lock`` and ``capacity`` override their options.
MARKED = ("topology", "nodes", "capacity", "faults_in_order")
LOCK_HELP = "the lock under test, for tests whose lockchaos marker names none: "
# A test's run is short and small unless it says otherwise: what ``lockchaos_clients`` and
# ``lockchaos_nemesis`` run by default where the campaign's declaration (``DEFAULTS``: 5
# clients for 20 s, holders working a quarter of the TTL and extending) has a CI run's.
TEST_RUN: dict[str, Any] = {
    "clients": 3, "duration_s": 2.0, "work_ms": 20.0, "extend_during_work": False,
}


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's ``PLUGIN_FLAGS``, with the help, choices and default the campaign
    declares."""
    group = parser.getgroup("lockchaos", "lockchaos: test a Redis lock under faults")
    for name, flag in PLUGIN_FLAGS.items():
        knob = KNOBS[name]
        group.addoption(
            flag,
            dest=f"lockchaos_{name}",
            default=DEFAULTS.get(name),
            choices=knob.choices or None,
            type=int if name in NUMBERS else None,
            help=LOCK_HELP + knob.help if name == "lock" else knob.help,
        )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Register the Hypothesis profiles before Hypothesis's plugin loads one by name."""
    config.addinivalue_line("markers", MARKER_HELP)
    register_profiles()


@contextmanager
def _as_test_failure() -> Iterator[None]:
    """A ``UsageError`` (bad lock, impossible fault…) fails the test in its own one line."""
    try:
        yield
    except UsageError as exc:
        pytest.fail(f"lockchaos: {exc}", pytrace=False)


def _marker(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker(MARKER)
    return dict(marker.kwargs) if marker else {}


@pytest.fixture
def lockchaos_lock(request: pytest.FixtureRequest) -> str:
    """The lock under test: the marker's ``lock=``, else ``--lock``."""
    lock = _marker(request).get("lock") or request.config.getoption("lockchaos_lock")
    if not lock:
        pytest.fail(
            "lockchaos: no lock under test: pass --lock module:attr, or mark the test "
            "@pytest.mark.lockchaos(lock='module:attr')",
            pytrace=False,
        )
    return str(lock)


@pytest.fixture
def lockchaos_campaign(request: pytest.FixtureRequest, lockchaos_lock: str) -> Campaign:
    """The marker and the options, validated as a campaign (the shape of the run)."""
    marker = _marker(request)
    with _as_test_failure():
        options = {name: request.config.getoption(f"lockchaos_{name}")
                   for name in PLUGIN_FLAGS if name != "lock"}
        options.update({name: marker[name] for name in MARKED if name in marker})
        campaign = Campaign.from_options(lockchaos_lock, marker.get("faults", ""), **options)
        campaign.validate()
    return campaign


@pytest.fixture
def lockchaos_topology(lockchaos_campaign: Campaign) -> Iterator[topology.Topology]:
    """A fresh running topology for this test, torn down after it."""
    with _as_test_failure():
        topo = open_topology(lockchaos_campaign, choose_layout(lockchaos_campaign))
    with topo:
        yield topo


class LinkFaults:
    """Toxiproxy faults on one client's own links (``c1``, ``c2``… as the clients are
    named), by hand. Each returns the function that heals it; whatever is still on at the
    end of the test is healed then."""

    def __init__(self, topo: topology.Topology) -> None:
        self.topology = topo
        self._heals: list[Heal] = []

    def _keep(self, heal: Heal) -> Heal:
        self._heals.append(heal)

        def once() -> None:
            if heal in self._heals:
                self._heals.remove(heal)
                heal()

        return once

    def cut(self, client: str, nodes: list[int] | None = None) -> Heal:
        """Partition ``client`` from ``nodes`` (default: every node)."""
        if nodes is None:
            nodes = list(range(len(self.topology.nodes)))
        return self._keep(cut_client_links(self.topology, client, nodes))

    def latency(
        self, client: str, latency_ms: int, jitter_ms: int = 0, stream: str = "downstream"
    ) -> Heal:
        """Delay everything ``client`` sends (``upstream``) or receives (``downstream``)."""
        return self._keep(
            toxic_on_client(
                self.topology, client, "latency", stream=stream, latency=latency_ms,
                jitter=jitter_ms,
            )
        )  # fmt: skip

    def reset_peer(self, client: str, toxicity: float = 1.0) -> Heal:
        """Reset ``client``'s connections mid-command (with probability ``toxicity``)."""
        return self._keep(
            toxic_on_client(
                self.topology, client, "reset_peer", stream="upstream", toxicity=toxicity,
                timeout=0,
            )
        )  # fmt: skip

    def heal(self) -> None:
        while self._heals:
            self._heals.pop()()


@pytest.fixture
def lockchaos_toxiproxy(lockchaos_topology: topology.Topology) -> Iterator[LinkFaults]:
    """Toxiproxy faults on one client's links; healed after the test."""
    faults = LinkFaults(lockchaos_topology)
    yield faults
    faults.heal()


NemesisFactory = Callable[..., ScheduledNemesis]


@pytest.fixture
def lockchaos_nemesis(lockchaos_campaign: Campaign) -> NemesisFactory:
    """``lockchaos_nemesis("latency,partition", seed=1, duration_s=2, ttl_ms=200)``: a seeded
    schedule of faults for ``lockchaos_clients(nemesis=...)`` (``in_order=True``: they take
    turns in the order given, as ``--faults-in-order``)."""

    def make(
        faults: str, *, seed: int = DEFAULTS["seed"], duration_s: float = TEST_RUN["duration_s"],
        ttl_ms: int = DEFAULTS["ttl_ms"], in_order: bool = False,
    ) -> ScheduledNemesis:
        with _as_test_failure():
            played = msgspec.structs.replace(
                lockchaos_campaign, faults=parse_faults(faults), seed=seed,
                duration_s=duration_s, ttl_ms=ttl_ms, faults_in_order=in_order,
            )
            played.validate()  # a fault the provider or the lock's client cannot do, …
        return ScheduledNemesis(generate(
            played.faults, seed=played.seed, duration_s=played.duration_s,
            ttl_ms=played.ttl_ms, in_order=played.faults_in_order,
        ))

    return make


ClientsRunner = Callable[..., WorkloadResult]


@pytest.fixture
def lockchaos_clients(
    lockchaos_campaign: Campaign,
    lockchaos_topology: topology.Topology,
    tmp_path: Path,
) -> ClientsRunner:
    """``lockchaos_clients(clients=3, duration_s=2.0, ttl_ms=200, work_ms=20, seed=1)``: run
    client processes of the lock, each looping acquire → read/work/write → release, under the
    marker's faults (or ``nemesis=``); returns the ``WorkloadResult`` (its ``history_path``)."""
    counter = itertools.count(1)
    campaign = lockchaos_campaign

    def run(
        *,
        clients: int = TEST_RUN["clients"],
        duration_s: float = TEST_RUN["duration_s"],
        ttl_ms: int = DEFAULTS["ttl_ms"],
        work_ms: float = TEST_RUN["work_ms"],
        seed: int = DEFAULTS["seed"],
        nemesis: Nemesis | None = None,
        extend_during_work: bool = TEST_RUN["extend_during_work"],
    ) -> WorkloadResult:
        ran = msgspec.structs.replace(
            campaign, clients=clients, ttl_ms=ttl_ms, work_ms=work_ms, duration_s=duration_s,
            seed=seed, extend_during_work=extend_during_work,
        )
        with _as_test_failure():
            ran.validate()  # the declaration's bounds, for the values this run was given
            if nemesis is None and ran.faults:  # the marker's, with their overrides
                nemesis = ScheduledNemesis(generate(
                    ran.faults, seed=ran.seed, duration_s=ran.duration_s, ttl_ms=ran.ttl_ms,
                    in_order=ran.faults_in_order,
                ))
            return run_workload(
                lockchaos_topology,
                ran.workload(),
                tmp_path / f"history-{next(counter)}.jsonl",
                clients=ran.clients,
                seed=ran.seed,
                nemesis=nemesis,
                params={"faults": ran.fault_names, "provider": ran.provider},
            )

    return run


class Checker:
    """The pure checker: a run's history in, a verdict out."""

    def __call__(self, run: WorkloadResult | Path) -> checker.Verdict:
        return checker.check_file(_history_path(run))

    def assert_passes(
        self, run: WorkloadResult | Path, fail_on: str = "hard", *, allow_inconclusive: bool = False
    ) -> checker.Verdict:
        """The verdict, or an ``AssertionError`` explaining every violation at or above
        ``fail_on`` (and where the history is, for ``lockchaos check-history``) — or why the
        run was inconclusive: a test that exercised nothing must not pass, as in CI."""
        __tracebackhide__ = True
        verdict = self(run)
        status = checker.exit_status(verdict, fail_on, allow_inconclusive=allow_inconclusive)
        if status:
            path = _history_path(run)
            why = verdict.explanations if checker.fails(verdict, fail_on) else (
                verdict.inconclusive_reasons)
            lines = "\n".join(f"  • {line}" for line in why[:10])
            raise AssertionError(
                f"lockchaos verdict {verdict.verdict} (failing on {fail_on}); history {path}\n"
                + lines
            )
        return verdict


AUDIT_BUDGET_S = 60.0  # a test's audit unless it says otherwise: `lockchaos audit`'s --budget
AuditRunner = Callable[..., AuditFile]


@pytest.fixture
def lockchaos_audit(lockchaos_campaign: Campaign, tmp_path: Path) -> AuditRunner:
    """``lockchaos_audit(budget=60, faults="", fail_on="hard", seed=1)``: audit the lock as
    ``lockchaos audit`` does — a warm-up that learns its commands, then every fault a lock
    must survive (``faults``: instead of those; ``+name`` adds one) — into the test's
    ``tmp_path``; fails the test with the audit's answer (``chaos.report.audit_answer``) unless
    it exits 0, else returns ``audit.json``'s record."""
    counter = itertools.count(1)

    def run(
        budget: float = AUDIT_BUDGET_S, *, faults: str = "", fail_on: str = DEFAULTS["fail_on"],
        seed: int = DEFAULTS["seed"], full: bool = False, allow_inconclusive: bool = False,
    ) -> AuditFile:
        __tracebackhide__ = True
        base = msgspec.structs.replace(lockchaos_campaign, faults=[], fail_on=fail_on,
                                       seed=seed, allow_inconclusive=allow_inconclusive)
        plan = AuditPlan(base, budget_s=budget, selection=faults, full=full)
        with _as_test_failure():
            result = run_audit(plan, tmp_path / f"audit-{next(counter)}")
        record = load_audit(result.directory / AUDIT)
        if record.exit_status:
            lines = [Text.from_markup(line).plain for line in answer(record)]
            pytest.fail("\n".join([*lines, f"  {REPLAY}{record.replay}",
                                   f"  report: {result.directory / INDEX}"]), pytrace=False)
        return record

    return run


def _history_path(run: WorkloadResult | Path) -> Path:
    return run.history_path if isinstance(run, WorkloadResult) else run


@pytest.fixture
def lockchaos_checker() -> Checker:
    """``lockchaos_checker(result)`` → ``Verdict``; ``.assert_passes(result, fail_on="hard")``."""
    return Checker()
