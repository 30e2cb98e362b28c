"""spacy_arbo.Tok2VecTransformer.v1: the recognizer's transformer reads documents under bf16
autocast on a CPU, or on an int8 ONNX Runtime copy, when its precision says so, trains in fp32,
and is spacy-transformers' model node for node (a recognizer saved under Tok2VecTransformer.v3
loads and predicts the same, and `configure --recognizer-precision` moves one onto it)."""
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy
import pytest
import spacy
import torch
from spacy.training import Example
from thinc.api import Config

from spacy_arbo.cli import main
from spacy_arbo.encoders.quantized import Int8Copy
from spacy_arbo.encoders.recognizer_transformer import _SWAP_LOCK, INT8_COPY, _on_int8_copy, precision_overrides
from spacy_arbo.util import ArboError

from ..conftest import TOY_TEXTS, make_doc
from ..util import hide_onnx_runtime, make_nlp

TEXTS = [text for text, _ in TOY_TEXTS] + ["Heart failure and fever, then colorectal cancer."]


def load(path, precision):
    return spacy.load(path, config={"components": {"ner": {"model": {"tok2vec": {"precision": precision}}}}})


def transformer_module(nlp):
    return next(node for node in nlp.get_pipe("ner").model.walk() if node.shims).shims[0]._model


def autocast_seen(nlp):
    """Whether each later pass of the recognizer's transformer ran under CPU autocast."""
    seen = []
    transformer_module(nlp).register_forward_pre_hook(
        lambda _module, _args: seen.append(torch.is_autocast_enabled("cpu")))
    return seen


def mentions(docs):
    return [[(e.start_char, e.end_char) for e in doc.ents] for doc in docs]


def token_vectors(nlp):
    """The recognizer's tok2vec output for TEXTS, one array of every token's vector."""
    tok2vec = nlp.get_pipe("ner").model.get_ref("tok2vec")
    return numpy.vstack(tok2vec.predict([nlp.make_doc(text) for text in TEXTS]))


def row_cosines(a, b):
    return (a * b).sum(1) / (numpy.linalg.norm(a, axis=1) * numpy.linalg.norm(b, axis=1))


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


def test_int8_reads_on_onnx_runtime_close_to_fp32_and_saves_the_fp32_weights(trained_ner, tmp_path):
    _, tmp = trained_ner
    fp32, int8 = load(tmp / "out" / "model-last", "fp32"), load(tmp / "out" / "model-last", "int8")
    module = transformer_module(int8)
    seen = autocast_seen(int8)  # a hook on the torch transformer
    reference, quantized = token_vectors(fp32), token_vectors(int8)
    assert seen  # the first pass exported the transformer to ONNX...
    seen.clear()
    assert numpy.array_equal(token_vectors(int8), quantized) and not seen  # ...the next one read the copy
    assert quantized.shape == reference.shape and quantized.dtype == reference.dtype
    assert not numpy.array_equal(quantized, reference)  # really read by ONNX Runtime in int8
    assert row_cosines(quantized, reference).min() > 0.98
    assert mentions(int8.pipe(TEXTS)) == mentions(fp32.pipe(TEXTS))
    # The shim holds the transformer again after each pass; its weights are saved, nothing of the copy.
    assert transformer_module(int8) is module and getattr(module, INT8_COPY) is not None
    int8.to_disk(tmp_path / "int8")
    reloaded = spacy.load(tmp_path / "int8")
    assert reloaded.config["components"]["ner"]["model"]["tok2vec"]["precision"] == "int8"
    assert numpy.allclose(token_vectors(reloaded), quantized, atol=1e-5)  # same weights, same copy
    assert numpy.array_equal(token_vectors(load(tmp_path / "int8", "fp32")), reference)


