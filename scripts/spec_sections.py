"""Write app/course/spec_sections.json: every section of every published MCP revision.

Run by hand when the specification changes (never at test time; the tests read the committed file):

    python scripts/spec_sections.py /path/to/modelcontextprotocol.git <commit> [> out.json]

The first argument is a git directory of github.com/modelcontextprotocol/modelcontextprotocol (a
bare clone is enough), the second the commit to read. For each dated revision folder under
docs/specification/ (the moving `draft` is left out) it reads every .mdx page's front-matter title
and headings, and records each heading's anchor as the spec site makes it: the heading's text
without Markdown, lower-case, every character but letters, digits, spaces, dashes and slashes
dropped, spaces turned into dashes; a repeated anchor on one page gets -1, -2, ... (checked against
the spec's own links, e.g. "`_meta`" -> meta, "`$ref` Resolution" -> ref-resolution,
"Server Requirements (Basic Workflow)" -> server-requirements-basic-workflow).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

SPEC_ROOT = "docs/specification"
REVISION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^ {0,3}(```+|~~~+)")
LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
TAG = re.compile(r"<[^>]+>")
DROPPED = re.compile(r"[^a-z0-9 /-]")
OUT = Path(__file__).resolve().parent.parent / "app" / "course" / "spec_sections.json"


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True
    ).stdout


def heading_text(raw: str) -> str:
    """A heading as it reads: links to their text, no tags, no emphasis or code marks."""
    text = TAG.sub("", LINK.sub(r"\1", raw))
    return text.replace("`", "").replace("**", "").strip()


def anchor(text: str) -> str:
    return DROPPED.sub("", text.lower()).replace(" ", "-")


def page_sections(source: str) -> tuple[str, dict[str, str]]:
    """The page's title (front matter) and its headings as {anchor: heading text}, in page order."""
    lines = source.splitlines()
    title = ""
    start = 0
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), 0)
        for line in lines[1:end]:
            if line.startswith("title:"):
                title = line.split(":", 1)[1].strip().strip("\"'")
        start = end + 1
    sections: dict[str, str] = {}
    seen: dict[str, int] = {}
    fence: str | None = None
    for line in lines[start:]:
        opening = FENCE.match(line)
        if opening:
            mark = opening.group(1)
            if fence is None:
                fence = mark[0] * 3
            elif mark.startswith(fence):
                fence = None
            continue
        match = HEADING.match(line) if fence is None else None
        if not match:
            continue
        text = heading_text(match.group(2))
        slug = anchor(text)
        if slug in seen:
            seen[slug] += 1
            slug = f"{slug}-{seen[slug]}"
        else:
            seen[slug] = 0
        sections[slug] = text
    return title, sections


def page_name(path: str) -> str:
    """docs/specification/<rev>/basic/index.mdx -> basic; the revision's own index.mdx -> index."""
    name = path.split("/", 3)[3].removesuffix(".mdx")
    return name.removesuffix("/index") if name != "index" else name


def build(git_dir: str, commit: str) -> dict[str, object]:
    commit = git(git_dir, "rev-parse", f"{commit}^{{commit}}").strip()
    files = git(git_dir, "ls-tree", "-r", "--name-only", commit, SPEC_ROOT).split()
    revisions: dict[str, dict[str, object]] = {}
    for path in sorted(files):
        parts = path.split("/")
        if len(parts) < 4 or not REVISION.match(parts[2]) or not path.endswith(".mdx"):
            continue
        title, sections = page_sections(git(git_dir, "show", f"{commit}:{path}"))
        pages = revisions.setdefault(parts[2], {})
        pages[page_name(path)] = {"title": title, "sections": sections}
    return {
        "source": "https://github.com/modelcontextprotocol/modelcontextprotocol",
        "commit": commit,
        "generated_by": "scripts/spec_sections.py",
        "revisions": dict(sorted(revisions.items())),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    table = build(argv[1], argv[2])
    OUT.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    count = sum(len(p) for p in table["revisions"].values())  # type: ignore[attr-defined]
    print(f"wrote {OUT} from {table['commit']}: {count} pages", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
