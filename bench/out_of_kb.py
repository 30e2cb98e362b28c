"""NIL detection on an out-of-KB benchmark built from the real data (issue 84): for each evaluation
set and seed, `hold-out-kb` takes a share of the entities the set mentions out of the KB (their
mentions NIL gold), the pipeline's KB loses the same entities as `kb remove` takes them (no other
entity re-encoded, the confidence as fitted before), and the gold mentions are linked with NIL off.
A link is then taken for NIL where its `span._.kb_confidence` is below a threshold, chosen by the
best NIL F1 (PEL's rule) on data other than the set scored: the other sets' draws of the same seed
(`other_sets`), and, apart, each half of the set's documents (even, odd) by the other half
(`halves`). Per set and seed: the area under the NIL PR curve, NIL P/R/F1 and the in-KB mentions'
strict accuracy at each chosen threshold (a mention turned NIL wrong), the same mentions' strict
accuracy with NIL off and with the whole KB, the best NIL F1 any threshold reaches on the set
(`oracle`, a ceiling), and where the held-out mentions' links sit from their own entity in the KB's
hierarchy (`held_out_links`: a parent, a child, a sibling, farther up or down, or elsewhere); then the
mean, min and max over seeds. With `--dev NAME=DEV.spacy` (a labelled set apart from NAME's evaluation set),
NIL is also decided as a user with labels would: the same seed's draw of the dev set's entities, linked so,
picks the threshold of the label-free confidence (`dev_draw`), and fits a calibration that replaces it
(`dev_calibrated`: NIL PR area and figures at the threshold its own dev draw picks, and how the new
confidence holds on the whole KB: `full_kb_ece`, `full_kb_coverage_95`, beside the label-free ones).
With `--memory NAME=TRAIN.spacy` as well, each draw's pipeline (evaluation and dev draws alike) holds a
`link_memory` of TRAIN's mentions (`add-memory`'s defaults) less those of the draw's held-out entities, which
it never sees (PEL's appendix D): NIL decided by a pipeline that read annotations, its calibration fitted on
the dev draw with the memory among the features.

Why: a KB never holds every entity a text mentions; whether a linker can say "not in the KB"
without losing its in-KB links is measured only where gold says which mentions those are, and a
draw of entities is one draw, so several are scored.

    python bench/out_of_kb.py /tmp/w/default /tmp/w/kb ncbi=/tmp/w/corpus/ncbi/test.spacy \\
        bc5cdr=/tmp/w/corpus/bc5cdr/dev.spacy --seeds 0 1 2 --share 0.2 --work /tmp/oob \\
        --output bench/results/out_of_kb/default.json
    python bench/out_of_kb.py /tmp/w/default /tmp/w/kb ncbi=/tmp/w/corpus/ncbi/test.spacy \\
        bc5cdr=/tmp/w/corpus/bc5cdr/dev.spacy --dev ncbi=/tmp/w/corpus/ncbi/dev.spacy \\
        bc5cdr=/tmp/w/corpus/bc5cdr/train.spacy --work /tmp/oob --output bench/results/out_of_kb/dev.json
    python bench/out_of_kb.py /tmp/w/default /tmp/w/kb ncbi=/tmp/w/corpus/ncbi/test.spacy \\
        --dev ncbi=/tmp/w/corpus/ncbi/dev.spacy --memory ncbi=/tmp/w/corpus/ncbi/train.spacy \\
        --work /tmp/oob_memory --output bench/results/out_of_kb/memory.json
"""
import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from spacy.tokens import Doc
from spacy.training import Example
from spacy.vocab import Vocab

from spacy_arbo.cli import load_pipeline, reporting_errors
from spacy_arbo.confidence.calibration import Calibration, fit_calibration
from spacy_arbo.confidence.features import ConfidenceFeatures
from spacy_arbo.confidence.metrics import confidence_metrics
from spacy_arbo.confidence.nil_curve import best_nil_threshold, nil_average_precision
from spacy_arbo.corpora import read_docbin
from spacy_arbo.corpora.out_of_kb import EVAL_FILE, TRAIN_FILE, hold_out_kb
from spacy_arbo.evaluation import link_gold_mentions
from spacy_arbo.gold_corpus import read_gold_links
from spacy_arbo.kb.entities import NIL
from spacy_arbo.kb.store import BaseEntityStore, open_store
from spacy_arbo.pipeline.common.kb_versions import follow_kb, kb_holders
from spacy_arbo.pipeline.link_confidence import pipeline_linker
from spacy_arbo.pipeline.link_memory import LinkMemory
from spacy_arbo.scoring import MentionOutcome, accuracy, mention_outcomes, nil_prf, scored_pairs
from spacy_arbo.util import ArboError

