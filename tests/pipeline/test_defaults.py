"""The linker as `nlp.add_pipe("arbo_linker")` gives it, and pipelines saved before those defaults."""
from pathlib import Path

import pytest
import spacy
import srsly
from thinc.api import Config

from spacy_arbo.component_settings import CFG
from spacy_arbo.pipeline.linker.earlier_defaults import EARLIER_DEFAULTS, names_in_config_beside, settings_saved_without
from spacy_arbo.pipeline.linker.linker_settings import LinkerSettings

from ..conftest import make_doc
from ..util import DENSE_LINKER, hashed_model, make_nlp

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def linker_block(name):
    return Config().from_disk(CONFIGS / name, interpolate=False)["components"]["arbo_linker"]


def test_defaults_are_the_label_free_recipe():
    """The settings configs/kb_only.cfg spells out are the factory's (top_k aside: 16 by default,
    chosen on NCBI and BC5CDR dev); configs/zero_shot.cfg is the factory's linker as it comes."""
    defaults = LinkerSettings()
    recipe = {k: v for k, v in linker_block("kb_only.cfg").items() if k not in ("factory", "model", "top_k")}
    assert {k: getattr(defaults, k) for k in recipe} == recipe
    assert (defaults.candidate_source, defaults.index_aliases, defaults.kb_names_first) == ("hybrid", True, True)
    assert defaults.sparse_weight == 0.5 and defaults.top_k == 16 and defaults.entity_fields == []
    assert set(linker_block("zero_shot.cfg")) == {"factory", "model"}
    # The trained recipes keep the dense linker they were measured with.
    for config in ("retriever_plain.cfg", "retriever_arborescence.cfg", "tfidf.cfg"):
        block = linker_block(config)
        assert {k: block[k] for k in ("index_aliases", "sparse_weight", "kb_names_first")} == {
            "index_aliases": False, "sparse_weight": None, "kb_names_first": False}, config


def test_default_linker_links_aliases_and_names_first(toy_kb_dir):
    """Alias vectors and TF-IDF: "WD" and "coughing" are KB aliases, so the default linker gets
    them right where the dense name-only linker of the same (untrained) encoder need not."""
    nlp = spacy.blank("en")
    nlp.add_pipe("arbo_linker", config={"model": hashed_model()})
    nlp.config["initialize"]["components"]["arbo_linker"] = {
        "kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1", "path": str(toy_kb_dir)}}
    nlp.initialize()
    linker = nlp.get_pipe("arbo_linker")
    assert linker.retriever.tfidf is not None and len(linker.retriever.dense) > len(linker.kb)
    doc = nlp(make_doc(nlp, "Wilson disease (WD) is rare; coughing too.",
                       [("Wilson disease", ""), ("WD", ""), ("coughing", "")], with_ids=False))
    assert [ent.kb_id_ for ent in doc.ents] == ["MESH:D006527", "MESH:D006527", "MESH:D003371"]
    # A mention spelt as one entity's name is linked before encoding: one candidate, scored 1.
    assert doc.ents[0]._.kb_candidates == [("MESH:D006527", 1.0)]


