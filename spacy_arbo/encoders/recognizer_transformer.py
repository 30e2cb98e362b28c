"""spacy-transformers' Tok2VecTransformer with the linker's `precision`: bf16 on a CPU that has it,
int8 on request.

thinc runs a transformer under autocast on CUDA only, so on a CPU a transformer recognizer reads
every document in fp32, and it is most of raw text's time. Here its passes without gradient
(linking raw text, scoring dev during training) run under bf16 autocast where `precision`
resolves to bf16, as the linker's towers do, or with "int8" on the linker's int8 ONNX Runtime
copy of the transformer (`quantized.Int8Copy`), for CPUs without bf16 units; updates stay fp32,
as spacy-transformers trains.
The model is spacy-transformers' own, node for node, so a recognizer trained with
`spacy-transformers.Tok2VecTransformer.v3` loads under this architecture unchanged.
"""
import os
import threading
from contextlib import contextmanager
from functools import partial
from typing import Any, Callable, Dict, Iterator, List, Tuple

import torch
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Config, Model
from thinc.types import Floats2d, Ragged
from transformers.modeling_outputs import BaseModelOutput

from ..component_settings import check_choice
from ..util import ArboError
from .precision import PRECISIONS, resolve_precision
from .quantized import Int8Copy

FLOAT_OUTPUTS = "_arbo_float_outputs"
ARCHITECTURE = "spacy_arbo.Tok2VecTransformer.v1"
# Architectures whose model this one builds node for node.
SAME_MODEL = ("spacy-transformers.Tok2VecTransformer.v3", ARCHITECTURE)
INT8_COPY = "_arbo_int8_copy"  # a plain attribute: not in the state dict, copied and pickled empty


@registry.architectures(ARCHITECTURE)
def build_tok2vec_transformer(
    name: str,
    get_spans: Callable,
    tokenizer_config: dict,
    pooling: Model[Ragged, Floats2d],
    grad_factor: float = 1.0,
    transformer_config: dict = {},
    mixed_precision: bool = False,
    grad_scaler_config: dict = {},
    precision: str = "auto",
) -> Model[List[Doc], List[Floats2d]]:
    """`spacy-transformers.Tok2VecTransformer.v3`'s arguments, and `precision`: "auto" (bf16
    where the CPU computes it natively, else fp32), "fp32", "bf16" or "int8" (ONNX Runtime, CPU
    only: `pip install 'spacy-arbo[onnx]'`)."""
    check_choice("precision", precision, PRECISIONS)
    model = registry.architectures.get("spacy-transformers.Tok2VecTransformer.v3")(
        name=name, get_spans=get_spans, tokenizer_config=tokenizer_config, pooling=pooling,
        grad_factor=grad_factor, transformer_config=transformer_config, mixed_precision=mixed_precision,
        grad_scaler_config=grad_scaler_config)
    transformer = next(node for node in model.walk() if node.name == "transformer")
    transformer._func = partial(forward_in_precision, transformer._func, precision)
    return model


def precision_overrides(config: Config, precision: str) -> Dict[str, str]:
    """Config overrides (dot notation) that load a saved pipeline's transformer recognizers
    under this architecture at `precision`: a recognizer trained before it existed keeps its
    weights and reads at that precision. A transformer anywhere in a recognizer's tok2vec
    counts (one concatenated with other features too)."""
    check_choice("precision", precision, PRECISIONS)
    overrides = {}
    for name, component in config["components"].items():
        for path in _transformer_sections(component.get("model", {}).get("tok2vec", {}), f"components.{name}.model.tok2vec"):
            overrides[f"{path}.@architectures"] = ARCHITECTURE
            overrides[f"{path}.precision"] = precision
    if not overrides:
        raise ArboError(f"No component has a transformer recognizer ({' or '.join(SAME_MODEL)}) to set the "
                        "precision of.")
    return overrides


def _transformer_sections(section: Any, path: str) -> Iterator[str]:
    if not isinstance(section, dict):
        return
    if section.get("@architectures") in SAME_MODEL:
        yield path
        return
    for key, value in section.items():
        yield from _transformer_sections(value, f"{path}.{key}")


def forward_in_precision(forward: Callable, precision: str, model: Model, docs: Any, is_train: bool) -> Tuple[Any, Callable]:
    """The transformer layer's forward, under bf16 autocast or on the int8 copy when it runs
    without gradient and `precision` resolves to bf16 on a CPU, or is int8."""
    shim = next(node for node in model.walk() if node.shims).shims[0]
    if is_train or shim._model is None:
        return forward(model, docs, is_train)
    if precision == "int8":
        with _on_int8_copy(shim):
            return forward(model, docs, is_train)
    module = shim._model
    device = next(module.parameters()).device
    if device.type != "cpu" or resolve_precision(precision, device) != "bf16":
        return forward(model, docs, is_train)
    if not getattr(module, FLOAT_OUTPUTS, False):
        # Deserialization makes a new module, so the hook is added on first use.
        module.register_forward_hook(_float_outputs)
        setattr(module, FLOAT_OUTPUTS, True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return forward(model, docs, is_train)


class _Int8Outputs(torch.nn.Module):
    """Stands in for the transformer in the shim for one pass: the int8 copy's last hidden
    state, in the ModelOutput that spacy-transformers reads."""

    def __init__(self, int8: Int8Copy) -> None:
        super().__init__()
        self.int8 = int8

    def forward(self, **inputs: torch.Tensor) -> BaseModelOutput:
        return BaseModelOutput(last_hidden_state=self.int8(**inputs))


# Held while a shim's transformer is swapped out, so that an int8 pass in another thread never
# finds the stand-in in its place (ONNX Runtime uses every core for one pass anyway). Saving or
# training a pipeline while another thread reads with it is not supported.
_SWAP_LOCK = threading.Lock()
# A process forked while another thread reads in int8 (`nlp.pipe(n_process=2)` beside a serving
# thread) would inherit the lock held for good and the stand-in in the transformer's place, so a
# fork waits for the swap to end.
os.register_at_fork(before=_SWAP_LOCK.acquire, after_in_parent=_SWAP_LOCK.release,
                    after_in_child=_SWAP_LOCK.release)


@contextmanager
def _on_int8_copy(shim: Any) -> Iterator[None]:
    """The shim's transformer replaced by its int8 copy, checked against its weights (so a
    copy made before an update is remade), and put back afterwards, so that saving and
    training only ever see the transformer."""
    with _SWAP_LOCK:
        module = shim._model
        int8 = getattr(module, INT8_COPY, None)
        if int8 is None:
            int8 = Int8Copy()
            setattr(module, INT8_COPY, int8)
        int8.sync(module)
        try:
            shim._model = _Int8Outputs(int8)
            yield
        finally:
            shim._model = module


def _float_outputs(module: torch.nn.Module, args: Any, output: Any) -> Any:
    """The module's outputs in fp32: thinc hands them to numpy, which has no bf16."""
    if torch.is_tensor(output):
        return output.float()
    if isinstance(output, tuple):
        return tuple(_float_outputs(module, args, value) for value in output)
    if isinstance(output, dict):  # transformers' ModelOutput
        for key, value in list(output.items()):
            output[key] = _float_outputs(module, args, value)
    return output
