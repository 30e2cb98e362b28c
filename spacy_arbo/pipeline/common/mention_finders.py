"""Which components of a pipeline find mentions. A linker reads `doc.ents`: in a pipeline
where nothing sets them (`add_pipe("arbo_linker")` alone, `spacy apply` on a linker-only
pipeline) every text comes back with no entity and no sign why, so the linker warns."""
import warnings
from typing import Iterable, List, Optional, Sequence

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example

from ...util import ArboWarning
from .neighbours import neighbours

MENTIONS = "doc.ents"


def mention_finders(nlp: Language) -> List[str]:
    """The components that find mentions, as `nlp.analyze_pipes` reports what they declare: they
    assign `doc.ents` without requiring it (a filter of mentions found earlier, such as
    `kb_mention_filter`, requires them)."""
    found = nlp.analyze_pipes()["attrs"].get(MENTIONS, {"assigns": [], "requires": []})
    return [name for name in found["assigns"] if name not in found["requires"]]


def finds_no_mentions_before(nlp: Optional[Language], component: object) -> bool:
    """Whether `component` is in `nlp` with no component before it that finds mentions."""
    if nlp is None or not any(proc is component for _, proc in nlp.pipeline):
        return False
    return not {name for name, _ in neighbours(nlp, component)[0]} & set(mention_finders(nlp))


class NoMentionFinderWarning:
    """A linker's warning that no component before it finds mentions, decided once, from what the
    pipeline declares, where the linker is made ready. At `initialize` it is given at once, unless
    the examples carry gold mentions (`spacy train` trains and scores the linker on them, and pipes
    it the bare dev docs before its scorer puts them on): `nlp.evaluate` and a frozen linker in
    `annotating_components` then pipe bare docs unwarned. A loaded linker cannot tell who will run
    it (spacy_arbo's commands give it gold mentions, `spacy apply` raw text): it warns at the first
    batch in which no doc has a mention."""

    def __init__(self) -> None:
        self.pending = False

    def initialized(self, nlp: Optional[Language], component: object, name: str, examples: Sequence[Example]) -> None:
        self.pending = False
        if finds_no_mentions_before(nlp, component) and not any(eg.reference.ents for eg in examples):
            _warn(name)

    def loaded(self, nlp: Optional[Language], component: object) -> None:
        self.pending = finds_no_mentions_before(nlp, component)

    def check(self, name: str, docs: Iterable[Doc]) -> List[Doc]:
        """The docs, as a list; warned of when they are the first batch since loading with no mention."""
        docs = list(docs)
        if self.pending and docs and not any(doc.ents for doc in docs):
            self.pending = False
            _warn(name)
        return docs


def _warn(name: str) -> None:
    warnings.warn(f"{name}: no component before it finds mentions, so it links none (doc.ents is empty); put "
                  "a recognizer first (python -m spacy_arbo add-ner, or add-kb-finder for the KB's names), or "
                  "give it docs whose doc.ents are set.", ArboWarning, stacklevel=3)
