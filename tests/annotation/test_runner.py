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
    bad = tmp_path / "bad.jsonl"
    bad.write_text(toy_jsonl_lines(12) + "nope\n")
    with pytest.raises(ArboError, match="bad.jsonl:13"):  # leaves the shards of a --strict run
        run(toy_pipeline, [bad], tmp_path / "out.jsonl", strict=True, batch_size=4, shard_size=4)
    assert (tmp_path / "out.jsonl.parts" / "00000000.jsonl").exists()
    with pytest.raises(ArboError, match=r"out.jsonl.parts holds the shards of another command .*inputs"):
        run(toy_pipeline, [corpus], tmp_path / "out.jsonl")


def test_a_run_stopped_before_its_first_shard_leaves_nothing(toy_pipeline, corpus, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("nope\n")
    with pytest.raises(ArboError, match="bad.jsonl:1"):
        run(toy_pipeline, [bad], tmp_path / "out.jsonl", strict=True)
    assert not (tmp_path / "out.jsonl.parts").exists()
    summary, _ = run(toy_pipeline, [corpus], tmp_path / "out.jsonl")
    assert summary.documents == 40


def test_a_ray_run_that_fails_on_its_first_shard_leaves_nothing(toy_pipeline, corpus, tmp_path, monkeypatch):
    """Ray sends a shard out (job.json written) before it is linked; a worker's error then."""
    def fail_on_first_shard(nlp, shards, output, *args):
        output.path_to_write(next(iter(shards))[0])
        raise ArboError("a worker died")

    monkeypatch.setattr("spacy_arbo.annotation.runner.link_here", fail_on_first_shard)
    with pytest.raises(ArboError, match="a worker died"):
        run(toy_pipeline, [corpus], tmp_path / "out.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


@pytest.mark.parametrize("mentionless", [0, 8])
def test_min_confidence_refused_leaves_nothing_and_the_advised_rerun_works(toy_pipeline_without_confidence, tmp_path,
                                                                             mentionless):
    """Refused on its first shard, or on a later one (the first shards had no mention to judge)."""
    path = tmp_path / "in.jsonl"
    path.write_text('{"text": "Nothing here."}\n' * mentionless + toy_jsonl_lines(8))
    with pytest.raises(ArboError, match=r"--min-confidence 0.5: the pipeline set no span._.kb_confidence on the "
                                        r"\d+ mentions of documents .*leave --min-confidence out."):
        run(toy_pipeline_without_confidence, [path], tmp_path / "out.jsonl", min_confidence=0.5, batch_size=4,
            shard_size=4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]
    summary, _ = run(toy_pipeline_without_confidence, [path], tmp_path / "out.jsonl", batch_size=4, shard_size=4)
    assert (summary.documents, summary.mentions, summary.kept_shards) == (mentionless + 8, 16, 0)


@pytest.mark.parametrize("value", [1.5, -0.1, float("nan")])
def test_min_confidence_outside_0_1_is_an_error_before_any_work(toy_pipeline, corpus, tmp_path, value):
    with pytest.raises(ArboError, match=rf"min_confidence takes a number in \[0, 1\] or null; got {value}."):
        run(toy_pipeline, [corpus], tmp_path / "out.jsonl", min_confidence=value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_output_that_is_a_folder_or_an_input_is_an_error_before_any_work(toy_pipeline, corpus, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(ArboError, match=r"out: a folder; --output takes the path of the file to write."):
        run(toy_pipeline, [corpus], tmp_path / "out")
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"
    with pytest.raises(ArboError, match=r"in.jsonl: one of the inputs; write the output to another file."):
        run(toy_pipeline, [tmp_path], tmp_path / "in.jsonl")
    assert (tmp_path / "in.jsonl").read_text() == toy_jsonl_lines(40)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out"]


def test_output_records_are_the_input_records_one_to_one(toy_pipeline, tmp_path):
    """Whitespace-only texts and records whose own annotations are bad are linked all the same."""
    (tmp_path / "a.txt").write_text("  \n")
    (tmp_path / "b.jsonl").write_text('{"id": "b1", "text": "\\t"}\n'
                                      '{"id": "b2", "text": "Fever", "mentions": [{"span": [0, 5]}]}\n')
    (tmp_path / "c.pubtator").write_text("c1|t|Fever\nc1|a|\nc1\t0\t50\tFever\tDisease\tD1\nc2|t|\nc2|a|\n")
    summary, messages = run(toy_pipeline, [tmp_path], tmp_path / "out.jsonl")
    documents = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [(d["id"], len(d["mentions"])) for d in documents] == [
        ("a", 0), ("b1", 0), ("b2", 1), ("c1", 1), ("c2", 0)]
    assert (summary.documents, summary.bad_records, summary.warnings) == (5, 0, 2) and len(messages) == 2
    assert summary.line("out.jsonl").endswith("; 0 bad records skipped, 2 warnings; wrote out.jsonl")


@pytest.mark.parametrize("fmt", ["bioc", "bioc-json"])
def test_bioc_output_keeps_what_min_confidence_holds_back(toy_pipeline, corpus, tmp_path, fmt):
    import bioc

    run(toy_pipeline, [corpus], tmp_path / "out.jsonl", min_confidence=1.0)
    run(toy_pipeline, [corpus], tmp_path / "out", fmt=fmt, min_confidence=1.0)
    expected = [m for line in (tmp_path / "out.jsonl").read_text().splitlines() for m in json.loads(line)["mentions"]]
    assert expected and all(m["review"] and m["kb_id"] == "NIL" for m in expected)
    assert expected[0]["proposed_kb_id"] == "MESH:D003920" and expected[0]["proposed_name"] == "Diabetes Mellitus"
    with open(tmp_path / "out", encoding="utf8") as handle:
        collection = bioc.biocxml.load(handle) if fmt == "bioc" else bioc.biocjson.load(handle)
    infons = [a.infons for d in collection.documents for p in d.passages for a in p.annotations]
    assert infons == [{"type": m["label"], "identifier": "NIL", **{
        key: value if isinstance(value, str) else json.dumps(value) for key, value in m.items()
        if key not in ("start", "end", "text", "label", "kb_id") and value is not None}} for m in expected]


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
    linked = LinkedDocuments(toy_nlp, min_confidence=0.5).documents([Record("1", doc.text, "here")], [doc])[0]
    assert [(m["kb_id"], m["name"], m["confidence"], m.get("review")) for m in linked["mentions"]] == [
        ("MESH:D005334", "Fever", 0.9, None), ("NIL", None, 0.2, True)]
    assert [(m.get("proposed_kb_id"), m.get("proposed_name")) for m in linked["mentions"]] == [
        (None, None), ("MESH:D003371", "Cough")]


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