# (set name, seed) -> the outcomes of each document's gold mentions, documents in corpus order.
Outcomes = List[List[MentionOutcome]]
SUMMARY_KEYS = ("nil_pr_auc", "in_kb_strict_nil_off", "in_kb_strict_full_kb", "other_sets.nil_p", "other_sets.nil_r",
                "other_sets.nil_f", "other_sets.in_kb_strict", "halves.nil_p", "halves.nil_r", "halves.nil_f",
                "halves.in_kb_strict", "oracle.nil_f", "held_out_links.nearby")
DEV_KEYS = ("dev_draw.nil_p", "dev_draw.nil_r", "dev_draw.nil_f", "dev_draw.in_kb_strict", "dev_calibrated.nil_pr_auc",
            "dev_calibrated.nil_p", "dev_calibrated.nil_r", "dev_calibrated.nil_f", "dev_calibrated.in_kb_strict",
            "dev_calibrated.full_kb_ece", "dev_calibrated.full_kb_coverage_95",
            "dev_calibrated.label_free_full_kb_ece", "dev_calibrated.label_free_full_kb_coverage_95")
# How far up or down the hierarchy (ParentIDs) a link counts as `farther`.
MAX_DEPTH = 8


class Linked(NamedTuple):
    outcomes: Outcomes
    features: List[List[List[float]]]  # per document, the confidence features of each outcome's link
    seconds: float  # the linking


def linked(pipeline: str, corpus: Path, remove: Sequence[str] = (), with_features: bool = False,
           memory_from: Optional[Tuple[Path, Path]] = None) -> Linked:
    """The pipeline's outcomes on the gold mentions of `corpus`, its KB less `remove` (as
    `kb remove` leaves it), with each link's confidence features where a calibration is to be fitted
    (`with_features`), and a link memory of `memory_from` (a draw's train and the train it was
    drawn from: `unseen_held_out`)."""
    nlp = load_pipeline(pipeline)
    linker = pipeline_linker(nlp, pipeline)
    if remove:
        if any(kb is not linker.kb for _, kb in kb_holders(nlp)):
            raise ArboError(f"{pipeline}: a component links to a KB of its own, which removing entities would not "
                            "change; measure a pipeline with one KB.")
        linker.update_kb(remove=remove)
        follow_kb(nlp, linker.kb)
    if memory_from is not None:
        if "link_memory" in nlp.pipe_names:
            raise ArboError(f"{pipeline} has a link_memory already; --memory adds each draw's own.")
        memory = LinkMemory(nlp.vocab)
        memory.add(unseen_held_out(*memory_from, nlp.vocab))
        memory.add_to(nlp)
    gold = read_gold_links(corpus, nlp)
    start = time.perf_counter()
    predicted = link_gold_mentions(nlp, gold)
    seconds = time.perf_counter() - start
    features = ConfidenceFeatures(nlp, linker) if with_features else None
    return Linked([mention_outcomes([Example(p, g)]) for p, g in zip(predicted, gold)],
                  [features([span for span, _, _ in scored_pairs(p, g)]) if features else []
                   for p, g in zip(predicted, gold)], seconds)


def unseen_held_out(draw_train: Path, train: Path, vocab: Vocab) -> List[Doc]:
    """A draw's train as its link memory reads it: the mentions the draw turned NIL (of its held-out
    entities) left out, never seen; the corpus's own NIL mentions kept, as `add-memory` keeps them."""
    docs = read_docbin(draw_train, vocab)
    for doc, source in zip(docs, read_docbin(train, vocab)):
        was = {(ent.start, ent.end): ent.kb_id_ for ent in source.ents}
        doc.ents = [ent for ent in doc.ents if ent.kb_id_ != NIL or was.get((ent.start, ent.end)) in ("", NIL)]
    return docs


def flat(outcomes: Outcomes) -> List[MentionOutcome]:
    return [o for doc in outcomes for o in doc]


