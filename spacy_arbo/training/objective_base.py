"""What every retriever training objective shares: the `TrainingState` it reads besides
the batch, the `Objective` interface the component calls, and the steps of turning
(mention, entity) edges into rows, columns and scores."""
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from ..encoders.dual import DualEncoder
from ..encoders.templates import EntityInput
from ..retrieval.retriever import EntityRetriever, exact_search
from ..util import ArboError
from .mentions import TrainingBatch, TrainingMentions


@dataclass
class TrainingState:
    """What an objective may read besides the batch: current weights, the retriever (its
    entity texts and last-refreshed index) and the training-mention cache."""

    module: DualEncoder
    retriever: EntityRetriever
    corpus: TrainingMentions
    rng: np.random.Generator

    @property
    def entity_inputs(self) -> List[EntityInput]:
        return self.retriever.entity_inputs()

    def embed_entities(self, rows: np.ndarray, encode: Optional[np.ndarray] = None) -> torch.Tensor:
        """Entity vectors of `rows`, encoded with gradient; with `encode`, only the rows in it
        are encoded and the others come from the last refresh (no gradient)."""
        inputs = self.entity_inputs
        if encode is None:
            return self.module.embed_entities([inputs[r] for r in rows])
        cache = self.retriever.entity_vectors
        if cache is None:
            raise ArboError("A cached entity objective needs the entity vectors of a refresh; none was made.")
        fresh = np.isin(rows, encode)
        encoded = self.module.embed_entities([inputs[r] for r in rows[fresh]])
        cached = torch.as_tensor(cache[rows[~fresh]], device=encoded.device, dtype=encoded.dtype)
        order = np.argsort(np.concatenate([np.flatnonzero(fresh), np.flatnonzero(~fresh)]), kind="stable")
        return torch.cat([encoded, cached])[torch.as_tensor(order, device=encoded.device)]

    def nearest_entities(self, vectors: np.ndarray, k: int) -> np.ndarray:
        """(n, k) entity rows by decreasing score, distinct per row, -1 padded."""
        return self.retriever.nearest_entities(vectors, k)

    def nearest_corpus_mentions(self, vectors: np.ndarray, k: int) -> np.ndarray:
        """(n, min(k, cached)) training-mention indices by decreasing similarity (cached vectors)."""
        cached = self.corpus.vectors
        if cached is None or not len(cached):
            return np.full((len(vectors), 0), -1, dtype=np.int64)
        return exact_search(vectors, cached, k)[0][:, : min(k, len(cached))]


def entity_rows(gold_rows: np.ndarray, negatives: np.ndarray) -> np.ndarray:
    """The entities an update embeds: gold and negative rows, once each, sorted."""
    return np.unique(np.concatenate([gold_rows, negatives[negatives >= 0]]))


def entity_columns(rows: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Positions of `wanted` entity rows in the sorted unique `rows`; -1 stays -1."""
    return np.where(wanted >= 0, np.searchsorted(rows, np.where(wanted >= 0, wanted, rows[0])), -1)


def gather_scores(scores: torch.Tensor, columns: np.ndarray) -> Tuple[torch.Tensor, torch.Tensor]:
    """scores[i, columns[i, j]], and the mask of real (non -1) columns."""
    mask = torch.as_tensor(columns >= 0, device=scores.device)
    index = torch.as_tensor(np.where(columns >= 0, columns, 0), dtype=torch.long, device=scores.device)
    return scores.gather(1, index), mask


def indices(values: Union[np.ndarray, Sequence[int]], like: torch.Tensor) -> torch.Tensor:
    """Row or column numbers as a long tensor on `like`'s device: indexes and targets built in
    numpy must follow the scores to the GPU."""
    return torch.as_tensor(np.asarray(values), dtype=torch.long, device=like.device)


def detached(vectors: torch.Tensor) -> np.ndarray:
    return vectors.detach().cpu().numpy().astype(np.float32)


class Objective:
    """Callable (state, batch) -> loss. `uses_index` and `uses_corpus_vectors` ask the
    component to keep the entity index and the training-mention cache fresh (both are
    refreshed every `refresh_every` updates)."""

    uses_index = False
    uses_corpus_vectors = False
    entity_cache = "none"

    def __call__(self, state: TrainingState, batch: TrainingBatch) -> torch.Tensor:
        raise NotImplementedError

    def measured_limits(self) -> Optional[str]:
        """What this setting was measured to do worse than hard negatives on real data, for
        the warning `spacy train` prints at initialization; None where nothing was."""
        return None

