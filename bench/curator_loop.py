"""The curator's loop on the out-of-KB benchmark (issue 84): for each evaluation set and seed,
`hold_out_kb` takes a share of the entities the set mentions out of the KB (their mentions NIL gold),
the pipeline's KB loses them as `kb remove` takes them, the set's gold mentions are linked, the
mentions left NIL go to `discover` as `link` would write them (the product's route:
`discover_corpus`), a curator accepts every proposal of `--min-size` mentions or more (added as
`kb add` adds them: only the proposals are encoded; their NEW: ids are new by construction), and the
gold mentions are linked again.

Which mentions are NIL (`--nil`): `gold`, the held-out entities' mentions exactly (ArboEL's UNSEEN
ONLY setting: what clustering makes of them alone), or a number T, the mentions whose label-free
confidence is below T (what `link --min-confidence T` leaves NIL).

Scored per draw: the area under the NIL precision-recall curve (average precision) of the held-out
mentions told apart by a low confidence, and by a low best candidate score (PEL's Fig. 2); ARI and
B-cubed F1 of the clusters over the held-out mentions (a mention not left NIL counts as its own
cluster); the proposals (how many, how pure); the held-out entities with 2 mentions or more that are
rediscovered (a proposal holds more than half of their mentions, and more than half of its mentions
are theirs); whether a rediscovered entity's suggested parent is one of its parents in the whole KB
(or an ancestor); the held-out mentions linked after accepting to a proposal whose mentions are mostly
of their entity (before: none can be right, their entity is not in the KB); and the strict accuracy of
the in-KB mentions before and after (what the new entities take from them); then mean, min and max
over seeds.

Why: discovery is worth what a curator gets from it: whether the entities a KB lacks come back as
proposals, and whether accepting them links their mentions without taking the KB's own.

    python bench/curator_loop.py /tmp/w/default /tmp/w/kb ncbi=/tmp/w/corpus/ncbi/test.spacy \\
        bc5cdr=/tmp/w/corpus/bc5cdr/dev.spacy --seeds 0 1 2 --min-size 2 --nil gold --work /tmp/loop \\
        --output bench/results/out_of_kb/curator_loop.json
"""
import json
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example

from spacy_arbo.cli import load_pipeline, reporting_errors
from spacy_arbo.corpora.out_of_kb import EVAL_FILE, hold_out_kb
from spacy_arbo.annotation.records import Record
from spacy_arbo.discovery import DEFAULT_MIN_ENTITY_SIMILARITY, DEFAULT_MIN_SIMILARITY, Proposal, discover_corpus
from spacy_arbo.confidence.nil_curve import nil_average_precision
from spacy_arbo.evaluation import link_gold_mentions
from spacy_arbo.gold_corpus import read_gold_links
from spacy_arbo.kb.entities import NIL, Entity, split_ids
from spacy_arbo.kb.store import BaseEntityStore, open_store
from spacy_arbo.linking.clustering import adjusted_rand_index, b_cubed_f1
from spacy_arbo.pipeline.common.kb_versions import follow_kb
from spacy_arbo.pipeline.link_confidence import pipeline_linker
from spacy_arbo.scoring import accuracy, mention_outcomes

from out_of_kb import ancestors, draw_arguments, named_sets, summary

# A mention: (doc id, start char, end char).
Mention = Tuple[Any, int, int]
SUMMARY_KEYS = ("nil_ap_confidence", "nil_ap_top_score", "nil_mentions", "held_out_left_nil", "ari_held_out",
                "b_cubed_f1_held_out", "n_proposals",
                "proposal_purity", "held_out_entities_2plus", "rediscovered_share", "parent_right", "parent_ancestor",
                "held_out_mentions_right_after", "in_kb_strict_before", "in_kb_strict_after", "seconds")


def reduced_pipeline(pipeline: str, held_out: Sequence[str], add: Sequence[Entity] = ()) -> Language:
    """The pipeline with its KB less `held_out` and plus `add` (as kb remove / kb add leave it); a
    pipeline trained on the draw's KB lacks them already."""
    nlp = load_pipeline(pipeline)
    linker = pipeline_linker(nlp, pipeline)
    linker.update_kb(add, [kb_id for kb_id in held_out if linker.kb.resolve(kb_id) is not None])
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


def nil_records(linked: Sequence[Doc], gold: Sequence[Doc], is_nil) -> List[Record]:
    """The linked docs as `link` writes them: each mention with its id, NIL where `is_nil` says."""
    records = []
    for index, (doc, gold_doc) in enumerate(zip(linked, gold)):
        doc_id = str(gold_doc.user_data.get("doc_id", index))
        mentions = [{"start": e.start_char, "end": e.end_char, "text": e.text, "label": e.label_,
                     "kb_id": NIL if is_nil(doc_id, e) else e.kb_id_} for e in doc.ents]
        records.append(Record(doc_id, doc.text, f"doc {doc_id}", gold=mentions))
    return records


def parent_figures(full_kb: BaseEntityStore, found: Dict[str, Proposal]) -> Dict[str, Optional[float]]:
    """Of the rediscovered entities (entity -> its proposal): the share whose suggested parent is one
    of its parents in the whole KB, and one of its ancestors."""
    right = ancestor = 0
    for entity, proposal in found.items():
        suggested = proposal.parent[0] if proposal.parent else None
        parents = set(full_kb[entity].parents) if entity in full_kb else set()
        right += suggested in parents
        ancestor += suggested is not None and suggested in ancestors(full_kb, entity)
    n = len(found)
    return {"parent_right": right / n if n else None, "parent_ancestor": ancestor / n if n else None}


