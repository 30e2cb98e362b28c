"""Knowledge units (GER's triplets) from hand-written sentences and KB records."""
import pytest
import spacy
from spacy.tokens import Doc, Span

from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.encoders.knowledge_units import first_clause, make_context_triplets, make_kb_triplets
from spacy_arbo.util import ArboError

from ..conftest import make_doc


def parsed(words, heads, deps):
    return Doc(spacy.blank("en").vocab, words=words, heads=heads, deps=deps)


def test_dependency_free_triplets_link_the_mentions_of_a_sentence():
    nlp = spacy.blank("en")
    doc = make_doc(nlp, "Patients with diabetes mellitus often develop heart failure. Fever was absent.",
                   [("diabetes mellitus", "D1"), ("heart failure", "D2"), ("Fever", "D3")])
    extract = make_context_triplets(window=2)
    assert extract(doc.ents[0]) == [("diabetes mellitus", "often develop", "heart failure"),
                                    ("Patients with", "diabetes mellitus", "often develop")]
    # The other sentence's mention is not related to it.
    assert extract(doc.ents[2]) == [("", "Fever", "was absent")]
    assert make_context_triplets(window=0)(doc.ents[2]) == []


def test_dependency_free_triplets_skip_distant_mentions():
    nlp = spacy.blank("en")
    doc = make_doc(nlp, "Fever , then after a very long and winding delay of many days , cough .",
                   [("Fever", "D1"), ("cough", "D2")])
    assert make_context_triplets(max_words=8, window=0)(doc.ents[0]) == []
    assert make_context_triplets(max_words=20, window=0)(doc.ents[0]) == [
        ("Fever", ", then after a very long and winding delay of many days ,", "cough")]


def test_parsed_triplets_follow_subject_verb_object():
    doc = parsed(["Mutations", "in", "ATP7B", "cause", "Wilson", "disease", "."],
                 [3, 0, 1, 3, 5, 3, 3], ["nsubj", "prep", "pobj", "ROOT", "compound", "dobj", "punct"])
    mention = Span(doc, 4, 6, label="Disease")
    assert make_context_triplets()(mention) == [("Mutations in ATP7B", "cause", "Wilson disease")]


def test_parsed_triplets_read_prepositional_objects_and_rank_the_mentions_own_first():
    doc = parsed(["Copper", "damages", "livers", ";", "the", "disease", "is", "caused", "by", "mutations", "."],
                 [1, 1, 1, 1, 5, 7, 7, 1, 7, 8, 7],
                 ["nsubj", "ROOT", "dobj", "punct", "det", "nsubjpass", "auxpass", "conj", "agent", "pobj", "punct"])
    mention = Span(doc, 4, 6, label="Disease")
    assert make_context_triplets()(mention) == [("the disease", "caused by", "mutations"),
                                                ("Copper", "damages", "livers")]


def test_kb_triplets_from_parents_definition_and_synonyms():
    kb = EntityStore([
        Entity("MESH:D1", "Wilson Disease", ("WD", "hepatolenticular degeneration"),
               "A rare inherited disorder, in which copper accumulates.", parents=("MESH:D2", "MESH:D9")),
        Entity("MESH:D2", "Metal Metabolism, Inborn Errors"),
    ])
    extract = make_kb_triplets(max_triplets=3)
    assert extract(kb["MESH:D1"], kb) == [
        ("Wilson Disease", "is a", "Metal Metabolism, Inborn Errors"),  # MESH:D9 is not in the KB
        ("Wilson Disease", "is", "A rare inherited disorder"),
        ("Wilson Disease", "also called", "WD"),
    ]
    assert make_kb_triplets(relations=["also_called"])(kb["MESH:D2"], kb) == []
    with pytest.raises(ArboError, match="relation"):
        make_kb_triplets(relations=["part_of"])


def test_first_clause():
    assert first_clause("An inflammation of the liver; often viral.", 12) == "An inflammation of the liver"
    assert first_clause("one two three four", 2) == "one two"
