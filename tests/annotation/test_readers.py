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


@pytest.mark.parametrize("passages", ["[[0, 1], [2]]", "[[0, 5]]", "[[2, 3], [0, 1]]", "7"])
def test_jsonl_passages_of_another_shape_are_a_warning_and_the_record_kept(tmp_path, passages):
    path = tmp_path / "in.jsonl"
    path.write_text(f'{{"text": "abcd", "year": 1, "passages": {passages}}}\n')
    records, messages, count = read([path])
    assert [(r.text, r.fields, r.passages) for r in records] == [("abcd", {"year": 1}, [])] and count == 0
    assert messages == [f"warning: {path}:1: 'passages' must be [start, end] pairs in order inside the text "
                        f"(4 characters); got {passages}; the text is linked as one passage."]


def test_pubtator_offset_past_the_text_is_a_warning_and_the_document_kept(tmp_path):
    path = tmp_path / "corpus.pubtator"
    path.write_text(PUBTATOR.replace("1\t0\t14\tWilson disease", "1\t40\t54\tWilson disease"))
    records, messages, count = read([path])
    assert [(r.id, r.text, len(r.gold)) for r in records] == [("1", "Wilson disease WD is rare.", 0),
                                                              ("2", "Fever and cough.", 1)]
    assert count == 0 and messages == [f"warning: {path}:3: offsets 40-54 lie outside the text (26 characters). "
                                       "The annotation is not kept as gold; the document is linked."]


def test_pubtator_bad_annotation_lines_are_warnings_even_when_strict(tmp_path):
    path = tmp_path / "corpus.pubtator"
    path.write_text("1|t|Fever\n1\t0\t5\tFever\tDisease\tD1\n1|a|and cough.\n1\t6\t9\tand\n"
                    "9\t0\t5\tFever\tDisease\tD1\n1\t0\t5\tFever\tDisease\tD1\n")
    records, messages, count = read([path], strict=True)
    assert [(r.id, r.text, [m["start"] for m in r.gold]) for r in records] == [("1", "Fever and cough.", [0])]
    assert count == 0 and [m.split(": ", 2)[1:] for m in messages] == [
        [f"{path}:2", "mention before the abstract line of 1. The annotation is not kept as gold; "
                      "the document is linked."],
        [f"{path}:4", "expected 6 tab-separated fields (PMID, start, end, text, type, ids), found 4. "
                      "The annotation is not kept as gold; the document is linked."],
        [f"{path}:5", "annotation for PMID '9' outside that document. The annotation is not kept as gold; "
                      "the document is linked."]]


def test_pubtator_every_skipped_document_is_named_and_no_other_lost(tmp_path):
    path = tmp_path / "corpus.pubtator"
    path.write_bytes(b"1|t|Title only\n"               # kept, though the next line is bad
                     b"2|a|no title\n2\t0\t2\tno\tX\tD\n"  # skipped (its annotation with it)
                     b"3|a|no title either\n"          # skipped, named too
                     b"4|t|Cough\n4|a|\n"               # an empty abstract: kept
                     b"5|t|caf\xe9\n5|a|latin-1\n"      # a title not UTF-8: skipped, named
                     b"6|t|Fever\n6|a|one\n6|a|two\n"    # two abstracts: skipped, named
                     b"7|t||last|\n")                  # kept
    records, messages, count = read([path])
    assert [(r.id, r.text) for r in records] == [("1", "Title only "), ("4", "Cough "), ("7", "|last| ")]
    assert count == 4 and messages == [
        f"skipped: {path}:2: abstract line of 2 does not follow its title line.",
        f"skipped: {path}:4: abstract line of 3 does not follow its title line.",
        f"skipped: {path}:7: not UTF-8 (byte 0xe9, the line's byte 8).",
        f"skipped: {path}:11: abstract line of 6 does not follow its title line."]


