"""Self-alignment of an encoder on a KB's own names, run to convergence and selected
without corpus labels: SapBERT's recipe (multi-similarity loss over the hard pairs of each
batch) on every name of the KB each pass, for several passes, keeping the pass whose
held-out names (`alignment_holdout.py`) find their entity best.

The KB is all it reads: this is how a linker for a KB that no corpus annotates is trained.
"""
import copy
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import torch
from tqdm import tqdm

from ..encoders.tower import Tower
from ..kb.store import BaseEntityStore
from .alignment_batches import nearest_entities, neighbour_batches, neighbour_order
from .alignment_holdout import HeldOutNames, KBNames, encode_names, hold_out_names, score_held_out
# LOSSES: importable from here, as before alignment_settings.py.
from .alignment_settings import LOSSES, AlignmentSettings  # noqa: F401
from .synonyms import SynonymPair, alignment_optimizer, batches, synonym_pairs, train_on_pairs


@dataclass(frozen=True)
class AlignmentPass:
    """One point of the curve: after `pass_` passes (0: before training), `seconds` since
    the start, the mean training loss of the pass and the held-out names' scores."""

    pass_: int
    pairs: int
    seconds: float
    loss: Optional[float]
    held_out_recall: Optional[float]
    held_out_loss: Optional[float]

    def to_json(self) -> Dict[str, Any]:
        return {"pass": self.pass_, "pairs": self.pairs, "seconds": round(self.seconds, 1), "loss": self.loss,
                "held_out_recall@1": self.held_out_recall, "held_out_loss": self.held_out_loss}


@dataclass
class AlignmentResult:
    """The curve, the pass whose weights the tower holds now, and that pass's vectors of
    every KB name (`names` order), for further label-free checks."""

    settings: AlignmentSettings
    held_out: HeldOutNames
    curve: List[AlignmentPass] = field(default_factory=list)
    best_pass: int = 0
    vectors: Optional[np.ndarray] = None
    note: str = ""

    def to_json(self) -> Dict[str, Any]:
        return {"settings": asdict(self.settings), "held_out_names": len(self.held_out), "best_pass": self.best_pass,
                "note": self.note, "passes": [point.to_json() for point in self.curve]}


def self_align(tower: Tower, kb: BaseEntityStore, settings: AlignmentSettings = AlignmentSettings(),
               held_out: Optional[HeldOutNames] = None, progress: bool = True) -> AlignmentResult:
    """Align `tower` in place on `kb`'s synonyms and leave it with the best pass's weights
    (the latest when nothing is held out). `held_out` (default: drawn as `settings` say)
    is hidden from training and chooses the pass. A KB without two names for any entity
    has nothing to align: the tower is left as it was, and the result says so, as it does when
    no pass finds more held-out names than the untrained encoder (a small KB's few names tie)."""
    held_out = hold_out_names(kb, settings.held_out, settings.seed) if held_out is None else held_out
    result = AlignmentResult(settings, held_out)
    rng = np.random.default_rng(settings.seed)
    torch.manual_seed(settings.seed)
    if not synonym_pairs(kb, np.random.default_rng(settings.seed), held_out.hidden):
        result.note = "No entity of the KB has two names: nothing to align; the encoder is left untrained."
        result.curve.append(AlignmentPass(0, 0, 0.0, None, None, None))
        return result
    names = KBNames(kb)
    needs_vectors = bool(len(held_out)) or settings.batching == "neighbours"
    started = time.perf_counter()
    optimizer = alignment_optimizer(tower, settings.learning_rate)
    vectors = encode_names(tower, names.texts, progress=progress) if needs_vectors else None
    best = _record(result, names, vectors, 0, 0, started, [])
    best_state = copy.deepcopy(tower.state_dict()) if len(held_out) else None
    result.vectors = vectors
    for pass_ in range(1, settings.epochs + 1):
        pairs = synonym_pairs(kb, rng, held_out.hidden)[: settings.max_pairs or None]
        pass_batches = _pass_batches(pairs, names, vectors, settings, rng)
        with tqdm(total=len(pass_batches), desc=f"self-alignment pass {pass_}/{settings.epochs}", unit="step",
                  disable=not progress, mininterval=2.0) as bar:
            losses = train_on_pairs(tower, optimizer, pass_batches, settings.pair_loss(), bar)
        vectors = encode_names(tower, names.texts, progress=progress) if needs_vectors else None
        recall = _record(result, names, vectors, pass_, len(pairs), started, losses)
        if recall is None or recall > best:
            best, result.best_pass, result.vectors = recall, pass_, vectors
            if recall is not None and pass_ < settings.epochs:
                best_state = copy.deepcopy(tower.state_dict())
    if best_state is not None and result.best_pass != settings.epochs:
        tower.load_state_dict(best_state)
        tower.set_precision(tower.precision)
    result.note = result.note or _tie_note(result)
    return result


def _tie_note(result: AlignmentResult) -> str:
    """What to say when no pass found more held-out names than the untrained encoder: a few
    held-out names (a small KB) tie on every pass, and the untrained encoder is what is kept."""
    first, trained = result.curve[0], result.curve[1:]
    if result.best_pass or not trained or first.held_out_recall is None:
        return ""
    tied = all(point.held_out_recall == first.held_out_recall for point in trained)
    return (f"No pass found more of the {len(result.held_out):,} held-out names than the untrained encoder "
            f"(recall@1 {first.held_out_recall:.4f}{' on every pass' if tied else ''}): the untrained encoder is "
            "kept. Too few names to choose by: hold out more (--held-out) on a larger KB, or none (--held-out 0) "
            "to keep the last pass.")


def _record(result: AlignmentResult, names: KBNames, vectors: Optional[np.ndarray], pass_: int, pairs: int,
            started: float, losses: Sequence[float]) -> Optional[float]:
    """Add the point of pass `pass_` to the curve; its held-out recall@1 (None: nothing held out)."""
    recall, loss = score_held_out(vectors, names, result.held_out) if vectors is not None else (None, None)
    result.curve.append(AlignmentPass(pass_, pairs, time.perf_counter() - started,
                                      float(np.mean(losses)) if losses else None, recall, loss))
    return recall


def _pass_batches(pairs: List[SynonymPair], names: KBNames, vectors: Optional[np.ndarray],
                  settings: AlignmentSettings, rng: np.random.Generator) -> List[Sequence[SynonymPair]]:
    if settings.batching == "random" or vectors is None:
        return list(batches(pairs, settings.batch_size))
    # Each entity is placed by the nearest names to its first name that training reads.
    queries: Dict[int, int] = {}
    for pair in pairs:
        queries.setdefault(pair.row, names.position[(pair.name, pair.row)])
    order = neighbour_order(nearest_entities(vectors, names.owners, queries, settings.neighbours), rng)
    return neighbour_batches(pairs, order, settings.batch_size, rng)
