"""With `kb_names_first`, a mention written as a KB name of one entity is linked to it without
being encoded; names of two entities, other texts and what a link memory remembers are not."""
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore

from ..conftest import make_doc
from ..util import make_nlp, unlinked
from .test_memory_first import recorded_mentions

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
