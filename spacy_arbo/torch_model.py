"""A thinc Model around a torch module that is built lazily and serialized whole.

Resolving a config must not load weights; `initialize` builds the module (loading
pretrained weights), and a saved pipeline brings the module's own files (config,
tokenizer, weights) so `spacy.load` needs none of the original paths.
"""
from typing import Callable, Optional, Type, TypeVar

import srsly
from thinc.api import Model, PyTorchShim, get_torch_default_device
from torch import nn

from .util import ArboError


M = TypeVar("M", bound=nn.Module)


def lazy_torch_model(name: str, forward: Callable, build: Callable[[], M], module_class: Type[M]) -> Model:
    """A Model whose single PyTorchShim holds `build()`'s module once initialized;
    `module_class` provides `to_files()` and `from_files(files)` for serialization."""

    def serialize(module: Optional[M]) -> bytes:
        if module is None:
            raise ArboError(f"The {name} has no weights yet: initialize the pipeline first.")
        return srsly.msgpack_dumps(module.to_files())

    def deserialize(_module: Optional[M], data: bytes, device) -> M:
        return module_class.from_files(srsly.msgpack_loads(data)).to(device)

    shim = PyTorchShim(None, serialize_model=serialize, deserialize_model=deserialize)
    return Model(name, forward, init=_init, shims=[shim], attrs={"build": build})


def _init(model: Model, X=None, Y=None) -> None:
    shim = model.shims[0]
    if shim._model is None:
        shim._model = model.attrs["build"]().to(get_torch_default_device())


def get_module(model: Model) -> nn.Module:
    module = model.shims[0]._model
    if module is None:
        raise ArboError(f"The {model.name} is not initialized: call nlp.initialize() or load a trained pipeline.")
    return module
