"""Round trips on the real gold files: NCBI Disease test and BC5CDR dev read, written as
PubTator, JSONL and BioC (XML, JSON), and read back keep every text, span and id."""
import io

import pytest

from spacy_arbo.annotation.readers import READERS
from spacy_arbo.annotation.records import BadRecords
from spacy_arbo.annotation.writers import WRITERS, title_and_abstract
from spacy_arbo.corpora import read_pubtator

GOLD_FILES = ["ncbi_disease/NCBItestset_corpus.txt", "bc5cdr/CDR_dev.PubTator.txt"]
SUFFIXES = {"jsonl": ".jsonl", "pubtator": ".pubtator", "bioc": ".xml", "bioc-json": ".json"}
READ_AS = {"jsonl": "jsonl", "pubtator": "pubtator", "bioc": "bioc-xml", "bioc-json": "bioc-json"}


def as_linked(record):
    """A document whose mentions are its gold ones, as the writers take linked documents."""
    return {"id": record.id, **record.fields, "text": record.text, "passages": record.passages,
            "mentions": record.gold}


def write(fmt, documents, path):
    writer, binary = WRITERS[fmt]
    with open(path, "wb" if binary else "w", **({} if binary else {"encoding": "utf8"})) as handle:
        writer(documents, handle)


def read(fmt, path):
    bad = BadRecords(pytest.fail)
    return list(READERS[READ_AS[fmt]](path, bad))


def spans(records):
    return [(r.id, r.text, [(m["start"], m["end"], m["text"], m["label"], m["kb_id"]) for m in r.gold])
            for r in records]


@pytest.mark.parametrize("gold", GOLD_FILES)
@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_gold_files_round_trip(data_dir, tmp_path, gold, fmt):
    records = read("pubtator", data_dir / gold)
    assert len(records) in (100, 500) and sum(len(r.gold) for r in records) > 900
    path = tmp_path / f"out{SUFFIXES[fmt]}"
    write(fmt, map(as_linked, records), path)
    again = read(fmt, path)
    assert spans(again) == spans(records)
    assert [r.passages for r in again] == [r.passages for r in records]


@pytest.mark.parametrize("gold", GOLD_FILES)
def test_pubtator_written_from_jsonl_is_the_gold_file_less_its_relations(data_dir, tmp_path, gold):
    write("jsonl", map(as_linked, read("pubtator", data_dir / gold)), tmp_path / "gold.jsonl")
    write("pubtator", map(as_linked, read("jsonl", tmp_path / "gold.jsonl")), tmp_path / "gold.pubtator")
    expected = [(d.pmid, d.title, d.abstract, d.mentions) for d in read_pubtator(data_dir / gold)]
    assert [(d.pmid, d.title, d.abstract, d.mentions) for d in read_pubtator(tmp_path / "gold.pubtator")] == expected
    original = [line for line in (data_dir / gold).read_text().rstrip("\n").splitlines() if line.count("\t") != 3]
    written = (tmp_path / "gold.pubtator").read_text().rstrip("\n").splitlines()
    assert written == ["\t".join(line.split("\t")[:6]) for line in original]  # BC5CDR's 7th field aside


def test_pubtator_lines_keep_offsets_of_texts_with_line_breaks():
    title, abstract = title_and_abstract({"text": "Fever\nand\tcough", "mentions": []})
    assert (title, abstract) == ("Fever and cough", "")
    title, abstract = title_and_abstract({"text": "Fever.\nCough", "passages": [[0, 6], [7, 12]]})
    assert (title, abstract) == ("Fever.", "Cough")


def test_nil_is_minus_one_in_pubtator():
    handle = io.StringIO()
    WRITERS["pubtator"][0]([{"id": "9", "text": "Fever", "mentions": [
        {"start": 0, "end": 5, "text": "Fever", "label": "Disease", "kb_id": "NIL"}]}], handle)
    assert handle.getvalue() == "9|t|Fever\n9|a|\n9\t0\t5\tFever\tDisease\t-1\n\n"


def test_pubtator_mention_across_a_line_break_or_tab_keeps_its_line(tmp_path):
    documents = [{"id": "a|1", "text": "Wilson\ndisease and\tcough", "passages": [[0, 6], [7, 24]], "mentions": [
        {"start": 0, "end": 14, "text": "Wilson\ndisease", "label": "Disease", "kb_id": "D006527"},
        {"start": 15, "end": 24, "text": "and\tcough", "label": "Dis\tease", "kb_id": "NIL"}]},
        {"id": "", "text": "Fever", "mentions": [{"start": 0, "end": 5, "text": "Fever", "label": "Disease",
                                                 "kb_id": "D005334"}]}]
    write("pubtator", documents, tmp_path / "out.pubtator")
    again = read("pubtator", tmp_path / "out.pubtator")
    assert [(r.id, r.text, len(r.gold)) for r in again] == [("a_1", "Wilson disease and cough", 2),
                                                            ("_", "Fever ", 1)]
    assert [(m["start"], m["end"], m["text"], m["label"], m["kb_id"]) for m in again[0].gold] == [
        (0, 14, "Wilson disease", "Disease", "D006527"), (15, 24, "and cough", "Dis ease", "-1")]
    assert [(d.pmid, len(d.mentions)) for d in read_pubtator(tmp_path / "out.pubtator")] == [("a_1", 2), ("_", 1)]


REVIEWED = {"start": 0, "end": 5, "text": "Fever", "label": "Disease", "kb_id": "NIL", "name": None, "score": 0.75,
            "candidates": [["MESH:D005334", 0.75], ["MESH:D003371", 0.5]], "confidence": 0.25, "review": True,
            "proposed_kb_id": "MESH:D005334", "proposed_name": "Fever"}


@pytest.mark.parametrize("fmt", ["bioc", "bioc-json"])
def test_bioc_annotations_say_what_jsonl_says_of_a_mention_for_review(tmp_path, fmt):
    import bioc

    write(fmt, [{"id": "1", "text": "Fever\x0c here", "mentions": [REVIEWED]}], tmp_path / "out")
    with open(tmp_path / "out", encoding="utf8") as handle:
        collection = bioc.biocxml.load(handle) if fmt == "bioc" else bioc.biocjson.load(handle)
    (annotation,) = collection.documents[0].passages[0].annotations
    assert annotation.infons == {
        "type": "Disease", "identifier": "NIL", "score": "0.75", "candidates": '[["MESH:D005334", 0.75], '
        '["MESH:D003371", 0.5]]', "confidence": "0.25", "review": "true", "proposed_kb_id": "MESH:D005334",
        "proposed_name": "Fever"}
    assert collection.documents[0].passages[0].text == ("Fever  here" if fmt == "bioc" else "Fever\x0c here")


def test_bioc_xml_holds_a_text_with_control_characters_at_its_offsets(tmp_path):
    write("bioc", [{"id": "1", "text": "page 1\x0cFever\x01", "mentions": [
        {"start": 7, "end": 12, "text": "Fever", "label": "Disease", "kb_id": "D005334"}]}], tmp_path / "out.xml")
    (record,) = read("bioc", tmp_path / "out.xml")
    assert (record.text, record.gold[0]["text"]) == ("page 1 Fever ", "Fever")
