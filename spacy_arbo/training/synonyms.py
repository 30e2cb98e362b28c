"""Synonym pairs of a KB and the losses that pull them together: what self-alignment
(`self_alignment.py`) trains an encoder with.

SapBERT's self-alignment recipe on our own KB: batches of (name, other name of the same
entity) pairs, every other name in the batch a negative unless it names the same entity.
It teaches the encoder synonyms that no training mention shows (the entities a corpus
never mentions), and needs no labelled mention at all.
"""
from dataclasses import dataclass
from typing import AbstractSet, Callable, Dict, Iterable, Iterator, List, Sequence, Tuple

import numpy as np
import torch
from tqdm import tqdm

from ..encoders.templates import EntityInput
from ..encoders.tower import Tower
from ..kb.store import BaseEntityStore

# (text, entity row): one name of the KB, as `BaseEntityStore.alias_pairs` gives them.
Name = Tuple[str, int]
# (vectors of a batch's names, their entity rows) -> the loss to minimise.
PairLoss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class SynonymPair:
    name: str
    synonym: str
    row: int


def names_by_entity(kb: BaseEntityStore, hidden: AbstractSet[Name] = frozenset()) -> Dict[int, List[str]]:
    """Entity row -> its distinct names, leaving out the `hidden` ones."""
    names: Dict[int, List[str]] = {}
    for text, row in kb.alias_pairs():
        if (text, row) not in hidden:
            names.setdefault(row, []).append(text)
    return names


def synonym_pairs(kb: BaseEntityStore, rng: np.random.Generator,
                  hidden: AbstractSet[Name] = frozenset()) -> List[SynonymPair]:
    """One pair per name of every entity with at least two distinct names (the `hidden`
    ones left out as names and as synonyms): the name and another of its entity's names
    drawn at random; shuffled."""
    pairs = []
    for row, names in names_by_entity(kb, hidden).items():
        if len(names) < 2:
            continue
        for i, name in enumerate(names):
            other = int(rng.integers(len(names) - 1))
            pairs.append(SynonymPair(name, names[other + (other >= i)], row))
    order = rng.permutation(len(pairs))
    return [pairs[i] for i in order]


def multi_positive_infonce(vectors: torch.Tensor, labels: torch.Tensor, scale: float) -> torch.Tensor:
    """Mean over rows of -log(sum over same-label rows / sum over all other rows) of
    exp(scale * cosine); a row is never its own candidate."""
    vectors = torch.nn.functional.normalize(vectors, dim=-1)
    labels = labels.to(vectors.device)
    logits = scale * vectors @ vectors.T
    own = torch.eye(len(vectors), dtype=torch.bool, device=vectors.device)
    logits = logits.masked_fill(own, float("-inf"))
    positive = (labels[:, None] == labels[None, :]) & ~own
    log_all = torch.logsumexp(logits, dim=1)
    log_positive = torch.logsumexp(logits.masked_fill(~positive, float("-inf")), dim=1)
    return (log_all - log_positive).mean()


def hard_pair_masks(similarity: torch.Tensor, labels: torch.Tensor, margin: float) -> Tuple[torch.Tensor, torch.Tensor]:
    """SapBERT's online mining (a triplet miner over all triplets): the (positive,
    negative) pairs of the batch that take part in some triplet (anchor, positive,
    negative) whose negative lies within `margin` (Euclidean distance between unit
    vectors) of being as near to the anchor as the positive. Easy pairs teach nothing."""
    own = torch.eye(len(labels), dtype=torch.bool, device=similarity.device)
    same = labels[:, None] == labels[None, :]
    positive, negative = same & ~own, ~same
    distance = torch.sqrt((2.0 - 2.0 * similarity).clamp(min=0.0))
    farthest_positive = distance.masked_fill(~positive, float("-inf")).amax(1, keepdim=True)
    nearest_negative = distance.masked_fill(~negative, float("inf")).amin(1, keepdim=True)
    return positive & (distance >= nearest_negative - margin), negative & (distance <= farthest_positive + margin)


def _log_one_plus_sum_exp(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per row, log(1 + sum of exp(logits) over the masked entries): 0 for a row with none."""
    zeros = logits.new_zeros(len(logits), 1)
    return torch.logsumexp(torch.cat([zeros, logits.masked_fill(~mask, float("-inf"))], dim=1), dim=1)


def multi_similarity_loss(vectors: torch.Tensor, labels: torch.Tensor, alpha: float = 1.0, beta: float = 60.0,
                          base: float = 0.5, margin: float = 0.2) -> torch.Tensor:
    """The multi-similarity loss (Wang et al. 2019) over the hard pairs of the batch, as
    SapBERT trains with: per name, a soft maximum pulling its hard positives above
    cosine `base` and one pushing its hard negatives below it; the mean over names."""
    vectors = torch.nn.functional.normalize(vectors, dim=-1)
    labels = labels.to(vectors.device)
    similarity = vectors @ vectors.T
    with torch.no_grad():
        positive, negative = hard_pair_masks(similarity, labels, margin)
    pull = _log_one_plus_sum_exp(-alpha * (similarity - base), positive) / alpha
    push = _log_one_plus_sum_exp(beta * (similarity - base), negative) / beta
    return (pull + push).mean()


def pair_inputs(batch: Sequence[SynonymPair]) -> List[EntityInput]:
    """The batch's names, then their synonyms, as the entity tower reads a name."""
    return [EntityInput(p.name, "") for p in batch] + [EntityInput(p.synonym, "") for p in batch]


def batches(pairs: Sequence[SynonymPair], size: int) -> Iterator[Sequence[SynonymPair]]:
    for start in range(0, len(pairs), size):
        batch = pairs[start: start + size]
        if len(batch) > 1:
            yield batch


def train_on_pairs(tower: Tower, optimizer: torch.optim.Optimizer, pair_batches: Iterable[Sequence[SynonymPair]],
                   loss: PairLoss, bar: tqdm) -> List[float]:
    """One update of `tower` per batch; the loss of each."""
    tower.train()
    losses: List[float] = []
    for batch in pair_batches:
        vectors = tower.encode_entities(pair_inputs(batch))
        value = loss(vectors, torch.tensor([p.row for p in batch] * 2, device=vectors.device))
        optimizer.zero_grad()
        value.backward()
        optimizer.step()
        losses.append(float(value.detach()))
        bar.update(1)
        bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
    tower.eval()
    tower.set_precision(tower.precision)  # low-precision copies of the old weights are remade before use
    return losses


def alignment_optimizer(tower: Tower, learning_rate: float) -> torch.optim.Optimizer:
    return torch.optim.AdamW([p for p in tower.parameters() if p.requires_grad], lr=learning_rate, weight_decay=0.01)
