"""The ``lockchaos/lockchaos`` image as CI and Kubernetes run it (docs/images.md,
docs/scaling.md): ``docker run`` on a project directory with no other set-up, and a sharded
comparison as one container per shard, joined by ``lockchaos merge`` on the host; and the
full image ``lockchaos/lockchaos:full`` running the bundled Java, Node and Go drivers. Every
run inside uses the local provider: processes on the container's own loopback, no Docker in
Docker. The image is rebuilt from this checkout first when it is out of date (seconds; the
full one: its apt-get install, about 25 s)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import msgspec
import pytest
from prerequisites import driver_gap, need

from chaos.checker import Verdict
from chaos.cli import main
from chaos.experiments.truth_table import CELLS
from chaos.images.build import build as build_images
from chaos.report.matrix import exit_status, load_matrix
from chaos.topology.images import image_for

ROOT = Path(__file__).resolve().parents[2]
IMAGE = image_for("lockchaos")
# the image, and the two it is made from (rebuilt from this checkout when out of date)
IMAGES = pytest.mark.images("lockchaos", "python", "redis-7.0")
RUN_TIMEOUT_S = 120  # one container's run, its start included (about 6 s alone)
FULL_IMAGE = image_for("lockchaos-full")
FULL_IMAGES = pytest.mark.images("lockchaos-full", "lockchaos", "python", "redis-7.0")
DRIVER_LOCKS = ("jedis-lua", "node-redlock", "redsync")  # one per runtime: Java, Node, Go

LOCK_MODULE = '''
"""SET NX PX to take the lock, a compare-and-delete script to release it."""
from chaos.locks.contract import Lease

RELEASE = ("if redis.call('get', KEYS[1]) == ARGV[1] then "
           "return redis.call('del', KEYS[1]) end return 0")


class Lock:
    def __init__(self, ctx):
        self.ctx = ctx

    def acquire(self):
        token = self.ctx.new_token()
        if self.ctx.primary.set(self.ctx.lock_name, token, nx=True, px=self.ctx.ttl_ms):
            return Lease(token)
        return None

    def release(self, lease):
        return bool(self.ctx.primary.eval(RELEASE, 1, self.ctx.lock_name, lease.token))


def make(ctx):
    return Lock(ctx)
'''


@pytest.fixture(scope="module", autouse=True)
def _image_of_this_checkout() -> None:
    build_images(["lockchaos"], progress=lambda line: None, source=ROOT)


def _docker_run(project: Path, *args: str, image: str = IMAGE) -> list[str]:
    """``docker run`` of the image on ``project`` (mounted at /project, the working
    directory), as this user so the files it writes are ours."""
    return ["docker", "run", "--rm", "--user", f"{os.getuid()}:{os.getgid()}",
            "-v", f"{project}:/project", "-w", "/project", image, *args]  # fmt: skip


@IMAGES
def test_a_run_of_a_python_lock_in_the_project_needs_no_set_up(tmp_path: Path) -> None:
    """docs/ci.md's line, `docker run … lockchaos/lockchaos run --lock mylocks:make`: the
    lock module is imported from the mounted working directory, Redis and Toxiproxy are the
    image's, and the run directory lands in the project."""
    (tmp_path / "mylocks.py").write_text(LOCK_MODULE)
    done = subprocess.run(
        _docker_run(tmp_path, "run", "--lock", "mylocks:make", "--duration", "3", "--ttl-ms",
                    "1000"),  # a 1 s lease: a starved client may outlive 200 ms (soft)
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-2000:]
    assert "verdict: ok" in output, output[-2000:]
    (run_dir,) = (tmp_path / "reports").iterdir()
    verdict = msgspec.json.decode((run_dir / "verdict.json").read_bytes(), type=Verdict)
    assert verdict.verdict == "ok" and verdict.counts["acquire_ok"] > 0


