"""The Docker engine, as the docker provider and the image builder (``chaos.images``) reach it:
a Docker SDK client, or one line saying why there is none."""

from __future__ import annotations

from typing import Any

from chaos.errors import UsageError


def engine(
    timeout_s: float = 30,
    *,
    needed_by: str = "the docker provider",
    fix: str = "start one (`docker info` must work), or use --provider local",
) -> Any:
    """A Docker SDK client to a running engine; ``UsageError`` when there is none, in one
    line: ``needed_by`` needs one (why not), ``fix``."""
    import docker  # here, not at the top: the SDK takes 0.2 s to import, and only this needs it

    try:
        client = docker.from_env(timeout=timeout_s)
        client.ping()
    except docker.errors.DockerException as exc:
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise UsageError(f"{needed_by} needs a running Docker engine ({reason}): {fix}") from None
    return client
