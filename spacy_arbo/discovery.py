"""Entity discovery: cluster a corpus's mentions and propose its NIL clusters as KB entries."""
from collections import Counter
from typing import Any, Dict, List

from spacy.language import Language
from spacy.tokens import Doc

from .kb.entities import NIL
from .linking.clustering import adjusted_rand_index
from .pipeline.arbo_linker import arbo_linkers
from .pipeline.gold_ents import strip_links
from .util import ArboError


def discover_entities(
    nlp: Language, gold_docs: List[Doc], min_size: int = 1, id_prefix: str = "NEW:"
) -> Dict[str, Any]:
    """Link all mentions of `gold_docs` as one batch with clustering (cross-document), and
    turn each NIL cluster of at least `min_size` mentions into a scispacy-style record."""
    linkers = arbo_linkers(nlp)
    if not linkers:
        raise ArboError("discover needs a pipeline with an arbo_linker.")
    for linker in linkers:
        linker.configure(linking="clustering", clustering_scope="batch")
    docs = list(nlp.pipe([strip_links(d) for d in gold_docs], batch_size=max(1, len(gold_docs))))
    members: Dict[int, List[Dict[str, Any]]] = {}
    gold, predicted, nil_gold, nil_predicted = [], [], [], []
    for index, (doc, gold_doc) in enumerate(zip(docs, gold_docs)):
        doc_id = gold_doc.user_data.get("doc_id", index)
        for ent, gold_ent in zip(doc.ents, gold_doc.ents):
            if ent._.arbo_cluster is None:
                continue  # not linked (no word character, or a discarded label): in no cluster
            if gold_ent.kb_id_ and gold_ent.kb_id_ != NIL:
                gold.append(gold_ent.kb_id_)
                predicted.append(ent._.arbo_cluster)
            if ent.kb_id_ == NIL:
                members.setdefault(ent._.arbo_cluster, []).append(
                    {"doc": doc_id, "start": ent.start_char, "end": ent.end_char, "text": ent.text})
                if gold_ent.kb_id_:
                    nil_gold.append(gold_ent.kb_id_)
                    nil_predicted.append(ent._.arbo_cluster)
    records = []
    for cluster, mentions in sorted(members.items()):
        if len(mentions) < min_size:
            continue
        counts = Counter(m["text"] for m in mentions)
        name = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0]
        records.append({
            "concept_id": f"{id_prefix}{len(records) + 1:05d}", "canonical_name": name,
            "aliases": sorted(t for t in counts if t != name), "types": [], "definition": "",
            "mentions": mentions,
        })
    return {
        "records": records,
        "n_mentions": sum(len(d.ents) for d in docs),
        "n_nil_mentions": sum(len(m) for m in members.values()),
        "ari": adjusted_rand_index(gold, predicted) if gold else None,
        "nil_ari": adjusted_rand_index(nil_gold, nil_predicted) if nil_gold else None,
    }
