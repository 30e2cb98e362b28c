"""Every input format gives the same records, and every bad record is named with its place,
skipped and counted (or, strict, ends the run); bad inputs are one error before any work."""
import json

import pytest

from spacy_arbo.annotation.readers import input_files, read_records
from spacy_arbo.annotation.records import BadRecords
from spacy_arbo.util import ArboError

PUBTATOR = ("1|t|Wilson disease\n1|a|WD is rare.\n1\t0\t14\tWilson disease\tDisease\tD006527\n\n"
            "2|t|Fever\n2|a|and cough.\n2\t0\t5\tFever\tDisease\tD005334\n2\tCID\tD1\tD005334\n")


def read(paths, fmt="auto", strict=False):
    messages = []
    bad = BadRecords(messages.append, strict=strict)
    return list(read_records(input_files(paths, fmt), bad)), messages, bad.count


def test_text_files_and_folders(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.txt").write_text("Fever.\nAnd cough.")
    (tmp_path / "docs" / "a.txt").write_text("Wilson disease.")
    (tmp_path / "docs" / "notes.md").write_text("not an input")
    records, messages, count = read([tmp_path / "docs"])
    assert [(r.id, r.text) for r in records] == [("a", "Wilson disease."), ("b", "Fever.\nAnd cough.")]
    assert (messages, count) == ([], 0)


def test_jsonl_keeps_fields_and_reads_mentions_as_gold(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"id": 7, "text": "Fever here", "year": 2020,
                                "mentions": [{"start": 0, "end": 5, "text": "Fever", "label": "Disease",
                                              "kb_id": "D005334"}]}) + "\n\n" + json.dumps({"text": "x"}) + "\n")
    records, _, _ = read([path])
    assert [(r.id, r.fields) for r in records] == [("7", {"year": 2020}), ("in:3", {})]
    assert records[0].gold == [{"start": 0, "end": 5, "text": "Fever", "label": "Disease", "kb_id": "D005334"}]


def test_pubtator_text_and_gold(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(PUBTATOR)
    records, _, _ = read([path])
    assert [(r.id, r.text, r.passages) for r in records] == [
        ("1", "Wilson disease WD is rare.", [(0, 14), (15, 26)]), ("2", "Fever and cough.", [(0, 5), (6, 16)])]
    assert [m["kb_id"] for r in records for m in r.gold] == ["D006527", "D005334"]


def test_broken_jsonl_line_is_named_and_the_rest_read(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"text": "one"}\n{"text": "two"\n{"tex": "three"}\n{"text": "four"}\n')
    records, messages, count = read([path])
    assert [r.text for r in records] == ["one", "four"]
    assert count == 2
    assert messages[0].startswith(f"skipped: {path}:2: not a JSON object")
    assert messages[1] == f"skipped: {path}:3: expected a JSON object with a string 'text'."


def test_jsonl_passages_must_be_pairs(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"text": "ab", "passages": [[0, 1], [2]]}\n')
    records, messages, count = read([path])
    assert records == [] and messages == [f"skipped: {path}:1: 'passages' must be a list of [start, end] pairs; "
                                          "got [[0, 1], [2]]."]


def test_pubtator_offset_past_the_text_skips_that_document(tmp_path):
    path = tmp_path / "corpus.pubtator"
    path.write_text(PUBTATOR.replace("1\t0\t14\tWilson disease", "1\t40\t54\tWilson disease"))
    records, messages, count = read([path])
    assert [r.id for r in records] == ["2"]
    assert count == 1 and messages == [f"skipped: {path}:3: offsets 40-54 lie outside the text (26 characters)."]


def test_binary_file_is_a_bad_record(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Fever.")
    (tmp_path / "docs" / "b.txt").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    records, messages, count = read([tmp_path / "docs"])
    assert [r.id for r in records] == ["a"]
    assert count == 1 and messages[0] == f"skipped: {tmp_path / 'docs' / 'b.txt'}: a binary file, not text (a NUL byte at offset 8)."


def test_strict_makes_the_first_bad_record_an_error(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"text": "one"}\nnot json\n')
    with pytest.raises(ArboError, match=r"in.jsonl:2: not a JSON object .*--strict"):
        read([path], strict=True)


@pytest.mark.parametrize("make, message", [
    (lambda p: (p / "empty").mkdir() or p / "empty", "no documents in this folder"),
    (lambda p: p / "missing.txt", "no such file or folder"),
    (lambda p: (p / "e.jsonl").write_text("") or p / "e.jsonl", "empty file"),
])
def test_bad_inputs_are_one_error_before_reading(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(ArboError, match=message) as err:
        input_files([path])
    assert str(path) in str(err.value)


def test_bioc_mention_that_does_not_match_its_text_is_named(tmp_path):
    import bioc

    collection = bioc.BioCCollection()
    for doc_id, text in (("1", "Fever and cough"), ("2", "Cough")):
        document, passage = bioc.BioCDocument(), bioc.BioCPassage()
        document.id, passage.offset, passage.text = doc_id, 0, text
        annotation = bioc.BioCAnnotation()
        annotation.id, annotation.text, annotation.infons = "T0", "Cough", {"type": "Disease", "identifier": "D003371"}
        annotation.add_location(bioc.BioCLocation(0, 5))
        passage.add_annotation(annotation)
        document.add_passage(passage)
        collection.add_document(document)
    path = tmp_path / "in.xml"
    path.write_text(bioc.biocxml.dumps(collection))
    records, messages, count = read([path])
    assert [(r.id, r.gold[0]["kb_id"]) for r in records] == [("2", "D003371")]
    assert count == 1 and "(document 1): mention text 'Cough' is not the text at 0-5: 'Fever'" in messages[0]


def test_a_file_that_is_not_bioc_is_one_bad_record(tmp_path):
    (tmp_path / "a.xml").write_text("<collection><document><id>1</id>")
    records, messages, count = read([tmp_path / "a.xml"])
    assert records == [] and count == 1 and "a.xml: not BioC XML" in messages[0]
