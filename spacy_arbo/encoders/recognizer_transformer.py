"""spacy-transformers' Tok2VecTransformer with the linker's `precision`: bf16 on a CPU that has it.

thinc runs a transformer under autocast on CUDA only, so on a CPU a transformer recognizer reads
every document in fp32, and it is most of raw text's time. Here its passes without gradient
(linking raw text, scoring dev during training) run under bf16 autocast where `precision`
resolves to bf16, as the linker's towers do; updates stay fp32, as spacy-transformers trains.
The model is spacy-transformers' own, node for node, so a recognizer trained with
`spacy-transformers.Tok2VecTransformer.v3` loads under this architecture unchanged.
"""
from functools import partial
from typing import Any, Callable, Dict, List, Tuple

import torch
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Config, Model
from thinc.types import Floats2d, Ragged

from ..settings import check_choice
from ..util import ArboError
from .precision import resolve_precision

PRECISIONS = ("auto", "fp32", "bf16")
FLOAT_OUTPUTS = "_arbo_float_outputs"
ARCHITECTURE = "spacy_arbo.Tok2VecTransformer.v1"
# Architectures whose model this one builds node for node.
SAME_MODEL = ("spacy-transformers.Tok2VecTransformer.v3", ARCHITECTURE)


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
    where the CPU computes it natively, else fp32), "fp32" or "bf16"."""
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
    weights and reads in bf16."""
    check_choice("precision", precision, PRECISIONS)
    overrides = {}
    for name, component in config["components"].items():
        tok2vec = component.get("model", {}).get("tok2vec", {})
        if tok2vec.get("@architectures") in SAME_MODEL:
            overrides[f"components.{name}.model.tok2vec.@architectures"] = ARCHITECTURE
            overrides[f"components.{name}.model.tok2vec.precision"] = precision
    if not overrides:
        raise ArboError(f"No component has a transformer recognizer ({' or '.join(SAME_MODEL)}) to set the "
                        "precision of.")
    return overrides


def forward_in_precision(forward: Callable, precision: str, model: Model, docs: Any, is_train: bool) -> Tuple[Any, Callable]:
    """The transformer layer's forward, under bf16 autocast when it runs without gradient on a
    CPU where `precision` resolves to bf16."""
    shim = next(node for node in model.walk() if node.shims).shims[0]
    module = shim._model
    device = next(module.parameters()).device if module is not None else torch.device("cpu")
    if is_train or device.type != "cpu" or resolve_precision(precision, device) != "bf16":
        return forward(model, docs, is_train)
    if not getattr(module, FLOAT_OUTPUTS, False):
        # Deserialization makes a new module, so the hook is added on first use.
        module.register_forward_hook(_float_outputs)
        setattr(module, FLOAT_OUTPUTS, True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return forward(model, docs, is_train)


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
