"""Long forms of abbreviations, for encoding a short form as what it stands for.

About a third of NCBI Disease mentions are short forms ("WD", "FAP") that the abstract
defines once ("Wilson disease (WD)"). scispacy's detector (Schwartz & Hearst 2003) finds
those definitions; a short form alone says little to the encoder or to TF-IDF.
"""
import warnings
from collections import Counter, defaultdict
from typing import Dict, Iterable, Tuple

from scispacy.abbreviation import AbbreviationDetector
from spacy.tokens import Doc
from spacy.vocab import Vocab


class LongForms:
    """Maps each short-form occurrence of a doc to its long form's text."""

    def __init__(self, vocab: Vocab) -> None:
        # The detector only needs a vocab for its matchers, not a whole pipeline. Serializable
        # results: spans kept in `doc.user_data` would make the doc impossible to copy or pickle.
        self._detector = AbbreviationDetector(_VocabOnly(vocab), make_serializable=True)

    def __call__(self, doc: Doc) -> Dict[Tuple[int, int], str]:
        """(start_char, end_char) of each short form -> long form. Reuses the
        `doc._.abbreviations` of an upstream `abbreviation_detector` (spans, or its
        serializable dicts), else finds them (and leaves them on the doc, as dicts)."""
        if not doc._.abbreviations:
            with warnings.catch_warnings():
                # The detector's second matcher is empty by design; spaCy warns (W036) about it.
                warnings.filterwarnings("ignore", message=r"\[W036\]")
                self._detector(doc)
        forms = {}
        for short in doc._.abbreviations:
            if isinstance(short, dict):
                span = doc[short["short_start"]: short["short_end"]]
                forms[span.start_char, span.end_char] = short["long_text"]
            elif short._.long_form is not None:
                forms[short.start_char, short.end_char] = short._.long_form.text
        return forms


def corpus_long_forms(docs: Iterable[Doc], long_forms: LongForms) -> Dict[str, str]:
    """Each short form that some doc of `docs` defines -> its most frequent long form (one vote
    per doc; a tie goes to the alphabetically first), for the docs that use a short form
    without defining it ("FRDA" in an abstract that never spells out Friedreich ataxia)."""
    votes: Dict[str, Counter] = defaultdict(Counter)
    for doc in docs:
        for short, long in {(doc.text[start:end], long) for (start, end), long in long_forms(doc).items()}:
            votes[short][long] += 1
    return {short: min(counts, key=lambda long: (-counts[long], long)) for short, counts in sorted(votes.items())}


class _VocabOnly:
    def __init__(self, vocab: Vocab) -> None:
        self.vocab = vocab
