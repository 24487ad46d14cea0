"""The package's shape: no import cycle anywhere in chaos/, no import running back up the
layers, and the public façade.

Cycles are found among every import of a module, wherever it is written: at the top, inside
``if TYPE_CHECKING:`` (a cycle there is still two modules that each need the other to be
understood) or inside a function (one imported late to dodge a cycle is still a cycle). An
import of a package counts as an import of its ``__init__``; ``from pkg import mod`` of a
submodule counts as an import of that submodule — and, as Python runs them first, of the
``__init__`` of every package above it that the importing module is not itself inside
(``from chaos.locks.contract import Lease`` in ``chaos.drivers`` runs ``chaos/locks/__init__.py``).

The layers are chaos's packages (and its top-level modules): collapsed to them, the graph has
no cycle either, so they stack with every import running down.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import chaos
from chaos import lockspec

ROOT = Path(chaos.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _packages_run(target: str, importer: str) -> list[str]:
    """The packages whose ``__init__`` importing ``target`` from ``importer`` runs: those above
    ``target`` that ``importer`` is not inside (its own packages have run already)."""
    parts = target.split(".")
    above = [".".join(parts[:i]) for i in range(1, len(parts))]
    return [p for p in above if importer != p and not importer.startswith(p + ".")]


def import_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                    ).strip(".")
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            targets += [run for target in targets for run in _packages_run(target, name)]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def layer(module: str) -> str:
    """The package (or top-level module) of chaos that ``module`` belongs to."""
    return ".".join(module.split(".")[:2])


def layer_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` with each module collapsed to its ``layer``."""
    layers: dict[str, set[str]] = {layer(name): set() for name in graph}
    for name, targets in graph.items():
        layers[layer(name)].update(layer(t) for t in targets if layer(t) != layer(name))
    return layers


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_cycle_in_chaos() -> None:
    assert cycles(import_graph()) == []


def test_no_import_runs_back_up_the_layers() -> None:
    """Collapsed to chaos's packages, the graph has no cycle: an import from one package into
    another that imports it back (even through a third) is one running back up."""
    assert cycles(layer_graph(import_graph())) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_real_edges() -> None:
    graph = import_graph()
    assert "chaos.topology.base" in graph["chaos.topology.local"]
    assert "chaos.history" in graph["chaos.checker.scan"]
    # imported inside a function: counted too
    assert "chaos.drivers.catalog" in graph["chaos.images.recipes"]
    # a submodule's import runs its package's __init__ first, unless the importer is inside it
    assert "chaos.locks" in graph["chaos.drivers.catalog"]  # from chaos.locks.contract import…
    assert "chaos.locks" not in graph["chaos.locks.context"]


def test_a_submodule_import_runs_the_packages_above_it() -> None:
    assert _packages_run("chaos.locks.contract", "chaos.drivers.catalog") == ["chaos.locks"]
    assert _packages_run("chaos.locks.contract", "chaos.locks.context") == []
    assert _packages_run("chaos.locks", "chaos.campaign.spec") == []
    # p.a imports q.b, which imports the package p: the layers p and q import each other
    graph = {"chaos.p": set(), "chaos.p.a": {"chaos.q.b"}, "chaos.q.b": {"chaos.p"}}
    assert cycles(layer_graph(graph)) == [["chaos.p", "chaos.q"]]


def test_the_facade_names_exactly_what_it_loads() -> None:
    assert sorted(chaos.__all__) == sorted(chaos._PUBLIC)
    for name in chaos.__all__:
        assert getattr(chaos, name) is not None
    assert chaos.check_file.__module__ == "chaos.checker"


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    pending = [start]
    while pending:
        for target in graph[pending.pop()] - seen:
            seen.add(target)
            pending.append(target)
    return seen


def test_the_campaign_sits_below_what_runs_and_reports_it() -> None:
    """``chaos.campaign`` is what explore, the experiments and the reports share: it reaches
    none of them, and explore does not reach the experiments (the audit uses explore)."""
    graph = import_graph()
    above = ("chaos.report", "chaos.explore", "chaos.experiments", "chaos.commands")
    for module in (name for name in graph if name.startswith("chaos.campaign")):
        reached = sorted(m for m in _reaches(graph, module) if m.startswith(above))
        assert reached == [], module
    for module in (name for name in graph if name.startswith("chaos.explore")):
        assert not any(m.startswith("chaos.experiments") for m in graph[module]), module
    assert "chaos.explore" in graph["chaos.experiments.audit.runner"]


@pytest.mark.parametrize("module", ["protocol", "process", "adapter", "catalog"])
def test_each_drivers_module_can_be_imported_first(module: str) -> None:
    """chaos.lockspec resolves drivers through chaos.drivers.catalog, which implements the lock
    contract of chaos.locks: whichever module a program imports first, all load."""
    code = (f"import chaos.drivers.{module}, chaos.locks, chaos.lockspec; "
            "print(len(chaos.lockspec.catalog()))")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0 and int(done.stdout) == len(lockspec.BUNDLED), done.stderr
