"""One self-contained HTML page of an evaluation (`evaluate --html`): the figures, the reliability
diagram and the precision-coverage curve, then every document with its gold and predicted mentions,
each marked by what happened to it (right, wrong id, NIL, missed, spurious), filters, and each
mention's top candidates with their KB names. No network and no server: styles, script and charts
are inline."""
import html
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from spacy.tokens import Doc, Span

from .kb.entities import NIL, split_ids
from .kb.store import BaseEntityStore

OUTCOMES = {
    "right": "right id",
    "wrong": "wrong id",
    "nil": "left NIL",
    "missed": "gold mention not found",
    "spurious": "found, not a gold mention",
}
# Below this confidence a link counts as low confidence in the page's filter.
LOW_CONFIDENCE = 0.5
TOP_CANDIDATES = 5


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


def _candidates(span: Optional[Span]) -> List[Any]:
    ranked = (span._.kb_candidates if span is not None and span.has_extension("kb_candidates") else None) or []
    return list(ranked[:TOP_CANDIDATES])


def doc_mentions(predicted: Doc, gold: Doc, seen_ids: Optional[Set[str]]) -> List[Mention]:
    """Gold and predicted mentions of one doc, paired by their offsets."""
    gold_by = {(e.start_char, e.end_char): e for e in gold.ents}
    pred_by = {(e.start_char, e.end_char): e for e in predicted.ents}
    mentions = []
    for offsets in sorted(set(gold_by) | set(pred_by)):
        g, p = gold_by.get(offsets), pred_by.get(offsets)
        gold_id, pred_id = (g.kb_id_ or NIL) if g else "", (p.kb_id_ or NIL) if p else ""
        if g is None:
            outcome = "spurious"
        elif p is None:
            outcome = "missed"
        elif pred_id == NIL:
            outcome = "nil" if gold_id != NIL else "right"
        else:
            outcome = "right" if set(split_ids(pred_id)) == set(split_ids(gold_id)) else "wrong"
        confidence = p._.kb_confidence if p is not None and p.has_extension("kb_confidence") else None
        unseen = bool(g) and seen_ids is not None and gold_id != NIL and not set(split_ids(gold_id)) & seen_ids
        mentions.append(Mention(offsets[0], offsets[1], (g or p).text, outcome, gold_id, pred_id, confidence,
                                _candidates(p), unseen))
    return mentions


def _name(kb: Optional[BaseEntityStore], kb_id: str) -> str:
    names = []
    for part in split_ids(kb_id):
        names.append(kb[part].name if kb is not None and part in kb else "")
    return " | ".join(n for n in names if n)


def _attrs(m: Mention) -> str:
    low = m.confidence is not None and m.confidence < LOW_CONFIDENCE
    return (f'data-outcome="{m.outcome}" data-error="{int(m.outcome != "right")}" data-unseen="{int(m.unseen)}" '
            f'data-low="{int(low)}"')


def _doc_html(index: int, doc_id: str, text: str, mentions: List[Mention], kb: Optional[BaseEntityStore]) -> str:
    parts, cursor, rows = [], 0, []
    for n, m in enumerate(mentions):
        key = f"m{index}-{n}"
        if m.start >= cursor:  # an overlapping mention is listed below, not marked in the text
            parts.append(html.escape(text[cursor:m.start]))
            parts.append(f'<mark class="{m.outcome}" {_attrs(m)} data-row="{key}" '
                         f'title="{html.escape(OUTCOMES[m.outcome])}">{html.escape(text[m.start:m.end])}'
                         f'<span class="label">{html.escape(m.predicted or m.gold)}</span></mark>')
            cursor = m.end
        candidates = "".join(
            f"<li><code>{html.escape(c)}</code> {html.escape(_name(kb, c))} <span class=score>{s:.3f}</span></li>"
            for c, s in m.candidates)
        conf = "" if m.confidence is None else f"{m.confidence:.3f}"
        rows.append(
            f'<tr id="{key}" class="{m.outcome}" {_attrs(m)}><td>{html.escape(m.text)}</td>'
            f"<td>{html.escape(OUTCOMES[m.outcome])}</td>"
            f"<td><code>{html.escape(m.gold)}</code> {html.escape(_name(kb, m.gold))}</td>"
            f"<td><code>{html.escape(m.predicted)}</code> {html.escape(_name(kb, m.predicted))}</td>"
            f"<td>{conf}</td><td><ol>{candidates}</ol></td></tr>")
    parts.append(html.escape(text[cursor:]))
    return (f'<section class="doc" data-doc="{index}"><h3>{html.escape(doc_id)}</h3>'
            f'<p class="text">{"".join(parts)}</p>'
            f'<table class="mentions"><thead><tr><th>mention</th><th>outcome</th><th>gold</th><th>predicted</th>'
            f'<th>confidence</th><th>top candidates</th></tr></thead><tbody>{"".join(rows)}</tbody></table></section>')


