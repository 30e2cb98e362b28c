r"""Where the cross-encoder and the retriever disagree, on the gold mentions of a corpus.

For each mention whose gold entity is in the KB (composites the linker split are left out:
the reranker does not relink them): the retriever's first candidate, the cross-encoder's
alone (retrieval_weight 0) and the fused one at the pipeline's retrieval_weight, with the
gold's rank among the reranker's top_n. Mentions are grouped by who is right, and each group
is broken down by what the mention is: a short form, a text seen with the same id in
training, a text that is exactly one of the gold's names. Examples of each group follow.

Why: a reranker pays only where it is right and the retriever is wrong; counting those
mentions says whether more training or other pair text could help.

    python bench/reranker_errors.py training/ncbi/reranker/model-best corpus/ncbi/dev.spacy \
        --seen-from corpus/ncbi/train.spacy [--examples 8] [--output errors.json]
"""
import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from typing import Dict, List, Set

import numpy as np

from spacy_arbo.cli import load_pipeline, reporting_errors
from spacy_arbo.corpora import read_docbin
from spacy_arbo.evaluation import link_gold_mentions
from spacy_arbo.kb.entities import split_ids
from spacy_arbo.reranker.component import fuse_scores, last_reranker
from spacy_arbo.util import ArboError

SHORT_FORM = re.compile(r"^[A-Z0-9][A-Za-z0-9-]{0,7}$")


def seen_texts(nlp, paths: List[str]) -> Dict[str, Set[str]]:
    seen: Dict[str, Set[str]] = defaultdict(set)
    for path in paths:
        for doc in read_docbin(path, nlp.vocab):
            for ent in doc.ents:
                seen[ent.text.lower()].update(split_ids(ent.kb_id_))
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline", help="a pipeline with an arbo_linker and a multi_cross_reranker")
    parser.add_argument("data", help=".spacy DocBin with gold mentions and ids")
    parser.add_argument("--seen-from", nargs="*", default=[], help="training DocBins (for the 'seen' column)")
    parser.add_argument("--examples", type=int, default=8, help="examples printed per group")
    parser.add_argument("--output", help="write every mention's row as JSON here")
    args = parser.parse_args()
    nlp = load_pipeline(args.pipeline)
    reranker = last_reranker(nlp, args.pipeline)
    kb = reranker.kb
    if kb is None:
        raise ArboError(f"{args.pipeline}: '{reranker.name}' has no KB.")
    weight = reranker.settings.retrieval_weight
    gold_docs = read_docbin(args.data, nlp.vocab)
    docs = link_gold_mentions(nlp, gold_docs, exclude=[reranker.name])
    candidates, margins, retrieval = reranker.margins(docs)
    seen = seen_texts(nlp, args.seen_from)

    def name(kb_id: str) -> str:
        return kb[kb_id].name if kb_id in kb else kb_id

    rows = []
    for doc, gold_doc, ids_, margins_, retrieval_ in zip(docs, gold_docs, candidates, margins, retrieval):
        for ent, gold_ent, ids, m, r in zip(doc.ents, gold_doc.ents, ids_, margins_, retrieval_):
            gold = split_ids(gold_ent.kb_id_)
            if len(gold) != 1 or gold[0] not in kb or not ids:
                continue
            fused = fuse_scores(m, r, weight)
            picks = {"retriever": ids[0], "cross": ids[int(np.argmax(m))], "fused": ids[int(np.argmax(fused))]}
            entity = kb[gold[0]]
            rows.append({
                "text": ent.text, "gold": gold[0], "gold_name": entity.name,
                "rank": ids.index(gold[0]) + 1 if gold[0] in ids else None,
                **{k: v == gold[0] for k, v in picks.items()},
                **{f"{k}_id": v for k, v in picks.items()},
                "short_form": bool(SHORT_FORM.match(ent.text)) and ent.text.upper() == ent.text,
                "seen": gold[0] in seen.get(ent.text.lower(), ()),
                "exact_name": ent.text.lower() in {n.lower() for n in (entity.name, *entity.aliases)},
            })
    total = len(rows)
    print(f"{total} single-id gold mentions with candidates; retrieval_weight {weight:g}; "
          f"top_n {reranker.settings.top_n}")
    for who in ("retriever", "cross", "fused"):
        print(f"  accuracy@1 {who:<9} {sum(r[who] for r in rows) / total:.3f}")
    ranks = Counter(r["rank"] if r["rank"] is not None else "missing" for r in rows)
    print("  gold rank among the candidates: " + ", ".join(f"{k}: {ranks[k]}" for k in sorted(
        ranks, key=lambda k: (k == "missing", k if k != "missing" else 0))))

    groups = {
        "both right": lambda r: r["retriever"] and r["cross"],
        "retriever right, cross wrong": lambda r: r["retriever"] and not r["cross"],
        "cross right, retriever wrong": lambda r: r["cross"] and not r["retriever"],
        "both wrong, gold in top_n": lambda r: not r["retriever"] and not r["cross"] and r["rank"],
        "gold not in top_n": lambda r: r["rank"] is None,
    }
    print(f"\n{'group':<30}{'mentions':>9}{'fused right':>12}{'short form':>11}{'seen':>6}{'exact name':>11}")
    for label, test in groups.items():
        members = [r for r in rows if test(r)]
        print(f"{label:<30}{len(members):>9}{sum(r['fused'] for r in members):>12}"
              f"{sum(r['short_form'] for r in members):>11}{sum(r['seen'] for r in members):>6}"
              f"{sum(r['exact_name'] for r in members):>11}")
    for label in ("retriever right, cross wrong", "cross right, retriever wrong", "both wrong, gold in top_n"):
        print(f"\n{label}: mention | gold | retriever's first | cross-encoder's first")
        for r in [r for r in rows if groups[label](r)][: args.examples]:
            print(f"  {r['text']!r} | {r['gold_name']} | {name(r['retriever_id'])} | {name(r['cross_id'])}")
    if args.output:
        with open(args.output, "w", encoding="utf8") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(reporting_errors(main))
