"""hold-out-kb: a seeded share of the entities an evaluation set mentions leaves the KB, their
mentions become NIL gold (a composite's only when every part left), training mentions follow,
and the output folder appears whole or not at all."""
import json

import pytest
import spacy
from spacy.tokens import DocBin

from spacy_arbo.cli import main
from spacy_arbo.corpora import out_of_kb, read_docbin
from spacy_arbo.corpora.out_of_kb import draw_held_out, hold_out_kb, hold_out_mentions, without_held_out
from spacy_arbo.kb.store import open_store
from spacy_arbo.util import ArboError

from ..conftest import TOY_ENTITIES, TOY_TEXTS, make_doc

FEVER, COUGH, DIABETES = "MESH:D005334", "MESH:D003371", "MESH:D003920"
# The toy texts, a composite mention of two toy entities, and a mention the KB never had.
EVAL_TEXTS = TOY_TEXTS + [
    ("Fever and cough were common; fever alone was rare.",
     [("Fever and cough", f"{FEVER}|{COUGH}"), ("fever", FEVER)]),
    ("A case of Zellweger syndrome.", [("Zellweger syndrome", "NIL")]),
]
TRAIN_TEXTS = [
    ("Diabetes and fever in children.", [("Diabetes", DIABETES), ("fever", FEVER)]),
    ("Cough or fever at onset.", [("Cough or fever", f"{COUGH}|{FEVER}")]),
]


def write_corpus(path, texts):
    nlp = spacy.blank("en")
    docs = [make_doc(nlp, text, mentions) for text, mentions in texts]
    for i, doc in enumerate(docs):
        doc.user_data["doc_id"] = f"doc{i}"
    DocBin(docs=docs, store_user_data=True).to_disk(path)
    return path


@pytest.fixture
def files(tmp_path, toy_kb_dir):
    return {"kb": toy_kb_dir, "eval": write_corpus(tmp_path / "eval.spacy", EVAL_TEXTS),
            "train": write_corpus(tmp_path / "train.spacy", TRAIN_TEXTS)}


def gold(path):
    return [[(ent.text, ent.kb_id_) for ent in doc.ents] for doc in read_docbin(path, spacy.blank("en").vocab)]


def test_one_seed_is_one_draw_and_another_seed_another(files, tmp_path):
    first = hold_out_kb(files["kb"], files["eval"], tmp_path / "a", share=0.5, seed=3)
    again = hold_out_kb(files["kb"], files["eval"], tmp_path / "b", share=0.5, seed=3)
    assert first["held_out"] == again["held_out"] and len(first["held_out"]) == 3  # half of the 6 mentioned
    assert gold(tmp_path / "a" / "eval.spacy") == gold(tmp_path / "b" / "eval.spacy")
    pool = [f"MESH:D{i:06d}" for i in range(100)]
    draws = {seed: draw_held_out(pool, 0.2, seed) for seed in range(3)}
    assert all(len(draw) == 20 and draw == sorted(draw) and set(draw) <= set(pool) for draw in draws.values())
    assert draws[0] == draw_held_out(list(reversed(pool)), 0.2, 0)  # the order given does not matter
    assert len({tuple(draw) for draw in draws.values()}) == 3
    assert draw_held_out(pool[:3], 0.1, 0) != []  # at least one entity


def test_mentions_of_held_out_entities_and_only_they_become_nil(files, tmp_path):
    record = hold_out_kb(files["kb"], files["eval"], tmp_path / "out", share=0.5, seed=0)
    held_out = set(record["held_out"])
    before, after = gold(files["eval"]), gold(tmp_path / "out" / "eval.spacy")
    assert [[text for text, _ in doc] for doc in after] == [[text for text, _ in doc] for doc in before]
    turned = 0
    for (text, old), (_, new) in zip(sum(before, []), sum(after, [])):
        parts = old.split("|")
        kept = [part for part in parts if part not in held_out]
        assert new == ("|".join(kept) or "NIL")
        turned += new == "NIL" and old != "NIL"
    assert record["eval_counts"]["turned_nil"] == turned == len(record["turned_nil"]) > 0
    assert record["eval_counts"]["already_nil"] == 1 and record["eval_counts"]["mentions"] == 11
    saved = json.loads((tmp_path / "out" / "held_out.json").read_text())
    assert saved == {**record, "turned_nil": [list(m) for m in record["turned_nil"]]}
    assert (saved["share"], saved["seed"], saved["entities_mentioned"]) == (0.5, 0, 6)


