"""Links between the README, docs/ and bench/ lead somewhere: the file exists and, for `#anchor`
links, one of its headings has that anchor (GitHub's rule: lower case, punctuation dropped,
spaces to hyphens). The API pages list every setting of their component with its default, and
the README's results tables quote the files they name."""
import dataclasses
import json
import re
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest
from spacy.language import Language

from spacy_arbo.pipeline.arbo_linker import LinkerSettings
from spacy_arbo.pipeline.kb_mention_finder import make_kb_mention_finder  # noqa: F401  (registers the factory)
from spacy_arbo.pipeline.link_confidence import make_link_confidence  # noqa: F401  (registers the factory)
from spacy_arbo.pipeline.link_memory import make_link_memory  # noqa: F401  (registers the factory)
from spacy_arbo.pipeline.mention_consistency import make_mention_consistency  # noqa: F401  (registers the factory)
from spacy_arbo.reranker.component import RerankerSettings

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").rglob("*.md"))
PAGES = [ROOT / "README.md", *DOCS, *sorted((ROOT / "bench").rglob("README.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
API = ROOT / "docs" / "api"


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


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_local_links_resolve(page):
    broken = [target for target, file, anchor in local_links(page)
              if not file.exists() or (anchor and file.suffix == ".md" and anchor not in anchors(file))]
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_docs_are_linked_from_the_readme():
    linked = {file for _, file, _ in local_links(ROOT / "README.md")}
    assert set(DOCS) <= linked


# API pages ------------------------------------------------------------------------------

def table_rows(section: str) -> Dict[str, List[str]]:
    """The first-column name of each row of the tables in `section` -> its other cells."""
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) > 1 and re.fullmatch(r"`\w+`", cells[0]):
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def documented_settings(page: Path) -> Dict[str, List[str]]:
    """The rows of the page's `## Settings` section: setting -> [type, default, what it does]."""
    text = page.read_text(encoding="utf8")
    section = text.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    return table_rows(section)


def test_table_rows_reads_names_and_escaped_pipes():
    rows = table_rows("| setting | type |\n|---|---|\n| `composites` | str | `\"best\"` | `ID1\\|ID2` |\n")
    assert rows == {"composites": ["str", '`"best"`', "`ID1\\|ID2`"]}


@pytest.mark.parametrize("page, factory, names", [
    ("arbo_linker.md", "arbo_linker", [f.name for f in dataclasses.fields(LinkerSettings)]),
    ("multi_cross_reranker.md", "multi_cross_reranker", [f.name for f in dataclasses.fields(RerankerSettings)]),
    ("link_memory.md", "link_memory", ["min_count", "min_share", "fold_plurals"]),
    ("kb_mention_finder.md", "kb_mention_finder", ["label", "mode", "min_chars", "spans_key", "short_forms",
                                                     "modifiers"]),
    ("mention_consistency.md", "mention_consistency", ["min_share", "short_forms"]),
    ("link_confidence.md", "link_confidence", ["threshold"]),
])
def test_api_page_lists_every_setting_with_its_default(page, factory, names):
    """A setting added, removed or given another default without its API page fails here."""
    documented = documented_settings(API / page)
    assert sorted(documented) == sorted(names), f"docs/api/{page}: settings table out of date"
    defaults = Language.get_factory_meta(factory).default_config
    for name in names:
        _type, default, what = documented[name]
        assert what, f"docs/api/{page}: `{name}` says nothing"
        assert json.loads(default.strip("`")) == defaults[name], f"docs/api/{page}: default of `{name}`"


@pytest.mark.parametrize("page", sorted(API.glob("*.md")), ids=lambda page: page.name)
def test_api_page_has_its_sections(page):
    headings = [line for line in page.read_text(encoding="utf8").splitlines() if line.startswith("## ")]
    assert headings[0] == "## Settings"
    assert {"## What it reads and writes on a Doc", "## Public methods and attributes", "## Serialization",
            "## Scores"} <= set(headings)


# Results quoted in the README ---------------------------------------------------------------

README_COLUMNS = {"acc": "accuracy", "strict": "accuracy_strict", "BELB": "accuracy_belb",
                  "unseen strict": "accuracy_unseen_strict", "link F": "nel_micro_f", "mentions/s": "mentions_per_second",
                  "NER F": "ner_f", "end-to-end F": "e2e_f"}


def quoted_rows() -> Iterator[Tuple[str, Dict[str, str], Path]]:
    """Each README results row that names its source file: (pipeline, {column: figure}, file)."""
    header: List[str] = []
    for line in (ROOT / "README.md").read_text(encoding="utf8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[-1] == "source":
            header = cells
        elif header and len(cells) == len(header) and LINK.search(cells[-1]):
            file = ROOT / LINK.search(cells[-1]).group(1)
            yield cells[0], dict(zip(header[1:-1], (c.strip("*") for c in cells[1:-1]))), file


def test_readme_results_come_from_the_files_they_name():
    rows = list(quoted_rows())
    assert len(rows) == 13
    for pipeline, figures, file in rows:
        metrics = json.loads(file.read_text())
        for column, figure in figures.items():
            if column == "set":  # which corpus split the row scores, not a figure
                continue
            value = metrics[README_COLUMNS[column]]
            if column == "mentions/s" and not figure:
                assert "KB-only" in pipeline, pipeline  # a later run on another machine: no speed
            elif column == "mentions/s":
                assert round(value) == int(figure.replace(",", "")), (pipeline, column, file)
            else:
                assert f"{value:.3f}" == figure, (pipeline, column, file)


def test_results_page_is_what_its_script_writes():
    """docs/results.md is generated: a hand edit, or data changed without rerunning the script, fails here."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("results_page", ROOT / "bench" / "results_page.py")
    results_page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(results_page)
    assert (ROOT / "docs" / "results.md").read_text(encoding="utf8") == results_page.page(), \
        "docs/results.md is out of date: run python bench/results_page.py"
