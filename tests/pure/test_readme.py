"""The front door: the README leads with what a user does — audit a lock — within 300 words,
and every file the README and docs/ link to exists (the reference moved to docs/)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST_WORDS = 300  # before the first audit example: a few minutes of reading


def test_the_readme_reaches_its_first_audit_example_within_300_words() -> None:
    text = (ROOT / "README.md").read_text()
    blocks = [block for block in re.finditer(r"```[a-z]*\n(.*?)```", text, re.S)
              if "lockchaos audit --lock" in block.group(1)]
    assert blocks, "the README has no audit example"
    words = len(text[:blocks[0].start()].split())
    assert words <= MOST_WORDS, words
    assert "## Two commands" in text  # the contributor's way in, after it


def test_every_file_the_readme_and_the_docs_link_to_exists() -> None:
    missing = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)", page.read_text()):
            if not target.startswith(("http:", "https:", "mailto:")) \
                    and not (page.parent / target).exists():
                missing.append(f"{page.relative_to(ROOT)} → {target}")
    assert not missing, missing
