"""Choosing `retrieval_weight` on a dev set: the cross-encoder runs once, then every
weight only re-ranks its stored logits."""
from typing import List, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example

from ..evaluation import link_gold_mentions
from ..scoring import accuracy, mention_outcomes
from ..util import ArboError
from .component import multi_cross_rerankers

# Up to 8: with NCBI Disease dev, accuracy still rose from 4 to 6 (a weight that large lets the
# cross-encoder decide only where the retriever's scores are close).
DEFAULT_WEIGHTS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)


def tune_retrieval_weight(
    nlp: Language, gold_docs: List[Doc], weights: Sequence[float] = DEFAULT_WEIGHTS
) -> Tuple[float, List[Tuple[float, float]], float]:
    """(the retriever's accuracy@1, [(weight, accuracy@1)], the best weight) on the gold
    mentions of `gold_docs`; leaves the reranker (and its config) set to the best weight (the smallest of equals)."""
    rerankers = multi_cross_rerankers(nlp)
    if not rerankers:
        raise ArboError("The pipeline has no multi_cross_reranker to tune.")
    if not weights:
        raise ArboError("No retrieval weights to try.")
    reranker = rerankers[-1]
    docs = link_gold_mentions(nlp, gold_docs, exclude=[reranker.name])

    def linked_accuracy() -> float:
        return accuracy(mention_outcomes(Example(p, g) for p, g in zip(docs, gold_docs)))

    retriever = linked_accuracy()
    scored = reranker.margins(docs)
    rows = []
    for weight in sorted(weights):
        reranker.configure(retrieval_weight=weight)
        reranker.set_annotations(docs, reranker.rank(*scored))
        rows.append((weight, linked_accuracy()))
    best = max(rows, key=lambda row: row[1])[0]  # max keeps the first, i.e. smallest, of equals
    reranker.configure(retrieval_weight=best)
    return retriever, rows, best
