"""int8 ONNX Runtime inference for the transformer, on CPUs (precision "int8").

ONNX Runtime's dynamic quantization (int8 weights per output channel, activations
quantized per batch) runs MiniLM about three times as fast as torch fp32 on a CPU, with
vectors within about 0.01 cosine of the fp32 ones; torch's own dynamic quantization
(weights per tensor) moved them by 0.08 and was dropped. Only passes without gradient use
it: index builds, refreshes during training, linking and reranking (see
docs/performance.md for what it costs in accuracy).
"""
import logging
import os
import tempfile
import warnings
import weakref
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
from torch import nn

from ..util import ArboError
from .precision import weights_checksum


def onnx_runtime():
    try:
        import onnxruntime.quantization  # its quantizer needs the onnx package too
    except ImportError as err:
        raise ArboError(
            f"precision 'int8' runs the transformer on ONNX Runtime, which is not installed ({err}): "
            "pip install 'spacy-arbo[onnx]', or set precision 'auto'."
        ) from None
    return onnxruntime


class _LastHiddenState(nn.Module):
    """The encoder called with named inputs in a fixed order, as the ONNX exporter wants."""

    def __init__(self, encoder: nn.Module, names: Tuple[str, ...]) -> None:
        super().__init__()
        self.encoder = encoder
        self.names = names

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.encoder(**dict(zip(self.names, inputs))).last_hidden_state


def _dynamic_axes(name: str, tensor: torch.Tensor) -> Dict[int, str]:
    """Batch and sequence length vary; a 3-d attention mask (the reranker's) is length x length."""
    axes = {0: "batch", 1: "length"}
    if name == "attention_mask" and tensor.dim() == 3:
        axes[2] = "length"
    return axes


def _trace_inputs(inputs: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """The first call's inputs, at least two rows, so the trace keeps the batch axis general."""
    if next(iter(inputs.values())).shape[0] > 1:
        return inputs
    return {name: torch.cat([t, t]) for name, t in inputs.items()}


# Every copy, so that a forked child (`nlp.pipe(n_process=2)`) sets aside the sessions it
# inherits and makes its own: their thread pools did not come with the fork, so a run on one
# never returns, nor does freeing one. Set aside, they are never freed (children leave by
# os._exit).
_COPIES: "weakref.WeakSet[Int8Copy]" = weakref.WeakSet()
_INHERITED_SESSIONS: List[object] = []


def _set_sessions_aside_in_child() -> None:
    for int8 in list(_COPIES):
        _INHERITED_SESSIONS.extend(int8._sessions.values())
        int8._sessions = {}


os.register_at_fork(after_in_child=_set_sessions_aside_in_child)


class Int8Copy:
    """An int8 ONNX Runtime copy of a transformer for passes without gradient. `sync`
    drops the copy when the original's weights have changed; the next call exports the
    encoder for that call's inputs (one session per set of input names and ranks: ids or
    input embeddings, 2-d or 3-d attention masks), quantizes it and keeps the session in
    memory. An export costs about two seconds, so callers sync once per encoding pass.
    Kept outside the module's parameters: it is never saved or trained."""

    def __init__(self) -> None:
        self._checksum: Optional[torch.Tensor] = None
        self._encoder: Optional[nn.Module] = None
        self._sessions: Dict[Tuple[Tuple[str, int], ...], object] = {}
        # False until `sync`; an owner sets it False when the weights may have changed since.
        self.checked = False
        _COPIES.add(self)

    @staticmethod
    def check_supported(encoder: nn.Module) -> None:
        if next(encoder.parameters()).device.type != "cpu":
            raise ArboError("precision = 'int8' runs on the CPU (ONNX Runtime); on a GPU use 'bf16' or 'auto'.")
        onnx_runtime()

    def sync(self, encoder: nn.Module) -> None:
        self.check_supported(encoder)
        checksum = weights_checksum(encoder)
        if self._checksum is None or not torch.equal(self._checksum, checksum) or self._encoder is not encoder:
            self._encoder, self._checksum, self._sessions = encoder, checksum, {}
        self.checked = True

    def __call__(self, **inputs: torch.Tensor) -> torch.Tensor:
        """The encoder's last hidden state, fp32."""
        if self._encoder is None:
            raise ArboError("Int8Copy.sync(encoder) must come before the first int8 pass.")
        key = tuple((name, t.dim()) for name, t in inputs.items())
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = self._quantized_session(inputs)
        feeds = {name: t.detach().cpu().numpy() for name, t in inputs.items()}
        feeds = {name: v.astype(np.float32 if v.dtype.kind == "f" else np.int64, copy=False)
                 for name, v in feeds.items()}
        return torch.from_numpy(session.run(None, feeds)[0])

    def _quantized_session(self, inputs: Dict[str, torch.Tensor]):
        ort = onnx_runtime()
        from onnxruntime.quantization import QuantType, quantize_dynamic

        names = tuple(inputs)
        sample = _trace_inputs({name: t.detach().cpu() for name, t in inputs.items()})
        sample = {name: t.float() if t.is_floating_point() else t for name, t in sample.items()}
        wrapper = _LastHiddenState(self._encoder, names)
        training = self._encoder.training
        with tempfile.TemporaryDirectory() as tmp:
            exported, quantized = Path(tmp) / "encoder.onnx", Path(tmp) / "encoder.int8.onnx"
            # The tracer warns about each Python branch it freezes; those of BERT's masks are
            # checked by the tests (any batch, any length, 3-d masks), so the warnings are noise.
            try:
                wrapper.eval()  # no dropout in the graph
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    torch.onnx.export(
                        wrapper, tuple(sample[n] for n in names), str(exported), input_names=list(names),
                        output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                        dynamic_axes={**{n: _dynamic_axes(n, sample[n]) for n in names},
                                      "last_hidden_state": {0: "batch", 1: "length"}},
                    )
            finally:
                self._encoder.train(training)
            previous = logging.root.manager.disable
            logging.disable(max(previous, logging.WARNING))  # the quantizer's advice, logged on every call
            try:
                quantize_dynamic(str(exported), str(quantized), weight_type=QuantType.QInt8, per_channel=True)
            finally:
                logging.disable(previous)
            model = quantized.read_bytes()
        options = ort.SessionOptions()
        options.intra_op_num_threads = torch.get_num_threads()
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    def __reduce__(self):  # copies and pickles start empty
        return (Int8Copy, ())
