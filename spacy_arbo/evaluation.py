"""Run a pipeline over gold-annotated docs and collect the linking metrics."""
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from spacy.language import Language
from spacy.scorer import PRFScore
from spacy.tokens import Doc, Span
from spacy.training import Example

from .confidence.metrics import confidence_metrics
from .confidence.nil_curve import nil_curve_metrics
from .kb.entities import NIL, split_ids
from .linking.clustering import adjusted_rand_index
from .pipeline.common.gold_ents import strip_links
from .pipeline.common.mention_finders import mention_finders
from .pipeline.common.neighbours import pipe_through
from .scoring import (RECALL_KS, Link, MentionOutcome, accuracy, credited_links, end_to_end_prf, gold_ids, is_link,
                      link_is_right, link_prf, mention_outcomes, nil_prf, recall_at_k, scored_pairs)
from .util import ArboError


def gold_id_set(docs: Iterable[Doc]) -> Set[str]:
    return {part for doc in docs for ent in doc.ents for part in split_ids(ent.kb_id_)}


def link_gold_mentions(
    nlp: Language, gold_docs: List[Doc], batch_size: int = 64, exclude: Sequence[str] = ()
) -> List[Doc]:
    """The gold mentions of `gold_docs`, without their ids, through every component except
    `exclude` and those that would replace the mentions (NER, entity rulers), so linking is
    measured apart from recognition. Excluded components are disabled meanwhile, so that no
    component counts on them (a linker on a link memory after it)."""
    with nlp.select_pipes(disable=[name for name in exclude if name in nlp.pipe_names]):
        names = [name for name in nlp.pipe_names if "doc.ents" not in nlp.get_pipe_meta(name).assigns]
        return list(run_components(nlp, names, [strip_links(doc) for doc in gold_docs], batch_size))


# Metric name suffix of each credit rule (`scoring.CREDIT_RULES`); any-id is the plain name.
RULE_SUFFIXES = {"any_id": "", "exact": "_strict", "single": "_belb"}


def accuracies(outcomes: Sequence[MentionOutcome], group: str = "") -> Dict[str, Optional[float]]:
    """`accuracy{group}` under every credit rule: `accuracy`, `accuracy_strict`, `accuracy_belb`;
    the last over the mentions whose gold ids the KB has, since BELB drops the others."""
    in_kb = [o for o in outcomes if not o.gold_is_nil]
    return {f"accuracy{group}{suffix}": accuracy(in_kb if rule == "single" else outcomes, rule)
            for rule, suffix in RULE_SUFFIXES.items()}


def docs_not_in(docs: List[Doc], evaluated: Sequence[Doc]) -> List[Doc]:
    """`docs` but those also in `evaluated` (same doc id, or the same text), so that no
    evaluated mention also serves as a dictionary name or a remembered link."""
    held_out = {doc.user_data.get("doc_id") or doc.text for doc in evaluated}
    return [doc for doc in docs if (doc.user_data.get("doc_id") or doc.text) not in held_out]


# The arbo_linker settings of the BioSyn-protocol pass (BioSyn's query processing: Ab3P long
# forms, composite mentions split); the dictionary comes from `evaluate --augment-from`.
BIOSYN_SETTINGS = {"use_long_form": True, "composites": "split"}
# The figures of the BioSyn-protocol pass that `evaluate --protocol biosyn` reports.
BIOSYN_KEYS = ("accuracy", "accuracy_seen", "accuracy_unseen", "recall@1", "recall@64", "n_mentions")


def evaluate_linking(
    nlp: Language, gold_docs: List[Doc], seen_ids: Optional[Set[str]] = None, batch_size: int = 64,
    skip_nil_gold: bool = False,
) -> Dict[str, Any]:
    """Link the gold mentions of `gold_docs` (`link_gold_mentions`) and score them
    (`linking_metrics`), with the time it took."""
    return linked_and_scored(nlp, gold_docs, seen_ids, batch_size, skip_nil_gold)[0]


