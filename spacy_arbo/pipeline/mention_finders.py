"""Which components of a pipeline find mentions. A linker reads `doc.ents`: in a pipeline
where nothing sets them (`add_pipe("arbo_linker")` alone, `spacy apply` on a linker-only
pipeline) every text comes back with no entity and no sign why, so the linker warns."""
import sys
import warnings
from typing import Iterable, List, Optional

from spacy.language import Language
from spacy.tokens import Doc

from ..util import ArboWarning
from .neighbours import neighbours


def mention_finders(nlp: Language) -> List[str]:
    """The components that find mentions: they set `doc.ents` without requiring them (a filter
    of mentions found earlier, such as `kb_mention_filter`, requires them)."""
    return [name for name in nlp.pipe_names
            if "doc.ents" in nlp.get_pipe_meta(name).assigns and "doc.ents" not in nlp.get_pipe_meta(name).requires]


def warn_without_mention_finder(nlp: Optional[Language], component: object, name: str) -> bool:
    """Warn (`ArboWarning`) that `component` of `nlp`, which got docs without mentions, has no
    component before it that finds any; whether it warned."""
    if nlp is None or not any(proc is component for _, proc in nlp.pipeline):
        return False
    before = [name for name, _ in neighbours(nlp, component)[0]]
    if set(before) & set(mention_finders(nlp)):
        return False
    warnings.warn(f"{name}: no component before it finds mentions, so it links none (doc.ents is empty); put "
                  "a recognizer first (python -m spacy_arbo add-ner, or add-kb-finder for the KB's names), or "
                  "give it docs whose doc.ents are set.", ArboWarning, stacklevel=3)
    return True


class NoMentionFinderWarning:
    """`warn_without_mention_finder` once per component, for a batch in which no doc has a
    mention, outside `Language.evaluate` and `Language.update`: `spacy train` of a linker-only
    pipeline (and `nlp.evaluate`) pipes the bare dev docs first, and the linker's scorer puts the
    gold mentions on them after; a frozen linker in `annotating_components` (the reranker's
    training) is piped the bare training docs, and the component after it reads the gold ones."""

    def __init__(self) -> None:
        self.warned = False

    def check(self, nlp: Optional[Language], component: object, name: str, docs: Iterable[Doc]) -> List[Doc]:
        """The docs, as a list, warned of when none has a mention."""
        docs = list(docs)
        if docs and not self.warned and not any(doc.ents for doc in docs) and not _inside_training_or_evaluation():
            self.warned = warn_without_mention_finder(nlp, component, name)
        return docs


_TRAINING_AND_EVALUATION = (Language.evaluate.__code__, Language.update.__code__)


def _inside_training_or_evaluation() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in _TRAINING_AND_EVALUATION:
            return True
        frame = frame.f_back
    return False
