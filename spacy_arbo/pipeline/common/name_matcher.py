"""Token sequences found in docs, compared by one token attribute (`LOWER` or `ORTH`), as spaCy's
`PhraseMatcher` finds its patterns: every occurrence, overlapping ones included.

A PhraseMatcher keeps its patterns as docs, so a saved one is remade by tokenizing every pattern
again: for a KB's hundreds of thousands of name variants, most of a pipeline's load time. Kept as
plain token strings, the sequences are read back at once and matched by hashing."""
from collections import defaultdict
from typing import Dict, Iterable, List, Sequence, Tuple

from spacy.tokens import Doc

from ...util import ArboError

ATTRS = ("LOWER", "ORTH")


class NameMatcher:
    """The token sequences to find, by `attr`; `lengths` says, for a first token, how long the
    sequences that start with it are, so a doc is matched with one lookup per candidate length."""

    def __init__(self, attr: str, sequences: Iterable[Sequence[str]]) -> None:
        if attr not in ATTRS:
            raise ArboError(f"NameMatcher compares tokens by {' or '.join(ATTRS)}, not {attr!r}.")
        self.attr = attr
        self.sequences = {tuple(sequence) for sequence in sequences if sequence}
        lengths: Dict[str, set] = defaultdict(set)
        for sequence in self.sequences:
            lengths[sequence[0]].add(len(sequence))
        self.lengths: Dict[str, Tuple[int, ...]] = {first: tuple(sorted(n)) for first, n in lengths.items()}

    @classmethod
    def from_docs(cls, attr: str, docs: Iterable[Doc]) -> "NameMatcher":
        return cls(attr, (cls.words(doc, attr) for doc in docs))

    @staticmethod
    def words(doc: Doc, attr: str) -> List[str]:
        return [token.lower_ for token in doc] if attr == "LOWER" else [token.orth_ for token in doc]

    def __call__(self, doc: Doc) -> List[Tuple[int, int]]:
        """(start, end) token offsets of every occurrence, in order of start then length."""
        words = self.words(doc, self.attr)
        found = []
        for start, word in enumerate(words):
            for length in self.lengths.get(word, ()):
                end = start + length
                if end <= len(words) and tuple(words[start:end]) in self.sequences:
                    found.append((start, end))
        return found

    def __len__(self) -> int:
        return len(self.sequences)

    def to_list(self) -> List[List[str]]:
        return [list(sequence) for sequence in sorted(self.sequences)]
