"""`propose_entities` and `suggested_parent`: clusters of NIL mentions that reach no KB entity become
proposals, numbered after the KB's own new ids, named by their mentions, placed in the hierarchy."""
import json

import numpy as np
import pytest

from spacy_arbo.discovery import Discovery, NilMention, Proposal, proposal_page, propose_entities, suggested_parent
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.linking.clustering import b_cubed_f1
from spacy_arbo.util import ArboError

# Root > Anemia > {Anemia, Hemolytic; Anemia, Aplastic}; Fever apart; NEW:00007 a proposal accepted earlier.
KB = EntityStore([
    Entity("D:ROOT", "Diseases"),
    Entity("D:ANEMIA", "Anemia", parents=("D:ROOT",)),
    Entity("D:HEMOLYTIC", "Anemia, Hemolytic", parents=("D:ANEMIA",)),
    Entity("D:APLASTIC", "Anemia, Aplastic", parents=("D:ANEMIA",)),
    Entity("D:FEVER", "Fever", parents=("D:ROOT",)),
    Entity("NEW:00007", "an accepted proposal"),
])


def rows(*ids):
    return [KB.row(i) for i in ids]


def unit(*values):
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def mention(doc, text, start=0):
    return NilMention(doc, start, start + len(text), text, "Disease", "left of it", "right of it")


def test_clusters_that_reach_no_entity_are_proposed_the_largest_first():
    mentions = [mention("1", "Fanconi anemia"), mention("2", "Fanconi anaemia"), mention("3", "Fanconi anemia"),
                mention("4", "pyrexia"), mention("5", "x-linked thing"), mention("6", "x-linked thing")]
    vectors = np.stack([unit(1, 0.05, 0), unit(1, 0, 0.05), unit(1, 0.02, 0.02),  # a new anemia
                        unit(0, 1, 0),  # next to Fever's vector: reaches it
                        unit(0, 0, 1), unit(0.05, 0, 1)])  # another new entity
    nearest = (np.array([rows("D:APLASTIC", "D:HEMOLYTIC")] * 3 + [rows("D:FEVER", "D:ROOT")]
                        + [rows("D:ROOT", "D:FEVER")] * 2),
               np.array([[0.65, 0.65]] * 3 + [[0.95, 0.2]] + [[0.3, 0.1]] * 2, dtype=np.float32))
    found = propose_entities(mentions, vectors, KB, nearest, min_similarity=0.9)
    assert [(p.concept_id, p.name, p.aliases, len(p.mentions)) for p in found.proposals] == [
        ("NEW:00008", "Fanconi anemia", ["Fanconi anaemia"], 3), ("NEW:00009", "x-linked thing", [], 2)]
    assert found.assigned == ["NEW:00008"] * 3 + ["D:FEVER"] + ["NEW:00009"] * 2
    assert found.joined == {"D:FEVER": 1}
    anemia = found.proposals[0]
    # Both nearest entities are anemias: their common parent, not the root.
    assert anemia.parent == ("D:ANEMIA", "Anemia")
    assert [e[0] for e in anemia.nearest] == ["D:HEMOLYTIC", "D:APLASTIC"]  # a tie: in KB order
    assert anemia.cohesion == pytest.approx(1.0, abs=0.01)
    record = anemia.record()
    assert (record["parents"], record["n_mentions"], record["n_documents"]) == (["D:ANEMIA"], 3, 3)
    assert [c["doc"] for c in record["contexts"]] == ["1", "2", "3"]
    assert "4 of" not in found.line() and found.line().startswith("6 NIL mentions: 2 proposed entities")
    # min_size 4: nothing big enough; each mention still has a cluster.
    small = propose_entities(mentions, vectors, KB, nearest, min_similarity=0.9, min_size=4)
    assert small.proposals == [] and small.assigned[0].startswith("cluster:")


def test_no_mentions_and_mismatched_vectors():
    empty = propose_entities([], np.zeros((0, 3), dtype=np.float32), KB, (None, None), min_similarity=0.9)
    assert (empty.proposals, empty.n_mentions) == ([], 0)
    with pytest.raises(ArboError, match="2 mentions but 1 vectors"):
        propose_entities([mention("1", "a"), mention("2", "b")], np.zeros((1, 3), dtype=np.float32), KB,
                         (np.zeros((1, 1), dtype=np.int64), np.zeros((1, 1))), min_similarity=0.9)


@pytest.mark.parametrize("ranked,parent", [
    ([("D:HEMOLYTIC", 0.8), ("D:APLASTIC", 0.7), ("D:FEVER", 0.3)], "D:ANEMIA"),  # their lowest common ancestor
    ([("D:HEMOLYTIC", 0.9)], "D:HEMOLYTIC"),  # one neighbour: the new entity sits under it
    ([("D:HEMOLYTIC", 0.5), ("D:FEVER", 0.5)], "D:ROOT"),
])
def test_the_suggested_parent_is_the_most_specific_that_holds_most_of_the_neighbours(ranked, parent):
    assert suggested_parent(KB, [(KB.row(i), s) for i, s in ranked])[0] == parent


def test_a_kb_without_hierarchy_suggests_no_parent():
    flat = EntityStore([Entity("A", "a"), Entity("B", "b")])
    assert suggested_parent(flat, [(0, 0.9), (1, 0.8)]) is None


def test_b_cubed_f1():
    assert b_cubed_f1("aabb", "xxyy") == 1.0
    assert b_cubed_f1("aaaa", "xxxy") == pytest.approx(2 * 0.625 / 1.625)
    with pytest.raises(ArboError, match="one label per mention"):
        b_cubed_f1("ab", "x")


def test_contexts_read_each_document_first_in_reading_order():
    mentions = [mention("d1", "a"), mention("d2", "a"), mention("d1", "a", start=10), mention("d3", "a")]
    proposal = Proposal("NEW:1", "a", [], "Disease", mentions, 1.0)
    assert [(m.doc, m.start) for m in proposal.contexts(4)] == [("d1", 0), ("d2", 0), ("d3", 0), ("d1", 10)]


def test_two_linkers_on_one_kb_add_their_joined_counts():
    one = Discovery([], [], [], 1, {"D:FEVER": 2}, 0.8, 2)
    other = Discovery([], [], [], 1, {"D:FEVER": 1, "D:ROOT": 1}, 0.8, 2)
    assert one.merged(other).joined == {"D:FEVER": 3, "D:ROOT": 1}


def test_the_page_keeps_a_hostile_mention_text_out_of_its_script():
    """A document's text inside the page's JSON could end or bend the script element ("</script>",
    "<!--<script"): the JSON holds no "<" at all."""
    hostile = "<!--<script>x</script>"
    found = propose_entities([mention("1", hostile), mention("2", hostile)],
                             np.stack([unit(1, 0, 0), unit(1, 0.01, 0)]), KB,
                             (np.array([rows("D:FEVER")] * 2), np.array([[0.1]] * 2, dtype=np.float32)))
    page = proposal_page("toy", found)
    script = page.split('<script type="application/json" id="records">')[1].split("</script>")[0]
    assert "<" not in script and json.loads(script)[0]["canonical_name"] == hostile
    assert hostile not in page
