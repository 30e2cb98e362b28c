"""Long forms of abbreviations, for encoding a short form as what it stands for.

About a third of NCBI Disease mentions are short forms ("WD", "FAP") that the abstract
defines once ("Wilson disease (WD)"). scispacy's detector (Schwartz & Hearst 2003) finds
those definitions; a short form alone says little to the encoder or to TF-IDF.
"""
import re
import warnings
from collections import Counter, defaultdict
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from scispacy.abbreviation import AbbreviationDetector, find_abbreviation
from spacy.tokens import Doc, Span, Token
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
        if "(" not in doc.text:  # nothing is defined
            return {}
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
        for short, long in parenthesized_definitions(doc):
            for occurrence in word_occurrences(doc.text, short):
                forms.setdefault(occurrence, long)
        return forms


def word_occurrences(text: str, phrase: str) -> List[Tuple[int, int]]:
    """(start_char, end_char) of each occurrence of `phrase` in `text` as written, not inside a
    longer word."""
    return [match.span() for match in re.finditer(rf"(?<!\w){re.escape(phrase)}(?!\w)", text)]


def short_form_spans(doc: Doc, long_forms: Dict[Tuple[int, int], str],
                     label_of: Callable[[str], Optional[str]]) -> List[Span]:
    """A span of each short-form occurrence in `doc` (`long_forms`: `LongForms` of it) whose
    long form `label_of` gives a label (None: not a mention)."""
    spans = []
    for (start, end), long_form in long_forms.items():
        label = label_of(long_form)
        span = None if label is None else doc.char_span(start, end, label=label, alignment_mode="contract")
        if span is not None:
            spans.append(span)
    return spans


def parenthesized_definitions(doc: Doc) -> Iterator[Tuple[str, str]]:
    """(short, long) for the two kinds of definition that scispacy's detector skips:
    "T-cell prolymphocytic leukaemia (T-PLL)" and "Cowden disease (CD; MIM 158350)".

    spaCy splits "T-PLL" at its hyphen into "T", "-", "PLL", and scispacy's detector wants
    every token of a short form to have 2 to 9 characters, so it never sees these. And it reads
    parentheses of more than three tokens as a long form, where ports of Schwartz & Hearst's
    algorithm end the short form at a ";" in them (here also at a ", "). Their rule
    is on the short form's characters: 2 to 10 of them, the first a letter, at least one letter
    (here: half of them, as scispacy asks of the others)."""
    for open_ in (t for t in doc if t.text == "("):
        short = _short_form_after(open_)
        if short is None:
            continue
        text = short.text
        if not 2 <= len(text) <= 10 or not text[0].isalpha() or sum(c.isalpha() for c in text) < len(text) / 2:
            continue
        window = min(len(text) + 5, len(text) * 2)
        _, long = find_abbreviation(doc[max(open_.i - window, 0): open_.i], short)
        if long is None or len(long.text) <= len(text):  # "ATM (A-T, mutated)": ATM is the short form
            continue
        listed = doc[short.end].text != ")"  # more follows in the parentheses
        if not listed or _ends_alike(text, long.text):
            yield text, long.text


def _ends_alike(short: str, long: str) -> bool:
    """Whether the long form's last word holds the short form's last letter or digit, asked of
    a short form that more text follows in its parentheses: the long form runs up to the
    parenthesis, so a coordination before a list of short forms ("spinocerebellar ataxias 1
    and 2 (SCA1, n = 11; SCA2, ...)") is no long form of the first."""
    last = next((c for c in reversed(short) if c.isalnum()), "")
    return last.casefold() in re.split(r"[\s-]", long)[-1].casefold()


# Tokens of a short form spaCy may split a word into ("T-PLL": 3); a longer word is no short form.
_MAX_SHORT_FORM_TOKENS = 6


def _short_form_after(open_: Token) -> Optional[Span]:
    """The word right after `open_` (tokens up to the first whitespace), when it is a short
    form candidate that scispacy's detector does not read: a whole hyphenated parenthesis, or
    a word of two capitals or more followed by "; " or ", " inside the parentheses."""
    doc = open_.doc
    end = open_.i + 1
    while end < len(doc) and end - open_.i <= _MAX_SHORT_FORM_TOKENS and doc[end].text not in (")", ";", ","):
        end += 1
        if doc[end - 1].whitespace_:
            break
    if end == open_.i + 1 or end >= len(doc) or doc[end - 1].whitespace_:
        return None
    word, after = doc[open_.i + 1: end], doc[end]
    if after.text == ")":  # one or two tokens, or no hyphen: scispacy's detector covers those
        return word if len(word) >= 3 and "-" in word.text else None
    closed = any(t.text == ")" for t in doc[end + 1: end + 40])
    # Two capitals at least: a list in parentheses ("(cardiac, cerebrovascular and ...)", "(Sham,
    # N = 22)") starts with a word, which the letters of the words before it may also spell.
    capitals = sum(c.isupper() for c in word.text) >= 2
    return word if after.text in (";", ",") and after.whitespace_ and closed and capitals else None


class SpelledOut:
    """What a doc's mentions read as: each short form the doc defines spelt out as its long
    form. Short forms are also defined through other short forms ("isolated DMS (IDMS)" after
    "diffuse mesangial sclerosis (DMS)") and sit inside mentions ("primary HPT"), where the
    encoder would read letters it cannot resolve."""

    def __init__(self, text: str, forms: Dict[Tuple[int, int], str], corpus_forms: Dict[str, str]) -> None:
        """`text`: the doc's text, `forms`: its `LongForms`, `corpus_forms`: `corpus_long_forms`."""
        self.forms = forms
        self.corpus_forms = corpus_forms
        self.by_text = {text[start:end]: long for (start, end), long in sorted(forms.items())}
        # Longest first, so "T-PLL" is spelt out before a "PLL" inside it.
        alternatives = "|".join(re.escape(short) for short in sorted(self.by_text, key=len, reverse=True))
        self._pattern = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)") if self.by_text else None

    def __call__(self, span: Span) -> Optional[str]:
        """`span` as the encoder should read it, or None when it is to be read as written.
        One level deep: a long form is not spelt out again inside what it replaced."""
        whole = self.forms.get((span.start_char, span.end_char)) or self.corpus_forms.get(span.text)
        if whole is not None:
            return self._spell_out(whole, skip=span.text)
        spelled = self._spell_out(span.text, skip="")
        return spelled if spelled != span.text else None

    def _spell_out(self, text: str, skip: str) -> str:
        """`text` with its short forms spelt out, except `skip` and those whose long form it
        already has ("von Hippel-Lindau (VHL) tumor" is read as written)."""
        if self._pattern is None:
            return text
        folded = text.casefold()

        def long_form(match: "re.Match[str]") -> str:
            short = match.group(0)
            long = self.by_text[short]
            return short if short == skip or long.casefold() in folded else long

        return self._pattern.sub(long_form, text)


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