def linked_and_scored(
    nlp: Language, gold_docs: List[Doc], seen_ids: Optional[Set[str]] = None, batch_size: int = 64,
    skip_nil_gold: bool = False,
) -> Tuple[Dict[str, Any], List[Doc]]:
    """`evaluate_linking`'s metrics and the linked docs they score."""
    start = time.perf_counter()
    predicted = link_gold_mentions(nlp, gold_docs, batch_size)
    elapsed = time.perf_counter() - start
    metrics = linking_metrics(predicted, gold_docs, seen_ids, skip_nil_gold)
    metrics["seconds"] = elapsed
    metrics["mentions_per_second"] = metrics["n_mentions"] / elapsed if elapsed > 0 else None
    return metrics, predicted


def linking_metrics(predicted: Sequence[Doc], gold_docs: Sequence[Doc], seen_ids: Optional[Set[str]] = None,
                    skip_nil_gold: bool = False) -> Dict[str, Any]:
    """Recall@k, accuracies (overall, and on seen / unseen entities with `seen_ids`), link and
    NIL P/R/F; with `skip_nil_gold`, mentions whose ids the KB lacks are left out (BioSyn
    removes them)."""
    outcomes = mention_outcomes(Example(p, g) for p, g in zip(predicted, gold_docs))
    if skip_nil_gold:
        outcomes = [o for o in outcomes if not o.gold_is_nil]
    metrics: Dict[str, Any] = {f"recall@{k}": v for k, v in recall_at_k(outcomes, RECALL_KS).items()}
    metrics.update(accuracies(outcomes))
    if seen_ids is not None:
        def seen(o: MentionOutcome) -> bool:
            return any(g in seen_ids for g in o.gold)

        linked = [o for o in outcomes if not o.gold_is_nil]
        metrics.update(accuracies([o for o in linked if seen(o)], "_seen"))
        metrics.update(accuracies([o for o in linked if not seen(o)], "_unseen"))
        metrics["n_seen"] = sum(seen(o) for o in linked)
        metrics["n_unseen"] = sum(not seen(o) for o in linked)
    metrics.update({key: value for key, value in link_prf(outcomes).items() if key.startswith("nel_micro_")})
    metrics.update(nil_prf(outcomes))
    # NIL detection by a confidence threshold, where some gold mentions are NIL (an out-of-KB set).
    metrics.update(nil_curve_metrics(outcomes))
    # How far the links' confidence can be trusted; a NIL is no link, so it has none.
    metrics.update(confidence_metrics([None if o.predicted == NIL else o.confidence for o in outcomes],
                                      [o.credited("exact") for o in outcomes]))
    clustered = [(e.kb_id_, p._.arbo_cluster) for pdoc, gdoc in zip(predicted, gold_docs)
                 for p, e in zip(pdoc.ents, gdoc.ents)
                 if p.has_extension("arbo_cluster") and p._.arbo_cluster is not None and e.kb_id_ != NIL]
    if clustered:
        metrics["ari"] = adjusted_rand_index(*zip(*clustered))
    metrics["n_mentions"] = len(outcomes)
    metrics["n_nil_gold"] = sum(o.gold_is_nil for o in outcomes)
    return metrics


def mention_spans(docs: List[Doc], keep: Optional[Callable[[str], bool]] = None) -> Set[Tuple[int, int, int]]:
    """(doc, start, end) of every mention (of the labels `keep` takes, if given): recognition's
    items, labels aside by default (a linker needs the mentions, not their types)."""
    return {(i, e.start_char, e.end_char) for i, doc in enumerate(docs) for e in doc.ents
            if keep is None or keep(e.label_)}


def end_to_end_links(docs: List[Doc], keep: Optional[Callable[[str], bool]] = None) -> Set[Link]:
    """(doc, start, end, id set) of every linked mention (of the labels `keep` takes, if given):
    end-to-end scoring's items."""
    return {_link(i, e) for i, doc in enumerate(docs) for e in doc.ents
            if is_link(e.kb_id_) and (keep is None or keep(e.label_))}


