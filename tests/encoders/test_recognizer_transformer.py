"""spacy_arbo.Tok2VecTransformer.v1: the recognizer's transformer reads documents under bf16
autocast on a CPU when its precision says so, trains in fp32, and is spacy-transformers' model
node for node (a recognizer saved under Tok2VecTransformer.v3 loads and predicts the same, and
`configure --recognizer-precision` moves one onto it)."""
import shutil

import pytest
import spacy
import torch
from spacy.training import Example

from spacy_arbo.cli import main
from spacy_arbo.util import ArboError

from ..conftest import TOY_TEXTS, make_doc
from ..util import make_nlp

TEXTS = [text for text, _ in TOY_TEXTS] + ["Heart failure and fever, then colorectal cancer."]


def load(path, precision):
    return spacy.load(path, config={"components": {"ner": {"model": {"tok2vec": {"precision": precision}}}}})


def autocast_seen(nlp):
    """Whether each later pass of the recognizer's transformer ran under CPU autocast."""
    seen = []
    module = next(node for node in nlp.get_pipe("ner").model.walk() if node.shims).shims[0]._model
    module.register_forward_pre_hook(lambda _module, _args: seen.append(torch.is_autocast_enabled("cpu")))
    return seen


def mentions(docs):
    return [[(e.start_char, e.end_char) for e in doc.ents] for doc in docs]


def test_bf16_reads_under_autocast_and_trains_without(trained_ner):
    _, tmp = trained_ner
    bf16 = load(tmp / "out" / "model-last", "bf16")
    seen = autocast_seen(bf16)
    found = mentions(bf16.pipe(TEXTS))
    assert seen and all(seen)
    assert found == mentions(load(tmp / "out" / "model-last", "fp32").pipe(TEXTS))
    seen.clear()
    examples = [Example(bf16.make_doc(text), make_doc(bf16, text, gold)) for text, gold in TOY_TEXTS]
    bf16.update(examples, sgd=None)
    assert seen and not any(seen)


def test_fp32_never_autocasts(trained_ner):
    _, tmp = trained_ner
    fp32 = load(tmp / "out" / "model-last", "fp32")
    seen = autocast_seen(fp32)
    list(fp32.pipe(TEXTS))
    assert seen and not any(seen)


def test_a_recognizer_saved_under_spacy_transformers_architecture_predicts_the_same(trained_ner, tmp_path):
    _, tmp = trained_ner
    shutil.copytree(tmp / "out" / "model-last", tmp_path / "v3")
    config = (tmp_path / "v3" / "config.cfg").read_text()
    assert 'precision = "auto"' in config
    (tmp_path / "v3" / "config.cfg").write_text(config.replace(
        '"spacy_arbo.Tok2VecTransformer.v1"', '"spacy-transformers.Tok2VecTransformer.v3"').replace(
        'precision = "auto"\n', ""))
    assert mentions(spacy.load(tmp_path / "v3").pipe(TEXTS)) == \
        mentions(load(tmp / "out" / "model-last", "fp32").pipe(TEXTS))


def test_unknown_precision_is_refused(trained_ner):
    _, tmp = trained_ner
    with pytest.raises(ArboError, match="precision"):
        load(tmp / "out" / "model-last", "int8")


def test_configure_moves_a_v3_recognizer_onto_it(trained_ner, tmp_path, capsys):
    _, tmp = trained_ner
    shutil.copytree(tmp / "out" / "model-last", tmp_path / "v3")
    config = (tmp_path / "v3" / "config.cfg").read_text()
    (tmp_path / "v3" / "config.cfg").write_text(config.replace(
        '"spacy_arbo.Tok2VecTransformer.v1"', '"spacy-transformers.Tok2VecTransformer.v3"').replace(
        'precision = "auto"\n', ""))
    assert main(["configure", str(tmp_path / "v3"), str(tmp_path / "bf16"), "--recognizer-precision", "bf16"]) == 0
    moved = spacy.load(tmp_path / "bf16")
    tok2vec = moved.config["components"]["ner"]["model"]["tok2vec"]
    assert (tok2vec["@architectures"], tok2vec["precision"]) == ("spacy_arbo.Tok2VecTransformer.v1", "bf16")
    seen = autocast_seen(moved)
    assert mentions(moved.pipe(TEXTS)) == mentions(spacy.load(tmp_path / "v3").pipe(TEXTS)) and all(seen)


def test_configure_names_a_pipeline_without_a_transformer_recognizer(toy_kb_dir, tmp_path, capsys):
    make_nlp(toy_kb_dir).to_disk(tmp_path / "linker")
    assert main(["configure", str(tmp_path / "linker"), str(tmp_path / "x"), "--recognizer-precision", "auto"]) == 1
    assert "No component has a transformer recognizer" in capsys.readouterr().err