def test_pubtator_lines_outside_any_document_are_each_named(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("Fever\nand cough\n1|a|x\n")
    records, messages, count = read([path], fmt="pubtator")
    assert records == [] and count == 2
    assert messages == [f"skipped: {path}:1: not PubTator: a document starts with a title line 'PMID|t|TITLE'; "
                        "got 'Fever'.", f"skipped: {path}:3: abstract line of 1 does not follow its title line."]


@pytest.mark.parametrize("mentions, kept, first", [
    ('[{"span": [0, 5], "id": "D1"}]', [],
     "a mention needs 'start', 'end' and 'text'; got {'span': [0, 5], 'id': 'D1'}."),
    ('[{"start": 0, "end": 5, "text": "Fever"}, {"start": 0, "end": 50, "text": "x"}]', [0],
     "mention offsets 0-50 lie outside the text (15 characters)."),
    ('["Fever"]', [], "a mention needs 'start', 'end' and 'text'; got 'Fever'."),
])
def test_jsonl_mentions_of_another_shape_are_a_warning_and_the_record_kept(tmp_path, mentions, kept, first):
    path = tmp_path / "in.jsonl"
    path.write_text(f'{{"id": "a", "text": "Fever and cough", "year": 2020, "mentions": {mentions}}}\n')
    records, messages, count = read([path], strict=True)
    assert [(r.id, r.text, r.fields, [m["start"] for m in r.gold]) for r in records] == [
        ("a", "Fever and cough", {"year": 2020}, kept)]
    n = len(json.loads(mentions))
    assert count == 0 and messages == [f"warning: {path}:1: {n - len(kept)} of {n} mentions not kept as gold "
                                       f"(the text is linked); the first: {first}"]


def test_jsonl_mentions_that_are_not_a_list_are_a_warning(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"text": "Fever", "mentions": {"start": 0}}\n')
    records, messages, count = read([path])
    assert [(r.text, r.gold) for r in records] == [("Fever", [])] and count == 0
    assert messages == [f"warning: {path}:1: 'mentions' is not a list, not kept as gold ({{'start': 0}}); "
                        "the text is linked."]


def bioc_collection(texts, offset=0):
    import bioc

    collection = bioc.BioCCollection()
    for doc_id, text in texts:
        document, passage = bioc.BioCDocument(), bioc.BioCPassage()
        document.id, passage.offset, passage.text = doc_id, offset, text
        document.add_passage(passage)
        collection.add_document(document)
    return collection


@pytest.mark.parametrize("name, content", [
    ("a.txt", " \n\t\n"), ("a.jsonl", '{"id": "a", "text": " \\n "}\n'), ("a.pubtator", "a|t| \na|a|\n"),
    ("a.xml", None)])
def test_whitespace_only_text_is_an_empty_document_in_every_format(tmp_path, name, content):
    import bioc

    path = tmp_path / name
    if content is None:
        path.write_text(bioc.biocxml.dumps(bioc_collection([("a", "  ")])))
    else:
        path.write_text(content)
    records, messages, count = read([path])
    assert [r.id for r in records] == ["a"] and not records[0].text.strip()
    assert (messages, count) == ([], 0)


def test_a_lone_surrogate_is_a_bad_record_naming_its_field(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"text": "Fever"}\n{"text": "Cough", "note": "\\ud800"}\n')
    records, messages, count = read([path])
    assert [r.text for r in records] == ["Fever"] and count == 1
    assert messages == [f"skipped: {path}:2: 'note' is not Unicode text (a lone surrogate, '\\ud800')."]


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


def test_bioc_mention_that_does_not_match_its_text_is_a_warning_and_the_document_kept(tmp_path):
    import bioc

    collection = bioc_collection([("1", "Fever and cough"), ("2", "Cough")])
    for document in collection.documents:
        annotation = bioc.BioCAnnotation()
        annotation.id, annotation.text, annotation.infons = "T0", "Cough", {"type": "Disease", "identifier": "D003371"}
        annotation.add_location(bioc.BioCLocation(0, 5))
        document.passages[0].add_annotation(annotation)
    split = bioc.BioCAnnotation()
    split.id, split.text = "T1", "Fever cough"
    split.add_location(bioc.BioCLocation(0, 5))
    split.add_location(bioc.BioCLocation(10, 5))
    collection.documents[1].passages[0].add_annotation(split)
    path = tmp_path / "in.xml"
    path.write_text(bioc.biocxml.dumps(collection))
    records, messages, count = read([path])
    assert [(r.id, [m["kb_id"] for m in r.gold]) for r in records] == [("1", []), ("2", ["D003371"])]
    assert count == 0 and messages == [
        f"warning: {path} (document 1): 1 of 1 mentions not kept as gold (the text is linked); the first: "
        "mention text 'Cough' is not the text at 0-5: 'Fever'.",
        f"warning: {path} (document 2): 1 of 2 mentions not kept as gold (the text is linked); the first: "
        "annotation T1 has 2 locations; only contiguous mentions (one location) can be read."]


def test_a_file_that_is_not_bioc_is_one_bad_record(tmp_path):
    (tmp_path / "a.xml").write_text("<collection><document><id>1</id>")
    records, messages, count = read([tmp_path / "a.xml"])
    assert records == [] and count == 1 and "a.xml: not BioC XML" in messages[0]


def test_bioc_xml_document_bioc_cannot_decode_is_one_bad_record_not_a_crash(tmp_path):
    import bioc

    xml = bioc.biocxml.dumps(bioc_collection([("1", "Fever"), ("2", "Cough"), ("3", "Wilson disease")]))
    path = tmp_path / "in.xml"
    path.write_text(xml.replace("<offset>0</offset>", "<offset>x</offset>", 2).replace("<offset>x</offset>",
                                                                                       "<offset>0</offset>", 1))
    records, messages, count = read([path])
    assert [r.id for r in records] == ["1", "3"] and count == 1
    assert messages == [f"skipped: {path} (document 2): not a BioC document (ValueError: invalid literal for int() "
                        "with base 10: 'x')."]


def test_bioc_xml_that_stops_parsing_names_the_last_document_read(tmp_path):
    import bioc

    path = tmp_path / "in.xml"
    xml = bioc.biocxml.dumps(bioc_collection([("1", "Fever"), ("2", "Cough")]))
    path.write_text(xml.replace("</document>\n  <document>", "</document><oops>", 1))
    records, messages, count = read([path])
    assert [r.id for r in records] == ["1"] and count == 1
    assert messages[0].startswith(f"skipped: {path}: not BioC XML after document 1 (")
    assert messages[0].endswith("); the rest of it is not read.")


def test_bioc_json_document_of_another_shape_is_one_bad_record(tmp_path):
    import bioc

    collection = bioc.biocjson.toJSON(bioc_collection([("1", "Fever"), ("2", "Cough")]))
    collection["documents"][0]["passages"][0]["offset"] = "x"
    path = tmp_path / "in.json"
    path.write_text(json.dumps(collection))
    records, messages, count = read([path])
    assert [r.id for r in records] == ["2"] and count == 1
    assert messages == [f"skipped: {path} (document 1): a passage needs an integer offset and a string text; "
                        "got offset 'x', text 'Fever'."]


def test_a_pubtator_file_that_starts_with_blank_lines_is_read_as_pubtator(tmp_path):
    from spacy_arbo.annotation.readers import input_files

    path = tmp_path / "corpus.txt"
    path.write_text("\n\n10192393|t|A common human skin tumour\n10192393|a|It is caused.\n\n", encoding="utf8")
    assert input_files([path]) == [(path, "pubtator")]