def _svg_chart(points: Sequence[Any], x_label: str, y_label: str, bars: bool = False) -> str:
    """A 260x200 chart of (x, y) in [0, 1]^2, the diagonal drawn for the reliability diagram."""
    w, h, pad = 260, 200, 30

    def at(x: float, y: float) -> str:
        return f"{pad + x * (w - 2 * pad):.1f},{h - pad - y * (h - 2 * pad):.1f}"

    body = [f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" class="axis"/>',
            f'<line x1="{pad}" y1="{h - pad}" x2="{pad}" y2="{pad}" class="axis"/>',
            f'<text x="{w / 2}" y="{h - 5}" text-anchor="middle">{x_label}</text>',
            f'<text x="10" y="{h / 2}" transform="rotate(-90 10 {h / 2})" text-anchor="middle">{y_label}</text>',
            f'<text x="{pad}" y="{h - pad + 12}" text-anchor="middle" class="tick">0</text>',
            f'<text x="{w - pad}" y="{h - pad + 12}" text-anchor="middle" class="tick">1</text>',
            f'<text x="{pad - 8}" y="{pad + 4}" text-anchor="middle" class="tick">1</text>']
    if bars:
        body.append(f'<polyline points="{at(0, 0)} {at(1, 1)}" class="diagonal"/>')
        for low, high, y in points:
            x0, y0 = at(low, 0).split(","), at(high, y).split(",")
            body.append(f'<rect x="{x0[0]}" y="{y0[1]}" width="{float(y0[0]) - float(x0[0]) - 1:.1f}" '
                        f'height="{float(x0[1]) - float(y0[1]):.1f}" class="bar"/>')
    else:
        body.append(f'<polyline points="{" ".join(at(x, y) for x, y in points)}" class="curve"/>')
    return f'<svg width="{w}" height="{h}" role="img">{"".join(body)}</svg>'


STYLE = """
body{font-family:sans-serif;margin:1.5em;max-width:1100px}table{border-collapse:collapse}
td,th{border:1px solid #ddd;padding:2px 6px;font-size:13px;vertical-align:top}
.text{line-height:2.1}mark{padding:2px 4px;border-radius:4px;margin:0 1px}
mark .label{font-size:10px;font-weight:bold;margin-left:4px;text-transform:uppercase}
mark.right{background:#c8efc8}mark.wrong{background:#f7b9b9}mark.nil{background:#ffd9a0}
mark.missed{background:none;border:2px dashed #999}mark.spurious{background:#dccdf5}
tr.right td:nth-child(2){color:#2a7a2a}tr.wrong td:nth-child(2){color:#b00}ol{margin:0;padding-left:1.3em}
.axis{stroke:#333}.diagonal{stroke:#aaa;stroke-dasharray:4;fill:none}.bar{fill:#6a9fd8}
.curve{stroke:#c33;fill:none;stroke-width:2}
.hidden{display:none}.charts{display:flex;gap:2em;align-items:flex-start}.tick{font-size:10px}
h1{font-size:22px}summary{cursor:pointer;margin:0.5em 0}.score{color:#777}#shown{margin-left:1em;color:#555}
"""

