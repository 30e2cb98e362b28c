"""Records at the limits of spaCy and of the output formats: a text past `nlp.max_length`, and
characters XML or a PubTator line cannot hold, in every output format: the bad record named, the
others written, nothing lost."""
import json

import pytest
import spacy
from spacy.tokens import DocBin

from spacy_arbo.annotation.formats import OUTPUT_FORMATS
from spacy_arbo.annotation.readers import import_bioc
from spacy_arbo.annotation.runner import link_corpus

from .conftest import toy_pipeline  # noqa: F401


def run(pipeline, inputs, output, fmt):
    lines = []
    summary = link_corpus(pipeline, inputs, output, fmt=fmt, report=lines.append, progress=False)
    return summary, lines


def written_ids(path, fmt):
    """The document ids an output holds, read back as a user's tool would read them."""
    if fmt == "jsonl":
        return [json.loads(line)["id"] for line in path.read_text().splitlines()]
    if fmt == "pubtator":
        return [line.split("|")[0] for line in path.read_text(encoding="utf8").splitlines() if "|t|" in line]
    if fmt == "bioc":
        with open(path, "rb") as handle:
            return [d.id for d in import_bioc().biocxml.load(handle).documents]
    if fmt == "bioc-json":
        with open(path, encoding="utf8") as handle:
            return [d.id for d in import_bioc().biocjson.load(handle).documents]
    return [doc.user_data["doc_id"] for doc in DocBin().from_disk(path).get_docs(spacy.blank("en").vocab)]


@pytest.mark.parametrize("fmt", OUTPUT_FORMATS)
def test_a_text_past_max_length_is_a_bad_record_and_the_others_are_written(toy_pipeline, tmp_path, fmt):
    records = [{"id": "before", "text": "Fever was seen."}, {"id": "huge", "text": "fever " * 170_000},
               {"id": "after", "text": "Cough and fever."}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    summary, lines = run(toy_pipeline, [tmp_path / "in.jsonl"], tmp_path / f"out.{fmt}", fmt)
    assert summary.bad_records == 1 and summary.documents == 2
    assert lines == [f"skipped: {tmp_path / 'in.jsonl'}:2: a text of 1,020,000 characters, longer than the "
                     "pipeline's nlp.max_length (1,000,000); split it into documents, or load the pipeline with a "
                     "larger max_length if its components can take it."]
    assert written_ids(tmp_path / f"out.{fmt}", fmt) == ["before", "after"]


@pytest.mark.parametrize("fmt", OUTPUT_FORMATS)
def test_characters_xml_and_pubtator_lines_cannot_hold_are_written_readably(toy_pipeline, tmp_path, fmt):
    texts = ["Fever\x0b was \x00seen.\x0c", "A cough\x1c, then\u2028 fever\x85.", "Plain fever."]
    (tmp_path / "in.jsonl").write_text("".join(
        json.dumps({"id": f"d{i}", "text": text, "note\x01": "x\x02"}) + "\n" for i, text in enumerate(texts)))
    summary, _ = run(toy_pipeline, [tmp_path / "in.jsonl"], tmp_path / f"out.{fmt}", fmt)
    assert (summary.documents, summary.bad_records) == (3, 0)
    assert written_ids(tmp_path / f"out.{fmt}", fmt) == ["d0", "d1", "d2"]
    if fmt == "pubtator":
        lines = (tmp_path / f"out.{fmt}").read_text(encoding="utf8").split("\n")
        mentions = [line.split("\t") for line in lines if line.count("\t") == 5]
        # Offsets hold: each mention's text is the text at its offsets in title + " " + abstract.
        assert [(m[0], m[3], texts[int(m[0][1:])][int(m[1]):int(m[2])]) for m in mentions] == \
            [(m[0], m[3], m[3]) for m in mentions]
        assert len(mentions) == summary.mentions
