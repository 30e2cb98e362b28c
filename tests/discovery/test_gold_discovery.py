"""`discover` and `discover_entities`: what a pipeline proposes by default, ARI over mentions
paired by span, one linking pass, and one clear line where there is nothing to discover."""
import pytest
import spacy
from spacy.language import Language
from spacy.tokens import DocBin

from spacy_arbo.cli import main
from spacy_arbo.discovery import DISCOVERY_MIN_SIMILARITY, discover_entities
from spacy_arbo.pipeline.arbo_linker import ArboLinker

from ..conftest import make_doc
from ..util import make_nlp

FEVER, COUGH, HEART_FAILURE = "MESH:D005334", "MESH:D003371", "MESH:D006333"
# Two drugs the toy KB lacks (ids of another KB), each mentioned twice, among mentions of KB names.
TEXTS = [
    ("Fever and Cough after ibuprofen.", [("Fever", FEVER), ("Cough", COUGH), ("ibuprofen", "DRUG:1")]),
    ("Heart Failure on metformin and ibuprofen.",
     [("Heart Failure", HEART_FAILURE), ("metformin", "DRUG:2"), ("ibuprofen", "DRUG:1")]),
    ("Fever, metformin, Heart Failure.", [("Fever", FEVER), ("metformin", "DRUG:2"), ("Heart Failure", HEART_FAILURE)]),
]


@pytest.fixture
def docs():
    blank = spacy.blank("en")
    return [make_doc(blank, text, mentions) for text, mentions in TEXTS]


@pytest.fixture
def nlp(toy_kb_dir):
    # The tests change its settings: a pipeline of their own.
    return make_nlp(toy_kb_dir, composites="whole")


def proposed(result):
    return [(r["canonical_name"], [(m["doc"], m["start"], m["end"]) for m in r["mentions"]]) for r in result["records"]]


def test_default_threshold_proposes_the_entities_the_kb_lacks(nlp, docs):
    """min_similarity null (the factory's) cuts no edge, so every mention reached an entity
    and nothing was proposed: discovery clusters at DISCOVERY_MIN_SIMILARITY instead."""
    assert nlp.get_pipe("arbo_linker").settings.min_similarity is None
    result = discover_entities(nlp, docs)
    assert proposed(result) == [("ibuprofen", [(0, 22, 31), (1, 31, 40)]), ("metformin", [(1, 17, 26), (2, 7, 16)])]
    assert (result["min_similarity"], result["default_min_similarity"]) == (DISCOVERY_MIN_SIMILARITY, True)
    assert (result["n_gold_outside_kb"], result["n_outside_kb_proposed"], result["n_proposed_in_kb"]) == (4, 4, 0)
    assert result["ari"] == result["nil_ari"] == result["outside_kb_ari"] == 1.0


def test_a_pipeline_threshold_is_kept(nlp, docs):
    nlp.get_pipe("arbo_linker").configure(min_similarity=2.0)  # cuts every edge
    result = discover_entities(nlp, docs)
    assert len(result["records"]) == 9 and not result["default_min_similarity"]


@Language.component("test_discovery_shifted_mentions")
def shifted_mentions(doc):
    """A recognizer that disagrees with gold: adds "after" to the first doc, drops the first
    doc's "Heart Failure" (in the second doc)."""
    if doc.text.startswith("Fever and"):
        doc.ents = [*doc.ents, doc.char_span(16, 21, label="Disease")]
    elif doc.text.startswith("Heart"):
        doc.ents = doc.ents[1:]
    return doc


def test_ari_pairs_mentions_by_span(nlp, docs):
    """Paired by position, the extra "after" shifted every later pair (ARI -0.01 for clusters
    that score 1.0); paired by span, ARI is over the mentions both have, the others counted."""
    nlp.add_pipe("test_discovery_shifted_mentions", before="arbo_linker")
    result = discover_entities(nlp, docs)
    assert result["ari"] == 1.0 and result["outside_kb_ari"] == 1.0
    assert (result["n_mentions"], result["n_scored"], result["n_predicted_only"], result["n_gold_only"]) == (9, 8, 1, 1)
    assert [name for name, _ in proposed(result)] == ["after", "ibuprofen", "metformin"]


def test_discovery_links_once_and_refits_no_confidence(nlp, docs, monkeypatch):
    """Discovery reads no confidence: a changed setting used to refit it on the KB's names,
    linking them all (3 more batches here) before the corpus."""
    batches = []
    predict = ArboLinker.predict
    monkeypatch.setattr(ArboLinker, "predict", lambda self, batch: batches.append(len(batch)) or predict(self, batch))
    discover_entities(nlp, docs)
    assert batches == [3]


@pytest.fixture
def saved(tmp_path, nlp, docs):
    """A saved pipeline and the corpus, as the command reads them."""
    nlp.to_disk(tmp_path / "pipeline")
    DocBin(docs=docs, store_user_data=True).to_disk(tmp_path / "test.spacy")
    return tmp_path


def discover(tmp, *argv):
    return main(["discover", str(tmp / "pipeline"), str(tmp / "test.spacy"), "--output", str(tmp / "new.jsonl"),
                 *argv])