SCRIPT = """
const boxes = ["errors", "unseen", "low"].map(id => document.getElementById(id));
function apply() {
  const [errors, unseen, low] = boxes.map(b => b.checked);
  let shownDocs = 0, shownMentions = 0;
  document.querySelectorAll("section.doc").forEach(doc => {
    let any = false;
    doc.querySelectorAll("tr[data-outcome]").forEach(row => {
      const keep = (!errors || row.dataset.error === "1") && (!unseen || row.dataset.unseen === "1")
        && (!low || row.dataset.low === "1");
      row.classList.toggle("hidden", !keep);
      const mark = doc.querySelector(`mark[data-row="${row.id}"]`);
      if (mark) mark.style.opacity = keep ? "1" : "0.25";
      if (keep) { any = true; shownMentions++; }
    });
    const show = any || !(errors || unseen || low);
    doc.classList.toggle("hidden", !show);
    if (show) shownDocs++;
  });
  document.getElementById("shown").textContent = `${shownDocs} documents, ${shownMentions} mentions shown`;
}
boxes.forEach(b => b.addEventListener("change", apply));
document.querySelectorAll("mark[data-row]").forEach(mark => mark.addEventListener("click", () => {
  document.getElementById(mark.dataset.row).scrollIntoView({block: "center"});
}));
apply();
"""


# The figures shown first; the others are one click away.
HEADLINE = ("n_mentions", "accuracy_strict", "accuracy", "nel_micro_f", "confidence_ece", "coverage_at_precision_95",
            "coverage_at_precision_99", "ner_f", "e2e_p", "e2e_r", "e2e_f", "e2e_confidence_ece",
            "e2e_precision_at_confidence_90")


def _table(metrics: Dict[str, Any], keys: Sequence[str]) -> str:
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{metrics[k]:.4f}</td></tr>" if isinstance(metrics[k], float)
                   else f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(metrics[k]))}</td></tr>" for k in keys)
    return f'<table class="summary">{rows}</table>'


def _summary(metrics: Dict[str, Any]) -> Tuple[str, str]:
    """The headline figures, and all of them."""
    shown = [k for k, v in metrics.items() if v is not None and not isinstance(v, (list, dict))]
    return _table(metrics, [k for k in HEADLINE if k in shown]), _table(metrics, shown)


def error_report(title: str, metrics: Dict[str, Any], predicted: Sequence[Doc], gold: Sequence[Doc],
                 kb: Optional[BaseEntityStore], seen_ids: Optional[Set[str]] = None) -> str:
    """The page: `metrics` (an evaluation's), then each doc of `predicted` beside its `gold`."""
    prefix = "e2e_" if "e2e_confidence_ece" in metrics else ""
    bins = [(b["low"], b["high"], b["accuracy"]) for b in metrics.get(f"{prefix}reliability", []) if b["n"]]
    curve = [(p["coverage"], p["precision"]) for p in metrics.get(f"{prefix}precision_coverage", [])]
    headline, every = _summary(metrics)
    charts = ""
    if bins:
        charts = (f'<figure>{_svg_chart(bins, "confidence", "accuracy", bars=True)}'
                  f'<figcaption>reliability diagram</figcaption></figure>'
                  f'<figure>{_svg_chart(curve, "coverage", "precision")}<figcaption>precision-coverage'
                  f'</figcaption></figure>')
    docs = "".join(_doc_html(i, str(g.user_data.get("doc_id") or f"document {i + 1}"), g.text,
                             doc_mentions(p, g, seen_ids), kb) for i, (p, g) in enumerate(zip(predicted, gold)))
    legend = " ".join(f'<mark class="{k}">{html.escape(v)}</mark>' for k, v in OUTCOMES.items())
    filters = ('<p><label><input type="checkbox" id="errors"> errors only</label> '
               f'<label><input type="checkbox" id="unseen"> unseen entities{"" if seen_ids else " (no --seen-from)"}'
               f'</label> <label><input type="checkbox" id="low"> confidence below {LOW_CONFIDENCE:g}</label>'
               '<span id="shown"></span></p>')
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
            f'<div class="charts">{headline}{charts}</div><details><summary>all figures</summary>{every}</details>'

            f"<p>{legend}</p>{filters}{docs}"
            f"<script>{SCRIPT}</script></body></html>")
