"""The transformer's arithmetic: fp32, bf16 where the hardware does it natively, int8.

On a CPU with AMX (Intel Sapphire Rapids and later) or AVX512-BF16 (e.g. AMD Zen 4 and 5),
or a GPU with bf16 units, bf16 matmuls run the MiniLM tower two to three times as fast as
fp32, and its vectors stay within 1e-4 cosine of the fp32 ones; elsewhere bf16 is emulated
and slower, so "auto" keeps fp32 there. "int8" runs the passes without gradient on an int8
ONNX Runtime copy (`quantized.py`), three times as fast as fp32 on a CPU but 0 to 2 points
of accuracy lower depending on the model, so only on request; its passes with gradient run
as "auto"'s (see docs/performance.md).
"""
import copy
from functools import lru_cache
from typing import Optional

import torch
from torch import nn

from ..component_settings import check_choice
from .precision_names import PRECISIONS


@lru_cache(maxsize=None)
def _native_bf16(device_type: str) -> bool:
    if device_type == "cuda":
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if device_type == "cpu":
        checks = (getattr(torch.cpu, name, None) for name in ("_is_amx_tile_supported", "_is_avx512_bf16_supported"))
        return any(check is not None and check() for check in checks)
    return False


def resolve_precision(precision: str, device: torch.device) -> str:
    """"fp32", "bf16" or "int8": "auto" picks bf16 where `device` computes it natively."""
    check_choice("precision", precision, PRECISIONS)
    if precision != "auto":
        return precision
    return "bf16" if _native_bf16(device.type) else "fp32"


def autocast_gradient_passes(precision: str, device: torch.device) -> bool:
    """Whether passes with gradient run under bf16 autocast at a resolved `precision`."""
    return precision == "bf16" or (precision == "int8" and _native_bf16(device.type))


def weights_checksum(module: nn.Module) -> torch.Tensor:
    """One sum per parameter: it changes when an update by any route changes a weight."""
    with torch.no_grad():
        return torch.stack([p.detach().float().sum() for p in module.parameters()])


class Bf16Copy:
    """A bf16 copy of a module for passes without gradient. `sync` remakes it when the
    original's weights have changed (a checksum over every parameter, so an update by any
    route is seen); it costs about a batch's encoding, so callers sync once per pass over
    many batches. Kept outside the module's parameters: it is never saved or trained."""

    def __init__(self) -> None:
        self._checksum: Optional[torch.Tensor] = None
        self.module: Optional[nn.Module] = None
        # False until `sync`; an owner sets it False when the weights may have changed since.
        self.checked = False

    def sync(self, module: nn.Module) -> None:
        checksum = weights_checksum(module)
        if self._checksum is None or not torch.equal(self._checksum, checksum):
            with torch.no_grad():
                self.module = copy.deepcopy(module).to(torch.bfloat16).eval()
            self._checksum = checksum
        self.checked = True

    def __reduce__(self):  # copies and pickles start empty
        return (Bf16Copy, ())
