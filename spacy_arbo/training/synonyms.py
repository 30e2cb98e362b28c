"""Synonym pretraining: align the names of each KB entity before mention training.

SapBERT's self-alignment recipe on our own KB: batches of (name, other name of the same
entity) pairs, every other name in the batch a negative unless it names the same entity,
with a multi-positive InfoNCE loss. Names are short, so a pass over CTD's 78k names costs
minutes on a CPU, and it teaches the encoder synonyms that no training mention shows
(the entities the corpus never mentions).
"""
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
from tqdm import tqdm

from ..encoders.templates import EntityInput
from ..encoders.tower import Tower
from ..kb.store import BaseEntityStore
from ..util import ArboError


@dataclass(frozen=True)
class SynonymPair:
    name: str
    synonym: str
    row: int


def synonym_pairs(kb: BaseEntityStore, rng: np.random.Generator) -> List[SynonymPair]:
    """One pair per name of every entity with at least two distinct names: the name and
    another of its entity's names drawn at random; shuffled."""
    names_by_row: dict = {}
    for text, row in kb.alias_pairs():
        names_by_row.setdefault(row, []).append(text)
    pairs = []
    for row, names in names_by_row.items():
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
    logits = scale * vectors @ vectors.T
    own = torch.eye(len(vectors), dtype=torch.bool, device=vectors.device)
    logits = logits.masked_fill(own, float("-inf"))
    positive = (labels[:, None] == labels[None, :]) & ~own
    log_all = torch.logsumexp(logits, dim=1)
    log_positive = torch.logsumexp(logits.masked_fill(~positive, float("-inf")), dim=1)
    return (log_all - log_positive).mean()


def pair_inputs(batch: Sequence[SynonymPair]) -> List[EntityInput]:
    """The batch's names, then their synonyms, as the entity tower reads a name."""
    return [EntityInput(p.name, "") for p in batch] + [EntityInput(p.synonym, "") for p in batch]


def batches(pairs: Sequence[SynonymPair], size: int) -> Iterator[Sequence[SynonymPair]]:
    for start in range(0, len(pairs), size):
        batch = pairs[start: start + size]
        if len(batch) > 1:
            yield batch


def pretrain_synonyms(
    tower: Tower,
    kb: BaseEntityStore,
    *,
    epochs: int = 1,
    batch_size: int = 128,
    learning_rate: float = 2e-5,
    scale: float = 20.0,
    seed: int = 0,
    max_steps: Optional[int] = None,
    progress: bool = True,
) -> List[float]:
    """Train `tower` in place on the KB's synonym pairs; the loss of every step."""
    if epochs < 1 or batch_size < 2 or learning_rate <= 0:
        raise ArboError(f"Synonym pretraining takes epochs >= 1, batch_size >= 2 and learning_rate > 0; "
                        f"got {epochs}, {batch_size} and {learning_rate}.")
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    epoch_pairs = [synonym_pairs(kb, rng) for _ in range(epochs)]
    if not epoch_pairs[0]:
        raise ArboError("Synonym pretraining needs entities with at least two names; the KB has none.")
    total = sum(len(list(batches(p, batch_size))) for p in epoch_pairs)
    total = min(total, max_steps) if max_steps else total
    optimizer = torch.optim.AdamW([p for p in tower.parameters() if p.requires_grad], lr=learning_rate,
                                  weight_decay=0.01)
    tower.train()
    losses: List[float] = []
    with tqdm(total=total, desc="synonym pretraining", unit="step", disable=not progress, mininterval=2.0) as bar:
        for pairs in epoch_pairs:
            for batch in batches(pairs, batch_size):
                if len(losses) == total:
                    break
                labels = torch.tensor([p.row for p in batch] * 2)
                loss = multi_positive_infonce(tower.encode_entities(pair_inputs(batch)), labels, scale)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(float(loss.detach()))
                bar.update(1)
                bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
    tower.eval()
    tower.set_precision(tower.precision)  # low-precision copies of the old weights are remade before use
    return losses


def name_alignment(tower: Tower, pairs: Sequence[SynonymPair], batch_size: int = 256) -> Tuple[float, float]:
    """Mean cosine of synonym pairs and of mismatched pairs (each name with the next
    pair's synonym): how far apart pretraining pulled the two."""
    with torch.no_grad():
        vectors = []
        for batch in batches(pairs, batch_size):
            encoded = torch.nn.functional.normalize(tower.encode_entities(pair_inputs(batch)), dim=-1)
            vectors.append((encoded[: len(batch)], encoded[len(batch):]))
    names = torch.cat([a for a, _ in vectors])
    synonyms = torch.cat([b for _, b in vectors])
    same = (names * synonyms).sum(-1).mean()
    other = (names * synonyms.roll(1, dims=0)).sum(-1).mean()
    return float(same), float(other)
