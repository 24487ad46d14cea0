"""What a docker test looks at to say that nothing of a run is left: the engine's containers,
networks and volumes by the labels lockchaos and Compose put on them."""

from __future__ import annotations

import subprocess

from chaos.topology.docker import project_name

PROJECT_LABEL = "com.docker.compose.project"  # on every container, network and volume


def docker_ids(kind: str, label: str) -> list[str]:
    """Ids of the containers (``kind="ps -a"``) or networks (``"network ls"``) with ``label``."""
    done = subprocess.run(
        ["docker", *kind.split(), "-q", "--filter", f"label={label}"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return done.stdout.split()


def label_values(kind: str, label: str) -> list[str]:
    """``label``'s value on each container (``kind="ps -a"``, ``"ps"``: running ones),
    network (``"network ls"``) or volume (``"volume ls"``) that carries it."""
    done = subprocess.run(
        ["docker", *kind.split(), "--filter", f"label={label}",
         "--format", f'{{{{.Label "{label}"}}}}'],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return done.stdout.split()


def left_by(pid: int) -> list[str]:
    """Whatever is left of the runs process ``pid`` started (a run's project is named after
    its run id, which starts with its runner's pid): ``kind: project``, one per object."""
    mine = project_name(f"{pid}-")
    return [
        f"{kind}: {project}"
        for kind in ("ps -a", "network ls", "volume ls")
        for project in label_values(kind, PROJECT_LABEL)
        if project.startswith(mine)
    ]
