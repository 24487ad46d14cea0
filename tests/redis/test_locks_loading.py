"""``--lock`` loading, the factory check, the catalog, and the documented adapter examples."""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from chaos import locks, lockspec
from chaos.errors import UsageError
from chaos.experiments.truth_table import SERVER_CELLS
from chaos.locks import build_context
from chaos.locks.contract import ExtendableLockClient, Lease, LockContext
from chaos.lockspec import BUNDLED, catalog, check_client, resolve
from chaos.topology import LocalTopology

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "writing-a-lock-adapter.md"
SEED_FILE = re.compile(r"\b(\d{3}_[0-9a-f]{16}\.txt)\b")
SEEDS = {
    "000_8a1b5bedde93f492.txt",
    "001_070fe2e587afd768.txt",
    "002_497f2475c0bb3b16.txt",
    "003_ad4e3d3f63ce056d.txt",
    "004_8e2bee48344fb8f7.txt",
}
# The one origin besides the seed posts: Redis in Action's semaphores (chaos/locks/book_*.py).
BOOK = "Redis in Action (Josiah Carlson, 2013)"
BEYOND = "beyond the seeds: "  # a library's own lock the seeds do not show (issue 19's)


@pytest.fixture
def offline_ctx() -> LockContext:
    """A context whose connections are never opened (redis-py connects lazily)."""
    return LockContext("c1", "lock:test", 300, nodes=[redis.Redis(port=1)] * 3)


@pytest.fixture
def clean_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


# -- load ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(BUNDLED))
def test_every_bundled_name_loads_a_factory(name: str) -> None:
    assert callable(resolve(name).factory)


def test_module_attr_loads_like_a_short_name() -> None:
    assert resolve("chaos.locks.lua:make").factory is resolve("lua").factory


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope", r"^unknown lock 'nope': run `lockchaos list`"),
        ("json:nothing", r"^lock 'json:nothing': 'json' has no attribute 'nothing'"),
        ("foo.bar:make", r"^lock 'foo.bar:make': no module named 'foo' \(run `lockchaos list`"),
        ("json:__name__", r"^lock 'json:__name__': json.__name__ is a str, not a callable"),
        ("json:", r"^unknown lock 'json:'"),
        ("./nowhere/locks.py:make", r"^lock './nowhere/locks.py:make': no such file"),
    ],
)
def test_bad_specs_are_one_line_usage_errors(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        resolve(spec)
    assert "\n" not in str(caught.value)


def test_a_factory_that_fails_is_a_usage_error(offline_ctx: LockContext) -> None:
    with pytest.raises(UsageError, match=r"^lock factory json:dumps failed: TypeError: "):
        resolve("json:dumps").create(offline_ctx)


def test_a_factory_that_returns_no_lock_client_is_a_usage_error(offline_ctx: LockContext) -> None:
    with pytest.raises(
        UsageError,
        match=r"^lock factory builtins:str returned \"LockContext\(.*\(a str\), which has no "
        r"acquire\(\)/release\(\)$",
    ):
        resolve("builtins:str").create(offline_ctx)


def test_check_client_names_what_is_missing() -> None:
    with pytest.raises(UsageError, match=r"returned '\{\}' \(a str\), which has no acquire"):
        check_client(json.dumps({}), "json:dumps")

    class HalfALock:
        def acquire(self) -> None:
            return None

    with pytest.raises(UsageError, match=r"which has no release\(\)$"):
        check_client(HalfALock(), "mine:make")


def test_factory_redis_errors_propagate_as_faults(
    offline_ctx: LockContext, tmp_path: Path, clean_imports: None
) -> None:
    module = tmp_path / "pinging.py"
    module.write_text(
        "def make(ctx):\n    ctx.primary.ping()\n    raise AssertionError('unreachable')\n"
    )
    with pytest.raises(redis.ConnectionError):
        resolve(f"{module}:make").create(offline_ctx)


def test_a_module_in_the_working_directory_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_imports: None
) -> None:
    package = tmp_path / "mypkg_wd"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "locks.py").write_text("def make_lock(ctx):\n    return ctx\n")
    monkeypatch.chdir(tmp_path)
    if "" in sys.path:
        sys.path.remove("")
    factory = resolve("mypkg_wd.locks:make_lock").factory
    assert factory.__module__ == "mypkg_wd.locks"


def test_a_broken_user_module_is_a_usage_error(tmp_path: Path, clean_imports: None) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("def make(ctx):\n    return (\n")
    with pytest.raises(UsageError, match=r"importing .*broken.py failed: SyntaxError"):
        resolve(f"{broken}:make")


