"""The thinc side of the dual encoder: a registered architecture wrapping the torch module."""
from functools import partial
from typing import Callable, List, Optional, Tuple

from spacy.util import registry
from thinc.api import ArgsKwargs, Model, torch2xp, xp2torch
from thinc.types import Floats2d

from ..torch_model import get_module, lazy_torch_model
from .dual import DualEncoder
from .templates import EntityInput, MentionInput
from .tower import Tower

DualInputs = Tuple[List[MentionInput], List[EntityInput]]
DualOutputs = Tuple[Floats2d, Floats2d]


@registry.architectures("spacy_arbo.DualEncoder.v1")
def build_dual_encoder(
    mention_tower: Callable[[], Tower],
    entity_tower: Optional[Callable[[], Tower]] = None,
    similarity: str = "cosine",
    scale: float = 20.0,
    learn_scale: bool = True,
) -> Model[DualInputs, DualOutputs]:
    """Two towers (one shared when `entity_tower` is None) and a similarity.

    The torch module is built in `initialize` (which loads pretrained weights) or by
    deserialization, so resolving a config never touches weights on disk.
    """

    build = partial(_build_dual_encoder, mention_tower, entity_tower, similarity, scale, learn_scale)
    return lazy_torch_model("dual encoder", forward, build, DualEncoder)


def _build_dual_encoder(
    mention_tower: Callable[[], Tower], entity_tower: Optional[Callable[[], Tower]], similarity: str,
    scale: float, learn_scale: bool,
) -> DualEncoder:
    return DualEncoder(mention_tower(), entity_tower() if entity_tower else None, similarity, scale, learn_scale)


def forward(model: Model, X: DualInputs, is_train: bool) -> Tuple[DualOutputs, Callable]:
    """(mentions, entities) -> (mention vectors, entity vectors); text inputs get no gradient."""
    get_module(model)
    (mentions, entities), torch_backprop = model.shims[0](ArgsKwargs(args=X, kwargs={}), is_train)

    def backprop(dY: DualOutputs) -> DualInputs:
        grads = tuple(xp2torch(d, device=mentions.device) for d in dY)
        torch_backprop(ArgsKwargs(args=((mentions, entities),), kwargs={"grad_tensors": grads}))
        return X

    return (torch2xp(mentions), torch2xp(entities)), backprop