def thresholded(outcomes: Sequence[MentionOutcome], threshold: float) -> List[MentionOutcome]:
    """The outcomes with each link below `threshold` made NIL."""
    return [dataclasses.replace(o, predicted=NIL) if o.confidence is not None and o.confidence < threshold else o
            for o in outcomes]


def scored(outcomes: Sequence[MentionOutcome]) -> Dict[str, Optional[float]]:
    """NIL P/R/F1 and the in-KB mentions' strict accuracy, by the metrics' own functions."""
    return {**nil_prf(outcomes), "in_kb_strict": accuracy([o for o in outcomes if not o.gold_is_nil], "exact")}


def halves_scored(outcomes: Outcomes) -> Dict[str, Any]:
    """Each half of the documents (even, odd) at the threshold the other half picks, pooled."""
    halves = [flat(outcomes[parity::2]) for parity in (0, 1)]
    thresholds = [best_nil_threshold(halves[1 - parity]) for parity in (0, 1)]
    pooled = thresholded(halves[0], thresholds[0]) + thresholded(halves[1], thresholds[1])
    return {"thresholds": thresholds, **scored(pooled)}


def ancestors(kb: BaseEntityStore, kb_id: str) -> Set[str]:
    """The entities above `kb_id`, up to `MAX_DEPTH` levels."""
    found, frontier = set(), {kb_id}
    for _ in range(MAX_DEPTH):
        frontier = {parent for i in frontier if i in kb for parent in kb[i].parents} - found
        found |= frontier
    return found


def relation(kb: BaseEntityStore, entity: str, linked_to: str) -> str:
    """Where `linked_to` sits from `entity` in the KB's hierarchy."""
    parents = set(kb[entity].parents) if entity in kb else set()
    their_parents = set(kb[linked_to].parents) if linked_to in kb else set()
    if linked_to in parents:
        return "parent"
    if entity in their_parents:
        return "child"
    if parents & their_parents:
        return "sibling"
    if linked_to in ancestors(kb, entity) or entity in ancestors(kb, linked_to):
        return "farther"
    return "other"


def held_out_links(kb: BaseEntityStore, mentions: List[MentionOutcome], reference: List[MentionOutcome]
                   ) -> Dict[str, Any]:
    """The share of the held-out mentions linked (NIL off) to each `relation` of their entity (the
    nearest of a composite's parts), and `nearby`: to any but `other`."""
    order = ("parent", "child", "sibling", "farther", "other")
    found = [min((relation(kb, part, o.predicted) for part in ref.gold), key=order.index)
             for o, ref in zip(mentions, reference) if o.gold_is_nil and not ref.gold_is_nil and o.predicted != NIL]
    shares = {name: sum(r == name for r in found) / len(found) if found else None for name in order}
    return {"n": len(found), **shares, "nearby": None if not found else 1 - shares["other"]}


def recalibrated(links: Linked, calibration: Calibration) -> List[MentionOutcome]:
    """The outcomes of `links` with the confidence `calibration` gives them (none for a NIL link)."""
    outcomes, rows = flat(links.outcomes), [row for doc in links.features for row in doc]
    if len(rows) != len(outcomes):
        raise ArboError("the links' features and outcomes differ in number; link with features (--dev).")
    return [o if o.predicted == NIL else dataclasses.replace(o, confidence=float(c))
            for o, c in zip(outcomes, calibration(rows))]


def confidence_held(outcomes: Sequence[MentionOutcome]) -> Dict[str, Optional[float]]:
    """ECE and coverage at 95% precision of the outcomes' confidence (strict); None without one."""
    metrics = confidence_metrics([o.confidence for o in outcomes], [o.credited("exact") for o in outcomes])
    return {"ece": metrics.get("confidence_ece"), "coverage_95": metrics.get("coverage_at_precision_95")}


