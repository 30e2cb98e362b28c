"""link_corpus on a toy pipeline: what a linked document says, the same bytes from one process
and two and after a resumed run, and the errors that come before any work."""
import json

import pytest
import spacy
from spacy.tokens import DocBin, Span

from spacy_arbo.annotation import LinkedDocuments, Record, link_corpus
from spacy_arbo.util import ArboError

from .conftest import toy_jsonl_lines


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(toy_jsonl_lines(40))
    return path


def run(pipeline, inputs, output, **kwargs):
    messages = []
    summary = link_corpus(pipeline, inputs, output, report=messages.append, progress=False, **kwargs)
    return summary, messages


def test_jsonl_output_says_id_fields_mentions_names_scores_candidates(toy_pipeline, corpus, tmp_path):
    summary, messages = run(toy_pipeline, [corpus], tmp_path / "out.jsonl", batch_size=4, shard_size=8)
    documents = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [d["id"] for d in documents] == [f"d{i}" for i in range(40)]
    first = documents[0]
    assert (first["source"], first["text"]) == ("toy", "Patients with diabetes mellitus often develop heart failure.")
    assert [(m["start"], m["end"], m["text"], m["label"], m["kb_id"], m["name"]) for m in first["mentions"]] == [
        (14, 31, "diabetes mellitus", "Disease", "MESH:D003920", "Diabetes Mellitus"),
        (46, 59, "heart failure", "Disease", "MESH:D006333", "Heart Failure")]
    mention = first["mentions"][0]
    assert mention["score"] == mention["candidates"][0][1] and 0.99 < mention["score"] <= 1.0001
    scores = [score for _, score in mention["candidates"]]
    assert mention["candidates"][0][0] == "MESH:D003920" and 1 < len(scores) <= 5 and scores == sorted(scores)[::-1]
    assert ("confidence" in mention) == Span.has_extension("kb_confidence")
    assert (summary.documents, summary.mentions, summary.shards, summary.bad_records) == (40, 80, 5, 0)
    assert messages == [] and not (tmp_path / "out.jsonl.parts").exists()


def test_two_processes_write_the_same_bytes_as_one(toy_pipeline, corpus, tmp_path):
    run(toy_pipeline, [corpus], tmp_path / "one.jsonl", batch_size=4, shard_size=8)
    run(toy_pipeline, [corpus], tmp_path / "two.jsonl", batch_size=4, shard_size=8, n_process=2)
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


def test_a_resumed_run_keeps_the_shards_written_and_writes_the_same_bytes(toy_pipeline, tmp_path):
    lines = toy_jsonl_lines(40).splitlines(keepends=True)
    path = tmp_path / "in.jsonl"
    path.write_text("".join(lines[:20] + ["not json\n"] + lines[20:]))
    run(toy_pipeline, [path], tmp_path / "clean.jsonl", batch_size=4, shard_size=4)
    with pytest.raises(ArboError, match="in.jsonl:21: not a JSON object"):
        run(toy_pipeline, [path], tmp_path / "out.jsonl", batch_size=4, shard_size=4, strict=True)
    # Shards of the 20 documents before the bad line, but those still in the pipe when it was read.
    written = sorted(p.name for p in (tmp_path / "out.jsonl.parts").glob("*.jsonl"))
    assert len(written) >= 3 and written == [f"{i:08d}.jsonl" for i in range(len(written))]
    summary, messages = run(toy_pipeline, [path], tmp_path / "out.jsonl", batch_size=4, shard_size=4)
    assert (summary.kept_shards, summary.documents, summary.bad_records) == (len(written), 40 - 4 * len(written), 1)
    assert len(messages) == 1 and "in.jsonl:21" in messages[0]
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "clean.jsonl").read_bytes()


def test_shards_of_another_command_are_an_error(toy_pipeline, corpus, tmp_path):
    with pytest.raises(ArboError, match="bad.jsonl:1"):  # leaves the shards folder of a --strict run
        bad = tmp_path / "bad.jsonl"
        bad.write_text("nope\n")
        run(toy_pipeline, [bad], tmp_path / "out.jsonl", strict=True)
    with pytest.raises(ArboError, match=r"out.jsonl.parts holds the shards of another command .*inputs"):
        run(toy_pipeline, [corpus], tmp_path / "out.jsonl")


