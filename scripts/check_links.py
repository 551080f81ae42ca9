#!/usr/bin/env python3
"""Checks that every relative link in README.md and docs/**/*.md resolves: the file (or
directory) it names exists, and its `#anchor` is a heading of the Markdown file it points to
(GitHub's slugs: lowercase, spaces to `-`, punctuation other than `-` and `_` dropped, a repeated
heading gets `-1`, `-2` …). Links to other sites (`http:`, `https:`, `mailto:`) are not checked.

Usage: scripts/check_links.py [ROOT]   (default: the repository holding this script)

It first checks itself on a temporary tree holding one good and several broken links, and fails
if it would miss one. Exit status 1 when a link is broken (each one is printed), else 0.
"""
from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text: links become their text, markup and punctuation
    other than `-` and `_` go (so `<name>` in a code span leaves `name`), the rest is lowercased
    and each space becomes `-`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def prose_lines(text: str):
    """(line number, line) outside fenced code blocks."""
    fenced = None
    for number, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if fenced is None:
                fenced = m.group(1)
            elif m.group(1) == fenced:
                fenced = None
            continue
        if fenced is None:
            yield number, line


def anchors(path: Path, cache: dict) -> set[str]:
    if path not in cache:
        seen: dict[str, int] = {}
        found = set()
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def links(text: str):
    """(line number, target) of every inline link, image and reference definition outside code."""
    for number, line in prose_lines(text):
        m = REFDEF.match(line)
        if m:
            yield number, m.group(1)
            continue
        bare = CODE_SPAN.sub(lambda c: " " * len(c.group(0)), line)
        for m in LINK.finditer(bare):
            yield number, m.group(1)


def check(root: Path) -> list[str]:
    """Every broken link under root, as `file:line: target: why`."""
    files = [root / "README.md"] if (root / "README.md").exists() else []
    files += sorted((root / "docs").rglob("*.md")) if (root / "docs").is_dir() else []
    cache: dict = {}
    broken = []
    for file in files:
        for number, target in links(file.read_text(encoding="utf-8")):
            if EXTERNAL.match(target):
                continue
            where = f"{file.relative_to(root)}:{number}: {target}"
            path_part, _, anchor = target.partition("#")
            dest = (file.parent / path_part).resolve() if path_part else file
            if not dest.exists():
                broken.append(f"{where}: no such file")
                continue
            if not anchor:
                continue
            if dest.is_dir() or dest.suffix.lower() != ".md":
                broken.append(f"{where}: an anchor into a file that is not Markdown")
            elif anchor not in anchors(dest, cache):
                broken.append(f"{where}: no heading #{anchor} in {dest.name}")
    return broken


def self_test() -> None:
    """The checker must pass good links and report each broken one: otherwise it is no check."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "docs" / "guide").mkdir(parents=True)
        (root / "docs" / "guide" / "a.md").write_text(
            "# Page A\n\n## Images (`images`, `image_tokens`)\n\n## Step\n\n## Step\n\n"
            "### Many servers (`[servers.<name>]`)\n\n"
            "```\n# not a heading\n```\n", encoding="utf-8")
        (root / "README.md").write_text(
            "# Top\n\n## Client profiles (`--client`)\n\n"
            "[ok](docs/guide/a.md) [ok](docs/guide/a.md#images-images-image_tokens)\n"
            "[ok](#client-profiles---client) [ok](docs/guide/a.md#step-1) [ok](docs/)\n"
            "[ok](docs/guide/a.md#many-servers-serversname)\n"
            "[ok](https://example.com/missing) `[not a link](nowhere.md)`\n"
            "[broken file](docs/guide/missing.md)\n"
            "[broken anchor](docs/guide/a.md#no-such-heading)\n"
            "[broken self](#top-1)\n"
            "[fenced heading](docs/guide/a.md#not-a-heading)\n"
            "[ref]: docs/gone.md\n", encoding="utf-8")
        got = [b.split(": ", 1)[1].split(":", 1)[0] for b in check(root)]
        want = ["docs/guide/missing.md", "docs/guide/a.md#no-such-heading", "#top-1",
                "docs/guide/a.md#not-a-heading", "docs/gone.md"]
        if got != want:
            sys.exit(f"check_links.py self-test failed: reported {got}, expected {want}")


def main() -> int:
    self_test()
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    broken = check(root.resolve())
    for line in broken:
        print(f"broken link: {line}", file=sys.stderr)
    if broken:
        print(f"check_links.py: {len(broken)} broken link(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
