"""A KB abbreviation in a text that neither defines it nor names its entity in words is more often
something else than the disease: "BW" (body weight), "RT" (radiotherapy) and "RB1" (a gene) are
aliases of CTD's diseases, and the linker, given the span, links it to that disease. What backs the
link is the doc itself: a definition ("myotonic dystrophy (DM)"), or a mention written out that
links to the same entity ("DM" in an abstract that also writes "myotonic dystrophy")."""
from typing import Iterable, Set, Tuple

from spacy.tokens import Span

from ...kb.entities import NIL, split_ids


def unbacked_short_forms(short_forms: Iterable[Span], written_out: Iterable[Span],
                         defined: Set[Tuple[int, int]]) -> Set[Tuple[int, int]]:
    """(start, end) token offsets of the `short_forms` whose doc neither defines them (`defined`:
    the (start_char, end_char) of the short forms it defines) nor links a mention of `written_out`
    to their entity (a part of it, for a composite)."""
    named = {part for span in written_out if span.kb_id_ not in ("", NIL) for part in split_ids(span.kb_id_)}
    return {(span.start, span.end) for span in short_forms
            if (span.start_char, span.end_char) not in defined and not named.intersection(split_ids(span.kb_id_))}
