"""A thinc Model around a torch module that is built lazily and serialized whole.

Resolving a config must not load weights; `initialize` builds the module (loading
pretrained weights), and a saved pipeline brings the module's own files (config,
tokenizer, weights) so `spacy.load` needs none of the original paths.
"""
import contextlib
import io
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Type, TypeVar, Union

import srsly
import torch
from thinc.api import Model, PyTorchShim, get_torch_default_device, xp2torch
from torch import nn

from .util import ArboError


M = TypeVar("M", bound=nn.Module)


def lazy_torch_model(name: str, forward: Callable, build: Callable[[], M], module_class: Type[M]) -> Model:
    """A Model whose single PyTorchShim holds `build()`'s module once initialized;
    `module_class` provides `to_files()` and `from_files(files)` for serialization."""

    # Partials of module-level functions rather than closures, so the model pickles.
    shim = TorchShim(None, serialize_model=partial(_serialize, name),
                     deserialize_model=partial(_deserialize, module_class))
    return TorchModel(name, forward, init=_init, shims=[shim], attrs={"build": build})


class TorchShim(PyTorchShim):
    """Reads the parameter averages under the keys thinc's optimizer stores them by,
    (shim id, parameter name): PyTorchShim looks for other keys, so with `use_averages = true`
    spaCy would evaluate and save the raw weights."""

    @contextlib.contextmanager
    def use_params(self, params):
        current = {} if self._model is None else dict(self._model.named_parameters())
        averaged = {name: xp2torch(params[(self.id, name)], device=self.device)
                    for name in current if (self.id, name) in params}
        if not averaged:
            yield
            return
        backup = {name: current[name].detach().clone() for name in averaged}
        _assign(current, averaged)
        try:
            yield
        finally:
            _assign(current, backup)


def _assign(parameters: Dict[str, nn.Parameter], values: Dict[str, torch.Tensor]) -> None:
    with torch.no_grad():
        for name, value in values.items():
            parameters[name].copy_(value)


def torch_bytes(value: Any) -> bytes:
    """`torch.save` into bytes: a module's own tensors among its `to_files`."""
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def torch_from_bytes(data: bytes) -> Any:
    return torch.load(io.BytesIO(data), map_location="cpu")


def _serialize(name: str, module: Optional[nn.Module]) -> bytes:
    if module is None:
        raise ArboError(f"The {name} has no weights yet: initialize the pipeline first.")
    return srsly.msgpack_dumps(module.to_files())


def _deserialize(module_class: Type[M], _module: Optional[M], data: bytes, device) -> M:
    return module_class.from_files(srsly.msgpack_loads(data)).to(device)


class TorchModel(Model):
    """A Model whose damaged or truncated weights file is an ArboError naming the file,
    not a msgpack or torch traceback from deep inside `spacy.load`."""

    __slots__ = ()

    def from_disk(self, path: Union[str, Path]) -> "TorchModel":
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as err:
            raise ArboError(f"{path}: cannot read the {self.name} weights ({err.strerror}).") from None
        return self._load(data, str(path))

    def from_bytes(self, bytes_data: bytes) -> "TorchModel":
        return self._load(bytes_data, f"serialized {self.name}")

    def _load(self, data: bytes, origin: str) -> "TorchModel":
        try:
            super().from_bytes(data)
        except ArboError:
            raise
        except Exception as err:  # msgpack, thinc and torch raise many unrelated types
            raise ArboError(
                f"{origin}: the {self.name} weights are corrupt, truncated or from another "
                f"architecture ({type(err).__name__}: {err}); re-save the pipeline with "
                "nlp.to_disk, or train it again."
            ) from None
        return self

    def _copy(self, seen: Optional[Dict[int, Any]] = None) -> "TorchModel":
        copied = super()._copy(seen)
        copied.__class__ = TorchModel  # thinc's copy builds a plain Model
        return copied


def _init(model: Model, X=None, Y=None) -> None:
    shim = model.shims[0]
    if shim._model is None:
        shim._model = model.attrs["build"]().to(get_torch_default_device())


def is_built(model: Model) -> bool:
    """Whether `initialize` or deserialization has given the model its torch module."""
    return model.shims[0]._model is not None


def get_module(model: Model) -> nn.Module:
    module = model.shims[0]._model
    if module is None:
        raise ArboError(f"The {model.name} is not initialized: call nlp.initialize() or load a trained pipeline.")
    return module
