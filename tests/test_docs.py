"""Links between the README and docs/ lead somewhere: the file exists and, for `#anchor`
links, one of its headings has that anchor (GitHub's rule: lower case, punctuation dropped,
spaces to hyphens)."""
import re
from pathlib import Path
from typing import Iterator, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def heading_anchor(heading: str) -> str:
    text = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> Set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf8"), flags=re.S)
    return {heading_anchor(line) for line in text.splitlines() if line.startswith("#")}


def local_links(page: Path) -> Iterator[Tuple[str, Path, str]]:
    for target in LINK.findall(page.read_text(encoding="utf8")):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        yield target, (page.parent / file).resolve() if file else page, anchor


def test_heading_anchor_follows_github():
    assert heading_anchor("### int8 on ONNX Runtime (`precision = \"int8\"`, on request)") == \
        "int8-on-onnx-runtime-precision--int8-on-request"
    assert heading_anchor("## Link memory: the training set's own links (`link_memory`)") == \
        "link-memory-the-training-sets-own-links-link_memory"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_local_links_resolve(page):
    broken = [target for target, file, anchor in local_links(page)
              if not file.exists() or (anchor and file.suffix == ".md" and anchor not in anchors(file))]
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_docs_are_linked_from_the_readme():
    linked = {file for _, file, _ in local_links(ROOT / "README.md")}
    assert set(PAGES[1:]) <= linked
