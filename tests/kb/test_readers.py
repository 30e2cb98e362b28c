import gzip
import json

import pytest

from spacy_arbo.kb.entities import Entity, normalize_id
from spacy_arbo.kb.readers import build_kb, extra_path, read_kb, write_jsonl
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.util import ArboError

from ..util import CTD_HEADER, ctd_line


@pytest.fixture
def ctd_file(tmp_path):
    path = tmp_path / "ctd.tsv.gz"
    with gzip.open(path, "wt", encoding="utf8") as f:
        f.write(CTD_HEADER)
        f.write(ctd_line("Diabetes Mellitus", "MESH:D003920", definition="A metabolic disease.",
                         synonyms="DM|diabetes mellitus|Diabetes", slims="Metabolic disease"))
        f.write(ctd_line("Wilson disease", "MESH:D006527", alt="OMIM:277900|DO:DOID:893",
                         synonyms="Hepatolenticular Degeneration", parents="D008661|MESH:D030342"))
    return path


def test_normalize_id():
    assert normalize_id("D008107") == "MESH:D008107"
    assert normalize_id(" mesh:D008107 ") == "MESH:D008107"
    assert normalize_id("C538288") == "MESH:C538288"
    assert normalize_id("D000071380") == "MESH:D000071380"
    assert normalize_id("omim:215600") == "OMIM:215600"
    # A UMLS CUI (C + 7 digits) is not a MeSH id.
    assert normalize_id("C0011849") == "C0011849"
    assert normalize_id("DO:DOID:893") == "DO:DOID:893"


def test_normalize_id_prefixes_are_case_blind_local_parts_are_not():
    """`chem:0001` and `CHEM:0001` were two entities that tied; a local part keeps its case
    (vocabularies such as gene symbols tell ids apart by it), a MeSH id's letter aside."""
    assert normalize_id("chem:0001") == normalize_id("Chem:0001") == "CHEM:0001"
    assert normalize_id("icd10cm:E11") == "ICD10CM:E11" and normalize_id("do:DOID:893") == "DO:DOID:893"
    assert normalize_id("mesh:d008107") == normalize_id("d008107") == "MESH:D008107"
    assert normalize_id("CHEM:abc") != normalize_id("CHEM:ABC")
    assert normalize_id("http://purl.obolibrary.org/obo/HP_1") == "http://purl.obolibrary.org/obo/HP_1"
    for raw in ("chem:0001", "x: y", "a:", "MESH:", "UMLS:C0011849", "C0011849", "q:r:s"):
        assert normalize_id(normalize_id(raw)) == normalize_id(raw)


@pytest.mark.parametrize("store", ["memory", "disk"])
def test_build_kb_ids_in_another_case_are_a_duplicate_naming_both_lines(tmp_path, store):
    path = tmp_path / "kb.jsonl"
    path.write_text('{"concept_id": "chem:0001", "canonical_name": "Aspirin"}\n'
                    '{"concept_id": "chem:0002", "canonical_name": "Caffeine"}\n'
                    '{"concept_id": "CHEM:0001", "canonical_name": "Acetylsalicylic acid"}\n')
    with pytest.raises(ArboError) as error:
        build_kb(path, tmp_path / "kb", store=store)
    assert str(error.value) == (f"{path}:3: duplicate id 'CHEM:0001' (first defined on line 1); ids are compared "
                                "normalised (docs/kb.md), so e.g. 'D008107' and 'MESH:D008107' are one id, as are "
                                "'chem:1' and 'CHEM:1'.")
    path.write_text('{"concept_id": "chem:abc", "canonical_name": "a"}\n{"concept_id": "CHEM:ABC", "canonical_name": "b"}\n')
    assert build_kb(path, tmp_path / "kb2", store=store).ids[:] == ["CHEM:abc", "CHEM:ABC"]


