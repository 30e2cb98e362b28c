"""Words that a KB's own names show to be interchangeable ("cancer", "neoplasm" and "tumor";
"disease" and "syndrome"), which discovery uses to join NIL mentions that differ by such a word
alone: the encoder leaves "tumor" and "cancer" apart, while the KB names one entity both ways
hundreds of times. Mentions written alike are joined too: the k nearest neighbours of a
mention written often are its own copies in other contexts, and two groups of them may never meet.

A pair of words is interchangeable when two names of one entity differ in it alone
`MIN_NAME_PAIRS` times or more, and names of two different entities seldom do (`MIN_SHARE` of
the names that differ in it alone belong to one entity): "dominant" and "recessive" ataxias are
different entities, "primary" and "secondary" ones too. A KB with no synonyms has none."""
import re
from collections import defaultdict
from itertools import combinations
from typing import Collection, Dict, FrozenSet, Iterable, List, Sequence, Set, Tuple

from ..kb.store import BaseEntityStore
from .nil_mentions import NilMention

MIN_NAME_PAIRS = 10
MIN_SHARE = 0.9
# Shorter words are numbers, Roman numerals, subtypes ("type I", "type II"): never interchangeable.
MIN_CHARS = 4

Words = Tuple[str, ...]
Pair = FrozenSet[str]


def name_words(name: str) -> Words:
    """The lower-cased words of `name`, MeSH's inverted "Neoplasms, Breast" read forwards."""
    parts = [part.strip() for part in name.lower().split(",")]
    if len(parts) == 2 and all(parts):
        parts.reverse()
    return tuple(re.findall(r"[^\W_]+(?:['-][^\W_]+)*", " ".join(parts)))


def interchangeable_words(kb: BaseEntityStore) -> Set[Pair]:
    """The pairs of words that the KB's names show to be interchangeable (module docstring)."""
    slots: Dict[Tuple[Words, Words], Dict[str, Set[int]]] = defaultdict(lambda: defaultdict(set))
    for text, row in kb.alias_pairs():
        words = name_words(text)
        for i, word in enumerate(words):
            if len(word) >= MIN_CHARS and word.isalpha():
                slots[(words[:i], words[i + 1:])][word].add(row)
    within: Dict[Pair, int] = defaultdict(int)
    across: Dict[Pair, int] = defaultdict(int)
    for by_word in slots.values():
        for one, other in combinations(sorted(by_word), 2):
            pair = frozenset((one, other))
            if by_word[one] & by_word[other]:
                within[pair] += 1
            else:
                across[pair] += 1
    return {pair for pair, n in within.items()
            if n >= MIN_NAME_PAIRS and n / (n + across.get(pair, 0)) >= MIN_SHARE}


def interchangeable_pairs(mentions: Sequence[NilMention], pairs: Iterable[Pair],
                          apart: Collection[str] = ()) -> List[Tuple[int, int]]:
    """(i, j) indexes of mentions of one label written alike (the same words, case aside) or
    differing by one interchangeable word alone ("breast tumours", "breast cancer"): each mention
    paired with the one before it written alike (a chain, so that no mention has more than two
    such pairs however often its text is written), and the first mentions of two texts that differ
    so. The texts in `apart` (short forms of two meanings) are never joined for being written alike."""
    substitutes: Dict[str, Set[str]] = defaultdict(set)
    for pair in pairs:
        one, other = sorted(pair)
        substitutes[one].add(other)
        substitutes[other].add(one)
    first: Dict[Tuple[str, Words], int] = {}
    last: Dict[Tuple[str, Words], int] = {}
    found = set()
    for index, mention in enumerate(mentions):
        key = (mention.label, name_words(mention.text))
        if key in last and mention.text not in apart:
            found.add((last[key], index))
        first.setdefault(key, index)
        last[key] = index
    for (label, words), index in first.items():
        for i, word in enumerate(words):
            for substitute in substitutes.get(word, ()):
                other = first.get((label, words[:i] + (substitute,) + words[i + 1:]))
                if other is not None:
                    found.add((min(index, other), max(index, other)))
    return sorted(found)
