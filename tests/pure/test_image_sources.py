"""Which upstream tarball a Debian suite's Sources index gives a server (chaos.images.sources):
the series decides (``8.0`` is never an 8.2), the highest release of it wins, a component
tarball is never the upstream one, and every digest is the SHA-256 the archive lists. No
network: the index and the release file are text written here, in the archive's format."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from chaos.images.recipes import RECIPES, ServerRecipe
from chaos.images.sources import (
    LOCAL_REDIS,
    Tarball,
    Upstream,
    _release_sha256,
    _tarball,
    _verified,
)
from chaos.topology.images import DEFAULT_SERVER, SERVERS


def _stanza(package: str, version: str, *files: tuple[str, str, int]) -> str:
    sums = "\n".join(f" {digest} {size} {name}" for name, digest, size in files)
    return (
        f"Package: {package}\nBinary: {package}-server\nVersion: {version}\n"
        f"Package-List: \n {package}-server deb database optional arch=any\n"
        f"Checksums-Sha256:\n{sums}\nDirectory: pool/main/{package[0]}/{package}\n"
    )


INDEX = "\n".join([
    _stanza("redis", "5:8.0.2-3+deb13u3",
            ("redis_8.0.2-3+deb13u3.dsc", "a" * 64, 2271),
            ("redis_8.0.2.orig.tar.gz", "b" * 64, 3860147),
            ("redis_8.0.2-3+deb13u3.debian.tar.xz", "c" * 64, 37428)),
    _stanza("redis", "5:8.0.6-3",
            ("redis_8.0.6.orig-modules.tar.gz", "d" * 64, 100),
            ("redis_8.0.6.orig.tar.gz", "e" * 64, 3873351)),
    _stanza("redis", "5:8.2.1-1", ("redis_8.2.1.orig.tar.gz", "f" * 64, 4000000)),
    _stanza("valkey", "8.1.1+dfsg1-3+deb13u3",
            ("valkey_8.1.1+dfsg1.orig.tar.xz", "1" * 64, 2726128)),
    _stanza("redis-tools-extra", "1.0-1", ("redis-tools-extra_1.0.orig.tar.gz", "2" * 64, 1)),
])  # fmt: skip


def test_the_highest_release_of_the_series_and_its_upstream_tarball() -> None:
    found = _tarball(INDEX, Upstream("redis", "8.0", ("sid",)), "sid")
    assert found == Tarball("sid", "5:8.0.6-3", "redis_8.0.6.orig.tar.gz", "pool/main/r/redis",
                            "e" * 64, 3873351)  # fmt: skip
    assert found.upstream_version == "8.0.6"
    newer = _tarball(INDEX, Upstream("redis", "8.2", ("sid",)), "sid")
    assert newer.filename == "redis_8.2.1.orig.tar.gz"


def test_a_repacked_tarball_keeps_its_suffix_and_matches_its_series() -> None:
    found = _tarball(INDEX, Upstream("valkey", "8.1", ("trixie",)), "trixie")
    assert found.filename == "valkey_8.1.1+dfsg1.orig.tar.xz"
    assert found.upstream_version == "8.1.1+dfsg1"


def test_a_series_the_index_lacks_is_named() -> None:
    with pytest.raises(RuntimeError, match=r"lists no redis 7\.0\.x"):
        _tarball(INDEX, Upstream("redis", "7.0", ("bookworm",)), "bookworm")
    with pytest.raises(RuntimeError, match=r"lists no valkey 9\.1\.x"):
        _tarball(INDEX, Upstream("valkey", "9.1", ("sid",)), "sid")  # its 8.1 is no 9.1


def test_the_sources_index_digest_comes_from_the_release_files_sha256_list() -> None:
    release = (
        "Origin: Debian\nCodename: trixie\nMD5Sum:\n"
        " 0123 1 main/source/Sources.xz\n"
        "SHA256:\n"
        " " + "9" * 64 + " 10538456 main/source/Sources.xz\n"
        " " + "8" * 64 + " 999 main/source/Sources.gz\n"
        "SHA512:\n"
        " " + "7" * 128 + " 10538456 main/source/Sources.xz\n"
    )
    assert _release_sha256(release, "main/source/Sources.xz") == "9" * 64
    with pytest.raises(RuntimeError, match=r"lists no main/source/Sources\.bz2"):
        _release_sha256(release, "main/source/Sources.bz2")


def test_a_tarball_is_verified_by_its_size_and_sha256(tmp_path: Path) -> None:
    path = tmp_path / "redis_8.0.6.orig.tar.gz"
    path.write_bytes(b"upstream")
    digest = hashlib.sha256(b"upstream").hexdigest()
    listed = Tarball("sid", "5:8.0.6-3", path.name, "pool/main/r/redis", digest, 8)
    assert _verified(path, listed)
    path.write_bytes(b"upstreaM")  # same size, another file
    assert not _verified(path, listed)


def test_every_server_image_has_its_series_in_its_name_and_the_local_redis_is_the_default() -> None:
    """``redis-8.0`` is built from an 8.0.x, whatever suite has it; the local provider's Redis
    (setup.sh) and the default server's image come from the same tarball."""
    servers = {name: r for name, r in RECIPES.items() if isinstance(r, ServerRecipe)}
    assert tuple(servers) == SERVERS
    for name, recipe in servers.items():
        assert name == f"{recipe.source.package}-{recipe.source.series}"
        assert recipe.source.suites
    assert servers[DEFAULT_SERVER].source == LOCAL_REDIS
