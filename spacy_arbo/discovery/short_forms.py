"""Short forms that a text defines among its NIL mentions, which discovery joins to their long form
whatever their vectors say."""
from typing import List, Sequence, Tuple

from .nil_mentions import NilMention


def defined_short_forms(mentions: Sequence[NilMention]) -> List[Tuple[int, int]]:
    """(long, short) indexes of the mentions a text defines as one another: "myotonic dystrophy (DM)",
    a short form in parentheses right after its long form. Both being mentions, the text is taken at
    its word, without the letter check of Schwartz & Hearst's detector, which "DM" (dystrophia
    myotonica) fails."""
    order = sorted(range(len(mentions)), key=lambda i: (mentions[i].doc, mentions[i].start))
    pairs = []
    for first, second in zip(order, order[1:]):
        long, short = mentions[first], mentions[second]
        if (long.doc == short.doc and 0 < short.start - long.end <= 3 and short.left.endswith("(")
                and short.right.startswith(")") and not any(c.isspace() for c in short.text)
                and len(short.text) < len(long.text)):
            pairs.append((first, second))
    return pairs