def test_a_failed_int8_pass_gives_the_transformer_back(trained_ner, monkeypatch):
    _, tmp = trained_ner
    int8 = load(tmp / "out" / "model-last", "int8")
    module = transformer_module(int8)

    def fails(self, **inputs):
        raise RuntimeError("ONNX Runtime failed")

    monkeypatch.setattr(Int8Copy, "__call__", fails)
    with pytest.raises(RuntimeError, match="ONNX Runtime failed"):
        list(int8.pipe(TEXTS[:1]))
    assert transformer_module(int8) is module
    monkeypatch.undo()
    assert mentions(int8.pipe(TEXTS)) == mentions(load(tmp / "out" / "model-last", "fp32").pipe(TEXTS))


def test_int8_trains_in_fp32_and_its_copy_follows_the_weights(trained_ner):
    _, tmp = trained_ner
    int8 = load(tmp / "out" / "model-last", "int8")
    before = token_vectors(int8)
    seen = autocast_seen(int8)
    examples = [Example(int8.make_doc(text), make_doc(int8, text, gold)) for text, gold in TOY_TEXTS]
    optimizer = int8.resume_training()
    optimizer.learn_rate = 0.05
    int8.update(examples, sgd=optimizer)
    assert seen and not any(seen)  # the update ran the torch transformer, in fp32
    after = token_vectors(int8)  # on a copy remade from the new weights
    assert row_cosines(after, before).min() < 0.999
    fp32 = load(tmp / "out" / "model-last", "fp32")
    fp32.get_pipe("ner").from_bytes(int8.get_pipe("ner").to_bytes())
    assert row_cosines(after, token_vectors(fp32)).min() > 0.98


def test_int8_passes_in_threads_read_what_one_thread_reads(trained_ner):
    _, tmp = trained_ner
    int8 = load(tmp / "out" / "model-last", "int8")
    module = transformer_module(int8)
    alone = mentions(int8.pipe(TEXTS))
    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(lambda text: mentions([int8(text)])[0], TEXTS * 3))
    assert found == alone * 3 and transformer_module(int8) is module


def test_a_fork_waits_for_an_int8_swap_in_another_thread_to_end(monkeypatch):
    """Forked mid-swap, a child would find the lock held for good and the stand-in in the
    transformer's place."""
    monkeypatch.setattr(Int8Copy, "sync", lambda self, module: None)
    module = torch.nn.Linear(1, 1)
    shim = SimpleNamespace(_model=module)
    inside, leave = threading.Event(), threading.Event()

    def swap():
        with _on_int8_copy(shim):
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=swap)
    thread.start()
    assert inside.wait(10) and shim._model is not module
    threading.Timer(0.3, leave.set).start()
    pid = os.fork()
    if pid == 0:
        os._exit(0 if shim._model is module and _SWAP_LOCK.acquire(blocking=False) else 1)
    thread.join()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert shim._model is module and not _SWAP_LOCK.locked()


def test_int8_without_onnx_runtime_says_what_to_install(trained_ner, monkeypatch):
    _, tmp = trained_ner
    int8 = load(tmp / "out" / "model-last", "int8")
    hide_onnx_runtime(monkeypatch)
    with pytest.raises(ArboError, match=r"spacy-arbo\[onnx\]"):
        list(int8.pipe(TEXTS[:1]))


def test_unknown_precision_is_refused(trained_ner):
    _, tmp = trained_ner
    with pytest.raises(ArboError, match="precision"):
        load(tmp / "out" / "model-last", "fp16")


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


def test_overrides_find_a_transformer_concatenated_with_other_features():
    config = Config().from_str("""
[components]

[components.ner]
factory = "ner"

[components.ner.model]
@architectures = "spacy.TransitionBasedParser.v2"

[components.ner.model.tok2vec]
@layers = "concatenate.v1"

[components.ner.model.tok2vec.*.transformer]
@architectures = "spacy-transformers.Tok2VecTransformer.v3"

[components.ner.model.tok2vec.*.cnn]
@architectures = "spacy.HashEmbedCNN.v2"
""")
    assert precision_overrides(config, "int8") == {
        "components.ner.model.tok2vec.*.transformer.@architectures": "spacy_arbo.Tok2VecTransformer.v1",
        "components.ner.model.tok2vec.*.transformer.precision": "int8"}
