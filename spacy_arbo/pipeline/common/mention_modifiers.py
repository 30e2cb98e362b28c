"""The words around a KB name that the corpora keep inside the mention, though the KB names the
condition without them: where it lies ("renal hamartomas", "liver injury": `branch_words`, read off
the KB), where it comes from ("hereditary breast cancer", "sporadic tumours": `ORIGIN_WORDS`), and
which subtype it is ("type IID von Willebrand disease", "SJS type 2"). Words of time or degree
("acute", "severe", "recurrent") are left out of a mention as often as they are kept, and are not
taken in."""
import re
from typing import Iterable, List, Set

from spacy.tokens import Doc, Span

ORIGIN_WORDS = frozenset({"familial", "hereditary", "inherited", "congenital", "sporadic"})
# What follows "type" in a subtype's name: a number, a Roman numeral, a letter, each with a letter after.
_SUBTYPE = re.compile(r"^(\d+[A-Za-z]?|[IVX]+[A-Da-d]?|[A-Da-d])$")


def grown_over(spans: Iterable[Span], words: Set[str]) -> List[Span]:
    """Each span with the words of `words` and a subtype ("type II") right before it taken in, and a
    subtype right after it ("hamartomas" in "renal hamartomas" -> "renal hamartomas")."""
    grown = []
    for span in spans:
        doc, start, end = span.doc, span.start, span.end
        while True:
            if start > 0 and doc[start - 1].lower_ in words:
                start -= 1
            elif start > 1 and _is_subtype(doc, start - 2):
                start -= 2
            else:
                break
        if _is_subtype(doc, end):
            end += 2
        grown.append(span if (start, end) == (span.start, span.end) else Span(doc, start, end, label=span.label))
    return grown


def _is_subtype(doc: Doc, i: int) -> bool:
    """Whether doc[i:i + 2] reads "type II"."""
    return i + 1 < len(doc) and doc[i].lower_ == "type" and bool(_SUBTYPE.match(doc[i + 1].text))
