"""Choosing the NIL threshold of the component that makes the final link, on a dev set.

Below the threshold a mention is NIL. spaCy's link F-score rewards exactly what a threshold
is for: a wrong link that becomes NIL removes a false positive and costs no recall, a right
one that becomes NIL costs a true positive. So the threshold that maximises `nel_micro_f`
on dev is the calibrated one; accuracy@1, which counts a NIL as wrong for a linked gold
mention, can only fall (both are reported). A threshold must beat none by `min_gain` link F,
though (`tuning.choose`): a smaller gain is a few mentions of a dev set, and such thresholds
have cost test accuracy for no test link F (see docs/results.md).

On gold mentions a threshold can only trade right links for fewer wrong ones. Behind a
recognizer it also sends the recognizer's false mentions to NIL, which gold mentions cannot
show: `end_to_end` chooses it by end-to-end link F (exact span and id set) on the mentions the
pipeline's own recognizer finds in the dev texts.
"""
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from typing import Callable, Iterator, List, Optional, Tuple

import numpy as np
from spacy.language import Language
from spacy.scorer import PRFScore
from spacy.tokens import Doc
from spacy.training import Example

from ..evaluation import end_to_end_links, link_gold_mentions, recognize_mentions, run_components
from ..kb.entities import NIL
from ..pipeline.arbo_linker import ArboLinker, arbo_linkers
from ..scoring import accuracy, link_prf, mention_outcomes
from ..util import ArboError
from .rule import MIN_GAIN, Trial, check_min_gain, choose

# Thresholds tried: these quantiles of the dev mentions' best scores, and None (no threshold).
QUANTILES = np.linspace(0.0, 0.5, 26)

# threshold, nel_micro_f, accuracy (end to end: threshold, e2e F, e2e recall)
Row = Tuple[Optional[float], float, float]


def deciding_component(nlp: Language):
    """The last component that writes `ent.kb_id_` from ranked candidates and has a threshold."""
    deciders = [proc for _, proc in nlp.pipeline if "threshold" in getattr(proc, "cfg", {})]
    if not deciders:
        raise ArboError("The pipeline has no arbo_linker or multi_cross_reranker to set a threshold on.")
    return deciders[-1]


def deciding_components(nlp: Language) -> list:
    """The components whose thresholds make the final links: the last one that has a threshold,
    or, where each arbo_linker is limited to its labels (a KB per type) and decides last, every
    linker, each for the mentions of its labels."""
    last = deciding_component(nlp)
    linkers = arbo_linkers(nlp)
    if len(linkers) > 1 and last is linkers[-1] and all(_limited(linker) for linker in linkers):
        return linkers
    return [last]


def _limited(linker: ArboLinker) -> bool:
    return bool(linker.settings.labels or linker.settings.labels_discard)


def decides(component) -> Callable[[str], bool]:
    """Whether `component` decides the links of mentions of a label."""
    return component.settings.links_label if isinstance(component, ArboLinker) else lambda label: True


def tune_threshold(nlp: Language, gold_docs: List[Doc], min_gain: float = MIN_GAIN,
                   end_to_end: bool = False, component=None) -> Tuple[List[Row], Optional[float]]:
    """[(threshold, nel_micro_f, accuracy)] on the gold mentions of `gold_docs` (with
    `end_to_end`, [(threshold, e2e F, e2e recall)] on the mentions the pipeline finds), and
    the threshold with the best F (the lowest of equals), or None unless that F is at least
    `min_gain` above no threshold's; `component` (default: the deciding component; one of
    `deciding_components`), scored on the mentions of the labels it links, is left set to it
    (and the pipeline's config)."""
    check_min_gain(min_gain)
    component = component if component is not None else deciding_component(nlp)
    component.configure(threshold=None)
    scorer = _end_to_end_scorer if end_to_end else _gold_mention_scorer
    with scorer(nlp, gold_docs, component) as (scores, score_at):
        if not scores:
            raise ArboError("The dev set has no linked mentions to choose a threshold on.")
        thresholds: List[Optional[float]] = [None] + sorted({float(q) for q in np.quantile(scores, QUANTILES)})
        rows = [(t, *score_at(t)) for t in thresholds]
    # Any threshold costs more than none; of the thresholds, the lowest of equals wins.
    best = choose([Trial(t, f, cost=t is not None) for t, f, _ in rows], min_gain).setting
    component.configure(threshold=best)
    return rows, best


Scorer = Callable[[Optional[float]], Tuple[float, float]]


@contextmanager
def _gold_mention_scorer(nlp: Language, gold_docs: List[Doc], component) -> Iterator[Tuple[List[float], Scorer]]:
    """One pass without a threshold: a threshold only turns links below it into NILs."""
    docs = link_gold_mentions(nlp, gold_docs)
    decided = decides(component)
    outcomes = [o for o in mention_outcomes(Example(p, g) for p, g in zip(docs, gold_docs)) if decided(o.label)]

    def score_at(threshold: Optional[float]) -> Tuple[float, float]:
        thresholded = [
            o if threshold is None or (o.score is not None and o.score >= threshold) else replace(o, predicted=NIL)
            for o in outcomes
        ]
        return link_prf(thresholded)["nel_micro_f"], accuracy(thresholded)

    yield [o.score for o in outcomes if o.score is not None], score_at


@contextmanager
def _end_to_end_scorer(nlp: Language, gold_docs: List[Doc], component) -> Iterator[Tuple[List[float], Scorer]]:
    """The recognizer runs once; the components after it run again at each threshold, since
    what follows the deciding component (a link memory, composite parts) may undo a NIL, but
    the linkers encode each mention once."""
    recognized, linkers = recognize_mentions(nlp, gold_docs)
    decided = decides(component)
    gold_links = end_to_end_links(gold_docs, decided)

    def link(threshold: Optional[float]) -> List[Doc]:
        component.configure(threshold=threshold)
        return list(run_components(nlp, linkers, [doc.copy() for doc in recognized]))

    with ExitStack() as reusing:
        for linker in arbo_linkers(nlp):
            reusing.enter_context(linker.reusing_mention_vectors())
        unthresholded = link(None)

        def score_at(threshold: Optional[float]) -> Tuple[float, float]:
            prf = PRFScore()
            prf.score_set(end_to_end_links(unthresholded if threshold is None else link(threshold), decided), gold_links)
            return prf.fscore, prf.recall

        yield [e._.kb_candidates[0][1] for doc in unthresholded for e in doc.ents
               if decided(e.label_) and e.has_extension("kb_candidates") and e._.kb_candidates], score_at