def draw(pipeline: str, kb_dir: str, corpus: str, work: Path, seed: int, share: float, min_size: int,
         min_similarity: float, min_entity_similarity: float, nil: str) -> Dict[str, Any]:
    start = time.perf_counter()
    record = hold_out_kb(kb_dir, corpus, work, share=share, seed=seed)
    held_out = record["held_out"]
    former = {(str(d), s, e): gold for d, s, e, gold in record["turned_nil"]}  # held-out mention -> its entity
    nlp = reduced_pipeline(pipeline, held_out)
    gold = read_gold_links(work / EVAL_FILE, nlp)
    linked = link_gold_mentions(nlp, gold)
    if nil == "gold":
        def is_nil(doc_id, ent):
            return (doc_id, ent.start_char, ent.end_char) in former
    else:
        def is_nil(doc_id, ent):
            return ent.kb_id_ == NIL or (ent._.kb_confidence is not None and ent._.kb_confidence < float(nil))
    found = discover_corpus(nlp, nil_records(linked, gold, is_nil), min_size=min_size, min_similarity=min_similarity,
                            min_entity_similarity=min_entity_similarity, progress=False)
    cluster = {(m.doc, m.start, m.end): c for m, c in zip(found.mentions, found.assigned)}
    held_keys = sorted(former)
    truth = [former[k] for k in held_keys]
    clusters = [cluster.get(k, f"linked:{i}") for i, k in enumerate(held_keys)]
    proposals = [(p, [former.get((m.doc, m.start, m.end), "in KB") for m in p.mentions]) for p in found.proposals]
    named = {p.concept_id: majority(ids) for p, ids in proposals}
    held_counts = Counter(former.values())
    rediscovered = {entity: p for p, ids in proposals for entity, n in Counter(ids).items()
                    if entity in held_counts and n > held_counts[entity] / 2 and n > len(ids) / 2}
    several = [entity for entity, n in held_counts.items() if n >= 2]

    accepted = [Entity(p.concept_id, p.name, tuple(p.aliases), "", parents=(p.parent[0],) if p.parent else ())
                for p, _ in proposals]
    # Before accepting: the links discovery read. NIL detection: the held-out mentions told apart by a
    # low score (PEL, Fig. 2); a pipeline without confidence has no area by it.
    before = mention_outcomes(Example(p, g) for p, g in zip(linked, gold))
    confident = any(o.confidence is not None for o in before)
    nil_scores = {"nil_ap_confidence": nil_average_precision(before) if confident else None,
                  "nil_ap_top_score": nil_average_precision([replace(o, confidence=o.score) for o in before])}
    linking = reduced_pipeline(pipeline, held_out, accepted)
    after_gold = read_gold_links(work / EVAL_FILE, linking)
    after = link_gold_mentions(linking, after_gold)
    in_kb = {"before": [o for o in before if not o.gold_is_nil],
             "after": [o for o in mention_outcomes(Example(p, g) for p, g in zip(after, after_gold))
                       if not o.gold_is_nil]}
    right_after = []
    for index, doc in enumerate(after):
        for ent in doc.ents:
            entity = former.get(mention_key(doc, index, ent.start_char, ent.end_char))
            if entity is not None:
                proposal_entity, _ = named.get(ent.kb_id_, (None, 0.0))
                right_after.append(proposal_entity is not None and set(split_ids(proposal_entity)) == set(split_ids(entity)))
    return {
        "seed": seed, "held_out_entities": len(held_out), "held_out_mentions": len(former),
        **nil_scores, "nil_mentions": found.n_mentions, "held_out_left_nil": sum(k in cluster for k in held_keys),
        "ari_held_out": adjusted_rand_index(truth, clusters), "b_cubed_f1_held_out": b_cubed_f1(truth, clusters),
        "n_proposals": len(proposals),
        "proposal_purity": sum(share for _, share in named.values()) / len(named) if named else None,
        "proposals_mostly_held_out": sum(entity in held_counts for entity, _ in named.values()),
        "held_out_entities_2plus": len(several),
        "rediscovered_share": sum(e in rediscovered for e in several) / len(several) if several else None,
        **parent_figures(open_store(kb_dir), {e: p for e, p in rediscovered.items() if e in several}),
        "held_out_mentions_right_after": sum(right_after) / len(right_after) if right_after else None,
        "in_kb_strict_before": accuracy(in_kb["before"], "exact"),
        "in_kb_strict_after": accuracy(in_kb["after"], "exact"),
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    parser = draw_arguments(__doc__)
    parser.add_argument("--min-size", type=int, default=2, help="the smallest proposal the curator accepts")
    parser.add_argument("--min-similarity", type=float, default=DEFAULT_MIN_SIMILARITY,
                        help=f"discover's cut between mentions (default {DEFAULT_MIN_SIMILARITY})")
    parser.add_argument("--min-entity-similarity", type=float, default=DEFAULT_MIN_ENTITY_SIMILARITY,
                        help=f"discover's cut to a KB entity (default {DEFAULT_MIN_ENTITY_SIMILARITY})")
    parser.add_argument("--nil", default="gold", help="which mentions are NIL: gold (the held-out entities' "
                        "mentions) or a confidence T (those below it)")
    args = parser.parse_args()
    sets = named_sets(parser, args.sets)

    def run() -> None:
        result: Dict[str, Any] = {"pipeline": args.pipeline, "kb": args.kb, "share": args.share,
                                  "min_size": args.min_size, "min_similarity": args.min_similarity,
                                  "min_entity_similarity": args.min_entity_similarity, "nil": args.nil,
                                  "seeds": args.seeds, "sets": {}}
        for name, corpus in sets.items():
            draws = []
            for seed in args.seeds:
                figures = draw(args.pipeline, args.kb, corpus, Path(args.work) / name / f"seed{seed}", seed,
                               args.share, args.min_size, args.min_similarity, args.min_entity_similarity, args.nil)
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