def dev_figures(draw: Linked, full_kb: Linked, dev: Linked) -> Dict[str, Any]:
    """NIL decided with a labelled dev set's own draw: its threshold of the label-free confidence,
    and a calibration fitted on its links (a held-out mention's link is wrong)."""
    mentions, dev_mentions = flat(draw.outcomes), flat(dev.outcomes)
    threshold = best_nil_threshold(dev_mentions)
    dev_rows = [row for doc in dev.features for row in doc]
    fitted = [(row, o.credited("exact")) for row, o in zip(dev_rows, dev_mentions) if o.predicted != NIL]
    calibration = fit_calibration([row for row, _ in fitted], [right for _, right in fitted], source="dev draw")
    calibrated, dev_calibrated = recalibrated(draw, calibration), recalibrated(dev, calibration)
    calibrated_threshold = best_nil_threshold(dev_calibrated)
    label_free = confidence_held(flat(full_kb.outcomes))
    calibrated_full_kb = confidence_held(recalibrated(full_kb, calibration))
    return {
        "dev_draw": {"threshold": threshold, **scored(thresholded(mentions, threshold))},
        "dev_calibrated": {"nil_pr_auc": nil_average_precision(calibrated), "threshold": calibrated_threshold,
                           **scored(thresholded(calibrated, calibrated_threshold)),
                           "full_kb_ece": calibrated_full_kb["ece"],
                           "full_kb_coverage_95": calibrated_full_kb["coverage_95"],
                           "label_free_full_kb_ece": label_free["ece"],
                           "label_free_full_kb_coverage_95": label_free["coverage_95"]},
    }


def draw_figures(outcomes: Outcomes, full_kb: Outcomes, others: List[MentionOutcome], kb: BaseEntityStore
                 ) -> Dict[str, Any]:
    mentions, reference = flat(outcomes), flat(full_kb)
    assert len(mentions) == len(reference), "the draw's corpus holds other mentions than its source"
    in_kb = [i for i, o in enumerate(mentions) if not o.gold_is_nil]
    figures: Dict[str, Any] = {
        "n_mentions": len(mentions), "n_nil_gold": len(mentions) - len(in_kb),
        "nil_pr_auc": nil_average_precision(mentions),
        "in_kb_strict_nil_off": scored(mentions)["in_kb_strict"],
        # The same mentions linked by the pipeline with the whole KB, against their gold before the draw.
        "in_kb_strict_full_kb": accuracy([reference[i] for i in in_kb], "exact"),
        "halves": halves_scored(outcomes),
    }
    if others:
        threshold = best_nil_threshold(others)
        figures["other_sets"] = {"threshold": threshold, **scored(thresholded(mentions, threshold))}
    threshold = best_nil_threshold(mentions)
    figures["oracle"] = {"threshold": threshold, **scored(thresholded(mentions, threshold))}
    figures["held_out_links"] = held_out_links(kb, mentions, reference)
    return figures


def lookup(row: Dict[str, Any], key: str) -> Optional[float]:
    for part in key.split("."):
        row = row.get(part) if isinstance(row, dict) else None
    return row


def summary(rows: List[Dict[str, Any]], keys: Sequence[str] = SUMMARY_KEYS) -> Dict[str, Dict[str, Any]]:
    """Per figure (`keys`, dotted into nested rows): mean, min and max over the draws."""
    out = {}
    for key in keys:
        values = [v for v in (lookup(row, key) for row in rows) if v is not None]
        if values:
            out[key] = {"mean": sum(values) / len(values), "min": min(values), "max": max(values)}
    return out


