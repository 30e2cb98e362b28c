r"""Entity discovery on held-out entities (ArboEL section 3.5), as `discover` runs it.

Removes from the pipeline's KB every entity that test mentions link to but no training
mention does (the "unseen" entities), re-encodes the smaller KB, then clusters all test
mentions in one batch for each threshold and reports: how many mentions of removed
entities end in NIL clusters (should: their entity is gone), how many mentions of kept
entities wrongly become NIL, how many NIL clusters there are, and the adjusted Rand
index of the NIL clusters against the gold ids (sklearn's definition, over the mentions
that end in NIL clusters).

Why: `discover` is worth running only if mentions of entities the KB lacks end in NIL
clusters of their own; real entities held out of the KB are the closest test of that.

    python bench/discovery_experiment.py training/ncbi/retriever/model-best corpus/ncbi/test.spacy \
        corpus/ncbi/train.spacy --set index_aliases=true --thresholds 0.7 0.8
"""
import argparse
import json
import sys
from typing import Optional

import spacy

from spacy_arbo.cli import apply_settings, reporting_errors
from spacy_arbo.corpora import read_docbin
from spacy_arbo.discovery import discover_entities
from spacy_arbo.evaluation import gold_id_set
from spacy_arbo.kb.entities import NIL, split_ids
from spacy_arbo.pipeline.arbo_linker import arbo_linkers


def threshold(text: str) -> Optional[float]:
    return None if text.lower() in ("none", "inf") else float(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline")
    parser.add_argument("test", help=".spacy DocBin with gold kb ids")
    parser.add_argument("train", help="training .spacy: defines which entities are seen")
    parser.add_argument("--thresholds", nargs="+", type=threshold, default=[0.6, 0.7, 0.8])
    parser.add_argument("--graph", default="directed")
    parser.add_argument("--knn-mentions", type=int, default=8)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="arbo_linker setting applied first, as for `evaluate --set`, e.g. index_aliases=true")
    parser.add_argument("--output", help="write every row as JSON here")
    args = parser.parse_args()

    nlp = spacy.load(args.pipeline)
    linkers = arbo_linkers(nlp)
    apply_settings(linkers, args.set)
    linker = linkers[0]
    kb = linker.kb
    docs = read_docbin(args.test, nlp.vocab)
    seen = gold_id_set(read_docbin(args.train, nlp.vocab))

    def ids(ent) -> set:
        return {i for i in split_ids(ent.kb_id_) if i != NIL}

    held_out = {}  # (doc id, start, end) as `discover` reports them -> is the entity removed?
    removed = set()
    for index, doc in enumerate(docs):
        for ent in doc.ents:
            in_kb = {i for i in ids(ent) if i in kb}
            if not in_kb:
                continue  # NIL gold already: says nothing about discovery
            unseen = not (ids(ent) & seen)
            held_out[(doc.user_data.get("doc_id", index), ent.start_char, ent.end_char)] = unseen
            if unseen:
                removed |= in_kb
    smaller = kb.subset(lambda e: e.id not in removed)
    n_removed_mentions = sum(held_out.values())
    n_kept_mentions = len(held_out) - n_removed_mentions
    print(f"KB {len(kb):,} -> {len(smaller):,} entities ({len(removed)} removed); test mentions of removed "
          f"entities: {n_removed_mentions}, of kept entities: {n_kept_mentions}", flush=True)
    linker.set_kb(smaller)  # a new retriever: its indexes are built on first use
    linker.refresh_index()

    rows = []
    print("\n| min_similarity | removed-entity mentions in NIL | kept-entity mentions wrongly NIL | "
          "NIL clusters | NIL ARI |\n|---|---|---|---|---|")
    for value in args.thresholds:
        linker.configure(graph=args.graph, knn_mentions=args.knn_mentions, min_similarity=value)
        result = discover_entities(nlp, docs)
        nil = {(m["doc"], m["start"], m["end"]): r["concept_id"] for r in result["records"] for m in r["mentions"]}
        found = sum(1 for key, unseen in held_out.items() if unseen and key in nil)
        false_nil = sum(1 for key, unseen in held_out.items() if not unseen and key in nil)
        row = {"min_similarity": value, "removed_in_nil": found, "n_removed": n_removed_mentions,
               "kept_nil": false_nil, "n_kept": n_kept_mentions,
               "nil_clusters": len(result["records"]), "nil_ari": result["nil_ari"]}
        rows.append(row)
        nil_ari = "-" if row["nil_ari"] is None else f"{row['nil_ari']:.3f}"
        print(f"| {value} | {found} / {n_removed_mentions} | {false_nil} / {n_kept_mentions} | "
              f"{row['nil_clusters']} | {nil_ari} |", flush=True)
    if args.output:
        with open(args.output, "w", encoding="utf8") as file:
            json.dump(rows, file, indent=1)


if __name__ == "__main__":
    sys.exit(reporting_errors(main))
