"""With `kb_names_first`, a mention written as a KB name of one entity (an abbreviation read as
the long form its doc defines) is linked to it without being encoded; names of two entities,
other texts, what a link memory remembers and mentions whose candidates a reranker reads are not."""
from spacy_arbo.cli.linker_options import apply_settings
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.pipeline.linker.exact_names import candidates_read_after

from ...conftest import make_doc
from ...util import make_nlp, make_two_stage_nlp, unlinked
from ..test_memory_first import recorded_mentions

WILSON, DIABETES, COLORECTAL = "MESH:D006527", "MESH:D003920", "MESH:D015179"
TEXT = "WILSON-DISEASE, then WD, colon cancer and sugar trouble."
MENTIONS = [("WILSON-DISEASE", ""), ("WD", ""), ("colon cancer", ""), ("sugar trouble", "")]


def linked(nlp):
    encoded = recorded_mentions(nlp)
    doc = nlp(unlinked(nlp, [make_doc(nlp, TEXT, MENTIONS)])[0])
    return [(e.text, e.kb_id_, e._.kb_candidates[:1]) for e in doc.ents], encoded


def test_unambiguous_names_are_linked_without_encoding(toy_kb, tmp_path):
    # A second entity also named "WD" makes that name ambiguous.
    kb = EntityStore([*toy_kb, Entity("MESH:D999999", "Wandering disorder", ("WD",))], source="toy")
    kb.to_disk(tmp_path / "kb")
    links, encoded = linked(make_nlp(tmp_path / "kb", kb_names_first=True))
    assert links[0] == ("WILSON-DISEASE", WILSON, [(WILSON, 1.0)])
    assert links[2] == ("colon cancer", COLORECTAL, [(COLORECTAL, 1.0)])
    assert encoded == ["WD", "sugar trouble"]
    _, encoded_all = linked(make_nlp(tmp_path / "kb"))
    assert encoded_all == ["WILSON-DISEASE", "WD", "colon cancer", "sugar trouble"]


def test_a_link_memory_after_the_linker_wins_over_names(toy_kb_dir):
    nlp = make_nlp(toy_kb_dir, kb_names_first=True)
    nlp.add_pipe("link_memory", config={"min_count": 1, "min_share": 0.6}).add(
        [make_doc(nlp, "colon cancer", [("colon cancer", DIABETES)])])
    links, encoded = linked(nlp)
    assert links[2] == ("colon cancer", DIABETES, [(DIABETES, 1.0)])
    assert "colon cancer" not in encoded and "WILSON-DISEASE" not in encoded


def test_clustering_reads_every_mention(toy_kb_dir):
    _, encoded = linked(make_nlp(toy_kb_dir, kb_names_first=True, linking="clustering", candidate_source="dense"))
    assert "WILSON-DISEASE" in encoded


def test_an_abbreviation_is_read_as_the_long_form_its_doc_defines(toy_kb, tmp_path):
    # "WD" names two entities; this doc defines it as "Wilson disease", a name of one.
    kb = EntityStore([*toy_kb, Entity("MESH:D999999", "Wandering disorder", ("WD",))], source="toy")
    kb.to_disk(tmp_path / "kb")
    nlp = make_nlp(tmp_path / "kb", kb_names_first=True)
    encoded = recorded_mentions(nlp)
    text = "Wilson disease (WD) is rare; WD causes sugar trouble."
    doc = nlp(unlinked(nlp, [make_doc(nlp, text, [("WD", ""), ("WD", ""), ("sugar trouble", "")])])[0])
    assert [(e.kb_id_, e._.kb_candidates) for e in doc.ents[:2]] == [(WILSON, [(WILSON, 1.0)])] * 2
    assert encoded == ["sugar trouble"]


def test_no_mention_is_answered_by_name_before_a_reranker(tiny_bert_dir, toy_kb_dir):
    nlp = make_two_stage_nlp(tiny_bert_dir, toy_kb_dir)
    linker = nlp.get_pipe("arbo_linker")
    apply_settings([linker], ["kb_names_first=true"])
    assert candidates_read_after(nlp, linker)
    alone = make_nlp(toy_kb_dir, kb_names_first=True)
    assert not candidates_read_after(alone, alone.get_pipe("arbo_linker"))
    doc = make_doc(nlp, "colon cancer", [("colon cancer", "")])
    retrieved = list(linker.pipe(unlinked(nlp, [doc])))[0].ents[0]._.kb_candidates
    assert len(retrieved) == 4 and retrieved[0][0] == COLORECTAL  # by its name: one candidate


def test_a_kb_finders_proposals_are_left_to_the_linker(toy_kb, toy_kb_dir):
    nlp = make_nlp(toy_kb_dir, kb_names_first=True)
    finder = nlp.add_pipe("kb_mention_finder", before="arbo_linker", config={"mode": "add"})
    finder.initialize(nlp=nlp, kb_loader=lambda _vocab: toy_kb)
    encoded = recorded_mentions(nlp)
    doc = make_doc(nlp, "colon cancer with fever", [("colon cancer", "")], label="NER")
    doc = nlp.get_pipe("arbo_linker")(finder(doc))
    assert [s.text for s in doc.spans["kb_mentions"]] == ["fever"]
    assert encoded == ["fever"]  # the recognizer's "colon cancer" is linked by its name
    assert doc.ents[0]._.kb_candidates == [(COLORECTAL, 1.0)]
