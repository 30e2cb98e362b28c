"""Calibrating a pipeline's confidence on a labelled dev set: a `link_confidence` component at
the end, fitted on whether each link the pipeline makes there is right (the exact id set; end to
end, the exact span too, so a recognizer's spurious mention is a wrong link)."""
from typing import Any, Dict, List, Optional, Tuple

from spacy.language import Language
from spacy.tokens import Doc, Span

from ..component_settings import store_in_config
from ..confidence.calibration import fit_calibration
from ..confidence.metrics import confidence_metrics
from ..evaluation import (end_to_end_links, end_to_end_outcomes, gold_mention_outcomes, link_gold_mentions,
                          recognize_mentions, run_components)
from ..pipeline.link_confidence import ConfidenceFeatures, LinkConfidence, check_threshold, pipeline_linker
from ..util import ArboError

COMPONENT = "link_confidence"


def confidence_component(nlp: Language) -> LinkConfidence:
    """The pipeline's `link_confidence`, added last when it has none; one elsewhere is an error,
    since it must see every link the pipeline makes."""
    found = [name for name, proc in nlp.pipeline if isinstance(proc, LinkConfidence)]
    if not found:
        return nlp.add_pipe("link_confidence", name=COMPONENT, last=True)
    if found[-1] != nlp.pipe_names[-1]:
        raise ArboError(f"'{found[-1]}' is not the last component ({nlp.pipe_names[-1]} follows it): "
                        "it must see every link the pipeline makes.")
    return nlp.get_pipe(found[-1])


def dev_links(nlp: Language, gold_docs: List[Doc], component: LinkConfidence,
              end_to_end: bool) -> Tuple[List[Span], List[bool]]:
    """The links the pipeline (without `component`) makes on dev, and whether each is right."""
    if end_to_end:
        recognized, after = recognize_mentions(nlp, gold_docs)
        docs = list(run_components(nlp, [n for n in after if n != component.name], recognized))
        return end_to_end_outcomes(docs, end_to_end_links(gold_docs))
    return gold_mention_outcomes(link_gold_mentions(nlp, gold_docs, exclude=[component.name]), gold_docs)


def calibrate_pipeline(nlp: Language, gold_docs: List[Doc], end_to_end: bool = False,
                       threshold: Optional[float] = None) -> Dict[str, Any]:
    """Fit the pipeline's `link_confidence` on dev (added when missing), with `threshold` (a
    confidence, below which links become NIL); returns the dev links' confidence metrics
    (in-sample: the test set says how well it holds)."""
    check_threshold(threshold)
    component = confidence_component(nlp)
    spans, right = dev_links(nlp, gold_docs, component, end_to_end)
    if not spans:
        raise ArboError("The dev set gives no links to calibrate on.")
    features = ConfidenceFeatures(nlp, pipeline_linker(nlp, component.name))
    rows = features(spans)
    component.calibration = fit_calibration(rows, right, source="dev end to end" if end_to_end else "dev")
    component.threshold = threshold
    store_in_config(nlp, component, {"threshold": threshold})
    confidence = component.calibration(rows)
    return {"n_links": len(spans), "accuracy": sum(right) / len(right),
            **confidence_metrics(confidence.tolist(), right)}
