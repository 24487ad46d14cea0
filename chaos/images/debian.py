"""The Debian mirror the images and their sources come from: the one apt here uses."""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

DEFAULT_MIRROR = "http://deb.debian.org/debian"


def debian_mirror() -> str:
    """The Debian mirror apt is configured with (``LOCKCHAOS_DEBIAN_MIRROR`` overrides;
    ``DEFAULT_MIRROR`` where apt names none, e.g. on Ubuntu)."""
    override = os.environ.get("LOCKCHAOS_DEBIAN_MIRROR")
    if override:
        return override.rstrip("/")
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        for stanza in Path(path).read_text(errors="replace").split("\n\n"):
            fields = _deb822(stanza)
            if "deb" in fields.get("types", "").split() and _is_debian_main(
                fields.get("uris", ""), fields.get("suites", "")
            ):
                return fields["uris"].split()[0].rstrip("/")
    lists = ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list"))]
    for path in lists:
        if not os.path.exists(path):
            continue
        for line in Path(path).read_text(errors="replace").splitlines():
            words = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
            if len(words) >= 3 and words[0] == "deb" and _is_debian_main(words[1], words[2]):
                return words[1].rstrip("/")
    return DEFAULT_MIRROR


def _deb822(stanza: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in stanza.splitlines():
        if line.startswith("#") or ":" not in line or line[:1].isspace():
            continue
        key, _, value = line.partition(":")
        fields[key.strip().lower()] = value.strip()
    return fields


def _is_debian_main(uri: str, suites: str) -> bool:
    """A Debian archive (not -security, not a third-party repository) of a plain suite."""
    return (
        "security" not in uri
        and "/debian" in uri
        and any(suite.isalpha() for suite in suites.split())
    )
