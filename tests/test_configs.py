"""Every shipped config is complete (`spacy debug config` passes) and builds its pipeline, so
`spacy train` cannot fail on a typo or a missing framework key."""
from pathlib import Path

import pytest
from spacy.cli.debug_config import debug_config
from spacy.tokens import DocBin
from spacy.util import load_config, load_model_from_config

from spacy_arbo.kb.store import create_kb_loader
from spacy_arbo.util import ArboError

from .util import make_nlp

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.cfg"))


def path_overrides(path: Path, tmp_path: Path, toy_kb_dir: Path, toy_docs) -> dict:
    """The `--paths.*` a user passes on the command line, each pointing at a toy file."""
    DocBin(docs=toy_docs, store_user_data=True).to_disk(tmp_path / "toy.spacy")
    make_nlp(toy_kb_dir).to_disk(tmp_path / "retriever")
    given = {"kb": toy_kb_dir, "train": tmp_path / "toy.spacy", "dev": tmp_path / "toy.spacy",
             "retriever": tmp_path / "retriever"}
    paths = load_config(path)["paths"]
    return {f"paths.{k}": str(v) for k, v in given.items() if k in paths}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_builds_its_pipeline(path, tmp_path, toy_kb_dir, toy_docs):
    config = load_config(path, overrides=path_overrides(path, tmp_path, toy_kb_dir, toy_docs))
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    assert nlp.pipe_names == config["nlp"]["pipeline"]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_spacy_debug_config_passes(path, tmp_path, toy_kb_dir, toy_docs, capsys):
    # debug config validates without auto-filling: a framework key left out fails here.
    debug_config(path, overrides=path_overrides(path, tmp_path, toy_kb_dir, toy_docs))
    assert "Config is valid" in capsys.readouterr().out


def test_kb_loader_without_path_names_the_setting():
    with pytest.raises(ArboError, match="--paths.kb"):
        create_kb_loader(None)()
