"""A server's upstream source, as Debian's archive lists it: the ``.orig`` tarball of a suite's
source package, verified, unpacked. Both the server images (``chaos.images.build``) and the
local provider's Redis (``chaos/commands/setup.sh``) are built from it with ``make
MALLOC=libc``: lockchaos needs none of Debian's patches, and a point release's ``.dsc`` and
``.debian.tar.xz`` may be gone from a mirror (trixie's redis 8.0.2 and valkey 8.1.1 answered
404) while the upstream tarball, shared by every Debian revision of that version, is there.

Trust comes down from the archive's signature: the suite's ``InRelease`` is checked with
``gpgv`` against the Debian archive keyring, the ``Sources.xz`` index against its SHA-256 there,
the tarball against its SHA-256 and size in the index.

Fallback order, for an ``Upstream``'s suites in turn (the first is preferred: ``sid`` before
``trixie`` gives the newest release of the series): the suite's index must list the package
at a version of the series, then the tarball comes from the download cache (a verified copy
kept from an earlier build), else from each mirror in turn (``mirrors()``: the one apt here
uses, then deb.debian.org). The first suite that yields a verified tarball wins; if none does,
one line names what each one lacked.

Standard library only: ``setup.sh`` runs it (``python3 -m chaos.images.sources DEST CACHE``)
before lockchaos's dependencies are installed.
"""

from __future__ import annotations

import functools
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from chaos.errors import UsageError
from chaos.images.debian import DEFAULT_MIRROR, debian_mirror

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
FETCH_TIMEOUT_S = 120
UNPACK_TIMEOUT_S = 300
# The upstream tarball: NAME_VERSION.orig.tar.EXT (not a component's .orig-NAME.tar.EXT).
ORIG = re.compile(r"[^_]+_[^_]+\.orig\.tar\.\w+")


@dataclass(frozen=True)
class Upstream:
    """A server's source: Debian source ``package`` at a version of ``series`` ("8.0": any
    8.0.x), from the first of ``suites`` that has it."""

    package: str
    series: str
    suites: tuple[str, ...]


# The local provider's Redis (chaos/commands/setup.sh builds it), also the redis-7.0 image's.
LOCAL_REDIS = Upstream("redis", "7.0", ("bookworm",))


@dataclass(frozen=True)
class Tarball:
    """One upstream tarball as a suite's Sources index lists it."""

    suite: str
    version: str  # Debian's: "5:8.0.2-3+deb13u3"
    filename: str  # "redis_8.0.2.orig.tar.gz"
    directory: str  # "pool/main/r/redis"
    sha256: str
    size: int

    @property
    def upstream_version(self) -> str:
        """The upstream part of the Debian version ("5:8.0.2-3+deb13u3" → "8.0.2")."""
        epochless = self.version.partition(":")[2] if ":" in self.version else self.version
        return epochless.rpartition("-")[0] or epochless


def mirrors() -> list[str]:
    """The mirrors tried, in order: apt's Debian mirror (or LOCKCHAOS_DEBIAN_MIRROR), then
    deb.debian.org."""
    return list(dict.fromkeys([debian_mirror(), DEFAULT_MIRROR]))


def fetch(upstream: Upstream, cache: Path, progress: Callable[[str], None] = print) -> Path:
    """The verified upstream tarball of ``upstream`` (see the module's fallback order), kept
    in ``cache``; ``RuntimeError`` naming what each suite lacked when none has it."""
    cache.mkdir(parents=True, exist_ok=True)
    lacked = []
    for suite in upstream.suites:
        try:
            tarball = listed(upstream, suite)
        except RuntimeError as exc:
            lacked.append(f"{suite}: {exc}")
            continue
        path = cache / tarball.filename
        if path.is_file() and _verified(path, tarball):
            progress(f"{tarball.filename} ({suite} {tarball.version}): cached")
            return path
        for mirror in mirrors():
            url = f"{mirror}/{tarball.directory}/{tarball.filename}"
            try:
                _download(url, path)
            except RuntimeError as exc:
                lacked.append(f"{suite}: {exc}")
                continue
            if _verified(path, tarball):
                progress(f"{tarball.filename} ({suite} {tarball.version}): from {mirror}")
                return path
            path.unlink()
            lacked.append(f"{suite}: {url} does not match the index's SHA-256 and size")
    raise RuntimeError(
        f"no verified upstream source of {upstream.package} {upstream.series}.x: "
        + "; ".join(lacked)
    )


def listed(upstream: Upstream, suite: str) -> Tarball:
    """The upstream tarball the suite's verified Sources index names for ``upstream``'s
    package; ``RuntimeError`` when the index has none of the series."""
    found = None
    for mirror in mirrors():
        try:
            index = _sources_index(mirror, suite)
        except RuntimeError as exc:
            found = exc
            continue
        return _tarball(index, upstream, suite)
    raise RuntimeError(str(found))


