"""Choosing between finished pipelines on a dev set."""
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple

from ..component_settings import check_choice
from ..evaluation import evaluate_end_to_end, evaluate_linking
from ..gold_corpus import read_gold_links
from ..pipeline_loading import load_pipeline
from ..util import ArboError, PathLike
from .rule import MIN_GAIN, Trial, check_min_gain, choose
from .selection_metrics import SELECTION_METRICS


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
