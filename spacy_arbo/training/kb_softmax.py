"""The softmax over every KB entity (DEER eq. 2-3 without the batch limit)."""
import torch

from ..util import ArboError
from . import losses
from .mentions import TrainingBatch
from .objective_base import Objective, TrainingState


class KBSoftmax(Objective):
    """DEER eq. 2-3 with every KB entity in the softmax instead of the batch's gold ones,
    scored against the entity vectors of the last refresh, so only the mention side gets a
    gradient. Exact with a separate, frozen entity tower (`frozen_layers` = all of them):
    its vectors never go stale, an update encodes mentions only, and every wrong entity
    is a negative for the cost of one (mentions x entities) product. With `index_aliases`
    the softmax runs over every vector the index holds, and the gold entity's name and
    aliases share the probability (`positive_set_softmax`), as linking scores an entity
    by its best vector."""

    uses_index = True
    entity_cache = "all"

    def __call__(self, state: TrainingState, batch: TrainingBatch) -> torch.Tensor:
        mentions = state.module.embed_mentions(batch.mentions)
        vectors, owners = state.retriever.text_vectors, state.retriever.text_owners
        if vectors is None:
            raise ArboError("kb_softmax needs the entity vectors of a refresh; none was made.")
        entities = torch.as_tensor(vectors, device=mentions.device, dtype=mentions.dtype)
        positive = torch.as_tensor(owners)[None, :] == torch.as_tensor(batch.gold_rows)[:, None]
        return losses.positive_set_softmax(state.module.score(mentions, entities), positive.to(mentions.device))