def test_a_composite_is_nil_only_when_every_part_is_held_out():
    assert without_held_out(f"{FEVER}|{COUGH}", {FEVER}) == COUGH
    assert without_held_out(f"{FEVER}|{COUGH}", {FEVER, COUGH}) == "NIL"
    assert without_held_out(f"{FEVER}|{COUGH}", {DIABETES}) == f"{FEVER}|{COUGH}"
    assert without_held_out("NIL", {FEVER}) == "NIL"
    nlp = spacy.blank("en")
    for held_out, composite, counts in (
            ({FEVER}, COUGH, (2, 0, 1)),  # "fever" alone and the toy text's "Fever" NIL; the composite keeps cough
            ({FEVER, COUGH}, "NIL", (4, 1, 0))):  # + "coughing", and the composite
        docs = [make_doc(nlp, text, mentions) for text, mentions in EVAL_TEXTS]
        reduction, turned = hold_out_mentions(docs, held_out, {})
        assert docs[4].ents[0].kb_id_ == composite
        assert (reduction.turned_nil, reduction.composites_nil, reduction.composites_reduced) == counts
        assert reduction.composites == 1 and len(turned) == reduction.turned_nil


def test_training_mentions_keep_their_spans_without_held_out_ids(files, tmp_path):
    record = hold_out_kb(files["kb"], files["eval"], tmp_path / "out", train_path=files["train"], share=0.5, seed=0)
    held_out = set(record["held_out"])
    before, after = gold(files["train"]), gold(tmp_path / "out" / "train.spacy")
    assert [[text for text, _ in doc] for doc in after] == [[text for text, _ in doc] for doc in before]
    assert not held_out & {part for doc in after for _, kb_id in doc for part in kb_id.split("|")}
    assert record["train_counts"]["mentions"] == 3
    assert not (tmp_path / "no_train").exists()
    hold_out_kb(files["kb"], files["eval"], tmp_path / "no_train", share=0.5, seed=0)
    assert sorted(p.name for p in (tmp_path / "no_train").iterdir()) == ["eval.spacy", "held_out.json", "kb"]


def test_the_kb_lacks_exactly_the_held_out_entities(files, tmp_path):
    record = hold_out_kb(files["kb"], files["eval"], tmp_path / "out", share=0.2, seed=1)
    kb = open_store(tmp_path / "out" / "kb")
    assert list(kb.ids) == [e[0] for e in TOY_ENTITIES if e[0] not in record["held_out"]]
    assert len(kb) == record["kb_entities"] == len(TOY_ENTITIES) - len(record["held_out"]) == 5
    full = open_store(files["kb"])
    assert all(kb[kb_id] == full[kb_id] for kb_id in kb.ids)  # names, aliases, definitions as they were


def test_a_failed_write_leaves_no_output(files, tmp_path, monkeypatch):
    def fail(*_args, **_kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(out_of_kb, "write_docbin", fail)
    with pytest.raises(OSError):
        hold_out_kb(files["kb"], files["eval"], tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.spacy", "kb", "train.spacy"]


@pytest.mark.parametrize("argv,message", [
    (["--share", "1"], "share takes a number in (0, 1); got 1.0."),
    (["--share", "0"], "share takes a number in (0, 1); got 0.0."),
    (["--train", "{tmp}/missing.spacy"], "missing.spacy' does not exist"),
])
def test_bad_options_are_one_line_and_write_nothing(files, tmp_path, capsys, argv, message):
    args = [arg.format(tmp=tmp_path) for arg in argv]
    assert main(["hold-out-kb", str(files["kb"]), str(files["eval"]), str(tmp_path / "out"), *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err
    assert not (tmp_path / "out").exists()


def test_a_missing_kb_or_a_corpus_without_gold_ids_is_named(files, tmp_path, capsys):
    assert main(["hold-out-kb", str(tmp_path / "nokb"), str(files["eval"]), str(tmp_path / "out")]) == 1
    assert f"KB directory '{tmp_path / 'nokb'}' does not exist" in capsys.readouterr().err
    no_ids = write_corpus(tmp_path / "no_ids.spacy", [("Fever again.", [("Fever", "")])])
    with pytest.raises(ArboError, match="no_ids.spacy: no mention with a gold id: there is no entity to hold out"):
        hold_out_kb(files["kb"], no_ids, tmp_path / "out")
    other_kb = write_corpus(tmp_path / "other.spacy", [("Fever again.", [("Fever", "HP:0001945")])])
    with pytest.raises(ArboError, match="none of its gold ids is in the KB"):
        hold_out_kb(files["kb"], other_kb, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_command_says_what_it_held_out(files, tmp_path, capsys):
    assert main(["hold-out-kb", str(files["kb"]), str(files["eval"]), str(tmp_path / "out"), "--train",
                 str(files["train"]), "--share", "0.5", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    record = json.loads((tmp_path / "out" / "held_out.json").read_text())
    assert f"Held out 3 of the 6 entities {files['eval']} mentions (share 0.5, seed 0); the KB keeps 3." in out
    assert f"{record['eval_counts']['turned_nil']} of 11 mentions now NIL (1 were NIL before)" in out
