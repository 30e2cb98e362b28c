"""Composite mentions: one span that names several concepts by coordination.

"breast and ovarian cancer" names breast cancer and ovarian cancer; NCBI Disease and
BC5CDR give such a mention every id (`D001943|D010051`). The parts are rebuilt from the
coordination over the mention's words, with no parser:

- shared head: "breast, brain and kidney cancer" -> "breast cancer", "brain cancer",
  "kidney cancer" (every conjunct but the last is one word; the last conjunct's first
  word is its modifier, the rest the head; words before the first modifier are shared);
- shared prefix: "spinocerebellar ataxias 1 and 2", "colorectal adenomas and carcinoma"
  -> "spinocerebellar ataxias 1", "spinocerebellar ataxias 2" (the last conjunct is one word);
- plain list: "deafness and blindness" (every conjunct one word).

A word is a run of tokens with no white space between them, so "Saethre-Chotzen" is one
word, while "/" and "," always separate. Commas may only separate the items before the
final "and"/"or"/"/" ("colorectal, or other, cancers" is not split).
"""
from typing import List, Sequence, Tuple

from spacy.tokens import Span

CONJUNCTIONS = frozenset({"and", "or", "and/or", "&", "/"})
SEPARATORS = CONJUNCTIONS | {","}
DETERMINERS = frozenset({"the", "a", "an"})
# Longer coordinations are lists of findings, not one composite concept.
MAX_PARTS = 8

Word = Tuple[int, int]  # token offsets into the doc: [start, end)


def _words(span: Span) -> List[Word]:
    words: List[Word] = []
    for token in span:
        joins_previous = (
            words and not token.doc[token.i - 1].whitespace_
            and token.text not in SEPARATORS and token.doc[token.i - 1].text not in SEPARATORS
        )
        if joins_previous:
            words[-1] = (words[-1][0], token.i + 1)
        else:
            words.append((token.i, token.i + 1))
    return words


def _conjuncts(span: Span) -> List[List[Word]]:
    """The conjuncts, or [] when the mention is not one list joined by a conjunction."""
    conjuncts: List[List[Word]] = [[]]
    separators: List[List[str]] = []
    for word in _words(span):
        text = span.doc[word[0]:word[1]].text.lower()
        if text in SEPARATORS:
            if not conjuncts[-1]:
                if not separators:
                    return []
                separators[-1].append(text)
            else:
                conjuncts.append([])
                separators.append([text])
        elif not (conjuncts[-1] == [] and text in DETERMINERS and separators):
            conjuncts[-1].append(word)
    if len(conjuncts) < 2 or not conjuncts[-1]:
        return []
    if not CONJUNCTIONS & set(separators[-1]) or any(set(s) != {","} for s in separators[:-1]):
        return []
    return conjuncts


def _text(span: Span, words: Sequence[Word]) -> str:
    """Words joined as written where they are adjacent, with one space where they are not."""
    doc = span.doc
    pieces: List[List[int]] = []
    for start, end in words:
        if pieces and pieces[-1][1] == start:
            pieces[-1][1] = end
        else:
            pieces.append([start, end])
    return " ".join(doc[start:end].text for start, end in pieces)


def conjunct_texts(span: Span) -> List[str]:
    """The conjuncts of a coordinated mention as written ("breast", "ovarian cancer"), [] for
    any other mention."""
    return [_text(span, words) for words in _conjuncts(span)]


def composite_parts(span: Span) -> List[str]:
    """The texts of the concepts a coordinated mention names, [] for any other mention."""
    conjuncts = _conjuncts(span)
    if not conjuncts or len(conjuncts) > MAX_PARTS or any(len(c) != 1 for c in conjuncts[1:-1]):
        return []
    first, middle, last = conjuncts[0], [c[0] for c in conjuncts[1:-1]], conjuncts[-1]
    prefix = first[:-1]
    if len(last) > 1:
        head = last[1:]
        parts = [prefix + [modifier] + head for modifier in [first[-1], *middle, last[0]]]
    else:
        parts = [first] + [prefix + [word] for word in [*middle, last[0]]]
    return list(dict.fromkeys(_text(span, words) for words in parts))