def unpack(tarball: Path, dest: Path) -> Path:
    """Unpack ``tarball`` into ``dest`` (emptied first), without its top directory."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    done = subprocess.run(
        ["tar", "-xf", str(tarball), "-C", str(dest), "--strip-components=1", "--no-same-owner"],
        capture_output=True, text=True, timeout=UNPACK_TIMEOUT_S,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"tar -xf {tarball.name} failed: {done.stderr.strip()[-300:]}")
    return dest


@functools.cache  # one download a build, however many servers come from the suite
def _sources_index(mirror: str, suite: str) -> str:
    """``main/source/Sources.xz`` of ``suite``, checked against its signed InRelease."""
    if shutil.which("gpgv") is None or not os.path.isfile(KEYRING):
        raise UsageError(
            f"checking the Debian archive's signature needs gpgv and {KEYRING}: "
            "apt-get install gpgv debian-archive-keyring"
        )
    with tempfile.TemporaryDirectory(prefix="lockchaos-sources-") as tmp:
        release = Path(tmp) / "InRelease"
        _download(f"{mirror}/dists/{suite}/InRelease", release)
        checked = subprocess.run(
            ["gpgv", "--keyring", KEYRING, str(release)],
            capture_output=True, text=True, timeout=FETCH_TIMEOUT_S,
        )  # fmt: skip
        if checked.returncode != 0:
            raise RuntimeError(f"{mirror}/dists/{suite}/InRelease: bad signature")
        expected = _release_sha256(release.read_text(errors="replace"), "main/source/Sources.xz")
        compressed = Path(tmp) / "Sources.xz"
        _download(f"{mirror}/dists/{suite}/main/source/Sources.xz", compressed)
        if file_sha256(compressed) != expected:
            raise RuntimeError(f"{mirror}/dists/{suite}: Sources.xz does not match InRelease")
        return lzma.decompress(compressed.read_bytes()).decode("utf-8", errors="replace")


def _release_sha256(release: str, name: str) -> str:
    section = release.partition("\nSHA256:\n")[2]
    for line in section.splitlines():
        if not line.startswith(" "):
            break
        digest, _, listed_name = line.split()
        if listed_name == name:
            return digest
    raise RuntimeError(f"InRelease lists no {name}")


def _tarball(index: str, upstream: Upstream, suite: str) -> Tarball:
    """The highest version of ``upstream.package`` in the series, of the index's stanzas."""
    candidates = []
    for stanza in index.split("\n\n"):
        if not stanza.startswith(f"Package: {upstream.package}\n"):
            continue
        fields = _fields(stanza)
        files = [line.split() for line in fields.get("checksums-sha256", "").splitlines()]
        origs = [f for f in files if len(f) == 3 and ORIG.fullmatch(f[2])]
        if not origs:
            continue
        digest, size, filename = origs[0]
        tarball = Tarball(suite, fields["version"], filename, fields["directory"], digest,
                          int(size))  # fmt: skip
        if re.match(rf"{re.escape(upstream.series)}\.\d", tarball.upstream_version):
            candidates.append(tarball)
    if not candidates:
        raise RuntimeError(f"its Sources index lists no {upstream.package} {upstream.series}.x")
    return max(candidates, key=lambda t: [int(n) for n in re.findall(r"\d+", t.upstream_version)])


def _fields(stanza: str) -> dict[str, str]:
    """A deb822 stanza's fields (lower-case names; continuation lines joined by newlines)."""
    fields: dict[str, str] = {}
    name = ""
    for line in stanza.splitlines():
        if line[:1].isspace() and name:
            fields[name] += "\n" + line.strip()
        elif ":" in line:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            fields[name] = value.strip()
    return fields


def _download(url: str, dest: Path) -> None:
    partial = dest.with_name(dest.name + ".part")
    try:
        with (
            urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S) as reply,
            partial.open("wb") as out,
        ):
            shutil.copyfileobj(reply, out)
    except (urllib.error.URLError, OSError) as exc:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"{url}: {getattr(exc, 'code', None) or exc}") from None
    partial.replace(dest)


def _verified(path: Path, tarball: Tarball) -> bool:
    return path.stat().st_size == tarball.size and file_sha256(path) == tarball.sha256


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, read a megabyte at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv: list[str]) -> int:
    """``python3 -m chaos.images.sources DEST CACHE``: the local provider's Redis
    (``LOCAL_REDIS``) unpacked into DEST, its tarball kept in CACHE (``setup.sh``)."""
    if len(argv) != 2:
        print("usage: python3 -m chaos.images.sources DEST CACHE", file=sys.stderr)
        return 2
    try:
        tarball = fetch(LOCAL_REDIS, Path(argv[1]), lambda line: print(f"[setup] {line}"))
        unpack(tarball, Path(argv[0]))
    except (UsageError, RuntimeError) as exc:
        print(f"setup: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