def test_read_ctd(ctd_file):
    store = read_kb(ctd_file, "ctd")
    assert store.ids == ["MESH:D003920", "MESH:D006527"]
    dm = store["MESH:D003920"]
    assert dm.definition == "A metabolic disease."
    # The synonym equal to the name (case-insensitively) is not repeated as an alias.
    assert dm.aliases == ("DM", "Diabetes")
    assert dm.types == ("Metabolic disease",)
    assert store["MESH:D006527"].alt_ids == ("OMIM:277900", "DO:DOID:893")
    assert store["MESH:D006527"].parents == ("MESH:D008661", "MESH:D030342") and dm.parents == ()
    assert store.resolve("D006527") == "MESH:D006527"
    assert store.resolve("OMIM:277900") == "MESH:D006527"
    assert store.resolve("omim:277900") == "MESH:D006527"
    assert store.resolve("D000000") is None
    assert store.stats() == {"entities": 2, "aliases": 3, "with_definition": 1, "alt_ids": 2}


def test_read_ctd_bad_column_count(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text(CTD_HEADER + ctd_line("A", "MESH:D1") + "only\ttwo\n")
    with pytest.raises(ArboError, match=r"bad.tsv:5: expected 9 tab-separated CTD columns, found 2"):
        read_kb(path, "ctd")


def test_read_medic(tmp_path):
    path = tmp_path / "medic.txt"
    path.write_text("C567755|613097||Tooth Agenesis, Selective, 6|STHAG6\nD003920||Diabetes Mellitus\n")
    store = read_kb(path, "medic")
    assert store.ids == ["MESH:C567755", "MESH:D003920"]
    assert store["MESH:C567755"].aliases == ("STHAG6",)
    assert store.resolve("OMIM:613097") == "MESH:C567755"
    path.write_text("D003920 Diabetes\n")
    with pytest.raises(ArboError, match=r"medic.txt:1: expected 'IDs\|\|name"):
        read_kb(path, "medic")


def test_read_jsonl_and_round_trip(tmp_path, ctd_file):
    store = read_kb(ctd_file, "ctd")
    assert any(e.alt_ids for e in store) and any(e.parents for e in store)
    out = tmp_path / "kb.jsonl"
    write_jsonl(store, out)
    again = read_kb(out)
    assert list(again) == list(store)
    # Without its alternative ids and parents, a store writes no extra file (and removes a stale one).
    write_jsonl(EntityStore([Entity("MESH:D005334", "Fever")]), out)
    assert not extra_path(out).exists()


def test_jsonl_export_loads_in_scispacy(tmp_path, ctd_file):
    from scispacy.linking_utils import KnowledgeBase

    store = read_kb(ctd_file, "ctd")
    write_jsonl(store, tmp_path / "kb.jsonl")
    scispacy_kb = KnowledgeBase(str(tmp_path / "kb.jsonl"))
    assert sorted(scispacy_kb.cui_to_entity) == sorted(store.ids)
    for entity in store:
        theirs = scispacy_kb.cui_to_entity[entity.id]
        assert (theirs.canonical_name, tuple(theirs.aliases), theirs.definition) == \
            (entity.name, entity.aliases, entity.definition)


def test_extra_file_errors(tmp_path):
    path = tmp_path / "kb.jsonl"
    path.write_text('{"concept_id": "MESH:D000001", "canonical_name": "a"}\n')
    extra_path(path).write_text('{"concept_id": "MESH:D000002", "parents": ["MESH:D000001"]}\n')
    with pytest.raises(ArboError, match=r"kb.extra.jsonl:1: concept_id 'MESH:D000002' is not in"):
        read_kb(path)
    extra_path(path).write_text('{"concept_id": "D000001", "parents": "MESH:D000003"}\n')
    with pytest.raises(ArboError, match=r"kb.jsonl:1 \(with .*kb.extra.jsonl:1\): field 'parents' must be a list"):
        read_kb(path)


@pytest.mark.parametrize(
    "lines,message",
    [
        (['{"concept_id": "A", "canonical_name": "a"}', '{"concept_id": "A", "canonical_name": "b"}'],
         r"kb.jsonl:2: duplicate id 'A' \(first defined on line 1\)"),
        (['{"concept_id": "A", "canonical_name": "a"}', "{not json"], r"kb.jsonl:2: not a JSON object \(invalid JSON"),
        (['{"canonical_name": "a"}'], r"kb.jsonl:1: missing or empty field 'concept_id'"),
        (['{"concept_id": "A", "canonical_name": "a", "aliases": "x"}'],
         r"kb.jsonl:1: field 'aliases' must be a list of strings"),
        (["[1, 2]"], r"kb.jsonl:1: expected a JSON object"),
        ([""], r"kb.jsonl: no entities found"),
    ],
)
def test_read_jsonl_errors(tmp_path, lines, message):
    path = tmp_path / "kb.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ArboError, match=message):
        read_kb(path, "jsonl")


def test_read_kb_bad_arguments(tmp_path):
    with pytest.raises(ArboError, match="does not exist"):
        read_kb(tmp_path / "missing.jsonl")
    path = tmp_path / "kb.xyz"
    path.write_text("x")
    with pytest.raises(ArboError, match="cannot tell the KB format"):
        read_kb(path)
    with pytest.raises(ArboError, match="Unknown KB format 'owl'"):
        read_kb(path, "owl")
    corrupt = tmp_path / "kb.tsv.gz"
    corrupt.write_bytes(b"not gzip at all")
    with pytest.raises(ArboError, match="kb.tsv.gz: cannot read"):
        read_kb(corrupt)


def test_jsonl_record_fields(tmp_path):
    path = tmp_path / "kb.jsonl"
    record = {"concept_id": "C1", "canonical_name": "Fever", "aliases": ["pyrexia", "Fever"],
              "types": ["T184"], "definition": "High temperature."}
    path.write_text(json.dumps(record) + "\n")
    entity = read_kb(path)["C1"]
    assert (entity.name, entity.aliases, entity.types, entity.definition) == (
        "Fever", ("pyrexia",), ("T184",), "High temperature.")


def test_read_jsonl_normalises_ids_like_ctd(tmp_path):
    path = tmp_path / "kb.jsonl"
    path.write_text(json.dumps({"concept_id": " D008107 ", "canonical_name": "Liver Diseases",
                                "alt_ids": ["omim:123", " "]}) + "\n")
    entity = read_kb(path)["MESH:D008107"]
    assert entity.alt_ids == ("OMIM:123",)
    path.write_text("\n".join(json.dumps(r) for r in [
        {"concept_id": "D008107", "canonical_name": "Liver Diseases"},
        {"concept_id": "MESH:D008107", "canonical_name": "Liver Disease"},
    ]) + "\n")
    with pytest.raises(ArboError, match=r"kb.jsonl:2: duplicate id 'MESH:D008107' \(first defined on line 1"):
        read_kb(path)


def test_read_jsonl_numeric_concept_id(tmp_path):
    path = tmp_path / "kb.jsonl"
    path.write_text('{"concept_id": 12345, "canonical_name": "Fever"}\n')
    assert read_kb(path).ids == ["12345"]


@pytest.mark.parametrize("value,kind", [("12.5", "a number"), ("true", "a boolean"), ('["D1"]', "a list"),
                                        ('{"id": 1}', "an object")])
def test_read_jsonl_concept_id_of_wrong_type(tmp_path, value, kind):
    path = tmp_path / "kb.jsonl"
    path.write_text('{"concept_id": "A", "canonical_name": "a"}\n'
                    '{"concept_id": %s, "canonical_name": "b"}\n' % value)
    with pytest.raises(ArboError, match=rf"kb.jsonl:2: field 'concept_id' must be a string or an integer; got {kind}"):
        read_kb(path)


def test_read_jsonl_canonical_name_of_wrong_type(tmp_path):
    path = tmp_path / "kb.jsonl"
    path.write_text('{"concept_id": "A", "canonical_name": 7}\n')
    with pytest.raises(ArboError, match=r"kb.jsonl:1: field 'canonical_name' must be a string; got an integer"):
        read_kb(path)
