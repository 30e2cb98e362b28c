"""Short forms that a text defines among its NIL mentions, which discovery joins to their long form
whatever their vectors say."""
import re
from collections import defaultdict
from typing import Dict, List, Sequence, Set, Tuple

from .nil_mentions import NilMention

# The longest short form read (characters), as Schwartz & Hearst's detector reads them.
MAX_SHORT_FORM = 10
# Letters of a word that two long forms of one meaning share ("myotonic", "myotonica").
STEM = 5


def defined_short_forms(mentions: Sequence[NilMention]) -> List[Tuple[int, int]]:
    """(long, short) indexes of the mentions a text defines as one another: "myotonic dystrophy (DM)",
    a short form in parentheses right after its long form, with the same label, its first letter a
    word's first letter and its others in the long form. The letters need not come in order, as
    Schwartz & Hearst's detector wants, which reads "DM" (dystrophia myotonica) as no abbreviation.

    Such a short form is read alike wherever it is written, so one pair joins its mentions everywhere:
    a short form the corpus defines as two things gets no pair (`short_form_definitions`)."""
    return short_form_definitions(mentions)[0]


def short_form_definitions(mentions: Sequence[NilMention]) -> Tuple[List[Tuple[int, int]], Set[str]]:
    """The (long, short) pairs of `defined_short_forms`, and the short forms that the corpus defines
    as two things ("AS": ankylosing spondylitis here, Angelman syndrome there), which nothing joins."""
    order = sorted(range(len(mentions)), key=lambda i: (mentions[i].doc, mentions[i].start))
    pairs = [(first, second) for first, second in zip(order, order[1:]) if _defines(mentions[first], mentions[second])]
    meanings: Dict[str, Set[str]] = defaultdict(set)
    for first, second in pairs:
        meanings[mentions[second].text].add(_words(mentions[first].text).casefold())
    ambiguous = {text for text, long_forms in meanings.items() if not _one_meaning(long_forms)}
    return [(first, second) for first, second in pairs if mentions[second].text not in ambiguous], ambiguous


def _defines(long: NilMention, short: NilMention) -> bool:
    written = _words(long.text)
    if (long.doc != short.doc or long.label != short.label or not 0 < short.start - long.end <= 3
            or not short.left.endswith((written + " (", written + "(")) or not short.right.startswith(")")):
        return False
    letters = [c.casefold() for c in short.text if c.isalpha()]
    initials = {word[0].casefold() for word in re.findall(r"[^\W\d_]+", long.text)}
    return (2 <= len(short.text) <= min(MAX_SHORT_FORM, len(long.text) - 1) and not any(c.isspace() for c in short.text)
            and bool(letters) and letters[0] in initials and all(c in long.text.casefold() for c in letters))


def _words(text: str) -> str:
    """`text` with its whitespace as a mention's context window has it (one space)."""
    return " ".join(text.split())


def _one_meaning(long_forms: Set[str]) -> bool:
    """Whether every two long forms share a word's first letters ("myotonic dystrophy", "dystrophia
    myotonica"): two without any ("diabetes mellitus") are two meanings."""
    stems = [{word[:STEM] for word in re.findall(r"[^\W\d_]+", long) if len(word) > 3} for long in long_forms]
    return all(one & other for one in stems for other in stems)
