import os
from pathlib import Path

import pytest

DATA_ENV = "SPACY_ARBO_DATA"


def shared_data_dir() -> Path:
    """The real-data mirror: $SPACY_ARBO_DATA, else ../shared/data beside the checkout."""
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def pytest_collection_modifyitems(config, items) -> None:
    """Tests marked `gpu` skip, with the reason printed by `-rs`, where torch sees no CUDA
    device: CI is CPU-only and never fails for lack of a GPU."""
    gpu_tests = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_tests:
        return
    import torch

    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="no CUDA device visible (torch.cuda.is_available() is False)")
        for item in gpu_tests:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def vector_cache_dir(tmp_path_factory) -> Path:
    """The entity-vector cache of this test session (subprocesses inherit it): tests never read
    entries an earlier run left in the user's cache, nor leave any there."""
    path = tmp_path_factory.mktemp("vector_cache")
    os.environ["SPACY_ARBO_CACHE"] = str(path)
    return path


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = shared_data_dir()
    if not (path / "ncbi_disease").is_dir():
        pytest.skip(f"real data not found at {path} (set {DATA_ENV})")
    return path


TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(
    set("patients with diabetes mellitus and heart failure colorectal cancer wilson disease fever "
        "cough a the of in high temperature metabolic disorder . , ( ) ; - ##s ##ed ##ing".split())
) + list("abcdefghijklmnopqrstuvwxyz0123456789") + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"]


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory) -> Path:
    """A randomly initialised two-layer BERT with a toy vocabulary, saved like a hub model."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path = tmp_path_factory.mktemp("tiny_bert")
    (path / "vocab.txt").write_text("\n".join(TINY_VOCAB) + "\n")
    BertTokenizerFast(vocab_file=str(path / "vocab.txt"), do_lower_case=True).save_pretrained(path)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(TINY_VOCAB), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    BertModel(config).save_pretrained(path)
    return path


TOY_ENTITIES = [
    ("MESH:D003920", "Diabetes Mellitus", ("DM", "diabetes"), "A metabolic disorder of high blood sugar."),
    ("MESH:D006527", "Hepatolenticular Degeneration", ("Wilson disease", "WD"), "Copper accumulates in the liver."),
    ("MESH:D015179", "Colorectal Neoplasms", ("colorectal cancer", "colon cancer"), ""),
    ("MESH:D005334", "Fever", ("pyrexia", "high temperature"), "Body temperature above normal."),
    ("MESH:D003371", "Cough", ("coughing",), ""),
    ("MESH:D006333", "Heart Failure", ("cardiac failure", "heart decompensation"), ""),
]

TOY_TEXTS = [
    ("Patients with diabetes mellitus often develop heart failure.",
     [("diabetes mellitus", "MESH:D003920"), ("heart failure", "MESH:D006333")]),
    ("Wilson disease (WD) is rare; WD causes copper build-up.",
     [("Wilson disease", "MESH:D006527"), ("WD", "MESH:D006527"), ("WD", "MESH:D006527")]),
    ("Fever and coughing were reported.", [("Fever", "MESH:D005334"), ("coughing", "MESH:D003371")]),
    ("A family history of colorectal cancer.", [("colorectal cancer", "MESH:D015179")]),
]


@pytest.fixture
def toy_kb():
    from spacy_arbo.kb.entities import Entity
    from spacy_arbo.kb.store import EntityStore

    return EntityStore([Entity(i, n, a, d) for i, n, a, d in TOY_ENTITIES], source="toy")


@pytest.fixture
def toy_kb_dir(tmp_path, toy_kb) -> Path:
    toy_kb.to_disk(tmp_path / "kb")
    return tmp_path / "kb"


def make_doc(nlp, text, mentions, label="Disease", with_ids=True):
    """A doc whose entities are the given (surface, kb_id) mentions, found left to right."""
    from spacy.tokens import Span

    doc = nlp.make_doc(text)
    spans, start = [], 0
    for surface, kb_id in mentions:
        begin = text.index(surface, start)
        start = begin + len(surface)
        span = doc.char_span(begin, start, label=label)
        spans.append(Span(doc, span.start, span.end, label=label, kb_id=kb_id if with_ids else ""))
    doc.ents = spans
    return doc


@pytest.fixture
def toy_docs():
    import spacy

    nlp = spacy.blank("en")
    return [make_doc(nlp, text, mentions) for text, mentions in TOY_TEXTS]


@pytest.fixture(scope="session")
def trained_ner(tiny_bert_dir, tmp_path_factory):
    """configs/ner_trf.cfg on the tiny random BERT, overfitted on the toy texts; and its folder."""
    import spacy
    from spacy.tokens import DocBin
    from spacy.training.initialize import init_nlp
    from spacy.training.loop import train
    from spacy.util import load_config

    import spacy_arbo  # noqa: F401  (the one-label augmenter and the encoder path)

    tmp = tmp_path_factory.mktemp("ner_trf")
    blank = spacy.blank("en")
    DocBin(docs=[make_doc(blank, text, mentions) for text, mentions in TOY_TEXTS] * 4).to_disk(tmp / "toy.spacy")
    config = load_config(Path(__file__).resolve().parents[1] / "configs" / "ner_trf.cfg", overrides={
        "paths.train": str(tmp / "toy.spacy"), "paths.dev": str(tmp / "toy.spacy"),
        "paths.encoder": str(tiny_bert_dir), "training.max_steps": 60, "training.eval_frequency": 60,
        "training.batcher.size": 64,
    })
    config["training"]["optimizer"]["learn_rate"] = 0.003
    nlp = init_nlp(config)
    (tmp / "out").mkdir()
    with open(tmp / "train.log", "w") as log:
        train(nlp, tmp / "out", stdout=log)
    return spacy.load(tmp / "out" / "model-last"), tmp
