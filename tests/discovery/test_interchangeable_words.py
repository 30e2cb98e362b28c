"""Words a KB's names show to be interchangeable, and the NIL mentions discovery joins by them."""
from dataclasses import replace

from spacy_arbo.annotation.records import Record
from spacy_arbo.discovery import discover_corpus
from spacy_arbo.discovery.corpus_discovery import same_entity_pairs
from spacy_arbo.discovery.interchangeable_words import (
    MIN_NAME_PAIRS, interchangeable_pairs, interchangeable_words, name_words,
)
from spacy_arbo.discovery.nil_mentions import _nil_mention
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore

from ..util import make_nlp

ORGANS = ("Breast", "Lung", "Colon", "Skin", "Bone", "Liver", "Brain", "Kidney", "Ovarian", "Gastric", "Thyroid")


def _kb(n_organs=MIN_NAME_PAIRS):
    entities = [Entity(f"T:{i}", f"Neoplasms, {organ}", (f"{organ} cancer", f"{organ} tumour"), "")
                for i, organ in enumerate(ORGANS[:n_organs])]
    # Benign and malignant tumours of an organ are two entities; one pair of entities is not enough to tell.
    entities += [Entity(f"B:{i}", f"Benign {organ} Tumour", (), "") for i, organ in enumerate(ORGANS)]
    entities += [Entity(f"M:{i}", f"Malignant {organ} Tumour", (f"{organ} type 1 tumour", f"{organ} type 2 tumour"), "")
                 for i, organ in enumerate(ORGANS)]
    entities.append(Entity("F:1", "Fever", ("pyrexia",), ""))
    return EntityStore(entities, source="toy")


def test_names_of_one_entity_that_differ_by_one_word_make_it_interchangeable():
    assert name_words("Neoplasms, Breast") == ("breast", "neoplasms")
    assert name_words("Crohn's disease-like colitis") == ("crohn's", "disease-like", "colitis")
    assert interchangeable_words(_kb()) == {frozenset(("cancer", "neoplasms")), frozenset(("cancer", "tumour")),
                                            frozenset(("neoplasms", "tumour"))}
    # One entity fewer, and no pair has the evidence; "benign" / "malignant" name two entities, "1" / "2" is short.
    assert interchangeable_words(_kb(MIN_NAME_PAIRS - 1)) == set()


def _mentions(*texts, label="Disease"):
    record = Record("d", " ; ".join(texts), "doc d")
    mentions, start = [], 0
    for text in texts:
        begin = record.text.index(text, start)
        start = begin + len(text)
        mentions.append(_nil_mention(record, {"start": begin, "end": start, "label": label}))
    return mentions


def test_mentions_that_differ_by_an_interchangeable_word_or_not_at_all_are_paired():
    words = {frozenset(("cancer", "tumour"))}
    mentions = _mentions("lung tumour", "Lung cancer", "lung tumour", "lung carcinoma", "skin cancer", "tumour")
    assert interchangeable_pairs(mentions, words) == [(0, 1), (0, 2)]
    assert interchangeable_pairs(_mentions("tumour", "tumour", "tumour"), words) == [(0, 1), (1, 2)]  # a chain
    assert interchangeable_pairs(_mentions("DM", "DM", "tumour", "tumour"), words, apart={"DM"}) == [(2, 3)]
    assert interchangeable_pairs([mentions[0], replace(mentions[1], label="Chemical")], words) == []


def test_discovery_joins_mentions_the_kb_names_alike(tmp_path):
    docs = [("d1", "A tumour grew.", "tumour"), ("d2", "The tumour came back.", "tumour"),
            ("d3", "A cancer grew.", "cancer"), ("d4", "Her cancer spread.", "cancer")]
    records = [Record(doc_id, text, f"doc {doc_id}", gold=[{"start": text.index(word), "end": text.index(word) + len(word),
                                                           "text": word, "label": "Disease", "kb_id": "NIL"}])
               for doc_id, text, word in docs]
    found = {}
    for n_organs in (MIN_NAME_PAIRS, MIN_NAME_PAIRS - 1):
        _kb(n_organs).to_disk(tmp_path / f"kb{n_organs}")
        nlp = make_nlp(tmp_path / f"kb{n_organs}")
        result = discover_corpus(nlp, records, min_similarity=0.99, progress=False)
        found[n_organs] = sorted(sorted(m.text for m in p.mentions) for p in result.proposals)
    assert found[MIN_NAME_PAIRS] == [["cancer", "cancer", "tumour", "tumour"]]
    assert found[MIN_NAME_PAIRS - 1] == [["cancer", "cancer"], ["tumour", "tumour"]]


def test_a_short_form_defined_as_two_things_is_not_joined_for_being_written_alike():
    one = Record("1", "myotonic dystrophy (DM); DM", "doc 1")
    two = Record("2", "diabetes mellitus (DM); DM", "doc 2")
    mentions = [_nil_mention(record, {"start": start, "end": end, "label": "Disease"})
                for record, spans in ((one, [(0, 18), (20, 22), (25, 27)]), (two, [(0, 17), (19, 21), (24, 26)]))
                for start, end in spans]
    assert same_entity_pairs(mentions, _kb()) == []
    assert same_entity_pairs(mentions[:3], _kb()) == [(0, 1), (1, 2)]  # one meaning: defined, and written alike
