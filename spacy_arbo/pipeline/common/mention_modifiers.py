"""The words before a KB name that the corpora keep inside the mention, though the KB names the
condition without them: where it lies ("renal hamartomas", "liver injury": `branch_words`, read off
the KB) and where it comes from ("hereditary breast cancer", "sporadic tumours": `ORIGIN_WORDS`).
Words of time or degree ("acute", "severe", "recurrent") are left out of a mention as often as they
are kept, and are not taken in."""
from typing import Iterable, List, Set

from spacy.tokens import Span

ORIGIN_WORDS = frozenset({"familial", "hereditary", "inherited", "congenital", "sporadic"})


def grown_over(spans: Iterable[Span], words: Set[str]) -> List[Span]:
    """Each span with the words of `words` right before it taken in ("hamartomas" in "renal
    hamartomas" -> "renal hamartomas")."""
    grown = []
    for span in spans:
        start = span.start
        while start > 0 and span.doc[start - 1].lower_ in words:
            start -= 1
        grown.append(span if start == span.start else Span(span.doc, start, span.end, label=span.label))
    return grown
