"""One self-contained HTML page of an evaluation (`evaluate --html`): the figures, the reliability
diagram and the precision-coverage curve, then every document with its gold and predicted mentions,
each marked by what happened to it (right, wrong id, NIL, missed, spurious, or a gold mention without
an id, which the metrics leave out too), filters, and each mention's top candidates with their KB
names. No network and no server: styles, script and charts are inline. The page is the jinja2
template `templates/error_report.html.j2` (autoescaped), the marked texts are displaCy's."""
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import jinja2
from markupsafe import Markup, escape
from spacy import displacy
from spacy.tokens import Doc, Span

from .kb.entities import NIL, split_ids
from .kb.store import BaseEntityStore
from .scoring import gold_ids, gold_link, is_link, link_is_right

OUTCOMES = {
    "right": "right id",
    "wrong": "wrong id",
    "nil": "left NIL",
    "missed": "gold mention not found",
    "spurious": "found, not a gold mention",
    "unscored": "gold mention without an id, not scored",
}
# What the page's "errors only" filter keeps.
ERRORS = ("wrong", "nil", "missed", "spurious")
# Below this confidence a link counts as low confidence in the page's filter.
LOW_CONFIDENCE = 0.5
TOP_CANDIDATES = 5
# displaCy's template of a marked mention: `text` escaped by displaCy, `label` by `_marked`.
MARK = ('<mark class="{outcome}" data-row="{row}" title="{meaning}">{text}<span class="label">{label}</span>'
        '</mark>')
TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("spacy_arbo"), autoescape=True, trim_blocks=True,
                               lstrip_blocks=True, undefined=jinja2.StrictUndefined)


@dataclass
class Mention:
    start: int
    end: int
    text: str
    outcome: str
    gold: str
    predicted: str
    confidence: Optional[float]
    candidates: List[Any]
    unseen: bool

    @property
    def error(self) -> bool:
        return self.outcome in ERRORS

    @property
    def low(self) -> bool:
        return self.confidence is not None and self.confidence < LOW_CONFIDENCE


@dataclass
class _Document:
    """What the template shows of one document: its mentions marked in the text (displaCy's
    markup) and one row each."""

    title: str
    text: Markup
    rows: List[Tuple[str, Mention]]


def _candidates(span: Optional[Span]) -> List[Any]:
    ranked = (span._.kb_candidates if span is not None and span.has_extension("kb_candidates") else None) or []
    return list(ranked[:TOP_CANDIDATES])


def mention_outcome(gold: Optional[Span], predicted: Optional[Span]) -> str:
    """What happened to a mention, linked as the metrics score it (`scoring`'s strict rule), so
    the page counts what they count."""
    if gold is None:
        return "spurious"
    if predicted is None:
        return "missed"
    ids = gold_link(gold)
    if ids is None:
        return "unscored"
    if link_is_right(gold_ids(predicted.kb_id_), ids, "exact"):
        return "right"
    return "wrong" if is_link(predicted.kb_id_) else "nil"


def doc_mentions(predicted: Doc, gold: Doc, seen_ids: Optional[Set[str]]) -> List[Mention]:
    """Gold and predicted mentions of one doc, paired by their offsets."""
    gold_by = {(e.start_char, e.end_char): e for e in gold.ents}
    pred_by = {(e.start_char, e.end_char): e for e in predicted.ents}
    mentions = []
    for offsets in sorted(set(gold_by) | set(pred_by)):
        g, p = gold_by.get(offsets), pred_by.get(offsets)
        gold_id = g.kb_id_ if g is not None else ""
        pred_id = (p.kb_id_ or NIL) if p is not None else ""
        confidence = p._.kb_confidence if p is not None and p.has_extension("kb_confidence") else None
        unseen = seen_ids is not None and is_link(gold_id) and not set(gold_ids(gold_id)) & seen_ids
        mentions.append(Mention(offsets[0], offsets[1], (g or p).text, mention_outcome(g, p), gold_id, pred_id,
                                confidence, _candidates(p), unseen))
    return mentions


def _name(kb: Optional[BaseEntityStore], kb_id: str) -> str:
    names = []
    for part in split_ids(kb_id):
        names.append(kb[part].name if kb is not None and part in kb else "")
    return " | ".join(n for n in names if n)


def _marked(text: str, rows: List[Tuple[str, Mention]]) -> Markup:
    """`text` with its mentions marked, by displaCy; a mention overlapping the one before is
    listed in the table only."""
    ents, cursor = [], 0
    for key, m in rows:
        if m.start >= cursor:
            # displaCy escapes the text it marks, not the labels it is given.
            ents.append({"start": m.start, "end": m.end, "label": escape(m.predicted or m.gold),
                         "params": {"outcome": m.outcome, "row": key, "meaning": OUTCOMES[m.outcome]}})
            cursor = m.end
    return Markup(displacy.render({"text": text, "ents": ents}, style="ent", manual=True, jupyter=False,
                                  options={"template": MARK}))


def _document(index: int, predicted: Doc, gold: Doc, seen_ids: Optional[Set[str]]) -> _Document:
    rows = [(f"m{index}-{n}", m) for n, m in enumerate(doc_mentions(predicted, gold, seen_ids))]
    return _Document(str(gold.user_data.get("doc_id") or f"document {index + 1}"), _marked(gold.text, rows), rows)


# The figures shown first; the others are one click away.
HEADLINE = ("n_mentions", "accuracy_strict", "accuracy", "nel_micro_f", "confidence_ece", "coverage_at_precision_95",
            "coverage_at_precision_99", "ner_f", "e2e_p", "e2e_r", "e2e_f", "e2e_confidence_ece",
            "e2e_precision_at_confidence_90")


def error_report(title: str, metrics: Dict[str, Any], predicted: Sequence[Doc], gold: Sequence[Doc],
                 kb: Optional[BaseEntityStore], seen_ids: Optional[Set[str]] = None) -> str:
    """The page: `metrics` (an evaluation's), then each doc of `predicted` beside its `gold`."""
    prefix = "e2e_" if "e2e_confidence_ece" in metrics else ""
    shown = [k for k, v in metrics.items() if v is not None and not isinstance(v, (list, dict))]
    return TEMPLATES.get_template("error_report.html.j2").render(
        title=title, metrics=metrics, shown=shown, headline=[k for k in HEADLINE if k in shown],
        bins=[(b["low"], b["high"], b["accuracy"]) for b in metrics.get(f"{prefix}reliability", []) if b["n"]],
        curve=[(p["coverage"], p["precision"]) for p in metrics.get(f"{prefix}precision_coverage", [])],
        outcomes=OUTCOMES, has_seen=bool(seen_ids), low_confidence=LOW_CONFIDENCE,
        name=lambda kb_id: _name(kb, kb_id),
        docs=[_document(i, p, g, seen_ids) for i, (p, g) in enumerate(zip(predicted, gold))])
