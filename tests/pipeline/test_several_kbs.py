"""One pipeline, a KB per entity label: each linker links the labels it is given to its own KB."""
import json

import pytest
import spacy
from spacy.tokens import Span

from spacy_arbo.annotation.runner import link_corpus
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.util import ArboError

from ..conftest import TOY_ENTITIES
from ..util import DENSE_LINKER, hashed_model

CHEMICALS = [("MESH:D008694", "Methamphetamine", ("meth",), ""), ("MESH:D003042", "Cocaine", (), ""),
             ("MESH:D000082", "Acetaminophen", ("paracetamol",), "")]
TEXT = "Fever after cocaine and paracetamol in heart failure."
MENTIONS = [("Fever", "Disease"), ("cocaine", "Chemical"), ("paracetamol", "Chemical"), ("heart failure", "Disease")]


def two_kb_nlp(tmp_path, chemical_labels=("Chemical",), disease_labels=("Disease",)):
    EntityStore([Entity(*e) for e in TOY_ENTITIES], source="diseases").to_disk(tmp_path / "diseases")
    EntityStore([Entity(*e) for e in CHEMICALS], source="chemicals").to_disk(tmp_path / "chemicals")
    nlp = spacy.blank("en")
    for name, kb, labels, seed in (("disease_linker", "diseases", disease_labels, 0),
                                   ("chemical_linker", "chemicals", chemical_labels, 1)):
        nlp.add_pipe("arbo_linker", name=name, config={"model": hashed_model(seed), "top_k": 3, **DENSE_LINKER,
                                                       "labels": list(labels)})
        nlp.config["initialize"]["components"][name] = {
            "kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1", "path": str(tmp_path / kb)}}
    nlp.initialize()
    return nlp


def doc_with_mentions(nlp):
    doc = nlp.make_doc(TEXT)
    doc.ents = [doc.char_span(TEXT.index(text), TEXT.index(text) + len(text), label=label) for text, label in MENTIONS]
    return doc


def links(doc):
    return [(e.text, e.label_, e.kb_id_, e._.kb_confidence) for e in doc.ents]


def test_each_label_goes_to_its_own_kb_and_survives_a_round_trip(tmp_path):
    nlp = two_kb_nlp(tmp_path)
    doc = nlp(doc_with_mentions(nlp))
    got = links(doc)
    assert [(t, label, kb_id) for t, label, kb_id, _ in got] == [
        ("Fever", "Disease", "MESH:D005334"), ("cocaine", "Chemical", "MESH:D003042"),
        ("paracetamol", "Chemical", "MESH:D000082"), ("heart failure", "Disease", "MESH:D006333")]
    # Each linker's label-free confidence is fitted on KB names labelled as it links them: a
    # Chemical linker fitted on names it left unlinked rated every link 0.001.
    assert all(confidence > 0.5 for *_, confidence in got), got
    nlp.to_disk(tmp_path / "two")
    loaded = spacy.load(tmp_path / "two")
    assert links(loaded(doc_with_mentions(loaded))) == got


def test_linkers_sharing_a_label_must_share_the_kb(tmp_path):
    from spacy_arbo.pipeline_loading import load_pipeline

    for number, chemical_labels in enumerate([("Chemical", "Disease"), ()]):  # (): every label
        two_kb_nlp(tmp_path, chemical_labels=chemical_labels).to_disk(tmp_path / f"p{number}")
        with pytest.raises(ArboError, match="link the same labels to different KBs: disease_linker .* chemical_linker"):
            load_pipeline(tmp_path / f"p{number}")
    two_kb_nlp(tmp_path).to_disk(tmp_path / "good")
    assert load_pipeline(tmp_path / "good").pipe_names == ["disease_linker", "chemical_linker"]


def test_link_says_which_kb_and_names_each_entity_from_its_own(tmp_path):
    nlp = two_kb_nlp(tmp_path)
    nlp.to_disk(tmp_path / "two")
    spans = [{"start": TEXT.index(t), "end": TEXT.index(t) + len(t), "text": t, "label": label} for t, label in MENTIONS]
    (tmp_path / "in.jsonl").write_text(json.dumps({"id": "a", "text": TEXT, "mentions": spans}) + "\n")
    link_corpus(tmp_path / "two", [tmp_path / "in.jsonl"], tmp_path / "out.jsonl", mentions="input",
                report=lambda line: None, progress=False)
    mentions = json.loads((tmp_path / "out.jsonl").read_text())["mentions"]
    assert [(m["text"], m["kb"], m["name"]) for m in mentions] == [
        ("Fever", "disease_linker", "Fever"), ("cocaine", "chemical_linker", "Cocaine"),
        ("paracetamol", "chemical_linker", "Acetaminophen"), ("heart failure", "disease_linker", "Heart Failure")]


def test_a_kb_finder_must_match_the_kb_its_label_is_linked_to(tmp_path):
    from spacy_arbo.cli.pipeline import add_kb_finder

    nlp = two_kb_nlp(tmp_path)
    add_kb_finder(nlp, label="Chemical")
    assert [(e.text, e.label_, e.kb_id_) for e in nlp("Cocaine and fever.").ents] == [
        ("Cocaine", "Chemical", "MESH:D003042")]
    finder = nlp.get_pipe("kb_mention_finder")
    finder.set_kb(nlp.get_pipe("disease_linker").kb)  # the diseases' names labelled Chemical
    with pytest.raises(ArboError, match="kb_mention_finder was made from another KB .* than the one chemical_linker"):
        nlp("Cocaine and fever.")


def test_add_linker_gives_the_labels_to_a_new_linker_and_the_old_ones_discard_them(tmp_path):
    from spacy_arbo.cli import main
    from spacy_arbo.kb.store import open_store

    from ..util import make_nlp

    EntityStore([Entity(*e) for e in TOY_ENTITIES], source="diseases").to_disk(tmp_path / "diseases")
    EntityStore([Entity(*e) for e in CHEMICALS], source="chemicals").to_disk(tmp_path / "chemicals")
    make_nlp(tmp_path / "diseases").to_disk(tmp_path / "one")
    assert main(["add-linker", str(tmp_path / "one"), str(tmp_path / "chemicals"), str(tmp_path / "two"),
                 "--labels", "Chemical,Drug"]) == 0
    nlp = spacy.load(tmp_path / "two")
    assert nlp.pipe_names == ["arbo_linker", "chemical_linker"]
    assert nlp.get_pipe("arbo_linker").settings.labels_discard == ["Chemical", "Drug"]
    assert nlp.get_pipe("chemical_linker").settings.labels == ["Chemical", "Drug"]
    assert len(nlp.get_pipe("chemical_linker").kb) == len(open_store(tmp_path / "chemicals")) == 3
    doc = nlp(doc_with_mentions(nlp))
    chemical_ids = {e[0] for e in CHEMICALS}
    assert [(e.text, e.kb_id_ in chemical_ids) for e in doc.ents] == [
        ("Fever", False), ("cocaine", True), ("paracetamol", True), ("heart failure", False)]
    assert [e.kb_id_ for e in doc.ents][::3] == ["MESH:D005334", "MESH:D006333"]
    assert main(["add-linker", str(tmp_path / "two"), str(tmp_path / "chemicals"), str(tmp_path / "three"),
                 "--labels", "Chemical"]) == 1  # the name is taken
