"""Every shipped config resolves and builds its pipeline, so `spacy train` cannot fail on a typo."""
from pathlib import Path

import pytest
from spacy.util import load_config, load_model_from_config

from .util import make_nlp

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.cfg"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_builds_its_pipeline(path, tmp_path, toy_kb_dir):
    overrides = {"paths.kb": str(toy_kb_dir)}
    config = load_config(path)
    if "retriever" in config["paths"]:
        make_nlp(toy_kb_dir).to_disk(tmp_path / "retriever")
        overrides["paths.retriever"] = str(tmp_path / "retriever")
    config = load_config(path, overrides={k: v for k, v in overrides.items() if k.split(".")[1] in config["paths"]})
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    assert nlp.pipe_names == config["nlp"]["pipeline"]

