"""The one rule every tuner chooses settings on a dev set by: the NIL threshold (`threshold.py`),
the reranker's weight and number of candidates (`reranker_settings.py`), the link memory's settings
(`memory_settings.py`) and the choice between finished pipelines (`pipeline_choice.py`).

Each tuner scores a grid of settings on dev and gives each a cost: what it adds to the pipeline
(a threshold or a memory over none, more candidates to rerank, a later pipeline in a list
ordered cheapest first). Settings of one cost compete on score alone, the earliest of equals
winning. Across costs the cheapest setting wins that the best one does not outscore by
`min_gain` or more: a smaller difference is a few mentions of a dev set, within its noise, and
buys no better test score for a slower or riskier pipeline."""
from dataclasses import dataclass
from typing import Any, Dict, Generic, Sequence, TypeVar

from ..ranges import check_range
from ..util import ArboError

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
    """`min_gain` is a difference of `metric`, a share."""
    check_range(f"{name} (a difference of {metric})", min_gain, 0, 1, high_open=True)
