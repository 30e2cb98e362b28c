"""Choosing `retrieval_weight` and `top_n` on a dev set: the cross-encoder runs once per
`top_n`, then every weight only re-ranks its stored logits."""
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example

from ..evaluation import link_gold_mentions
from ..reranker.component import last_reranker
from ..scoring import accuracy, mention_outcomes
from ..util import ArboError
from .rule import MIN_GAIN, Trial, check_min_gain, choose

# Up to 8: a weight that large lets the cross-encoder decide only where the retriever's scores
# are close, and dev accuracy can still rise there.
DEFAULT_WEIGHTS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)


@dataclass
class RerankerTuning:
    """What `tune_reranker` measured and chose; `retriever` is the accuracy@1 without the reranker."""

    retriever: float
    # (top_n, retrieval_weight, accuracy@1) for every pair tried.
    rows: List[Tuple[int, float, float]]
    # Mentions per second of the cross-encoder's pass, per top_n.
    speeds: Dict[int, float]
    top_n: int
    weight: float

    @property
    def accuracy(self) -> float:
        return next(acc for n, w, acc in self.rows if (n, w) == (self.top_n, self.weight))


def tune_reranker(
    nlp: Language, gold_docs: List[Doc], weights: Sequence[float] = DEFAULT_WEIGHTS,
    top_ns: Optional[Sequence[int]] = None, max_loss: float = MIN_GAIN,
) -> RerankerTuning:
    """Accuracy@1 on the gold mentions of `gold_docs` for every `top_n` (default: the
    reranker's own) and weight. Each `top_n` keeps its best weight (the smallest of equals);
    of those, the smallest `top_n` that loses less than `max_loss` to the best accuracy wins
    (`tuning.choose`), since the cross-encoder's cost follows its candidates. Leaves the
    reranker (and its config) set so."""
    reranker = last_reranker(nlp)
    if not weights:
        raise ArboError("No retrieval weights to try.")
    top_ns = sorted(set(top_ns or [reranker.settings.top_n]))
    if top_ns[0] < 1:
        raise ArboError(f"top_n must be at least 1, not {top_ns[0]}.")
    check_min_gain(max_loss, "max_loss", "accuracy@1")
    docs = link_gold_mentions(nlp, gold_docs, exclude=[reranker.name])
    n_mentions = sum(len(doc.ents) for doc in docs)

    def linked_accuracy() -> float:
        return accuracy(mention_outcomes(Example(p, g) for p, g in zip(docs, gold_docs)))

    retriever = linked_accuracy()
    # Reranking rewrites each span's candidates; every top_n starts from the retriever's.
    spans = [ent for doc in docs for ent in doc.ents]
    retrieved = [ent._.kb_candidates for ent in spans]
    rows, speeds = [], {}
    for top_n in top_ns:
        for ent, ranked in zip(spans, retrieved):
            ent._.kb_candidates = ranked
        reranker.configure(top_n=top_n)
        started = time.perf_counter()
        scored = reranker.margins(docs)
        elapsed = time.perf_counter() - started
        speeds[top_n] = n_mentions / elapsed if elapsed > 0 else float("inf")
        for weight in sorted(weights):
            reranker.configure(retrieval_weight=weight)
            reranker.set_annotations(docs, reranker.rank(*scored))
            rows.append((top_n, weight, linked_accuracy()))
    top_n, weight = choose([Trial((n, w), acc, cost=n) for n, w, acc in rows], max_loss).setting
    reranker.configure(top_n=top_n, retrieval_weight=weight)
    return RerankerTuning(retriever, rows, speeds, top_n, weight)
