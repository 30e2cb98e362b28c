"""The words that place a condition in one branch of the KB's hierarchy ("renal", "cerebral",
"thyroid", "myocardial"): texts write them before a name the KB holds without them ("renal
hamartomas", "liver injury"), and the corpora keep them inside the mention. Read off the KB: the
first word of names whose entities fall, most of them, under one top-level branch (in MeSH, an organ
system). A word spread over many branches ("acute", "familial", "severe") says how or when, not
where, and is left out of the mention as often as not. A KB without a hierarchy has none."""
from collections import Counter, defaultdict
from typing import Dict, FrozenSet, Set

from ...kb.store import BaseEntityStore

# A word is counted from this many entities whose names start with it, and places them when this
# share of them lies under one top-level branch.
MIN_ENTITIES = 8
MIN_SHARE = 0.85


def top_branches(kb: BaseEntityStore) -> Dict[str, FrozenSet[str]]:
    """Entity id -> the top-level branches it lies under (the children of the roots; a root or
    an entity whose parents the KB lacks lies under none)."""
    parents = {entity.id: [p for p in map(kb.resolve, entity.parents) if p is not None] for entity in kb}
    found: Dict[str, FrozenSet[str]] = {}

    def branches(entity_id: str, trail: FrozenSet[str]) -> FrozenSet[str]:
        if entity_id not in found:
            above = [p for p in parents.get(entity_id, ()) if p not in trail]
            found[entity_id] = frozenset().union(*(
                {entity_id} if not parents.get(p) else branches(p, trail | {entity_id}) for p in above))
        return found[entity_id]

    for entity_id in parents:
        branches(entity_id, frozenset())
    return found


def branch_words(kb: BaseEntityStore, stop_words: Set[str], min_entities: int = MIN_ENTITIES,
                 min_share: float = MIN_SHARE) -> Set[str]:
    """The lower-cased first words of names (two words or more) that place most of their entities
    under one top-level branch; a word that is a name itself ("tumor") or a stop word is none."""
    branches = top_branches(kb)
    named: Dict[str, Set[str]] = defaultdict(set)
    one_word_names = set()
    for entity in kb:
        for name in (entity.name, *entity.aliases):
            words = name.replace(",", " ").lower().split()
            if len(words) > 1 and words[0].isalpha():
                named[words[0]].add(entity.id)
            elif len(words) == 1:
                one_word_names.add(words[0])
    words = set()
    for word, ids in named.items():
        if len(ids) < min_entities or word in one_word_names or word in stop_words:
            continue
        counts = Counter(branch for entity_id in ids for branch in branches.get(entity_id, ()))
        if counts and counts.most_common(1)[0][1] >= min_share * len(ids):
            words.add(word)
    return words
