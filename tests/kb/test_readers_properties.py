"""Property-based tests of the KB readers: over random records a reader either returns
every id and name as written (ids normalised) or raises an ArboError naming the file and
the first bad line, never another exception."""
import gzip
import json
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from spacy_arbo.kb.entities import normalize_id
from spacy_arbo.kb.readers import CTD_COLUMNS, read_kb, write_jsonl
from spacy_arbo.util import ArboError

from ..util import CTD_HEADER

SETTINGS = settings(max_examples=50, deadline=None)

# Any text a UTF-8 file can hold (no lone surrogates).
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
IDS = st.one_of(
    st.from_regex(r"[CDcd]\d{6}", fullmatch=True),  # bare MeSH: gets MESH:
    st.from_regex(r"(MESH|mesh|Mesh|OMIM|omim):[A-Z]?\d{1,6}", fullmatch=True),
    st.from_regex(r"C\d{7}", fullmatch=True),  # a UMLS CUI: kept as it is
    TEXT,
)
BAD_VALUES = st.sampled_from([None, 1.5, True, ["x"], [1], {"a": 1}, "", " "])
GOOD_RECORDS = st.lists(
    st.fixed_dictionaries(
        {
            "concept_id": st.one_of(IDS.filter(str.strip), st.integers(0, 10**9)),
            "canonical_name": TEXT.filter(str.strip),
        },
        optional={
            "aliases": st.lists(TEXT, max_size=3),
            "types": st.lists(TEXT, max_size=2),
            "alt_ids": st.lists(IDS, max_size=2),
            "definition": st.one_of(TEXT, st.none()),
        },
    ),
    min_size=1,
    max_size=8,
)
# Half the files get one bad field, or a record repeating another's id in another spelling.
MUTATIONS = st.one_of(
    st.none(),
    st.tuples(st.integers(0, 7), st.sampled_from(["concept_id", "canonical_name", "aliases", "definition"]),
              BAD_VALUES),
    st.tuples(st.integers(0, 7), st.just("respelled id"), st.sampled_from(["{}", "MESH:{}", "mesh:{}", " {} "])),
)


@st.composite
def jsonl_records(draw) -> List[Dict[str, Any]]:
    records = draw(GOOD_RECORDS)
    mutation = draw(MUTATIONS)
    if mutation is not None:
        row, field, value = mutation
        record = records[row % len(records)]
        if field == "respelled id":
            bare = str(records[0]["concept_id"]).strip().upper().removeprefix("MESH:")
            record["concept_id"] = value.format(bare)
        else:
            record[field] = value
    return records


def jsonl_problem(records: List[Dict[str, Any]]) -> Optional[int]:
    """The line of the first record the reader must reject, or None."""
    seen = set()
    for line, record in enumerate(records, start=1):
        concept_id, name = record["concept_id"], record["canonical_name"]
        if isinstance(concept_id, int) and not isinstance(concept_id, bool):
            concept_id = str(concept_id)
        if not isinstance(concept_id, str) or not concept_id.strip():
            return line
        if not isinstance(name, str) or not name.strip():
            return line
        aliases = record.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            return line
        if not isinstance(record.get("definition") or "", str):
            return line
        if normalize_id(concept_id) in seen:
            return line
        seen.add(normalize_id(concept_id))
    return None


@SETTINGS
@given(jsonl_records())
def test_jsonl_reader_round_trips_or_names_the_bad_line(records):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kb.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf8")
        problem = jsonl_problem(records)
        try:
            store = read_kb(path)
        except ArboError as err:
            assert problem is not None, err
            assert str(err).startswith(f"{path}:{problem}: "), (problem, err)
            return
        assert problem is None
        assert store.ids == [normalize_id(str(r["concept_id"]).strip()) for r in records]
        assert [e.name for e in store] == [r["canonical_name"].strip() for r in records]
        # What the reader made, the writer writes back unchanged.
        write_jsonl(store, Path(tmp) / "again.jsonl")
        assert list(read_kb(Path(tmp) / "again.jsonl")) == list(store)


# CTD rows: no field may hold a tab or a line break, as in CTD's own files.
FIELD = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\t\n\r"), max_size=10)
CTD_ID = IDS.filter(lambda i: i.strip() and not set(i) & set("\t\n\r"))
GOOD_ROWS = st.lists(st.tuples(FIELD.filter(str.strip), CTD_ID, *[FIELD] * (CTD_COLUMNS - 2)), min_size=1, max_size=8)
# Half the files get one row of random fields (a wrong column count, an empty name...).
BAD_ROW = st.one_of(st.none(), st.tuples(st.integers(0, 7), st.lists(FIELD, min_size=1, max_size=CTD_COLUMNS + 2)))


@st.composite
def ctd_rows(draw) -> List[tuple]:
    rows = draw(GOOD_ROWS)
    bad = draw(BAD_ROW)
    if bad is not None:
        rows[bad[0] % len(rows)] = tuple(bad[1])
    return rows


def ctd_expected(lines: List[str], first_line: int):
    """(first bad line or None, [(id, name)] of the rows the reader keeps)."""
    kept, seen = [], set()
    for number, line in enumerate(lines, start=first_line):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != CTD_COLUMNS or not fields[0].strip() or not fields[1].strip():
            return number, kept
        disease_id = normalize_id(fields[1])
        if disease_id in seen:
            return number, kept
        seen.add(disease_id)
        kept.append((disease_id, fields[0].strip()))
    return None, kept


@SETTINGS
@given(ctd_rows(), st.booleans())
def test_ctd_reader_round_trips_or_names_the_bad_line(rows, compressed):
    lines = ["\t".join(row) for row in rows]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("ctd.tsv.gz" if compressed else "ctd.tsv")
        text = CTD_HEADER + "".join(line + "\n" for line in lines)
        if compressed:
            with gzip.open(path, "wt", encoding="utf8") as handle:
                handle.write(text)
        else:
            path.write_text(text, encoding="utf8")
        problem, kept = ctd_expected(lines, first_line=CTD_HEADER.count("\n") + 1)
        try:
            # Named: a .tsv whose first row has two fields would be read as a names list.
            store = read_kb(path, "ctd")
        except ArboError as err:
            if problem is None:  # only comments and blank lines
                assert not kept and str(err) == f"{path}: no entities found.", err
            else:
                assert str(err).startswith(f"{path}:{problem}: "), (problem, err)
            return
        assert problem is None
        assert [(e.id, e.name) for e in store] == kept