# -- catalog ------------------------------------------------------------------------------


def test_catalog_lists_every_bundled_lock_with_seed_and_one_sentence_flaw() -> None:
    infos = catalog()
    assert [i.name for i in infos] == list(BUNDLED)
    cited = set()
    for info in infos:
        assert info.target == BUNDLED[info.name]
        assert info.summary and "\n" not in info.summary and "``" not in info.summary
        seeds = set(SEED_FILE.findall(info.seed))
        assert seeds or info.seed.startswith((BOOK, BEYOND)), (
            f"{info.name} cites no seed file (nor the book, nor the library it goes beyond to)")
        cited |= seeds
        assert info.flaw.endswith(".") and info.flaw.count(". ") == 0, info.flaw
        module = importlib.import_module(info.target.partition(":")[0])
        assert module.__doc__ and "Known flaw:" in module.__doc__
        if info.name in {cell.lock for cell in SERVER_CELLS}:
            continue  # its factory asks the server first: tests/docker/test_delifeq.py
        ttl = -(-300 // info.ttl_granularity_ms) * info.ttl_granularity_ms  # one it can keep
        offline = LockContext("c1", "k", ttl, nodes=[redis.Redis(port=1)] * 3)
        client = resolve(info.name).factory(offline)
        assert isinstance(client, ExtendableLockClient) is info.extend, info.name
    assert cited == SEEDS, f"every seed must be the origin of some lock; missing {SEEDS - cited}"
    assert [i.name for i in infos if i.fencing] == ["fenced", "redisson-fenced"]
    assert [i.name for i in infos if i.topology != "any"] == [
        "redlock", "pottery-redlock", "redsync", "node-redlock", "rust-redlock", "sesame-redlock"]


def test_check_topology_refuses_redlock_where_it_cannot_run() -> None:
    with pytest.raises(UsageError, match="needs independent masters"):
        resolve("redlock").check_topology("sentinel", 3)
    with pytest.raises(UsageError, match="at least 3 nodes"):
        resolve("redlock").check_topology("standalone", 1)
    resolve("redlock").check_topology("standalone", 5)
    resolve("lua").check_topology("sentinel", 3)
    resolve("my_lock:make_lock").check_topology("sentinel", 3)  # a user's lock declares no needs


def test_facade_exports_the_contract() -> None:
    for name in ("Lease", "LockContext", "LockClient", "LockInfo", "build_context"):
        assert hasattr(locks, name)
    for name in ("resolve", "check_client", "catalog", "BUNDLED"):
        assert hasattr(lockspec, name)


# -- the documentation's examples ---------------------------------------------------------


def doc_example(label: str) -> str:
    match = re.search(
        rf"<!-- example: {re.escape(label)} -->\n```python\n(.*?)\n```", DOC.read_text(), re.S
    )
    assert match, f"{DOC.name} has no example block for {label}"
    return match.group(1)


def test_the_documented_user_lock_works_against_real_redis(
    single: LocalTopology, tmp_path: Path, clean_imports: None
) -> None:
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    module = package / "locks.py"
    module.write_text(doc_example("mypkg/locks.py"))
    contexts = [
        build_context(single.client_view(c), lock_name="lock:doc", ttl_ms=300) for c in ("c1", "c2")
    ]
    try:
        c1, c2 = (resolve(f"{module}:make_lock").create(ctx) for ctx in contexts)
        assert isinstance(c1, ExtendableLockClient)
        lease = c1.acquire()
        assert lease and lease.token.startswith("c1:")
        assert not c2.acquire()
        extended = c1.extend(lease)
        assert isinstance(extended, Lease)
        assert c1.release(extended) is True
        assert c1.release(extended) is False
        assert c2.acquire()
    finally:
        for ctx in contexts:
            ctx.close()


def test_the_documented_redis_py_adapter_is_the_bundled_code() -> None:
    def code_lines(text: str) -> list[str]:
        lines = [line.split("  #")[0].strip() for line in text.splitlines()]
        return [line for line in lines if line and not line.startswith(("#", "from ", "import "))]

    source = set(code_lines((ROOT / "chaos" / "locks" / "redis_py.py").read_text()))
    missing = [
        line for line in code_lines(doc_example("chaos/locks/redis_py.py")) if line not in source
    ]
    assert not missing, f"the docs show code that chaos/locks/redis_py.py does not have: {missing}"
