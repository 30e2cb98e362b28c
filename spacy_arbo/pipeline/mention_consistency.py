"""Mentions that agree across a document: what the recognizer calls a mention in some places,
it calls one wherever the document repeats it.

An abstract names its disease again and again, often by a short form that it defines once
("von Hippel-Lindau disease (VHL)"), and the corpora annotate every occurrence; a recognizer
that reads each occurrence in its own window misses some of them, most often short forms. Two
rules, both read from the recognizer's own mentions of the doc:

- a text that the recognizer labels at `min_share` of its occurrences or more is labelled at
  all of them (one labelled occurrence among many, such as a gene symbol that is also a
  disease's short form, is more likely the recognizer's slip than the rule);
- a short form whose definition's long form the recognizer labels is labelled wherever it occurs.

Where a new span overlaps a mention, the longer span stays (spaCy's `filter_spans`).
"""
from collections import Counter, defaultdict
from typing import Any, Dict, List, Optional

from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.util import filter_spans
from spacy.vocab import Vocab

from ..component_settings import config_checked
from ..ranges import check_range
from .common.abbreviations import LongForms, short_form_spans, word_occurrences


class MentionConsistency:
    """Labels every occurrence of what the recognizer labels often enough in a doc, and the
    short forms of the long forms it labels."""

    def __init__(self, vocab: Vocab, name: str = "mention_consistency", min_share: float = 0.35,
                 short_forms: bool = True) -> None:
        check_range(f"{name}: min_share", min_share, 0, 1, low_open=True)
        self.vocab = vocab
        self.name = name
        self.min_share = float(min_share)
        self.short_forms = short_forms
        self._long_forms: Optional[LongForms] = None

    def __call__(self, doc: Doc) -> Doc:
        if not doc.ents:
            return doc
        found = self._repeated_mentions(doc)
        if self.short_forms:
            found += self._defined_short_forms(doc)
        if found:
            doc.ents = filter_spans([*doc.ents, *found])
        return doc

    def _repeated_mentions(self, doc: Doc) -> List[Span]:
        labels: Dict[str, Counter] = defaultdict(Counter)
        for ent in doc.ents:
            labels[ent.text][ent.label_] += 1
        spans = []
        for text, counts in labels.items():
            occurrences = word_occurrences(doc.text, text)
            if sum(counts.values()) < self.min_share * max(len(occurrences), 1):
                continue
            label = counts.most_common(1)[0][0]
            spans += [span for start, end in occurrences
                      if (span := doc.char_span(start, end, label=label)) is not None]
        return spans

    def _defined_short_forms(self, doc: Doc) -> List[Span]:
        if self._long_forms is None:
            self._long_forms = LongForms(self.vocab)
        labelled = {ent.text.casefold(): ent.label_ for ent in doc.ents}
        return short_form_spans(doc, self._long_forms(doc), lambda long_form: labelled.get(long_form.casefold()))


@Language.factory("mention_consistency", requires=["doc.ents"], assigns=["doc.ents"],
                  default_config={"min_share": 0.35, "short_forms": True})
@config_checked
def make_mention_consistency(nlp: Language, name: str, min_share: Any, short_forms: bool) -> MentionConsistency:
    """Put right after the recognizer (`add-ner` does)."""
    return MentionConsistency(nlp.vocab, name, min_share=min_share, short_forms=short_forms)
