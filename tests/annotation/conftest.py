"""A saved toy pipeline that finds mentions in raw text (the KB's names) and links them with
TF-IDF: fast enough for subprocess and Ray tests."""
import spacy
import pytest

from spacy_arbo.cli.pipeline import add_kb_finder
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore

from ..conftest import TOY_ENTITIES, TOY_TEXTS
from ..util import make_nlp


def save_toy_pipeline(root, **cfg):
    EntityStore([Entity(i, n, a, d) for i, n, a, d in TOY_ENTITIES], source="toy").to_disk(root / "kb")
    nlp = make_nlp(root / "kb", candidate_source="tfidf", **cfg)
    add_kb_finder(nlp)
    nlp.to_disk(root / "pipeline")
    return root / "pipeline"


@pytest.fixture(scope="session")
def toy_pipeline(tmp_path_factory):
    return save_toy_pipeline(tmp_path_factory.mktemp("toy_link"))


@pytest.fixture(scope="session")
def toy_pipeline_without_confidence(tmp_path_factory):
    """The toy pipeline with its linker's confidence off: span._.kb_confidence stays None."""
    return save_toy_pipeline(tmp_path_factory.mktemp("toy_link_no_confidence"), confidence=False)


@pytest.fixture(scope="session")
def toy_nlp(toy_pipeline):
    return spacy.load(toy_pipeline)


def toy_jsonl_lines(n):
    """n JSONL documents cycling through the toy texts, with an id and a kept field."""
    import json

    return "".join(json.dumps({"id": f"d{i}", "source": "toy", "text": TOY_TEXTS[i % len(TOY_TEXTS)][0]}) + "\n"
                   for i in range(n))
