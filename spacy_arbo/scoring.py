"""Linking metrics: recall@k over ranked candidates, link P/R/F, NIL detection, ARI.

Whether a link is right is decided here only (`link_is_right`), for `evaluate`, its HTML page,
confidence calibration and `score-pubtator` alike. One rule reads ids (`gold_ids`): a composite
`D001|D002` is the set of its parts, and NIL and an empty id are one answer, no entity (`{NIL}`),
so a prediction of NIL is right for a gold NIL. A gold mention with an empty id carries no gold
link (`gold_link`): it is left out of the linking metrics and shown as unscored on the page, never
as right or wrong; end to end, where links are counted, it is no gold link either.

The predicted ids are credited under one of three rules (`CREDIT_RULES`):

- `any_id`: every predicted id is one of the gold ids, so `D001` is right for `D001|D002`
  (BioSyn's per-part check, each part of a split mention scored against the whole gold set);
- `exact`: the predicted ids are exactly the gold ids (a composite is right only when every
  part is found);
- `single`: one predicted id, and it is a gold id; a prediction of several ids is wrong
  (BELB's `strict` mode, the one BELHD's table uses).
"""
from dataclasses import dataclass
from functools import partial
from typing import (Any, Callable, Collection, Dict, FrozenSet, Hashable, Iterable, Iterator, List, Optional, Sequence,
                    Tuple)

from spacy.scorer import PRFScore
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import registry

from .kb.entities import NIL, split_ids

RECALL_KS = (1, 2, 4, 8, 16, 32, 64)
CREDIT_RULES = ("any_id", "exact", "single")
# (document, start, end, ids): a link as end-to-end scoring counts it.
Link = Tuple[Hashable, int, int, FrozenSet[str]]


def gold_ids(kb_id: str) -> Tuple[str, ...]:
    """The ids that `kb_id` names: a composite's parts; `(NIL,)` for NIL and for an empty id."""
    return split_ids(kb_id) or (NIL,)


def is_link(kb_id: str) -> bool:
    """Whether `kb_id` names an entity (is not NIL or empty)."""
    return gold_ids(kb_id) != (NIL,)


def gold_link(gold: Span) -> Optional[Tuple[str, ...]]:
    """The gold ids of a gold mention, None when its id is empty: no gold link, so not scored."""
    return gold_ids(gold.kb_id_) if gold.kb_id_ else None


def link_is_right(predicted: Collection[str], gold: Collection[str], rule: str) -> bool:
    """Whether the `predicted` ids are right for the `gold` ids under `rule` (one of
    `CREDIT_RULES`), both read by `gold_ids`."""
    predicted, gold = set(predicted), set(gold)
    if rule == "any_id":
        return predicted <= gold
    if rule == "exact":
        return predicted == gold
    if rule == "single":
        return len(predicted) == 1 and predicted <= gold
    raise ValueError(f"Unknown credit rule '{rule}'; expected one of {CREDIT_RULES}.")


@dataclass(frozen=True)
class MentionOutcome:
    """One gold mention that the pipeline also predicted (same character offsets)."""

    label: str
    gold: Tuple[str, ...]
    predicted: str
    candidates: Tuple[str, ...]
    # The best candidate's score, None without candidates.
    score: Optional[float] = None
    # `span._.kb_confidence`: the probability that the link is right, None without one.
    confidence: Optional[float] = None

    @property
    def gold_is_nil(self) -> bool:
        return self.gold == (NIL,)

    @property
    def predicted_ids(self) -> Tuple[str, ...]:
        return gold_ids(self.predicted)

    @property
    def correct(self) -> bool:
        return self.credited("any_id")

    def credited(self, rule: str) -> bool:
        return link_is_right(self.predicted_ids, self.gold, rule)

    def rank(self) -> Optional[int]:
        """1-based rank of the first candidate matching the gold, or None."""
        for position, kb_id in enumerate(self.candidates, start=1):
            if kb_id in self.gold:
                return position
        return None


def scored_pairs(predicted: Doc, reference: Doc) -> Iterator[Tuple[Span, Span, Tuple[str, ...]]]:
    """(predicted, gold mention, gold ids) at the same character offsets, gold mentions with a gold
    link only (`gold_link`), as spaCy's link scorer pairs them: linking scored apart from
    recognition."""
    gold_by_offset = {(e.start_char, e.end_char): e for e in reference.ents}
    for pred in predicted.ents:
        gold = gold_by_offset.get((pred.start_char, pred.end_char))
        ids = gold_link(gold) if gold is not None else None
        if ids is not None:
            yield pred, gold, ids


def mention_outcomes(examples: Iterable[Example], candidates_attr: str = "kb_candidates") -> List[MentionOutcome]:
    """The `scored_pairs` of `examples`, with what the metrics read of each."""
    outcomes = []
    for eg in examples:
        for pred, gold, ids in scored_pairs(eg.predicted, eg.reference):
            candidates = getattr(pred._, candidates_attr, None) if pred.has_extension(candidates_attr) else None
            outcomes.append(MentionOutcome(
                label=gold.label_,
                gold=ids,
                predicted=pred.kb_id_ or NIL,
                candidates=tuple(kb_id for kb_id, _ in candidates or ()),
                score=candidates[0][1] if candidates else None,
                confidence=pred._.kb_confidence if pred.has_extension("kb_confidence") else None,
            ))
    return outcomes


