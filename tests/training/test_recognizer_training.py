"""A recognizer learned from a toy KB and toy texts (configs/ner.cfg, the CNN, for speed)."""
from pathlib import Path

import pytest
import spacy

from spacy_arbo.cli import main
from spacy_arbo.corpora.silver_mentions import SilverCounts, SilverSettings, silver_docs
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.pipeline_loading import load_pipeline
from spacy_arbo.training.recognizer_training import RecognizerSettings, learn_recognizer, split_texts
from spacy_arbo.util import ArboError

from ..util import make_nlp

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "ner.cfg"
DISEASES = ["lung cancer", "colon cancer", "breast cancer", "skin cancer", "bladder cancer", "stomach cancer",
            "cystic fibrosis", "asthma", "migraine", "epilepsy", "liver fibrosis", "kidney stones"]
TEMPLATES = ["Patients with {} were treated with drug {}.", "We studied {} in {} families over ten years.",
             "The risk of {} rose with age in cohort {}."]
# No KB name spells "liver cancer" or "kidney cancer" (their words are in KB names).
UNSEEN = "Patients with liver cancer were treated with drug 12. The risk of kidney cancer rose with age in cohort 3."


def texts():
    return [template.format(disease, n) + " The drug was given twice daily."
            for n, disease in enumerate(DISEASES) for template in TEMPLATES]


def linker_dir(tmp_path, names):
    kb = EntityStore([Entity(f"D{i:03d}", name, [], "") for i, name in enumerate(names)], source="toy")
    kb.to_disk(tmp_path / "kb")
    path = tmp_path / "linker"
    make_nlp(tmp_path / "kb").to_disk(path)
    return path


def settings(**kwargs):
    overrides = {"training.max_steps": 300, "training.eval_frequency": 100, "training.patience": 0}
    return RecognizerSettings(CONFIG, overrides, **kwargs)


def test_silver_mentions_leave_words_no_kb_name_uses_as_text_and_the_rest_missing(tmp_path):
    nlp = load_pipeline(linker_dir(tmp_path, DISEASES))
    from spacy_arbo.cli.pipeline import add_kb_finder

    add_kb_finder(nlp)
    counts = SilverCounts()
    doc, = silver_docs(nlp, ["Patients with lung cancer got drug A for cancer."],
                       SilverSettings(unmatched="kb_words"), "Disease", counts)
    assert [(e.text, e.label_) for e in doc.ents] == [("lung cancer", "Disease")]
    # "cancer" alone is a word of KB names, not a name: missing; the other words: outside.
    assert {t.text: t.ent_iob_ for t in doc if not t.ent_type_} == {
        "Patients": "O", "with": "O", "got": "O", "drug": "O", "A": "O", "for": "O", "cancer": "", ".": "O"}
    assert (counts.docs, counts.mentions) == (1, 1)
    doc, = silver_docs(nlp, ["Patients with lung cancer got drug A for cancer."], SilverSettings(), "Disease")
    assert all(t.ent_iob_ == "O" for t in doc if not t.ent_type_)


def test_a_recognizer_learned_from_kb_names_finds_variants_the_kb_does_not_spell(tmp_path):
    path = linker_dir(tmp_path, DISEASES)
    finder_only = load_pipeline(path)
    from spacy_arbo.cli.pipeline import add_kb_finder

    add_kb_finder(finder_only)
    assert "liver cancer" not in [e.text for e in finder_only(UNSEEN).ents]

    nlp = learn_recognizer(lambda: load_pipeline(path), texts(), settings(keep_finder=False), tmp_path / "work")
    assert nlp.pipe_names == ["ner", "arbo_linker"]
    doc = nlp(UNSEEN)
    assert {"liver cancer", "kidney cancer"} <= {e.text for e in doc.ents}
    assert all(e.kb_id_.startswith("D") for e in doc.ents)
    # Round trip: the saved pipeline links the same.
    nlp.to_disk(tmp_path / "saved")
    loaded = spacy.load(tmp_path / "saved")
    again = loaded(UNSEEN)
    assert [(e.start, e.end, e.kb_id_) for e in again.ents] == [(e.start, e.end, e.kb_id_) for e in doc.ents]


def test_self_training_rounds_learn_from_the_recognizers_own_linked_mentions(tmp_path):
    from spacy.tokens import DocBin

    path = linker_dir(tmp_path, DISEASES)
    # The unseen variants are in the texts, missing values in round 0's silver (their words are KB
    # words); round 0's recognizer finds them, so round 1 learns them as mentions.
    nlp = learn_recognizer(lambda: load_pipeline(path), texts() + [UNSEEN] * 3,
                           settings(rounds=1, silver=SilverSettings(unmatched="kb_words")), tmp_path / "work")
    vocab = spacy.blank("en").vocab
    silver = {n: [e.text for d in DocBin().from_disk(tmp_path / "work" / f"round_{n}" / "train.spacy").get_docs(vocab)
                  for e in d.ents] for n in (0, 1)}
    assert "liver cancer" not in silver[0] and "liver cancer" in silver[1]
    assert nlp.pipe_names == ["ner", "kb_mention_finder", "arbo_linker", "kb_mention_filter"]


