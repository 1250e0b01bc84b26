"""Docs that cannot rot: code in docs/ is quoted from the tree through markers.

In the source, a quoted region sits between `DOC START: <topic>` and `DOC END: <topic>`
comment lines (`//` or `#`), never nested. In a doc, a quote is the line
`<!-- quote: <path>#<topic> -->` followed by a fenced code block holding the region.

    python scripts/doc_quotes.py          # rewrite every quoted block from the tree
    python scripts/doc_quotes.py --check  # fail if any quote is stale or its marker broken
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUOTE = re.compile(r"<!-- quote: (?P<path>[^#\s]+)#(?P<topic>[\w.-]+) -->\n```(?P<lang>\w*)\n(?P<body>.*?)```",
                   re.DOTALL)
# Any quote marker, to find those that no fenced block follows (QUOTE would skip them).
QUOTE_MARKER = re.compile(r"<!-- quote: [^>]*-->")
MARKER = re.compile(r"^\s*(?://|#) DOC (?P<kind>START|END): (?P<topic>[\w.-]+)\s*$")
LANGUAGES = {".cpp": "cpp", ".h": "cpp", ".py": "python", ".c": "c"}


class MarkerError(Exception):
    pass


def regions(path: Path) -> dict[str, str]:
    """Every marked region of a source file, by topic; raises on broken markers."""
    found: dict[str, str] = {}
    open_topic, start = None, 0
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines):
        match = MARKER.match(line)
        if not match:
            continue
        kind, topic = match["kind"], match["topic"]
        if kind == "START":
            if open_topic is not None:
                raise MarkerError(f"{path}:{number + 1}: '{topic}' starts inside '{open_topic}'")
            if topic in found:
                raise MarkerError(f"{path}:{number + 1}: marker '{topic}' appears twice")
            open_topic, start = topic, number + 1
        else:
            if topic != open_topic:
                raise MarkerError(f"{path}:{number + 1}: END '{topic}' does not close '{open_topic}'")
            found[topic] = textwrap.dedent("\n".join(lines[start:number])) + "\n"
            open_topic = None
    if open_topic is not None:
        raise MarkerError(f"{path}: marker '{open_topic}' is never closed")
    return found


def quoted(doc: Path) -> list[re.Match]:
    return list(QUOTE.finditer(doc.read_text()))


def render(match: re.Match) -> str:
    source = ROOT / match["path"]
    if not source.exists():
        raise MarkerError(f"quoted file {match['path']} does not exist")
    topics = regions(source)
    if match["topic"] not in topics:
        raise MarkerError(f"{match['path']} has no marker '{match['topic']}'")
    language = match["lang"] or LANGUAGES.get(source.suffix, "")
    return (f"<!-- quote: {match['path']}#{match['topic']} -->\n```{language}\n"
            f"{topics[match['topic']]}```")


def problems() -> list[str]:
    """Every stale quote or broken marker in docs/."""
    found = []
    for doc in sorted((ROOT / "docs").rglob("*.md")):
        text = doc.read_text()
        if len(QUOTE_MARKER.findall(text)) != len(QUOTE.findall(text)):
            found.append(f"{doc.relative_to(ROOT)}: a quote marker is not followed by a fenced "
                         "code block (write an empty one: ```lang, then ```)")
        for match in quoted(doc):
            try:
                if render(match) != match.group(0):
                    found.append(f"{doc.relative_to(ROOT)}: quote of {match['path']}#{match['topic']}"
                                 " is out of date (run scripts/doc_quotes.py)")
            except MarkerError as error:
                found.append(f"{doc.relative_to(ROOT)}: {error}")
    return found


def update() -> None:
    for doc in sorted((ROOT / "docs").rglob("*.md")):
        text = doc.read_text()
        new = QUOTE.sub(render, text)
        if new != text:
            doc.write_text(new)
            print(f"updated {doc.relative_to(ROOT)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        found = problems()
        print("\n".join(found) or "docs quotes are up to date")
        sys.exit(1 if found else 0)
    update()


if __name__ == "__main__":
    main()