def link_prf(outcomes: Sequence[MentionOutcome]) -> Dict[str, Any]:
    """spaCy's `Scorer.score_links` semantics, with composite gold ids."""
    per_type: Dict[str, PRFScore] = {}
    for o in outcomes:
        prf = per_type.setdefault(o.label, PRFScore())
        pred_nil = o.predicted == NIL
        if o.gold_is_nil and pred_nil:
            continue
        if o.correct:
            prf.tp += 1
        elif o.gold_is_nil:
            prf.fp += 1
        elif pred_nil:
            prf.fn += 1
        else:
            prf.fp += 1
            prf.fn += 1
    micro = PRFScore()
    for prf in per_type.values():
        micro.tp, micro.fp, micro.fn = micro.tp + prf.tp, micro.fp + prf.fp, micro.fn + prf.fn
    return {
        "nel_score": micro.fscore,
        "nel_score_desc": "micro F",
        "nel_micro_p": micro.precision,
        "nel_micro_r": micro.recall,
        "nel_micro_f": micro.fscore,
        "nel_f_per_type": {k: v.to_dict() for k, v in per_type.items()},
    }


def credited_links(predicted: Iterable[Link], gold: Iterable[Link], rule: str) -> List[bool]:
    """For each predicted link, whether a gold link of its span is right for it under `rule`:
    end to end, a link where no gold link is, is wrong."""
    gold_at: Dict[Tuple[Hashable, int, int], List[FrozenSet[str]]] = {}
    for doc, start, end, ids in gold:
        gold_at.setdefault((doc, start, end), []).append(ids)
    return [any(link_is_right(ids, right, rule) for right in gold_at.get((doc, start, end), ()))
            for doc, start, end, ids in predicted]


def end_to_end_prf(predicted: Collection[Link], gold: Collection[Link], rule: str) -> Dict[str, float]:
    """Precision, recall and F of `predicted` links against `gold` ones (`credited_links`)."""
    prf = PRFScore()
    prf.tp = sum(credited_links(predicted, gold, rule))
    prf.fp, prf.fn = len(predicted) - prf.tp, len(gold) - prf.tp
    return {"p": prf.precision, "r": prf.recall, "f": prf.fscore}


def recall_at_k(outcomes: Sequence[MentionOutcome], ks: Sequence[int] = RECALL_KS) -> Dict[int, Optional[float]]:
    """Share of non-NIL gold mentions whose entity is among the first k candidates."""
    ranks = [o.rank() for o in outcomes if not o.gold_is_nil]
    if not ranks:
        return {k: None for k in ks}
    return {k: sum(1 for r in ranks if r is not None and r <= k) / len(ranks) for k in ks}


def accuracy(outcomes: Sequence[MentionOutcome], rule: str = "any_id") -> Optional[float]:
    """accuracy@1 under a credit rule (`CREDIT_RULES`)."""
    return sum(o.credited(rule) for o in outcomes) / len(outcomes) if outcomes else None


def nil_prf(outcomes: Sequence[MentionOutcome]) -> Dict[str, Optional[float]]:
    """How well NIL predictions find the mentions whose gold is NIL."""
    if not any(o.gold_is_nil for o in outcomes):
        return {"nil_p": None, "nil_r": None, "nil_f": None}
    prf = PRFScore()
    for o in outcomes:
        pred_nil = o.predicted == NIL
        prf.tp += pred_nil and o.gold_is_nil
        prf.fp += pred_nil and not o.gold_is_nil
        prf.fn += (not pred_nil) and o.gold_is_nil
    return {"nil_p": prf.precision, "nil_r": prf.recall, "nil_f": prf.fscore}


def score_retrieval(examples: Iterable[Example], *, nel_scores: bool, ks: Sequence[int], **_kwargs) -> Dict[str, Any]:
    """`arbo_recall@k` always; `nel_micro_p/r/f` only when the component makes the final
    decision."""
    outcomes = mention_outcomes(examples)
    scores: Dict[str, Any] = {f"arbo_recall@{k}": v for k, v in recall_at_k(outcomes, ks).items()}
    if nel_scores:
        scores.update(link_prf(outcomes))
    return scores


def score_reranking(examples: Iterable[Example], **_kwargs) -> Dict[str, Any]:
    """spaCy's `nel_micro_p/r/f` (with composite gold ids) and accuracy@1 over the mentions
    with a gold id; the reranker makes the final decision, so it owns these keys."""
    outcomes = mention_outcomes(examples)
    return {**link_prf(outcomes), "rerank_accuracy": accuracy(outcomes)}


@registry.scorers("spacy_arbo.arbo_linker_scorer.v1")
def make_arbo_linker_scorer(nel_scores: bool = True, ks: Sequence[int] = RECALL_KS) -> Callable[..., Dict[str, Any]]:
    """Set `nel_scores = false` when a reranker follows the arbo_linker."""
    return partial(score_retrieval, nel_scores=nel_scores, ks=tuple(ks))


@registry.scorers("spacy_arbo.multi_cross_reranker_scorer.v1")
def make_reranker_scorer() -> Callable[..., Dict[str, Any]]:
    return score_reranking