def test_learn_recognizer_command_writes_a_pipeline_with_the_kb_finder(tmp_path):
    path = linker_dir(tmp_path, DISEASES)
    (tmp_path / "texts").mkdir()
    for i, text in enumerate(texts()):
        (tmp_path / "texts" / f"{i}.txt").write_text(text, encoding="utf8")
    assert main(["learn-recognizer", str(path), str(tmp_path / "texts"), "-o", str(tmp_path / "out"),
                 "--config", str(CONFIG), "--max-steps", "200"]) == 0
    nlp = spacy.load(tmp_path / "out")
    assert nlp.pipe_names == ["ner", "kb_mention_finder", "arbo_linker", "kb_mention_filter"]
    # Found by the recognizer: no KB name spells it.
    assert "liver cancer" in [e.text for e in nlp(UNSEEN).ents]


def test_a_kb_file_is_learned_from_with_the_default_linker_over_it(tmp_path):
    import json

    (tmp_path / "kb.jsonl").write_text("".join(json.dumps({"concept_id": f"D{i:03d}", "canonical_name": name}) + "\n"
                                               for i, name in enumerate(DISEASES)), encoding="utf8")
    (tmp_path / "texts.jsonl").write_text("".join(json.dumps({"text": text}) + "\n" for text in texts()),
                                          encoding="utf8")
    assert main(["learn-recognizer", str(tmp_path / "kb.jsonl"), str(tmp_path / "texts.jsonl"), "-o",
                 str(tmp_path / "out"), "--config", str(CONFIG), "--max-steps", "200", "--no-kb-finder",
                 "--workdir", str(tmp_path / "work")]) == 0
    nlp = spacy.load(tmp_path / "out")
    assert nlp.pipe_names == ["ner", "arbo_linker"]
    assert len(nlp.get_pipe("arbo_linker").kb) == len(DISEASES)
    doc = nlp("Patients with asthma were treated with drug 4.")
    assert [(e.text, e.kb_id_) for e in doc.ents] == [("asthma", "D007")]


def test_learning_from_nothing_is_one_clear_message(tmp_path, capsys):
    path = linker_dir(tmp_path, DISEASES)
    (tmp_path / "empty").mkdir()
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "a.txt").write_text("The weather was fine and the trains ran on time.", encoding="utf8")
    one = linker_dir(tmp_path / "one", ["asthma"])
    capsys.readouterr()
    for source, folder, expected in [
        (path, "empty", "no documents in this folder"),
        (path, "plain", "None of the texts (1) mentions a name of the KB"),
        (one, "plain", "a KB of two entities or more"),
    ]:
        assert main(["learn-recognizer", str(source), str(tmp_path / folder), "-o", str(tmp_path / "out"),
                     "--config", str(CONFIG)]) == 1
        err = capsys.readouterr().err
        # One line, after progress bars (which end in a carriage return).
        assert expected in err.splitlines()[-1] and "Traceback" not in err and "Error" not in err
        assert not (tmp_path / "out").exists()
    with pytest.raises(ArboError, match="no such recognizer config"):
        RecognizerSettings(tmp_path / "missing.cfg")
    (tmp_path / "broken.cfg").write_text("[nlp\nlang = en\n", encoding="utf8")
    with pytest.raises(ArboError, match="broken.cfg: not a spacy train config"):
        RecognizerSettings(tmp_path / "broken.cfg")
    (tmp_path / "tagger.cfg").write_text(CONFIG.read_text(encoding="utf8").replace(
        'pipeline = ["ner"]', 'pipeline = ["tagger"]'), encoding="utf8")
    with pytest.raises(ArboError, match=r"tagger.cfg: its pipeline \(tagger\) has no 'ner' component"):
        RecognizerSettings(tmp_path / "tagger.cfg")


def test_train_and_dev_each_get_a_text():
    assert split_texts(["a"], 0.1, 0) == (["a"], ["a"])
    for share in (0.1, 0.75, 0.99):
        train, dev = split_texts(list("abcd"), share, 0)
        assert train and dev and sorted(train + dev) == list("abcd")
    assert split_texts(list("abcdefghij"), 0.2, 3) == split_texts(list("abcdefghij"), 0.2, 3)