def _link(index: int, span: Span) -> Link:
    return index, span.start_char, span.end_char, frozenset(gold_ids(span.kb_id_))


def recognizer_position(nlp: Language) -> int:
    """The index in `nlp.pipe_names` of the last component that finds mentions."""
    finders = mention_finders(nlp)
    if not finders:
        raise ArboError("The pipeline has no component that finds mentions (e.g. ner); "
                        "add one with `python -m spacy_arbo add-ner`.")
    return nlp.pipe_names.index(finders[-1])


def recognize_mentions(nlp: Language, gold_docs: List[Doc], batch_size: int = 64) -> Tuple[List[Doc], List[str]]:
    """The raw texts of `gold_docs` through the components up to the recognizer, and the
    names of the components after it."""
    last = recognizer_position(nlp)
    docs: Iterable[Doc] = (nlp.make_doc(doc.text) for doc in gold_docs)
    docs = run_components(nlp, nlp.pipe_names[: last + 1], docs, batch_size)
    return list(docs), nlp.pipe_names[last + 1:]


def run_components(nlp: Language, names: Sequence[str], docs: Iterable[Doc], batch_size: int = 64) -> Iterable[Doc]:
    return pipe_through([nlp.get_pipe(name) for name in names], docs, batch_size)


def gold_mention_outcomes(predicted: Sequence[Doc], gold_docs: Sequence[Doc]) -> Tuple[List[Span], List[bool]]:
    """The linked (not NIL) mentions of `predicted` among those `linking_metrics` scores, and
    whether each is right (the exact id set): what a confidence is fitted and scored on."""
    linked = [(pred, ids) for doc, gold_doc in zip(predicted, gold_docs)
              for pred, _, ids in scored_pairs(doc, gold_doc) if is_link(pred.kb_id_)]
    return [pred for pred, _ in linked], [link_is_right(gold_ids(pred.kb_id_), ids, "exact") for pred, ids in linked]


def end_to_end_outcomes(predicted: Sequence[Doc], gold_links: Set[Link]) -> Tuple[List[Span], List[bool]]:
    """The linked mentions of `predicted` (raw text through the pipeline), and whether each is a
    gold link (the exact span and id set; a spurious mention is a wrong link)."""
    linked = [(i, e) for i, doc in enumerate(predicted) for e in doc.ents if is_link(e.kb_id_)]
    return [e for _, e in linked], credited_links([_link(i, e) for i, e in linked], gold_links, "exact")


def end_to_end_confidence(predicted: List[Doc], gold_links: Set[Link]) -> Dict[str, Any]:
    """The confidence metrics of every predicted link, a recognizer's spurious mention a wrong
    link (`e2e_confidence_ece`, `e2e_coverage_at_precision_95`, ...), and the precision of the
    links at confidence 0.9 or more."""
    linked, right = end_to_end_outcomes(predicted, gold_links)
    confidence = [e._.kb_confidence if e.has_extension("kb_confidence") else None for e in linked]
    metrics = {f"e2e_{key}": value for key, value in confidence_metrics(confidence, right).items()}
    sure = [r for c, r in zip(confidence, right) if c is not None and c >= 0.9]
    if metrics:
        metrics["e2e_precision_at_confidence_90"] = sum(sure) / len(sure) if sure else None
        metrics["e2e_share_at_confidence_90"] = len(sure) / len(linked)
    return metrics


