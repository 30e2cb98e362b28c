"""Each component saves its settings in its `cfg`, as spaCy's EntityLinker does: `nlp.from_bytes`
keeps the components it has, so only their `cfg` brings back the settings they were saved with."""
import spacy
import srsly

from spacy_arbo.component_settings import CFG

from ..util import cross_encoder, hashed_model, links, make_nlp, make_reranker_nlp, unlinked

# Not today's defaults (hybrid, top_k 16, KB names first, calibrated confidence, composites split).
SAVED = {"top_k": 3, "composites": "whole", "confidence": False}


def settings_in_config(nlp, name):
    return {k: v for k, v in nlp.config["components"][name].items() if k in nlp.get_pipe(name).cfg}


def test_bytes_into_a_pipeline_made_with_other_settings_link_as_saved(toy_kb_dir, toy_docs):
    saved = make_nlp(toy_kb_dir, **SAVED)
    other = spacy.blank("en")
    other.add_pipe("arbo_linker", config={"model": hashed_model()})
    other.from_bytes(saved.to_bytes())
    assert other.get_pipe("arbo_linker").cfg == saved.get_pipe("arbo_linker").cfg
    # The pipeline's config follows, so that saving it again keeps them.
    assert settings_in_config(other, "arbo_linker") == saved.get_pipe("arbo_linker").cfg
    assert links(other.pipe(unlinked(other, toy_docs))) == links(saved.pipe(unlinked(saved, toy_docs)))


def test_to_disk_writes_the_settings_and_spacy_load_links_as_saved(tmp_path, toy_kb_dir, toy_docs):
    saved = make_nlp(toy_kb_dir, **SAVED)
    saved.to_disk(tmp_path / "p")
    assert srsly.read_json(tmp_path / "p" / "arbo_linker" / CFG) == saved.get_pipe("arbo_linker").cfg
    loaded = spacy.load(tmp_path / "p")
    assert loaded.get_pipe("arbo_linker").cfg == saved.get_pipe("arbo_linker").cfg
    assert links(loaded.pipe(unlinked(loaded, toy_docs))) == links(saved.pipe(unlinked(saved, toy_docs)))


def test_link_memory_saves_its_settings(tmp_path, toy_docs):
    nlp = spacy.blank("en")
    memory = nlp.add_pipe("link_memory", config={"min_count": 2, "min_share": 0.9, "fold_plurals": True})
    memory.add(toy_docs)
    other = spacy.blank("en")
    other.add_pipe("link_memory")
    other.from_bytes(nlp.to_bytes())
    assert other.get_pipe("link_memory").cfg == memory.cfg
    assert settings_in_config(other, "link_memory") == memory.cfg
    assert other.get_pipe("link_memory").links == memory.links
    nlp.to_disk(tmp_path / "p")
    assert srsly.read_json(tmp_path / "p" / "link_memory" / CFG) == memory.cfg


def test_multi_cross_reranker_saves_its_settings(tmp_path, tiny_bert_dir, toy_kb):
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, mode="parallel", top_n=3, threshold=0.4)
    reranker = nlp.get_pipe("multi_cross_reranker")
    other = spacy.blank("en")
    other.add_pipe("multi_cross_reranker", config={"model": cross_encoder(tiny_bert_dir)})
    other.from_bytes(nlp.to_bytes())
    assert other.get_pipe("multi_cross_reranker").cfg == reranker.cfg
    assert settings_in_config(other, "multi_cross_reranker") == reranker.cfg
    nlp.to_disk(tmp_path / "p")
    assert srsly.read_json(tmp_path / "p" / "multi_cross_reranker" / CFG) == reranker.cfg
