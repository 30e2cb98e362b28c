"""The thinc side of the dual encoder: a registered architecture wrapping the torch module."""
from typing import Callable, List, Optional, Tuple

import srsly
from spacy.util import registry
from thinc.api import ArgsKwargs, Model, PyTorchShim, get_torch_default_device, torch2xp, xp2torch
from thinc.types import Floats2d

from ..util import ArboError
from .dual import DualEncoder
from .templates import EntityInput, MentionInput
from .tower import Tower

DualInputs = Tuple[List[MentionInput], List[EntityInput]]
DualOutputs = Tuple[Floats2d, Floats2d]


def _serialize(module: Optional[DualEncoder]) -> bytes:
    if module is None:
        raise ArboError("The dual encoder has no weights yet: initialize the pipeline first.")
    return srsly.msgpack_dumps(module.to_files())


def _deserialize(_module: Optional[DualEncoder], data: bytes, device) -> DualEncoder:
    return DualEncoder.from_files(srsly.msgpack_loads(data)).to(device)


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

    def build() -> DualEncoder:
        return DualEncoder(mention_tower(), entity_tower() if entity_tower else None,
                           similarity, scale, learn_scale)

    shim = PyTorchShim(None, serialize_model=_serialize, deserialize_model=_deserialize)
    return Model("dual_encoder", forward, init=init, shims=[shim], attrs={"build": build})


def init(model: Model, X=None, Y=None) -> None:
    shim = model.shims[0]
    if shim._model is None:
        shim._model = model.attrs["build"]().to(get_torch_default_device())


def get_module(model: Model) -> DualEncoder:
    module = model.shims[0]._model
    if module is None:
        raise ArboError("The dual encoder is not initialized: call nlp.initialize() or load a trained pipeline.")
    return module


def forward(model: Model, X: DualInputs, is_train: bool) -> Tuple[DualOutputs, Callable]:
    """(mentions, entities) -> (mention vectors, entity vectors); text inputs get no gradient."""
    get_module(model)
    (mentions, entities), torch_backprop = model.shims[0](ArgsKwargs(args=X, kwargs={}), is_train)

    def backprop(dY: DualOutputs) -> DualInputs:
        grads = tuple(xp2torch(d, device=mentions.device) for d in dY)
        torch_backprop(ArgsKwargs(args=((mentions, entities),), kwargs={"grad_tensors": grads}))
        return X

    return (torch2xp(mentions), torch2xp(entities)), backprop
