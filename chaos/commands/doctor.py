"""``lockchaos doctor``: what lockchaos found, where, and which faults and drivers that allows.

Exit 0 when the basics every local run needs (redis-server, redis-sentinel, toxiproxy-server)
are there, 1 when one is missing. The docker provider, the bundled drivers and the driver kits
are only reported, never required: each is listed as possible only when what it needs is
really here (the engine, Compose v2 and lockchaos's images; a finished build; a kit's
toolchain and build), and otherwise with the one command that sets it up (``lockchaos setup
--docker``, ``lockchaos setup --drivers``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import typer

from chaos.drivers.catalog import BUNDLED_DRIVERS
from chaos.drivers.languages import LANGUAGES
from chaos.nemesis import FAULTS
from chaos.report.terminal import print_table, say, terminal
from chaos.topology import binaries
from chaos.topology.base import ABILITIES, CLOCK, PERSISTENCE
from chaos.topology.docker import DockerTopology, compose_images
from chaos.topology.external import ExternalTopology
from chaos.topology.images import SERVERS, image_for, own_image

DOCKER_TIMEOUT_S = 10


def _program(program: str) -> dict[str, Any] | None:
    found = binaries.locate(program)
    if found is None:
        return None
    entry: dict[str, Any] = {
        "path": found.path,
        "source": found.source,
        "version": binaries.version_line(found.path),
    }
    if program.startswith("redis-"):
        entry["malloc"] = binaries.redis_malloc(found.path)
        entry["libc_build"] = binaries.is_libc_build(found.path)
    return entry


def _docker_output(*args: str) -> str | None:
    docker = shutil.which("docker")
    if docker is None:
        return None
    try:
        out = subprocess.run(
            [docker, *args], capture_output=True, text=True, timeout=DOCKER_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def docker_provider() -> dict[str, Any]:
    """The docker provider as a run would find it: the engine, Compose v2 and the images
    (lockchaos's own are never pulled, so the ones its Compose file runs must be here; each
    ``--server``'s is listed too), and ``problem``/``fix``: why it cannot run (None when it
    can) and what sets it up."""
    engine = _docker_output("info", "--format", "{{.ServerVersion}}")
    compose = _docker_output("compose", "version", "--short")
    wanted = [*compose_images().values(), *(image_for(server) for server in SERVERS)]
    images = {
        image: engine is not None and _docker_output("image", "inspect", image) is not None
        for image in dict.fromkeys(wanted)
        if own_image(image)
    }
    absent = [image for image in compose_images().values() if images.get(image) is False]
    problem = fix = None
    if engine is None:
        problem = "no Docker engine answers `docker info`"
        fix = "install Docker and start its engine, then `lockchaos setup --docker`"
    elif compose is None:
        problem = "no Compose v2 (`docker compose version` failed)"
        fix = "install the docker-compose-plugin package (Docker's Compose v2)"
    elif absent:
        problem = f"no image {', '.join(absent)}"
        fix = binaries.setup_hint("--docker")
    return {"engine": engine, "compose": compose, "images": images, "problem": problem,
            "fix": fix}  # fmt: skip


def drivers() -> dict[str, dict[str, Any]]:
    """Each bundled driver's build (jedis, redisson, redsync, node-redlock): its language, the
    locks it runs and where it is built (None: not built, so those locks cannot run)."""
    builds: dict[str, dict[str, Any]] = {}
    for name, bundled in BUNDLED_DRIVERS.items():
        built = bundled.built()
        entry = builds.setdefault(bundled.build, {"language": bundled.language, "locks": [],
                                                  "path": str(built) if built else None})
        entry["locks"].append(name)
    return builds


def kits() -> dict[str, dict[str, Any]]:
    """Each driver kit this lockchaos carries (``chaos/drivers/kits/<lang>/``): the clients
    ``lockchaos driver new`` has a skeleton for, the programs of its toolchain not on PATH,
    and where it is built (None: not built)."""
    found: dict[str, dict[str, Any]] = {}
    for name, language in LANGUAGES.items():
        if not language.source.is_dir():
            continue
        built = language.built()
        found[name] = {
            "skeletons": [c for c in language.clients if language.skeleton(c) is not None],
            "tools_missing": language.missing_tools(),
            "path": str(built) if built else None,
        }
    return found


def _fault_needs(name: str) -> set[str]:
    fault = FAULTS[name]
    needs = set(fault.provider_needs)
    if fault.persistence != "none":
        needs.add(PERSISTENCE)
    return needs


def diagnose() -> dict[str, Any]:
    """Everything ``doctor`` reports, as plain JSON-able data."""
    programs = {program: _program(program) for program in binaries.PROGRAMS}
    missing = [program for program in binaries.BASICS if programs[program] is None]
    clock_problem = binaries.clock_problem()
    docker = docker_provider()
    local_ok = not missing
    docker_ok = docker["problem"] is None
    external_ok = programs["toxiproxy-server"] is not None

    faults: dict[str, dict[str, Any]] = {}
    for name in FAULTS:
        needs = _fault_needs(name)
        providers = []
        if local_ok and (CLOCK not in needs or clock_problem is None):
            providers.append("local")
        if docker_ok and needs <= DockerTopology.capabilities:
            providers.append("docker")
        if external_ok and needs <= ExternalTopology.capabilities:
            providers.append("external")
        why = None
        if "local" not in providers:
            if missing:
                why = f"{', '.join(missing)} not found"
            else:
                why = "needs redis-server built with MALLOC=libc, and libfaketime"
        faults[name] = {
            "providers": providers,
            "needs": sorted(ABILITIES[n] for n in needs),
            "local_unavailable": why,
        }
    return {
        "ok": local_ok,
        "missing": missing,
        "caches": [
            {"source": source, "path": str(path), "exists": path.is_dir()}
            for source, path in binaries.caches()
        ],
        "in_checkout": binaries.IN_CHECKOUT,
        "programs": programs,
        "libfaketime": binaries.locate_libfaketime(),
        "clock_faults": clock_problem is None,
        "clock_problem": clock_problem,
        "docker": docker,
        "drivers": drivers(),
        "kits": kits(),
        "drivers_fix": binaries.setup_hint("--drivers"),
        "faults": faults,
        "fix": None if local_ok and clock_problem is None else binaries.setup_hint(),
    }


def doctor(json_output: bool = typer.Option(False, "--json", help="print JSON only")) -> None:
    """Show which programs lockchaos found, where, and which faults they allow; exit 0 when
    the basics (redis-server, redis-sentinel, toxiproxy-server) are there, else 1."""
    report = diagnose()
    if json_output:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    raise typer.Exit(0 if report["ok"] else 1)


def print_report(report: dict[str, Any]) -> None:
    console = terminal()
    searched = ", ".join(
        f"{c['path']} ({c['source']}{'' if c['exists'] else ', empty'})" for c in report["caches"]
    )
    say(console, f"caches searched: {searched}, then PATH")
    programs = []
    for program, entry in report["programs"].items():
        if entry is None:
            programs.append(_row(program, "[red]missing[/red]"))
            continue
        version = entry["version"]
        if program.startswith("redis-"):
            build = "MALLOC=libc" if entry["libc_build"] else f"malloc={entry['malloc']}"
            version = f"{version.split(' sha=')[0]} ({build})"
        programs.append(_row(program, entry["path"], entry["source"], version))
    programs.append(_row("libfaketime", report["libfaketime"] or "[red]missing[/red]"))
    docker = report["docker"]
    provider = "(docker provider)"
    programs.append(_row("docker engine", docker["engine"] or "not answering", "", provider))
    programs.append(_row("docker compose", docker["compose"] or "not found", "", provider))
    for image, here in docker["images"].items():
        programs.append(_row(image, "present" if here else "[red]missing[/red]", "", provider))
    print_table(console, "programs", {"program": "program", "found at": "at", "from": "from",
                                      "version": "version"}, programs)
    print_table(console, "bundled drivers (--lock)",
                {"driver": "driver", "locks": "locks", "built at": "at"},
                [{"driver": f"{name} ({entry['language']})", "locks": ", ".join(entry["locks"]),
                  "at": entry["path"] or "[red]not built[/red]"}
                 for name, entry in report["drivers"].items()])
    print_table(console, "driver kits (lockchaos driver new --lang)",
                {"kit": "kit", "skeletons (--client)": "skeletons", "built at": "at"},
                [{"kit": name, "skeletons": ", ".join(entry["skeletons"]) or "none",
                  "at": entry["path"] or (
                      f"[red]no {', '.join(entry['tools_missing'])}[/red]"
                      if entry["tools_missing"] else "[red]not built[/red]")}
                 for name, entry in report["kits"].items()])
    reasons = any(entry["local_unavailable"] for entry in report["faults"].values())
    print_table(console, "faults possible here (--provider)",
                {"fault": "fault", "providers": "providers",
                 **({"why not local": "why"} if reasons else {})},
                [{"fault": name, "providers": ", ".join(entry["providers"]) or "none",
                  "why": entry["local_unavailable"] or ""}
                 for name, entry in report["faults"].items()])
    if report["missing"]:
        say(console, f"missing: {', '.join(report['missing'])}: {report['fix']}")
    elif not report["clock_faults"]:
        clock = sorted(n for n, e in report["faults"].items() if "local" not in e["providers"])
        say(
            console,
            f"every run works except {', '.join(clock)}: {report['clock_problem']} — "
            f"{report['fix']} for the MALLOC=libc build",
        )
    else:
        say(console, "ready: every fault can run on the local provider")
    if docker["problem"]:
        say(console, f"docker provider: not usable: {docker['problem']}: {docker['fix']}")
    unbuilt = [name for name, entry in report["drivers"].items() if entry["path"] is None]
    unbuilt += [f"the {name} kit" for name, entry in report["kits"].items()
                if entry["path"] is None and not entry["tools_missing"]]
    if unbuilt:
        say(console, f"drivers not built: {', '.join(unbuilt)}: {report['drivers_fix']}")


def _row(program: str, at: str, source: str = "", version: str = "") -> dict[str, str]:
    return {"program": program, "at": at, "from": source, "version": version}