@IMAGES
@pytest.mark.timeout(300)
def test_a_sharded_compare_as_two_containers_merges_into_the_truth_tables_matrix(
    tmp_path: Path,
) -> None:
    """`compare --shard 1/2` and `2/2` in two containers at once, each into its own mounted
    directory (as the Kubernetes Job's pods, docs/scaling.md), then `lockchaos merge` here:
    both cells, in plan order, each as the truth table claims (lua × slow-work soft with lost
    writes, del-release × slow-work hard). 6 s: long enough for lua × slow-work's claim."""
    compare = ["compare", "--locks", "lua,del-release", "--faults", "slow-work",
               "--duration", "6"]  # fmt: skip
    shards = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}"
        out.mkdir()
        argv = _docker_run(out, *compare, "--shard", f"{k}/2", "--out", "/project")
        shards.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True))  # fmt: skip
    try:
        outputs = [shard.communicate(timeout=RUN_TIMEOUT_S)[0] for shard in shards]
    finally:
        for shard in shards:
            shard.kill()  # only if a timeout left it running (--rm removes the container)
    directories = [next((tmp_path / f"shard{k}").iterdir()) for k in (1, 2)]
    for shard, output, directory in zip(shards, outputs, directories, strict=True):
        # del-release × slow-work's shard exits 1 (a hard cell), lua × slow-work's 0
        expected = exit_status(load_matrix(directory / "matrix.json"))
        assert shard.returncode == expected, output[-2000:]
    assert main(["merge", *map(str, directories), "--out", str(tmp_path / "merged")]) == 0
    (merged,) = (tmp_path / "merged").iterdir()
    matrix = load_matrix(merged / "matrix.json")
    plan = [("lua", "slow-work"), ("del-release", "slow-work")]
    assert [(c.lock, c.faults) for c in matrix.cells] == plan
    claims = {(cell.lock, cell.faults): cell for cell in CELLS if not cell.options}
    for entry in matrix.cells:
        (run,) = entry.runs
        verdict = msgspec.json.decode((merged / run.run_dir / "verdict.json").read_bytes(),
                                      type=Verdict)  # fmt: skip
        claim = claims[entry.lock, entry.faults]
        assert claim.check(verdict) is None, (claim.name, claim.check(verdict),
                                              verdict.explanations)  # fmt: skip
        assert entry.claim_held, (entry.name, entry.verdict, entry.why)


@FULL_IMAGES
@pytest.mark.slow  # `make test-long`
@pytest.mark.timeout(1200)
def test_the_full_image_runs_a_java_a_node_and_a_go_driver_with_no_set_up(tmp_path: Path) -> None:
    """`docker run … lockchaos/lockchaos:full run --lock jedis-lua` (and node-redlock,
    redsync): the image's JRE and Node.js start the drivers built into its cache, and each
    of these correct locks, with no fault, is judged ok. The full image is rebuilt from this
    checkout's drivers first when it is out of date."""
    for lock in DRIVER_LOCKS:
        need(driver_gap(lock))  # the image carries the drivers built here
    build_images(["lockchaos-full"], progress=lambda line: None, source=ROOT)
    for lock in DRIVER_LOCKS:
        project = tmp_path / lock
        project.mkdir()
        # 6 s of locking: the run begins once the three clients' drivers are ready (JVMs on
        # two cores busy with the rest of the suite took 4 s and more to start).
        argv = _docker_run(project, "run", "--lock", lock, "--duration", "6", "--ttl-ms",
                           "1000", "--clients", "3", image=FULL_IMAGE)  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        output = done.stdout + done.stderr
        assert done.returncode == 0, (lock, output[-2000:])
        assert "verdict: ok" in output, (lock, output[-2000:])
        (run_dir,) = (project / "reports").iterdir()
        verdict = msgspec.json.decode((run_dir / "verdict.json").read_bytes(), type=Verdict)
        assert verdict.verdict == "ok" and verdict.counts["acquire_ok"] > 0, (lock, verdict)
