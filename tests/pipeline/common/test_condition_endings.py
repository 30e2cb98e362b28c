"""Words ending as the KB's condition names do ("nephrotoxicity") are proposed though the KB lacks them."""
import spacy

from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.pipeline.common.condition_endings import ending_spans, kb_endings


def test_an_ending_counts_where_a_kb_name_ends_a_word_with_it():
    assert kb_endings(["Cardiotoxicity", "Fever"]) == ("toxicity",)
    assert kb_endings(["Cardiac Toxicities", "Methacrylic Acid Toxicity"]) == ("toxicity", "toxicities")
    assert kb_endings(["Aspirin", "Toxic Shock"]) == ()


def test_every_word_with_the_ending_is_a_span():
    doc = spacy.blank("en")("Cisplatin nephrotoxicity and renal toxicities; non-toxicity.")
    assert [(s.text, s.label_) for s in ending_spans(doc, ("toxicity", "toxicities"), "Disease")] == [
        ("nephrotoxicity", "Disease"), ("toxicities", "Disease"), ("toxicity", "Disease")]
    assert ending_spans(doc, (), "Disease") == []


def test_the_kb_finder_proposes_them_where_its_kb_has_such_names(tmp_path):
    def finder_nlp(names):
        nlp = spacy.blank("en")
        kb = EntityStore([Entity(f"D{i}", name) for i, name in enumerate(names)], source="toy")
        nlp.add_pipe("kb_mention_finder").initialize(nlp=nlp, kb_loader=lambda _vocab: kb)
        return nlp

    text = "Gentamicin nephrotoxicity, renal toxicity and fever."
    nlp = finder_nlp(["Cardiotoxicity", "Fever"])
    assert [e.text for e in nlp(text).ents] == ["nephrotoxicity", "toxicity", "fever"]
    nlp.to_disk(tmp_path / "saved")
    assert [e.text for e in spacy.load(tmp_path / "saved")(text).ents] == ["nephrotoxicity", "toxicity", "fever"]
    assert [e.text for e in finder_nlp(["Aspirin", "Fever"])(text).ents] == ["fever"]
