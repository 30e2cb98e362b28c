"""Entity discovery: cluster a corpus's mentions and propose its NIL clusters as KB entries.

Discovery needs a threshold: with `min_similarity` null (lambda = inf, as in training) no edge is
cut, every mention keeps the edge from its nearest entity and so every cluster holds one, and
nothing can be discovered. A pipeline that leaves it null clusters at `DISCOVERY_MIN_SIMILARITY`.
"""
from typing import Any, Dict, Iterable, List, Optional, Tuple

from spacy.language import Language
from spacy.tokens import Doc

from ..kb.entities import NIL, split_ids
from ..kb.store import BaseEntityStore
from ..linking.clustering import adjusted_rand_index
from ..pipeline.arbo_linker import ArboLinker, arbo_linkers
from ..pipeline.common.gold_ents import strip_links
from ..pipeline.common.mention_finders import mention_finders
from ..scoring import is_link
from ..util import ArboError
from .proposals import named_by_texts

# The cut for a pipeline whose min_similarity is null: measured with the offline MiniLM on NCBI
# Disease test with a fifth of its entities removed from the KB (docs/cli.md, `discover`).
DISCOVERY_MIN_SIMILARITY = 0.9

# A mention of one doc by its character offsets: how predicted and gold mentions are paired.
Offsets = Tuple[int, int]


def discover_entities(
    nlp: Language, gold_docs: List[Doc], min_size: int = 1, id_prefix: str = "NEW:"
) -> Dict[str, Any]:
    """Link all mentions of `gold_docs` as one batch with clustering (cross-document), and
    turn each NIL cluster of at least `min_size` mentions into a scispacy-style record.

    The clusters are scored against the gold mention of the same span (ARI, ArboEL Table 5),
    so a mention only one side has shifts no pair: `ari` over every clustered mention with a
    gold id, `nil_ari` over those in NIL clusters, `outside_kb_ari` over those whose gold
    entity the KB lacks (the paper's ALL/UNSEEN, unseen meaning not in the KB). The linkers
    keep the settings discovery gives them (`clustering_linkers`)."""
    defaulted = any(linker.settings.min_similarity is None for linker in arbo_linkers(nlp))
    linkers = clustering_linkers(nlp)
    # Only the linkers need the whole corpus in one batch (cross-document clusters).
    docs = list(nlp.pipe([strip_links(d) for d in gold_docs], batch_size=64,
                         component_cfg={linker.name: {"batch_size": max(1, len(gold_docs))} for linker in linkers}))
    members: Dict[int, List[Dict[str, Any]]] = {}
    scored: List[Tuple[str, int]] = []  # (gold id, cluster) of each clustered mention gold has with an id
    n_predicted_only = n_gold_only = 0
    for index, (doc, gold_doc) in enumerate(zip(docs, gold_docs)):
        doc_id = gold_doc.user_data.get("doc_id", index)
        gold: Dict[Offsets, str] = {(e.start_char, e.end_char): e.kb_id_ for e in gold_doc.ents}
        n_gold_only += len(gold.keys() - {(e.start_char, e.end_char) for e in doc.ents})
        for ent in doc.ents:
            gold_id = gold.get((ent.start_char, ent.end_char))
            n_predicted_only += gold_id is None
            if ent._.arbo_cluster is None:
                continue  # not linked (no word character, or a discarded label): in no cluster
            if gold_id:
                scored.append((gold_id, ent._.arbo_cluster))
            if ent.kb_id_ == NIL:
                members.setdefault(ent._.arbo_cluster, []).append(
                    {"doc": doc_id, "start": ent.start_char, "end": ent.end_char, "text": ent.text})
    n_mentions = sum(len(d.ents) for d in docs)
    n_clustered = sum(e._.arbo_cluster is not None for d in docs for e in d.ents)
    proposed = sorted(c for c, mentions in members.items() if len(mentions) >= min_size)
    records = [_record(f"{id_prefix}{number:05d}", members[c]) for number, c in enumerate(proposed, start=1)]
    kb = linkers[0].require_retriever().kb
    outside_kb = {g: _outside_kb(g, kb) for g, _ in scored}
    outside = [(g, c) for g, c in scored if outside_kb[g]]
    return {
        "records": records,
        "min_similarity": linkers[0].settings.min_similarity,
        "default_min_similarity": defaulted,
        "n_mentions": n_mentions,
        "n_clustered": n_clustered,
        "n_scored": len(scored),
        "n_nil_mentions": sum(len(m) for m in members.values()),
        "n_predicted_only": n_predicted_only,
        "n_gold_only": n_gold_only,
        "n_gold_outside_kb": len(outside),
        "n_outside_kb_proposed": sum(c in proposed for _, c in outside),
        "n_proposed_in_kb": sum(c in proposed and not outside_kb[g] for g, c in scored),
        "ari": _ari(scored),
        "nil_ari": _ari([(g, c) for g, c in scored if c in members]),
        "outside_kb_ari": _ari(outside),
    }


