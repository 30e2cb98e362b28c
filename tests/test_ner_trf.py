"""configs/ner_trf.cfg: the transformer recognizer trains with `spacy train`, finds what it was
taught, survives a round trip, and sources into a linking pipeline like the CNN one."""
import spacy

from spacy_arbo.cli.pipeline import add_recognizer
from spacy_arbo.evaluation import evaluate_end_to_end

from .conftest import TOY_TEXTS
from .util import make_nlp


def mentions(docs):
    return [[(e.start_char, e.end_char, e.label_) for e in doc.ents] for doc in docs]


def test_the_recognizer_learns_its_mentions(trained_ner):
    nlp, _ = trained_ner
    assert nlp.pipe_names == ["ner"]
    found = mentions(nlp.pipe(text for text, _ in TOY_TEXTS))
    gold = [[(text.index(s), text.index(s) + len(s), "Disease") for s, _ in ms] for text, ms in TOY_TEXTS]
    hits = sum(len(set(f) & set(g)) for f, g in zip(found, gold))
    assert hits >= 0.8 * sum(map(len, gold)), found


def test_round_trip_gives_identical_mentions(trained_ner):
    nlp, tmp = trained_ner
    texts = [text for text, _ in TOY_TEXTS] + ["Heart failure and fever, then colorectal cancer."]
    nlp.to_disk(tmp / "again")
    assert mentions(spacy.load(tmp / "again").pipe(texts)) == mentions(nlp.pipe(texts))


def test_sources_into_a_linking_pipeline(trained_ner, toy_kb_dir, toy_docs):
    recognizer, tmp = trained_ner
    linker = make_nlp(toy_kb_dir)
    add_recognizer(linker, recognizer)
    assert linker.pipe_names == ["ner", "mention_consistency", "arbo_linker"]
    linker.to_disk(tmp / "linked")
    loaded = spacy.load(tmp / "linked")
    metrics = evaluate_end_to_end(loaded, toy_docs)
    assert metrics["ner_f"] == evaluate_end_to_end(linker, toy_docs)["ner_f"] >= 0.8
    assert [[(e.text, e.kb_id_) for e in d.ents] for d in loaded.pipe(t for t, _ in TOY_TEXTS)] == \
        [[(e.text, e.kb_id_) for e in d.ents] for d in linker.pipe(t for t, _ in TOY_TEXTS)]
