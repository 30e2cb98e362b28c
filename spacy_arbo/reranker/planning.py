"""From docs and their candidates to cross-encoder passes: which sentence each mention is
read in, which text stands for each candidate (name, best alias, definition start), all
as token ids that `packing.pack` lays out (multi cross-encoder paper, 4.2)."""
from bisect import bisect_right
from dataclasses import dataclass
from typing import Callable, Dict, Hashable, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
from spacy.attrs import SENT_START
from spacy.pipeline import Sentencizer
from spacy.tokens import Doc, Span
from spacy.vocab import Vocab

from ..kb.entities import Entity
from ..kb.store import BaseEntityStore
from ..pipeline.common.abbreviations import LongForms, SpelledOut
from ..util import ArboError
from .packing import Mention, Pair, Pass, Sentence, Specials, pack

Tokenize = Callable[[List[str]], List[List[int]]]
# For each pair index: (doc number, entity number, candidate number).
Owners = List[Tuple[int, int, int]]


@dataclass(frozen=True)
class PairText:
    """How much of each part a pair may take, in tokens; `alias_tokens` adds the
    candidate's alias most like the mention, `parent_tokens` its parents' names (where
    it sits in the hierarchy), `definition_tokens` the start of its definition."""

    max_mention_tokens: int
    max_name_tokens: int
    definition_tokens: int
    alias_tokens: int
    use_long_form: bool
    parent_tokens: int

    @property
    def longest_pair(self) -> int:
        """`m [MASK] c [SEP]` at its longest."""
        return (self.max_mention_tokens + self.max_name_tokens + self.alias_tokens + self.parent_tokens
                + self.definition_tokens + 2)


class PairPlanner:
    """Tokenizes (with caches) and plans the passes that score given candidates."""

    def __init__(self, vocab: Vocab, tokenize: Tokenize, specials: Specials, window: int) -> None:
        self.vocab = vocab
        self.tokenize = tokenize
        self.specials = specials
        self.window = window
        # Cached whole, cut at use: the caches stay valid when the token budgets change.
        self._names: Dict[str, List[int]] = {}
        self._definitions: Dict[str, List[int]] = {}
        self._parents: Dict[str, List[int]] = {}
        self._aliases: Dict[str, List[int]] = {}
        self._sentencizer = Sentencizer()
        self._long_forms: Optional[LongForms] = None
        self._kb: Optional[BaseEntityStore] = None

    def plan(
        self, docs: Sequence[Doc], candidates: Sequence[Sequence[Sequence[str]]], kb: BaseEntityStore,
        text: PairText, mode: str,
    ) -> Tuple[List[Pass], Owners]:
        """The passes that score `candidates[d][e]` (ids for the e-th entity of doc d), and
        for each pair index, its (doc, entity, candidate) numbers."""
        if kb is not self._kb:
            self._names, self._definitions, self._parents, self._kb = {}, {}, {}, kb
        self._tokenize_entities({kb_id for per_doc in candidates for ids in per_doc for kb_id in ids}, kb, text)
        records, texts, surfaces = [], [], {}
        for d, doc in enumerate(docs):
            spelled = self._spelled_out(doc) if text.use_long_form else None
            ents = doc.ents
            for pieces, mentions in self._sentence_pieces(doc, [bool(ids) for ids in candidates[d]]):
                first = len(texts)
                texts.extend(pieces)
                # Where each mention's own text is: its piece, or its long form after the pieces.
                mention_texts = []
                for e, piece in mentions:
                    long_form = spelled(ents[e]) if spelled is not None else None
                    surfaces[d, e] = long_form or ents[e].text
                    mention_texts.append(piece if long_form is None else len(texts) - first)
                    if long_form is not None:
                        texts.append(long_form)
                records.append((d, mentions, mention_texts, first, first + len(pieces), len(texts)))
        tokens = self.tokenize(texts)
        suffixes = self._alias_suffixes(
            {(surfaces[d, e], kb_id) for (d, e) in surfaces for kb_id in candidates[d][e]}, kb, text.alias_tokens)
        owners: Owners = []
        sentences = []
        for d, mentions, mention_texts, first, last, end in records:
            pieces = tokens[first:last]
            own = tokens[first:end]
            offsets = np.cumsum([0] + [len(piece) for piece in pieces]).tolist()
            packed = []
            for (e, piece), position in zip(mentions, mention_texts):
                mention = own[position][: text.max_mention_tokens]
                pairs = []
                for c, kb_id in enumerate(candidates[d][e]):
                    candidate = (self._names[kb_id][: text.max_name_tokens] + suffixes.get((surfaces[d, e], kb_id), [])
                                 + self._parents.get(kb_id, [])[: text.parent_tokens]
                                 + self._definitions.get(kb_id, [])[: text.definition_tokens])
                    pairs.append(Pair(len(owners), mention, candidate))
                    owners.append((d, e, c))
                packed.append(Mention(offsets[piece], offsets[piece + 1], pairs))
            sentences.append(Sentence([i for piece in pieces for i in piece], packed, passage=d))
        return pack(sentences, mode, self.window, self.specials), owners

    def _tokenize_entities(self, kb_ids: Iterable[str], kb: BaseEntityStore, text: PairText) -> None:
        """Tokenize (once) each candidate's name and, with `parent_tokens`, `< parent; parent`
        (the parents the KB holds), with `definition_tokens`, `: definition`."""
        ids = sorted(set(kb_ids))
        unknown = [i for i in ids if i not in self._names and i not in kb]
        if unknown:
            raise ArboError(f"candidate ids {unknown[:5]} are not in the reranker's KB.")
        names = [i for i in ids if i not in self._names]
        self._names.update(zip(names, self.tokenize([kb[i].name for i in names])))
        if text.parent_tokens:
            listed = {i: "; ".join(kb[p].name for p in kb[i].parents if p in kb) for i in ids if i not in self._parents}
            self._parents.update({i: [] for i, parents in listed.items() if not parents})
            shown = [i for i, parents in listed.items() if parents]
            self._parents.update(zip(shown, self.tokenize([f"< {listed[i]}" for i in shown])))
        if text.definition_tokens:
            defined = [i for i in ids if i not in self._definitions and kb[i].definition]
            self._definitions.update(zip(defined, self.tokenize([f": {kb[i].definition}" for i in defined])))

    def _alias_suffixes(
        self, wanted: Iterable[Tuple[str, str]], kb: BaseEntityStore, n_tokens: int
    ) -> Dict[Tuple[str, str], List[int]]:
        """For (mention text, kb id): the tokens of `; alias` for the candidate's alias most
        like the mention (none when its name is as close)."""
        if not n_tokens:
            return {}
        chosen = {key: closest_alias(key[0], kb[key[1]]) for key in wanted}
        new = sorted({alias for alias in chosen.values() if alias and alias not in self._aliases})
        self._aliases.update(zip(new, self.tokenize([f"; {a}" for a in new])))
        return {key: self._aliases[alias][:n_tokens] if alias else [] for key, alias in chosen.items()}

    def _spelled_out(self, doc: Doc) -> SpelledOut:
        if self._long_forms is None:
            self._long_forms = LongForms(self.vocab)
        return SpelledOut(doc.text, self._long_forms(doc), {})

    def _sentence_starts(self, doc: Doc) -> List[int]:
        """`doc.sents` when set, else the rule-based sentencizer's, merged where they would
        cut a mention (paper 5.1)."""
        if doc.has_annotation("SENT_START"):
            starts = doc.to_array(SENT_START) == 1
        else:
            starts = np.asarray(self._sentencizer.predict([doc])[0], dtype=bool)
        starts[0] = True
        for ent in doc.ents:
            starts[ent.start + 1: ent.end] = False
        return np.flatnonzero(starts).tolist()

    def _sentence_pieces(self, doc: Doc, wanted: Sequence[bool]) -> Iterator[Tuple[List[str], List[Tuple[int, int]]]]:
        """Each sentence holding a wanted entity, as text pieces alternating context and
        mentions, and (entity number, piece number) for its wanted entities; tokenizing
        the pieces apart tells where each mention's tokens are."""
        if not any(wanted):
            return
        starts = self._sentence_starts(doc)
        by_sentence: Dict[int, List[Tuple[int, Span]]] = {}
        for e, ent in enumerate(doc.ents):
            if wanted[e]:
                by_sentence.setdefault(bisect_right(starts, ent.start) - 1, []).append((e, ent))
        for s, ents in by_sentence.items():
            sentence = doc[starts[s]: starts[s + 1] if s + 1 < len(starts) else len(doc)]
            cursor, pieces, mentions = sentence.start_char, [], []
            for e, ent in ents:
                pieces.append(doc.text[cursor: ent.start_char])
                mentions.append((e, len(pieces)))
                pieces.append(ent.text)
                cursor = ent.end_char
            pieces.append(doc.text[cursor: sentence.end_char])
            yield pieces, mentions