def test_discover_prints_what_it_found(saved, capsys):
    assert discover(saved) == 0
    out = capsys.readouterr().out
    assert "9 mentions, 4 in NIL clusters; 2 proposed entities (min size 2)" in out
    assert f"clustered at min_similarity {DISCOVERY_MIN_SIMILARITY} (discover's default" in out
    assert "4 clustered gold mentions are of entities the KB lacks: 4 of them proposed; 0 proposed mentions" in out
    assert len((saved / "new.jsonl").read_text().splitlines()) == 2


def one_line_error(capsys, *parts):
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and all(part in err for part in parts), err


def test_nothing_to_discover_is_said_in_one_line(saved, docs, capsys):
    tmp = saved
    blank = spacy.blank("en")
    # A corpus with no mention of an entity the KB lacks: nothing proposed, and why.
    DocBin(docs=[make_doc(blank, "Fever and Cough.", [("Fever", FEVER), ("Cough", COUGH)])]).to_disk(tmp / "test.spacy")
    assert discover(tmp) == 0
    out = capsys.readouterr().out
    assert "0 proposed entities" in out and "nothing proposed: every mention reached a KB entity" in out
    assert "no gold mention is of an entity the KB lacks" in out
    # The NIL clusters are all smaller than --min-size.
    DocBin(docs=docs).to_disk(tmp / "test.spacy")
    assert discover(tmp, "--min-size", "3") == 0
    assert "nothing proposed: no NIL cluster has 3 or more mentions" in capsys.readouterr().out
    # Docs without ents, an empty corpus: errors, and no file.
    (tmp / "new.jsonl").unlink()
    DocBin(docs=[blank("No mention here.")]).to_disk(tmp / "test.spacy")
    assert discover(tmp) == 1
    one_line_error(capsys, "No mentions to cluster")
    DocBin().to_disk(tmp / "test.spacy")
    assert discover(tmp) == 1
    one_line_error(capsys, "has no documents")
    assert not (tmp / "new.jsonl").exists()


@pytest.mark.parametrize("settings,message", [
    (["--set", "candidate_source=tfidf"], "discover clusters mention vectors, which arbo_linker cannot"),
    (["--set", "candidate_source=hybrid"], "reciprocal rank"),
    (["--set", "labels_discard=[\"Disease\"]"], "None of the 9 mentions was clustered"),
])
def test_a_pipeline_that_cannot_cluster_is_one_line(saved, capsys, settings, message):
    assert discover(saved, *settings) == 1
    one_line_error(capsys, message)
    assert not (saved / "new.jsonl").exists()


def test_a_pipeline_without_a_linker_is_one_line(tmp_path, docs, capsys):
    spacy.blank("en").to_disk(tmp_path / "pipeline")
    DocBin(docs=docs).to_disk(tmp_path / "test.spacy")
    assert discover(tmp_path) == 1
    one_line_error(capsys, "discover clusters with an arbo_linker; the pipeline has none")


def test_the_curators_loop_links_the_accepted_proposals_to_their_new_ids(saved, capsys):
    """discover -> a curator keeps the proposals -> kb add --new-only -> those mentions link to
    the new ids; proposal files with a duplicate id, an id the KB has or a broken line are refused
    with the line named, and the pipeline is left as it was."""
    import json

    from spacy_arbo.corpora import read_docbin

    tmp = saved
    assert discover(tmp) == 0
    records = [json.loads(line) for line in (tmp / "new.jsonl").read_text().splitlines()]
    assert [(r["concept_id"], r["canonical_name"]) for r in records] == [("NEW:00001", "ibuprofen"),
                                                                          ("NEW:00002", "metformin")]
    assert main(["kb", "add", str(tmp / "pipeline"), str(tmp / "new.jsonl"), "--new-only",
                 "--output", str(tmp / "accepted")]) == 0
    accepted = spacy.load(tmp / "accepted")
    docs = read_docbin(tmp / "test.spacy", accepted.vocab)
    linked = {(e.text, e.kb_id_) for doc in accepted.pipe(docs) for e in doc.ents}
    assert {("ibuprofen", "NEW:00001"), ("metformin", "NEW:00002")} <= linked
    assert {kb_id for text, kb_id in linked if text not in ("ibuprofen", "metformin")} == {FEVER, COUGH, HEART_FAILURE}

    before = sorted(p.name for p in (tmp / "pipeline").rglob("*"))
    lines = (tmp / "new.jsonl").read_text().splitlines()
    for name, bad, message in [
        ("dup.jsonl", [lines[0], lines[1], lines[0]], "dup.jsonl:3: duplicate id 'NEW:00001' (first defined on line 1)"),
        ("known.jsonl", [lines[0], json.dumps({"concept_id": FEVER, "canonical_name": "Fever again"})],
         f"known.jsonl:2: id '{FEVER}' is in the KB already (as '{FEVER}': Fever)"),
        ("broken.jsonl", [lines[0], '{"concept_id": "NEW:9", "canonical_'], "broken.jsonl:2"),
    ]:
        (tmp / name).write_text("\n".join(bad) + "\n")
        capsys.readouterr()
        assert main(["kb", "add", str(tmp / "pipeline"), str(tmp / name), "--new-only"]) == 1
        one_line_error(capsys, message)
    assert sorted(p.name for p in (tmp / "pipeline").rglob("*")) == before
    assert "NEW:00001" not in spacy.load(tmp / "pipeline").get_pipe("arbo_linker").kb
