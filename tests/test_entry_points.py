"""Every entry point in setup.cfg resolves, so `add_pipe` and configs work with no import."""
import configparser
from importlib.metadata import entry_points
from pathlib import Path

import pytest

SETUP_CFG = Path(__file__).parents[1] / "setup.cfg"


def declared():
    parser = configparser.ConfigParser()
    parser.read(SETUP_CFG)
    for group, lines in parser["options.entry_points"].items():
        for line in filter(None, (l.strip() for l in lines.splitlines())):
            name, target = (part.strip() for part in line.split("="))
            yield group, name, target


@pytest.mark.parametrize("group,name,target", list(declared()))
def test_entry_point_is_installed_and_loads(group, name, target):
    installed = {ep.name: ep for ep in entry_points(group=group)}
    assert name in installed, f"{group}:{name} is not installed; reinstall the package"
    assert installed[name].value == target
    assert callable(installed[name].load())


def test_registries_resolve_without_import():
    import spacy
    from spacy.util import registry

    nlp = spacy.blank("en")
    nlp.add_pipe("arbo_linker")  # the factories, through the entry points
    nlp.add_pipe("multi_cross_reranker")
    assert registry.misc.get("spacy_arbo.KBFromDir.v1") and registry.misc.get("spacy_arbo.EmptyArboKB.v1")
    assert registry.scorers.get("spacy_arbo.arbo_linker_scorer.v1")
    assert registry.architectures.get("spacy_arbo.DualEncoder.v1")
    assert registry.readers.get("spacy_arbo.PubTatorCorpus.v1")
    assert registry.architectures.get("spacy_arbo.CrossEncoder.v1")
    assert registry.losses.get("spacy_arbo.arborescence.v1") and registry.losses.get("spacy_arbo.fgsm.v1")
