"""The curator's loop on the out-of-KB benchmark (issue 84): for each evaluation set and seed,
`hold_out_kb` takes a share of the entities the set mentions out of the KB (their mentions NIL gold),
the pipeline's KB loses them as `kb remove` takes them, `discover` clusters the set's gold mentions
across documents and proposes its NIL clusters as new entities, a curator accepts every proposal of
`--min-size` mentions or more (added as `kb add` adds them: only the proposals are encoded; their
NEW: ids are new by construction), and the gold mentions are linked again with the default
(independent) linking.

Scored per draw: the proposals (how many, how many mostly of held-out mentions), the held-out
entities with 2 mentions or more that are rediscovered (a proposal holds more than half of their
mentions, and more than half of its mentions are theirs), the held-out mentions linked after
accepting to a proposal whose mentions are mostly of their entity (before: none can be right, their
entity is not in the KB), and the strict accuracy of the in-KB mentions before and after (what the new
entities take from them); then mean, min and max over seeds.

Why: discovery is worth what a curator gets from it: whether the entities a KB lacks come back as
proposals, and whether accepting them links their mentions without taking the KB's own.

    python bench/curator_loop.py /tmp/w/default /tmp/w/kb ncbi=/tmp/w/corpus/ncbi/test.spacy \\
        bc5cdr=/tmp/w/corpus/bc5cdr/dev.spacy --seeds 0 1 2 --min-size 2 --work /tmp/loop \\
        --output bench/results/out_of_kb/curator_loop.json
"""
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example

from spacy_arbo.cli import load_pipeline, reporting_errors
from spacy_arbo.corpora.out_of_kb import EVAL_FILE, hold_out_kb
from spacy_arbo.discovery import discover_entities
from spacy_arbo.evaluation import link_gold_mentions
from spacy_arbo.gold_corpus import read_gold_links
from spacy_arbo.kb.entities import Entity, split_ids
from spacy_arbo.pipeline.common.kb_versions import follow_kb
from spacy_arbo.pipeline.link_confidence import pipeline_linker
from spacy_arbo.scoring import accuracy, mention_outcomes

from out_of_kb import draw_arguments, named_sets, summary

# A mention: (doc id, start char, end char).
Mention = Tuple[Any, int, int]
SUMMARY_KEYS = ("n_proposals", "proposal_purity", "held_out_entities_2plus", "rediscovered_share",
                "held_out_mentions_right_after", "in_kb_strict_before", "in_kb_strict_after", "seconds")


def reduced_pipeline(pipeline: str, held_out: Sequence[str], add: Sequence[Entity] = ()) -> Language:
    """The pipeline with its KB less `held_out` and plus `add` (as kb remove / kb add leave it)."""
    nlp = load_pipeline(pipeline)
    linker = pipeline_linker(nlp, pipeline)
    linker.update_kb(add, held_out)
    follow_kb(nlp, linker.kb)
    return nlp


def mention_key(doc: Doc, index: int, start: int, end: int) -> Mention:
    return doc.user_data.get("doc_id", index), start, end


def majority(ids: Sequence[str]) -> Tuple[Optional[str], float]:
    """The most frequent id and its share."""
    if not ids:
        return None, 0.0
    best, count = Counter(ids).most_common(1)[0]
    return best, count / len(ids)