def draw_arguments(description: str) -> argparse.ArgumentParser:
    """The arguments of a benchmark over draws of the out-of-KB benchmark (this one, curator_loop.py)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline", help="a pipeline over the whole KB (e.g. configs/zero_shot.cfg assembled)")
    parser.add_argument("kb", help="the KB directory the corpora were converted against")
    parser.add_argument("sets", nargs="+", metavar="NAME=EVAL.spacy", help="evaluation sets, named")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--share", type=float, default=0.2)
    parser.add_argument("--work", required=True, help="folder for each draw's benchmark (NAME/seedN)")
    parser.add_argument("--output", help="write the figures as JSON here")
    return parser


def named_sets(parser: argparse.ArgumentParser, items: Sequence[str]) -> Dict[str, str]:
    """NAME=PATH items as a dict, so that rows and summaries are keyed by a name the user chose; anything else
    is a usage error."""
    sets = dict(item.split("=", 1) for item in items if "=" in item)
    if len(sets) != len(items) or not all(sets) or not all(sets.values()):
        parser.error("give each set as NAME=FILE.spacy, each name once")
    return sets


def main() -> None:
    parser = draw_arguments(__doc__)
    parser.add_argument("--dev", nargs="+", default=[], metavar="NAME=DEV.spacy",
                        help="a labelled set apart from NAME's evaluation set, to decide NIL with")
    parser.add_argument("--memory", nargs="+", default=[], metavar="NAME=TRAIN.spacy",
                        help="a link memory of this training set, less each draw's held-out entities, in NAME's draws")
    args = parser.parse_args()
    sets, devs, trains = named_sets(parser, args.sets), named_sets(parser, args.dev), named_sets(parser, args.memory)
    for option, named in (("--dev", devs), ("--memory", trains)):
        if set(named) - set(sets):
            parser.error(f"{option} names no evaluation set: {', '.join(sorted(set(named) - set(sets)))}")

    def run() -> None:
        kb = open_store(args.kb)
        full = {name: linked(args.pipeline, Path(path), with_features=name in devs,
                             memory_from=(Path(trains[name]),) * 2 if name in trains else None)
                for name, path in sets.items()}
        draws: Dict[Tuple[str, int], Dict[str, Any]] = {}
        links: Dict[Tuple[str, int], Linked] = {}
        dev_links: Dict[Tuple[str, int], Linked] = {}
        for seed in args.seeds:
            for name, path in sets.items():
                out = Path(args.work) / name / f"seed{seed}"
                record = hold_out_kb(args.kb, path, out, trains.get(name), share=args.share, seed=seed)
                memory = (out / TRAIN_FILE, Path(trains[name])) if name in trains else None
                links[name, seed] = linked(args.pipeline, out / EVAL_FILE, record["held_out"], name in devs, memory)
                draws[name, seed] = {"held_out": len(record["held_out"]), "entities_mentioned":
                                     record["entities_mentioned"], "counts": record["eval_counts"],
                                     "link_seconds": round(links[name, seed].seconds, 1)}
                if name in devs:
                    dev_out = Path(args.work) / name / f"dev_seed{seed}"
                    dev_record = hold_out_kb(args.kb, devs[name], dev_out, trains.get(name), share=args.share, seed=seed)
                    dev_memory = (dev_out / TRAIN_FILE, Path(trains[name])) if name in trains else None
                    dev_links[name, seed] = linked(args.pipeline, dev_out / EVAL_FILE, dev_record["held_out"], True,
                                                   dev_memory)
        rows = []
        for (name, seed), draw in draws.items():
            others = [o for other in sets if other != name for o in flat(links[other, seed].outcomes)]
            rows.append({"set": name, "seed": seed, **draw,
                         **draw_figures(links[name, seed].outcomes, full[name].outcomes, others, kb)})
            if (name, seed) in dev_links:
                rows[-1].update(dev_figures(links[name, seed], full[name], dev_links[name, seed]))
        keys = SUMMARY_KEYS + (DEV_KEYS if devs else ())
        result = {"pipeline": args.pipeline, "kb": args.kb, "sets": sets, "dev": devs, "memory": trains,
                  "share": args.share,
                  "seeds": args.seeds, "rows": rows,
                  "summary": {name: summary([r for r in rows if r["set"] == name], keys) for name in sets}}
        print_table(result)
        if args.output:
            Path(args.output).parent.mkdir(parents=True, exist_ok=True)
            Path(args.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf8")

    raise SystemExit(reporting_errors(run))


def print_table(result: Dict[str, Any]) -> None:
    """One table of the draws and their means, and one of the dev set's decisions where there is one."""
    for keys in (SUMMARY_KEYS, DEV_KEYS) if result["dev"] else (SUMMARY_KEYS,):
        print(f"| set | seed | {' | '.join(keys)} |")
        print(f"|---|---:|{'---:|' * len(keys)}")
        for row in result["rows"]:
            cells = " | ".join("" if lookup(row, k) is None else f"{lookup(row, k):.3f}" for k in keys)
            print(f"| {row['set']} | {row['seed']} | {cells} |")
        for name, figures in result["summary"].items():
            cells = " | ".join(f"{figures[k]['mean']:.3f} ({figures[k]['min']:.3f}-{figures[k]['max']:.3f})"
                               if k in figures else "" for k in keys)
            print(f"| {name} | mean (range) | {cells} |")


if __name__ == "__main__":
    main()