@pytest.mark.parametrize("cfg", ["none", "without them"])
def test_pipeline_saved_before_the_defaults_keeps_its_settings(tmp_path, toy_kb_dir, cfg):
    """A linker saved before the settings whose defaults changed (its config.cfg, and its `cfg`
    when it has one, lack them) loads with the values it was made with, links as before, and
    keeps them when saved again. Saved before linkers had a `cfg`, its config.cfg says which
    settings it had."""
    nlp = make_nlp(toy_kb_dir)
    nlp.to_disk(tmp_path / "saved")
    config_file = tmp_path / "saved" / "config.cfg"
    dropped = {*DENSE_LINKER, "confidence", "induced_variants"}  # every saved config has top_k
    lines = [line for line in config_file.read_text().splitlines() if line.split(" = ")[0] not in dropped]
    config_file.write_text("\n".join(lines) + "\n")
    assert "kb_names_first" not in config_file.read_text()
    cfg_file = tmp_path / "saved" / "arbo_linker" / CFG
    if cfg == "none":
        cfg_file.unlink()
    else:
        srsly.write_json(cfg_file, {k: v for k, v in srsly.read_json(cfg_file).items() if k not in dropped})
    loaded = spacy.load(tmp_path / "saved")
    settings = loaded.get_pipe("arbo_linker").settings
    assert {k: getattr(settings, k) for k in EARLIER_DEFAULTS} == {**EARLIER_DEFAULTS, "top_k": 4}
    loaded.to_disk(tmp_path / "again")
    block = Config().from_disk(tmp_path / "again" / "config.cfg", interpolate=False)["components"]["arbo_linker"]
    assert {k: block[k] for k in DENSE_LINKER} == DENSE_LINKER and block["top_k"] == 4
    assert block["confidence"] is False and block["induced_variants"] is False
    assert srsly.read_json(tmp_path / "again" / "arbo_linker" / CFG) == loaded.get_pipe("arbo_linker").cfg
    # A setting given at load time (other than today's default, which the fill gives too) wins.
    given = spacy.load(tmp_path / "saved", config={"components": {"arbo_linker": {"candidate_source": "tfidf"}}})
    assert given.get_pipe("arbo_linker").settings.candidate_source == "tfidf"
    assert given.get_pipe("arbo_linker").settings.index_aliases is False
    doc = make_doc(nlp, "Fever and coughing were reported.", [("Fever", ""), ("coughing", "")], with_ids=False)
    first, second = nlp(doc.copy()), loaded(doc.copy())
    assert [e._.kb_candidates for e in first.ents] == [e._.kb_candidates for e in second.ents]


def test_earlier_defaults_fill_only_settings_saved_without_them():
    today = LinkerSettings()
    assert settings_saved_without(set(), today) == EARLIER_DEFAULTS
    assert settings_saved_without(set(EARLIER_DEFAULTS) - {"top_k"}, today) == {"top_k": 64}
    # One given at load time, other than today's default, stands.
    assert settings_saved_without(set(), LinkerSettings(top_k=4)) == {k: v for k, v in EARLIER_DEFAULTS.items()
                                                                      if k != "top_k"}


def test_a_component_folder_without_a_config_beside_it_names_no_settings(tmp_path):
    (tmp_path / "arbo_linker").mkdir()
    assert names_in_config_beside(tmp_path / "arbo_linker", "arbo_linker") is None
    (tmp_path / "config.cfg").write_text("[components]\n\n[components.other]\nfactory = \"ner\"\n")
    assert names_in_config_beside(tmp_path / "arbo_linker", "arbo_linker") is None
    (tmp_path / "config.cfg").write_text("[components]\n\n[components.arbo_linker]\ntop_k = 4\n")
    assert names_in_config_beside(tmp_path / "arbo_linker", "arbo_linker") == {"top_k"}


def test_repeated_mentions_are_searched_once(toy_kb_dir, monkeypatch):
    nlp = make_nlp(toy_kb_dir, candidate_source="hybrid", sparse_weight=0.5)
    linker = nlp.get_pipe("arbo_linker")
    searched = []
    tfidf = linker.retriever.ensure_tfidf()
    original = tfidf.search
    monkeypatch.setattr(tfidf, "search", lambda texts, k: searched.append(list(texts)) or original(texts, k))
    doc = make_doc(nlp, "Fever, fever and Fever again; coughing.",
                   [("Fever", ""), ("fever", ""), ("Fever", ""), ("coughing", "")], with_ids=False)
    doc = nlp(doc)
    assert searched == [["Fever", "fever", "coughing"]]
    assert doc.ents[0]._.kb_candidates == doc.ents[2]._.kb_candidates
    assert doc.ents[0]._.kb_candidates is not doc.ents[2]._.kb_candidates