def test_pipeline_without_mention_finder_is_an_error_before_any_work(toy_kb_dir, corpus, tmp_path):
    from ..util import make_nlp

    make_nlp(toy_kb_dir, candidate_source="tfidf").to_disk(tmp_path / "linker_only")
    with pytest.raises(ArboError, match="linker_only: no component finds mentions"):
        run(tmp_path / "linker_only", [corpus], tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl.parts").exists() and not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("fmt, expected", [("pubtator", "d0\t14\t31\tdiabetes mellitus\tDisease\tMESH:D003920\n"),
                                           ("bioc", '<infon key="name">Diabetes Mellitus</infon>'),
                                           ("bioc-json", '"identifier": "MESH:D003920"')])
def test_text_formats(toy_pipeline, corpus, tmp_path, fmt, expected):
    run(toy_pipeline, [corpus], tmp_path / "out", fmt=fmt)
    assert expected in (tmp_path / "out").read_text()


def test_spacy_output_keeps_the_docs_named_by_id(toy_pipeline, corpus, tmp_path):
    run(toy_pipeline, [corpus], tmp_path / "out.spacy", fmt="spacy", batch_size=4, shard_size=8)
    docs = list(DocBin().from_disk(tmp_path / "out.spacy").get_docs(spacy.blank("en").vocab))
    assert [d.user_data["doc_id"] for d in docs] == [f"d{i}" for i in range(40)]
    assert [(e.text, e.kb_id_) for e in docs[1].ents] == [
        ("Wilson disease", "MESH:D006527"), ("WD", "MESH:D006527"), ("WD", "MESH:D006527")]


@pytest.fixture
def confidence_extension():
    added = not Span.has_extension("kb_confidence")
    if added:
        Span.set_extension("kb_confidence", default=None)
    yield
    if added:
        Span.remove_extension("kb_confidence")


def test_min_confidence_sends_unsure_links_to_review(toy_nlp, confidence_extension):
    doc = toy_nlp("Fever and coughing were reported.")
    doc.ents[0]._.kb_confidence, doc.ents[1]._.kb_confidence = 0.9, 0.2
    linked = LinkedDocuments(toy_nlp, min_confidence=0.5).document(Record("1", doc.text, "here"), doc)
    assert [(m["kb_id"], m["name"], m["confidence"], m.get("review")) for m in linked["mentions"]] == [
        ("MESH:D005334", "Fever", 0.9, None), ("NIL", None, 0.2, True)]


def test_min_confidence_without_confidences_is_an_error(toy_nlp, confidence_extension):
    docs = list(toy_nlp.pipe(["Fever and coughing.", "Wilson disease."]))
    for ent in (ent for doc in docs for ent in doc.ents):
        ent._.kb_confidence = None  # as a pipeline that computes none leaves it
    records = [Record("a", docs[0].text, "here"), Record("b", docs[1].text, "here")]
    with pytest.raises(ArboError, match=r"the pipeline set no span._.kb_confidence on the 3 mentions of documents a..b"):
        LinkedDocuments(toy_nlp, min_confidence=0.5).documents(records, docs)


def test_min_confidence_without_the_extension_is_an_error(toy_nlp):
    if Span.has_extension("kb_confidence"):
        pytest.skip("an installed component defines span._.kb_confidence")
    with pytest.raises(ArboError, match="this pipeline gives no confidence"):
        LinkedDocuments(toy_nlp, min_confidence=0.5)


def test_input_with_no_good_record_is_an_error_and_leaves_nothing(toy_pipeline, tmp_path):
    (tmp_path / "in.jsonl").write_text('{"text": 1}\n')
    with pytest.raises(ArboError, match=r"No document could be read from .*in.jsonl \(1 bad records\)"):
        run(toy_pipeline, [tmp_path / "in.jsonl"], tmp_path / "out.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
