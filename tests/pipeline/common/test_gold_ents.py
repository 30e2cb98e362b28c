"""The linker's input made from gold docs: the same tokens, mentions and labels, no ids, and
the gold doc left as it was."""
import spacy
from spacy.training import Example

from spacy_arbo.pipeline.common.gold_ents import strip_links, with_gold_mentions

from ...conftest import TOY_TEXTS, make_doc


def test_strip_links_keeps_mentions_and_drops_ids():
    gold = make_doc(spacy.blank("en"), *TOY_TEXTS[1])
    gold.user_data["doc_id"] = "PMID:1"
    stripped = strip_links(gold)
    assert [(e.start, e.end, e.label_, e.kb_id_) for e in stripped.ents] == [
        (e.start, e.end, e.label_, "") for e in gold.ents]
    assert all(e.kb_id_ for e in gold.ents) and stripped.user_data == gold.user_data
    # What spaCy's gold-entity copy of an Example gives, byte for byte.
    assert stripped.to_bytes() == with_gold_mentions([Example(gold, gold)])[0].predicted.to_bytes()
