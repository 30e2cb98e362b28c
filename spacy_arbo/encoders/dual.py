"""The dual encoder: a mention tower, an entity tower and a similarity (the maths only)."""
import hashlib
import math
from typing import Dict, List, Optional, Tuple

import srsly
import torch
from torch import nn

from ..torch_model import torch_bytes, torch_from_bytes
from ..util import ArboError
from .graph import GraphTower
from .hashed import HashedNgramTower
from .templates import EntityInput, MentionInput
from .tower import Tower
from .transformer import TransformerTower

SIMILARITIES = ("cosine", "dot")
TOWER_KINDS: Dict[str, type] = {
    TransformerTower.kind: TransformerTower, HashedNgramTower.kind: HashedNgramTower, GraphTower.kind: GraphTower,
}


class DualEncoder(nn.Module):
    """Scores s(m, e) = scale * <phi(m), psi(e)>, with phi, psi L2-normalised for cosine
    (DEER eq. 1-3: the learned scale maps cosines to logits) or raw for dot (BLINK)."""

    def __init__(
        self,
        mention_tower: Tower,
        entity_tower: Optional[Tower],
        similarity: str = "cosine",
        scale: float = 20.0,
        learn_scale: bool = True,
    ) -> None:
        super().__init__()
        if similarity not in SIMILARITIES:
            raise ArboError(f"Unknown similarity '{similarity}'; expected one of {SIMILARITIES}.")
        self.mention_tower = mention_tower
        self.shared = entity_tower is None or entity_tower is mention_tower
        self.entity_tower = mention_tower if self.shared else entity_tower
        if self.mention_tower.dim != self.entity_tower.dim:
            raise ArboError(
                f"Mention tower gives {self.mention_tower.dim}-d vectors but the entity tower "
                f"gives {self.entity_tower.dim}-d; they must match."
            )
        self.similarity = similarity
        self.log_scale = nn.Parameter(torch.tensor([math.log(scale)]), requires_grad=learn_scale)
        # DEER eq. 5: a_h, b_h map a similarity to the logit of the hard-negative classifier.
        self.logistic_calibration = nn.Parameter(torch.tensor([scale, -scale / 2]))

    @property
    def dim(self) -> int:
        return self.mention_tower.dim

    @property
    def knowledge_sides(self) -> Tuple[str, ...]:
        """The inputs whose knowledge units (triplets) a graph tower reads."""
        sides = [("mentions", self.mention_tower), ("entities", self.entity_tower)]
        return tuple(side for side, tower in sides if side in getattr(tower, "knowledge_sides", ()))

    def set_precision(self, precision: str) -> None:
        for tower in {id(t): t for t in (self.mention_tower, self.entity_tower)}.values():
            tower.set_precision(precision)

    @property
    def device(self) -> torch.device:
        return self.log_scale.device

    @property
    def scale(self) -> torch.Tensor:
        return self.log_scale.exp() if self.similarity == "cosine" else torch.ones_like(self.log_scale)

    def finish(self, vectors: torch.Tensor) -> torch.Tensor:
        return nn.functional.normalize(vectors, dim=-1) if self.similarity == "cosine" else vectors

    def embed_mentions(self, mentions: List[MentionInput]) -> torch.Tensor:
        if not mentions:
            return self.log_scale.new_zeros((0, self.dim))
        return self.finish(self.mention_tower.encode_mentions(mentions))

    def embed_entities(self, entities: List[EntityInput]) -> torch.Tensor:
        if not entities:
            return self.log_scale.new_zeros((0, self.dim))
        return self.finish(self.entity_tower.encode_entities(entities))

    def forward(self, mentions: List[MentionInput], entities: List[EntityInput]):
        return self.embed_mentions(mentions), self.embed_entities(entities)

    def score(self, mentions: torch.Tensor, entities: torch.Tensor) -> torch.Tensor:
        return self.scale * mentions @ entities.T

    def fingerprint(self, entities_only: bool = False) -> str:
        """Identifies the exact weights, so vectors and indexes made by another encoder
        (or by this one before training) are recognised as stale. `entities_only`: the
        weights entity vectors depend on, so an index outlives updates of a separate mention
        tower while the entity tower is frozen (with shared towers, every weight)."""
        digest = hashlib.sha1(self.similarity.encode("utf8"))
        weights = self.entity_tower.state_dict() if entities_only and not self.shared else self.state_dict()
        for name, tensor in sorted(weights.items()):
            digest.update(name.encode("utf8"))
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return digest.hexdigest()[:16]

    def to_files(self) -> Dict[str, bytes]:
        own = torch_bytes({"log_scale": self.log_scale.data, "logistic_calibration": self.logistic_calibration.data})
        files = {"dual.pt": own, "dual.json": srsly.json_dumps({
            "similarity": self.similarity, "shared": self.shared, "learn_scale": self.log_scale.requires_grad,
            "mention_kind": self.mention_tower.kind, "entity_kind": self.entity_tower.kind,
        }).encode("utf8")}
        towers = [("mention", self.mention_tower)] + ([] if self.shared else [("entity", self.entity_tower)])
        for prefix, tower in towers:
            files.update({f"{prefix}/{name}": data for name, data in tower.to_files().items()})
        return files

    @classmethod
    def from_files(cls, files: Dict[str, bytes]) -> "DualEncoder":
        try:
            settings = srsly.json_loads(files["dual.json"])

            def tower(prefix: str) -> Tower:
                kind = TOWER_KINDS[settings[f"{prefix}_kind"]]
                own = {k[len(prefix) + 1:]: v for k, v in files.items() if k.startswith(prefix + "/")}
                return kind.from_files(own)

            mention = tower("mention")
            entity = None if settings["shared"] else tower("entity")
            own = torch_from_bytes(files["dual.pt"])
        except (KeyError, ValueError, RuntimeError) as err:
            raise ArboError(f"Corrupt dual-encoder weights ({err!r}).") from None
        module = cls(mention, entity, settings["similarity"], learn_scale=settings["learn_scale"])
        with torch.no_grad():
            module.log_scale.copy_(own["log_scale"])
            module.logistic_calibration.copy_(own["logistic_calibration"])
        return module