def closest_alias(text: str, entity: Entity) -> Optional[str]:
    """The entity's alias with the most character trigrams in common with `text` (Jaccard,
    case-folded), or None when its name is at least as close or it has no aliases."""
    def trigrams(value: str) -> set:
        padded = f" {value.casefold()} "
        return {padded[i: i + 3] for i in range(len(padded) - 2)}

    target = trigrams(text)

    def similarity(value: str) -> float:
        grams = trigrams(value)
        return len(grams & target) / len(grams | target)

    best = max(entity.aliases, key=similarity, default=None)
    return best if best is not None and similarity(best) > similarity(entity.name) else None


def batches(passes: List[Pass], batch_tokens: int,
            together: Optional[Callable[[int], Hashable]] = None) -> Iterator[List[Pass]]:
    """Passes of similar length together, at most `batch_tokens` padded tokens a batch;
    with `together` (pair index -> key), passes whose pairs share a key share a batch, even
    past the budget (a training loss that compares a mention's pairs needs them all)."""
    units = _joined(passes, together) if together else [[p] for p in passes]
    batch: List[Pass] = []
    width = 0
    for unit in sorted(units, key=lambda u: max(len(p) for p in u), reverse=True):
        if batch and (len(batch) + len(unit)) * width > batch_tokens:
            yield batch
            batch = []
        if not batch:
            width = max(len(p) for p in unit)
        batch.extend(unit)
    if batch:
        yield batch


def _joined(passes: List[Pass], together: Callable[[int], Hashable]) -> List[List[Pass]]:
    """`passes` in groups: two passes holding pairs with the same key, directly or through
    others, fall in one group (union-find)."""
    parent = list(range(len(passes)))

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    first: Dict[Hashable, int] = {}
    for n, p in enumerate(passes):
        for i in p.pair_index:
            parent[root(n)] = root(first.setdefault(together(i), n))
    groups: Dict[int, List[Pass]] = {}
    for n, p in enumerate(passes):
        groups.setdefault(root(n), []).append(p)
    return list(groups.values())