def evaluate_end_to_end(nlp: Language, gold_docs: List[Doc], batch_size: int = 64) -> Dict[str, Any]:
    """Run the whole pipeline on the raw texts of `gold_docs` (recognition, then linking).

    `ner_*`: mention spans found (labels aside: a linker needs mentions, not their types);
    `nel_micro_*`: spaCy's link scores, over the predicted mentions whose spans are gold;
    `e2e_*`: (span, ids) pairs, a pair right only with the exact span and the exact id set;
    `e2e_any_id_*`: the same with any-id credit (the span exact, the predicted ids among the gold).
    """
    return recognized_and_scored(nlp, gold_docs, batch_size)[0]


def recognized_and_scored(nlp: Language, gold_docs: List[Doc],
                          batch_size: int = 64) -> Tuple[Dict[str, Any], List[Doc]]:
    """`evaluate_end_to_end`'s metrics and the docs the pipeline made of the raw texts."""
    start = time.perf_counter()
    predicted = list(nlp.pipe((doc.text for doc in gold_docs), batch_size=batch_size))
    elapsed = time.perf_counter() - start

    metrics: Dict[str, Any] = recognition_metrics(predicted, gold_docs)
    outcomes = mention_outcomes(Example(p, g) for p, g in zip(predicted, gold_docs))
    metrics.update({key: value for key, value in link_prf(outcomes).items() if key.startswith("nel_micro_")})
    metrics.update(end_to_end_confidence(predicted, end_to_end_links(gold_docs)))
    per_type = recognition_per_type(predicted, gold_docs)
    if per_type:
        metrics["e2e_per_type"] = per_type
    metrics["n_gold_mentions"] = sum(len(doc.ents) for doc in gold_docs)
    metrics["n_predicted_mentions"] = sum(len(doc.ents) for doc in predicted)
    metrics["seconds"] = elapsed
    metrics["docs_per_second"] = len(gold_docs) / elapsed if elapsed > 0 else None
    return metrics, predicted


def recognition_metrics(predicted: List[Doc], gold_docs: List[Doc], label: Optional[str] = None) -> Dict[str, float]:
    """`ner_*` and `e2e_*` / `e2e_any_id_*` P/R/F of the mentions (of `label`, if given)."""
    keep = None if label is None else (lambda other: other == label)
    ner = PRFScore()
    ner.score_set(mention_spans(predicted, keep), mention_spans(gold_docs, keep))
    metrics = {"ner_p": ner.precision, "ner_r": ner.recall, "ner_f": ner.fscore}
    predicted_links, gold_links = end_to_end_links(predicted, keep), end_to_end_links(gold_docs, keep)
    for name, rule in (("e2e", "exact"), ("e2e_any_id", "any_id")):
        prf = end_to_end_prf(predicted_links, gold_links, rule)
        metrics.update({f"{name}_{key}": value for key, value in prf.items()})
    return metrics


def recognition_per_type(predicted: List[Doc], gold_docs: List[Doc]) -> Dict[str, Dict[str, float]]:
    """`recognition_metrics` of each type, where the gold has several and the pipeline's types
    are among them (chemicals and diseases, each linked to its own KB); {} otherwise (NCBI's
    four mention types against a recognizer's one label)."""
    gold_labels = {e.label_ for doc in gold_docs for e in doc.ents}
    predicted_labels = {e.label_ for doc in predicted for e in doc.ents}
    if len(gold_labels) < 2 or not predicted_labels <= gold_labels:
        return {}
    return {label: recognition_metrics(predicted, gold_docs, label) for label in sorted(gold_labels)}


def format_metrics(metrics: Dict[str, Any]) -> str:
    rows = []
    for key, value in metrics.items():
        if isinstance(value, (list, dict)):  # curves and other per-type tables live in the JSON
            continue
        if isinstance(value, float):
            rows.append(f"{key:<22}{value:>10.4f}" if value <= 1.0 else f"{key:<22}{value:>10.1f}")
        elif value is not None:
            rows.append(f"{key:<22}{value:>10}")
    for label, values in metrics.get("e2e_per_type", {}).items():
        rows.extend(f"{label + ' ' + key:<22}{value:>10.4f}" for key, value in values.items())
    return "\n".join(rows)
