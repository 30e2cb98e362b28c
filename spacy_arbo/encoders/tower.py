"""The interface every tower implements, so the dual encoder can mix kinds."""
from typing import Any, Dict, List, Tuple

import torch
from torch import nn

from .templates import EntityInput, MentionInput


class Tower(nn.Module):
    """Encodes mentions or entities into fixed-size vectors.

    Towers own their tokenization, so that a tower saved with the pipeline brings its
    vocabulary (and marker tokens) along.
    """

    kind: str = ""
    # What `set_precision` last set; towers without a transformer stay fp32.
    precision: str = "fp32"

    @property
    def dim(self) -> int:
        raise NotImplementedError

    def set_precision(self, precision: str) -> None:
        """"fp32", "bf16" or "int8" (see `precision.py`); towers without a transformer stay fp32."""

    def encode_mentions(self, mentions: List[MentionInput]) -> torch.Tensor:
        raise NotImplementedError

    def entity_input_embeddings(self, entities: List[EntityInput]) -> Tuple[torch.Tensor, Any]:
        """The entity inputs as the first differentiable tensor (plus what else the
        rest of the tower needs), so FGSM (PEL eq. 5-8) can perturb them."""
        raise NotImplementedError

    def encode_input_embeddings(self, embeddings: torch.Tensor, extra: Any) -> torch.Tensor:
        raise NotImplementedError

    def encode_entities(self, entities: List[EntityInput]) -> torch.Tensor:
        return self.encode_input_embeddings(*self.entity_input_embeddings(entities))

    def to_files(self) -> Dict[str, bytes]:
        """Everything needed to rebuild the tower without the original weights' path."""
        raise NotImplementedError