def clustering_linkers(nlp: Language) -> List[ArboLinker]:
    """The pipeline's arbo_linkers, set to cluster the whole batch at a threshold that can cut
    (`DISCOVERY_MIN_SIMILARITY` where theirs is null), without the confidence that discovery
    does not read (a new setting would refit it on the KB's names first)."""
    linkers = arbo_linkers(nlp)
    if not linkers:
        raise ArboError(f"discover clusters with an arbo_linker; the pipeline has none "
                        f"(its components: {', '.join(nlp.pipe_names) or 'none'}).")
    for linker in linkers:
        settings = linker.settings
        if settings.candidate_source == "hybrid" and settings.sparse_weight is None:
            raise ArboError(f"{linker.name}: with candidate_source 'hybrid' and sparse_weight null, an entity's "
                            "score is a reciprocal rank (at most 0.033), which min_similarity cannot compare with "
                            "the mentions' cosines; set sparse_weight (--set sparse_weight=0.5) or "
                            "candidate_source=dense.")
        try:
            linker.configure(linking="clustering", clustering_scope="batch", confidence=False,
                             min_similarity=DISCOVERY_MIN_SIMILARITY if settings.min_similarity is None
                             else settings.min_similarity)
        except ArboError as err:
            raise ArboError(f"discover clusters mention vectors, which {linker.name} cannot: {err}") from None
    return linkers


def _record(concept_id: str, mentions: List[Dict[str, Any]]) -> Dict[str, Any]:
    """A scispacy-style KB record named by its mentions' most frequent text."""
    name, aliases = named_by_texts(m["text"] for m in mentions)
    return {"concept_id": concept_id, "canonical_name": name, "aliases": aliases,
            "types": [], "definition": "", "mentions": mentions}


def _outside_kb(gold_id: str, kb: BaseEntityStore) -> bool:
    """A gold mention the KB cannot link: NIL, or an id (part) it does not resolve."""
    return any(part == NIL or kb.resolve(part) is None for part in split_ids(gold_id))


def _ari(pairs: Iterable[Tuple[str, int]]) -> Optional[float]:
    """ARI over the pairs whose gold names an entity (NIL mentions may be of any): None without one."""
    known = [(g, c) for g, c in pairs if is_link(g)]
    return adjusted_rand_index(*zip(*known)) if known else None


def check_corpus(nlp: Language, docs: List[Doc], where: str) -> None:
    """An error, before any linking, for a corpus with nothing to cluster: no documents, or no
    mentions and no component that would find some."""
    if not docs:
        raise ArboError(f"{where} has no documents: there are no mentions to discover entities in.")
    if not any(doc.ents for doc in docs) and not mention_finders(nlp):
        raise ArboError(f"No mentions to cluster: the {len(docs):,} docs of {where} have no entities and the "
                        "pipeline has no component that finds some; give docs with ents, or add a recognizer "
                        "(add-ner, add-kb-finder).")


def check_clustered(result: Dict[str, Any]) -> None:
    """An error when nothing was clustered, which an empty list of proposals would hide."""
    if not result["n_mentions"]:
        raise ArboError("No mentions to cluster: the pipeline's recognizer found none in the docs.")
    if not result["n_clustered"]:
        raise ArboError(f"None of the {result['n_mentions']:,} mentions was clustered: each has no word character "
                        "or a label in the linker's labels_discard.")


def discovery_notes(result: Dict[str, Any], min_size: int) -> List[str]:
    """One line for each thing the figures alone would hide: the threshold, why nothing is
    proposed, mentions only one side has (left out of ARI), how proposals meet the KB's gaps."""
    notes = [f"clustered at min_similarity {result['min_similarity']}"
             + (" (discover's default: the pipeline's is null, which cuts no edge)"
                if result["default_min_similarity"] else "")]
    if not result["records"]:
        notes.append(f"nothing proposed: no NIL cluster has {min_size} or more mentions" if result["n_nil_mentions"]
                     else "nothing proposed: every mention reached a KB entity over edges of similarity >= "
                          f"{result['min_similarity']} (a higher --set min_similarity cuts more)")
    if result["n_predicted_only"] or result["n_gold_only"]:
        notes.append(f"{result['n_predicted_only']:,} predicted mentions gold lacks and {result['n_gold_only']:,} "
                     "gold mentions not found: ARI is scored on the mentions both have")
    if result["n_gold_outside_kb"]:
        notes.append(f"{result['n_gold_outside_kb']:,} clustered gold mentions are of entities the KB lacks: "
                     f"{result['n_outside_kb_proposed']:,} of them proposed; "
                     f"{result['n_proposed_in_kb']:,} proposed mentions are of KB entities")
    elif result["n_scored"]:
        notes.append(f"no gold mention is of an entity the KB lacks: the {result['n_proposed_in_kb']:,} "
                     "proposed mentions gold has are all of KB entities")
    else:
        notes.append("no ARI: no clustered mention has a gold mention of the same span with an id")
    return notes
