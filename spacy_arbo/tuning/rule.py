"""Choosing settings on a dev set, by one rule for every tuner: the NIL threshold
(`threshold.py`), the reranker's weight and number of candidates (`reranker/tuning.py`), and,
here, the link memory's settings and the choice between finished pipelines.

Each tuner scores a grid of settings on dev and gives each a cost: what it adds to the pipeline
(a threshold or a memory over none, more candidates to rerank, a later pipeline in a list
ordered cheapest first). Settings of one cost compete on score alone, the earliest of equals
winning. Across costs the cheapest setting wins that the best one does not outscore by
`min_gain` or more: a smaller difference is a few mentions of a dev set, within its noise, and
buys no better test score for a slower or riskier pipeline."""
from dataclasses import dataclass
from typing import Any, Dict, Generic, Iterable, List, Optional, Sequence, Tuple, TypeVar

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example

from ..evaluation import evaluate_end_to_end, evaluate_linking, link_gold_mentions, load_pipeline
from ..gold_corpus import read_gold_links
from ..pipeline.link_memory import LinkMemory
from ..scoring import accuracy, mention_outcomes
from ..settings import check_choice
from ..util import ArboError, PathLike

# What a costlier setting must add to the score on dev to be chosen: half a point.
MIN_GAIN = 0.005

T = TypeVar("T")


@dataclass(frozen=True)
class Trial(Generic[T]):
    """A setting and its score on dev; `cost` orders settings from the cheapest."""

    setting: T
    score: float
    cost: Any = 0


def choose(trials: Sequence[Trial[T]], min_gain: float = 0.0) -> Trial[T]:
    """The best trial of each cost (the earliest of equal scores); of those, the cheapest that
    the best overall does not beat by `min_gain` or more."""
    if not trials:
        raise ArboError("No settings to choose from.")
    best_of_cost: Dict[Any, Trial[T]] = {}
    for trial in trials:
        if trial.cost not in best_of_cost or trial.score > best_of_cost[trial.cost].score:
            best_of_cost[trial.cost] = trial
    finalists = [best_of_cost[cost] for cost in sorted(best_of_cost)]
    best = max(finalists, key=lambda trial: trial.score)  # max keeps the first, i.e. cheapest, of equals
    return next(t for t in finalists if not (best.score > t.score and best.score - t.score >= min_gain))


def check_min_gain(min_gain: float, name: str = "min_gain", metric: str = "link F") -> None:
    if isinstance(min_gain, bool) or not isinstance(min_gain, (int, float)) or not 0.0 <= min_gain < 1.0:
        raise ArboError(f"{name} is a difference of {metric} in [0, 1), got {min_gain}.")


# Settings (min_count, min_share, fold_plurals) `tune_link_memory` tries, the most cautious
# first (the first of equals wins).
MEMORY_GRID = [(count, share, fold) for fold in (False, True) for count in (3, 2, 1)
               for share in (1.0, 0.9, 0.8, 0.7, 0.6)]
MemorySetting = Tuple[int, float, bool]


def tune_link_memory(
    nlp: Language, memory: LinkMemory, dev_docs: List[Doc], grid: Iterable[MemorySetting] = MEMORY_GRID,
) -> Tuple[float, List[Tuple[int, float, bool, float]], Optional[MemorySetting]]:
    """Strict accuracy@1 of `nlp` on the gold mentions of `dev_docs` without the memory, the
    rows (min_count, min_share, fold_plurals, strict accuracy) with it, and the best setting:
    None when none beats the pipeline without it. `nlp` links the docs once; each setting
    relinks copies."""
    if not any(ent.kb_id_ for doc in dev_docs for ent in doc.ents):
        raise ArboError("The dev set has no linked gold mentions to choose the link memory's settings on.")
    linked = link_gold_mentions(nlp, dev_docs, exclude=[memory.name])

    def strict(docs: Iterable[Doc]) -> float:
        return accuracy(mention_outcomes(Example(p, g) for p, g in zip(docs, dev_docs)), "exact") or 0.0

    without = strict(linked)
    rows = []
    for count, share, fold in grid:
        candidate = memory.with_settings(count, share, fold)
        rows.append((count, share, fold, strict(candidate(doc.copy()) for doc in linked)))
    trials = [Trial(None, without)] + [Trial(row[:3], row[3], cost=1) for row in rows]
    return without, rows, choose(trials).setting


# What `select_pipeline` may choose by: link F (what a NIL threshold is tuned for) or accuracy@1.
# e2e_f: end-to-end link F from raw text, for pipelines that differ in how they find mentions.
SELECTION_METRICS = ("nel_micro_f", "accuracy_strict", "accuracy", "e2e_f")


@dataclass
class PipelineChoice:
    """What `select_pipeline` measured (each pipeline's dev metrics, in the order given) and chose."""

    metric: str
    metrics: Dict[str, Dict[str, Any]]
    chosen: str

    def passed_over(self) -> List[Tuple[str, float]]:
        """The pipelines after the chosen one that score more on dev, by less than the minimum
        gain, each with its gain."""
        paths = list(self.metrics)
        score = {path: metrics[self.metric] for path, metrics in self.metrics.items()}
        later = paths[paths.index(self.chosen) + 1:]
        return [(path, score[path] - score[self.chosen]) for path in later if score[path] > score[self.chosen]]


def select_pipeline(paths: Sequence[str], dev: PathLike, metric: str = "nel_micro_f",
                    min_gain: float = MIN_GAIN) -> PipelineChoice:
    """Link the gold mentions of `dev` (with `e2e_f`: its raw text) with each saved pipeline
    of `paths` (the cheapest first) and choose one by `metric`: a reranker earns its place in
    the final pipeline only by beating the retriever on dev by `min_gain`."""
    check_choice("metric", metric, SELECTION_METRICS)
    check_min_gain(min_gain, "min_gain", metric)
    if len(set(paths)) < 2:
        raise ArboError(f"Choosing a pipeline needs two or more distinct pipelines; got {', '.join(paths)}.")
    end_to_end = metric.startswith("e2e_")
    metrics: Dict[str, Dict[str, Any]] = {}
    for path in paths:
        nlp = load_pipeline(path)
        metrics[path] = (evaluate_end_to_end if end_to_end else evaluate_linking)(nlp, read_gold_links(dev, nlp))
    trials = [Trial(path, scores[metric], cost=i) for i, (path, scores) in enumerate(metrics.items())]
    return PipelineChoice(metric, metrics, choose(trials, min_gain).setting)
