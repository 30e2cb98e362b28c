"""What `spacy train` reads corpora through: a PubTator reader and a one-label augmenter,
registered with spaCy (`[corpora]` and `[corpora.train.augmenter]` blocks)."""
from pathlib import Path
from typing import Callable, Iterator, List, Optional

from spacy.language import Language
from spacy.tokens import Span
from spacy.training import Example
from spacy.util import registry

from ..kb.store import open_store
from .conversion import iter_corpus
from .conversion_report import ConversionReport


@registry.readers("spacy_arbo.PubTatorCorpus.v1")
def create_pubtator_reader(
    path: Path,
    kb_path: Optional[Path] = None,
    types: Optional[List[str]] = None,
    limit: int = 0,
) -> Callable[[Language], Iterator[Example]]:
    """Train straight from a PubTator file (the `.spacy` DocBin with spaCy's Corpus is the default).

    `kb_path` is an entity store directory; `limit` caps the examples per pass (0: all).
    """
    kb = open_store(kb_path) if kb_path is not None else None

    def read(nlp: Language) -> Iterator[Example]:
        docs = iter_corpus(path, ConversionReport(), kb=kb, nlp=nlp, types=types, fmt="pubtator")
        for count, gold in enumerate(docs, start=1):
            yield Example(nlp.make_doc(gold.text), gold)
            if count == limit:
                break

    return read


@registry.augmenters("spacy_arbo.one_label.v1")
def create_one_label_augmenter(label: Optional[str] = "Disease") -> Callable[[Language, Example], Iterator[Example]]:
    """Give every gold entity one label: a recognizer for linking needs mentions, not the
    corpus's mention types (NCBI Disease has four: SpecificDisease, DiseaseClass, ...). Tokens
    whose annotation is missing (silver mentions) stay missing. `label = null` keeps the
    corpus's types, for a recognizer whose types go to linkers of different KBs."""

    def relabel(nlp: Language, example: Example) -> Iterator[Example]:
        if label is None:
            yield example
            return
        reference = example.reference.copy()
        reference.set_ents([Span(reference, e.start, e.end, label=label, kb_id=e.kb_id_) for e in reference.ents],
                           default="unmodified")
        yield Example(example.predicted, reference)

    return relabel