def draw(pipeline: str, kb_dir: str, corpus: str, work: Path, seed: int, share: float, min_size: int,
         min_similarity: Optional[float]) -> Dict[str, Any]:
    start = time.perf_counter()
    record = hold_out_kb(kb_dir, corpus, work, share=share, seed=seed)
    held_out = record["held_out"]
    former = {(d, s, e): gold for d, s, e, gold in record["turned_nil"]}  # held-out mention -> its entity
    nlp = reduced_pipeline(pipeline, held_out)
    if min_similarity is not None:
        pipeline_linker(nlp, pipeline).configure(min_similarity=min_similarity)
    gold = read_gold_links(work / EVAL_FILE, nlp)
    truth: Dict[Mention, str] = {mention_key(doc, i, e.start_char, e.end_char): e.kb_id_
                                 for i, doc in enumerate(gold) for e in doc.ents}
    truth.update(former)
    found = discover_entities(nlp, gold, min_size=min_size)["records"]
    # Each proposal: its mentions' entities (the former id of a held-out mention).
    proposals = [(r, [truth.get((m["doc"], m["start"], m["end"]), "") for m in r["mentions"]]) for r in found]
    named = {r["concept_id"]: majority(ids) for r, ids in proposals}
    held_counts = Counter(former.values())
    rediscovered = {entity for r, ids in proposals for entity, n in Counter(ids).items()
                    if entity in held_counts and n > held_counts[entity] / 2 and n > len(ids) / 2}
    several = [entity for entity, n in held_counts.items() if n >= 2]

    accepted = [Entity(r["concept_id"], r["canonical_name"], tuple(r["aliases"]), "") for r, _ in proposals]
    in_kb, after = {}, []
    for phase, add in (("before", ()), ("after", accepted)):
        linking = reduced_pipeline(pipeline, held_out, add)
        phase_gold = read_gold_links(work / EVAL_FILE, linking)
        after = link_gold_mentions(linking, phase_gold)
        in_kb[phase] = [o for o in mention_outcomes(Example(p, g) for p, g in zip(after, phase_gold))
                        if not o.gold_is_nil]
    right_after = []
    for index, doc in enumerate(after):
        for ent in doc.ents:
            entity = former.get(mention_key(doc, index, ent.start_char, ent.end_char))
            if entity is not None:
                proposal_entity, _ = named.get(ent.kb_id_, (None, 0.0))
                right_after.append(proposal_entity is not None and set(split_ids(proposal_entity)) == set(split_ids(entity)))
    return {
        "seed": seed, "held_out_entities": len(held_out), "held_out_mentions": len(former),
        "n_proposals": len(proposals),
        "proposal_purity": sum(share for _, share in named.values()) / len(named) if named else None,
        "proposals_mostly_held_out": sum(entity in held_counts for entity, _ in named.values()),
        "held_out_entities_2plus": len(several),
        "rediscovered_share": sum(e in rediscovered for e in several) / len(several) if several else None,
        "held_out_mentions_right_after": sum(right_after) / len(right_after) if right_after else None,
        "in_kb_strict_before": accuracy(in_kb["before"], "exact"),
        "in_kb_strict_after": accuracy(in_kb["after"], "exact"),
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    parser = draw_arguments(__doc__)
    parser.add_argument("--min-size", type=int, default=2, help="the smallest proposal the curator accepts")
    parser.add_argument("--min-similarity", type=float, help="discover's cut (default: the pipeline's, else discover's)")
    args = parser.parse_args()
    sets = named_sets(parser, args)

    def run() -> None:
        result: Dict[str, Any] = {"pipeline": args.pipeline, "kb": args.kb, "share": args.share,
                                  "min_size": args.min_size, "min_similarity": args.min_similarity,
                                  "seeds": args.seeds, "sets": {}}
        for name, corpus in sets.items():
            draws = []
            for seed in args.seeds:
                figures = draw(args.pipeline, args.kb, corpus, Path(args.work) / name / f"seed{seed}", seed,
                               args.share, args.min_size, args.min_similarity)
                print(name, json.dumps(figures))
                draws.append(figures)
            result["sets"][name] = {"draws": draws, "summary": summary(draws, SUMMARY_KEYS)}
            print(name, "mean (min-max):", json.dumps(result["sets"][name]["summary"]))
        if args.output:
            Path(args.output).parent.mkdir(parents=True, exist_ok=True)
            Path(args.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf8")

    raise SystemExit(reporting_errors(run))


if __name__ == "__main__":
    main()
