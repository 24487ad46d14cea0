"""lockchaos's own container images, as a run names them (docs/images.md).

Where no container registry is reachable, the docker provider runs these instead of the
official ``redis``/``valkey``/Toxiproxy images, under lockchaos's own names (``lockchaos/…``:
never an official image's name). This module is what the runtime needs of them: each one's
name (what ``--server`` and the builder call it), image tag and kind, the labels every one
carries, the clock file its servers read, and whether one is here. Building them is a tool's
job: ``chaos.images`` (``python -m chaos.images build``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chaos.errors import UsageError

LABEL = "org.lockchaos.image"  # =1 on every one of lockchaos's images
NAME_LABEL = "org.lockchaos.name"  # its name below
RECIPE_LABEL = "org.lockchaos.recipe"  # the hash of the recipe it was built from
VERSION_LABEL = "org.lockchaos.version"  # the version of what it runs
# The server images preload libfaketime: the wall clock is true time plus the offset in this
# file ("+0" at first; rewritten to jump the clock). The monotonic clock is never faked.
FAKETIME_FILE = "/var/lib/lockchaos/faketime"
TOXIPROXY_VERSION = "2.12.0"


@dataclass(frozen=True)
class OwnImage:
    name: str  # "redis-7.0": what --server and the builder call it
    image: str  # "lockchaos/redis:7.0"
    kind: str  # "server", "toxiproxy", "python", "demo", "lockchaos" or "lockchaos-full"


IMAGES: dict[str, OwnImage] = {
    own.name: own
    for own in (
        OwnImage("redis-7.0", "lockchaos/redis:7.0", "server"),
        OwnImage("redis-8.0", "lockchaos/redis:8.0", "server"),
        OwnImage("valkey-8.1", "lockchaos/valkey:8.1", "server"),
        OwnImage("valkey-9.1", "lockchaos/valkey:9.1", "server"),
        OwnImage("toxiproxy", f"lockchaos/toxiproxy:{TOXIPROXY_VERSION}", "toxiproxy"),
        OwnImage("python", "lockchaos/python:3.11", "python"),
        OwnImage("demo", "lockchaos-demo", "demo"),  # seed 001's Compose demo (compose/)
        OwnImage("lockchaos", "lockchaos/lockchaos", "lockchaos"),  # for CI and Kubernetes
        # the same with the bundled drivers and their runtimes (JRE, Node.js)
        OwnImage("lockchaos-full", "lockchaos/lockchaos:full", "lockchaos-full"),
    )
}
SERVERS = tuple(name for name, own in IMAGES.items() if own.kind == "server")
DEFAULT_SERVER = "redis-7.0"  # also what the local provider runs (its own Redis 7.0 build)


def image_for(name: str) -> str:
    """The image of a server (``redis-7.0``…), of ``toxiproxy``, ``python``, ``demo``,
    ``lockchaos`` or ``lockchaos-full``."""
    try:
        return IMAGES[name].image
    except KeyError:
        raise UsageError(
            f"no lockchaos image named {name!r}: choose from {', '.join(IMAGES)}"
        ) from None


def server_images() -> dict[str, str]:
    """Server name → lockchaos image name (``redis-7.0`` → ``lockchaos/redis:7.0``…)."""
    return {name: IMAGES[name].image for name in SERVERS}


def own_image(image: str) -> bool:
    """One of lockchaos's own images (never pulled: built by ``python -m chaos.images``)."""
    return image in {own.image for own in IMAGES.values()}


def labels(client: Any, image: str) -> dict[str, str] | None:
    """The labels of ``image`` on the engine ``client`` talks to; None when it is not there."""
    import docker  # the SDK takes 0.2 s to import: only a docker run pays it

    try:
        found = client.images.get(image)
    except docker.errors.ImageNotFound:
        return None
    found_labels: dict[str, str] = found.labels or {}
    return found_labels
