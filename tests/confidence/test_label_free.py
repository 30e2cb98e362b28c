import random

import spacy

from spacy_arbo.confidence.label_free import name_mentions, vary


def test_name_mentions_are_kb_names_in_sentences_and_repeat_with_the_seed(toy_kb):
    nlp = spacy.blank("en")
    docs, ids = name_mentions(toy_kb, nlp.vocab, nlp.make_doc, n=60, seed=3)
    again, again_ids = name_mentions(toy_kb, nlp.vocab, nlp.make_doc, n=60, seed=3)
    assert [d.text for d in docs] == [d.text for d in again] and ids == again_ids
    assert len(docs) == len(ids) > 50  # a few names may be split inside a token
    assert all(len(d.ents) == 1 and i in toy_kb for d, i in zip(docs, ids))
    names = {n.lower() for e in toy_kb for n in (e.name, *e.aliases)}
    as_written = sum(d.ents[0].text.lower() in names for d in docs)
    assert 0.3 * len(docs) < as_written < 0.8 * len(docs)


def test_a_small_kb_gets_a_few_names_per_entity(toy_kb):
    nlp = spacy.blank("en")
    docs, _ = name_mentions(toy_kb, nlp.vocab, nlp.make_doc, n=2000)
    assert len(docs) <= 20 * len(toy_kb)


def test_variants_differ_from_the_name():
    rng = random.Random(0)
    variants = [vary("hereditary breast cancer", rng, ["kidney"]) for _ in range(50)]
    assert sum(v != "hereditary breast cancer" for v in variants) > 40
    assert any("kidney" in v for v in variants) and any(len(v.split()) == 2 for v in variants)
