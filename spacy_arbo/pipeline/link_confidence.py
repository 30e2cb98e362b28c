"""`link_confidence`: `span._.kb_confidence` for every link the pipeline makes, written by a
component at its end, which sees the links every component before it decided (reranker, link
memory) and can leave the unsure ones NIL (`threshold`, a confidence); calibrated on a labelled
dev set (`spacy_arbo calibrate`), or at initialize on the KB's own names. The linker's own
confidence, label-free, is `confidence.label_free.LabelFreeConfidence`."""
from pathlib import Path
from typing import Any, Callable, Iterable, List, Optional, Protocol, runtime_checkable

import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import SimpleFrozenList
from spacy.vocab import Vocab

from ..component_settings import config_checked
from ..confidence.calibration import Calibration
from ..confidence.features import ConfidenceFeatures, KBNames, write_confidence
from ..confidence.label_free import NameSettings, label_free_calibration
from ..kb.entities import NIL
from ..ranges import check_range
from ..retrieval.retriever import EntityRetriever
from ..util import ArboError, atomic_path, read_msgpack
from .common.links import install_extensions, read_kb_id, write_kb_id
from .common.mention_finders import mention_finders
from .common.neighbours import neighbours, pipe_through

# msgpack: JSON would round the weights, and a loaded pipeline would not repeat its confidences.
CALIBRATION_FILE = "calibration"


def linked_spans(docs: Iterable[Doc]) -> List[Span]:
    """The mentions some component linked (NIL or not): those with candidates or an id."""
    return [ent for doc in docs for ent in doc.ents if read_kb_id(ent) != NIL or ent._.kb_candidates is not None]


@runtime_checkable
class KBLinker(KBNames, Protocol):
    """What the confidence reads of the linker whose links it rates (an arbo_linker): its KB,
    through its retriever, which of the KB's names name one entity, and its settings (a label
    it links). The linker is found by this Protocol: importing `ArboLinker` here would close an
    import circle through linker_files."""

    settings: NameSettings

    def require_retriever(self) -> EntityRetriever: ...


def pipeline_linker(nlp: Language, what: str) -> KBLinker:
    """The last arbo_linker of `nlp`, whose KB the confidence reads."""
    linkers = [proc for _, proc in nlp.pipeline if isinstance(proc, KBLinker)]
    if not linkers:
        raise ArboError(f"{what}: the pipeline has no arbo_linker whose KB it could read.")
    return linkers[-1]


def check_threshold(threshold: Any) -> None:
    check_range("threshold", threshold, 0, 1, allow_none=True)


@Language.factory("link_confidence", requires=["token.ent_kb_id"], assigns=["span._.kb_confidence", "token.ent_kb_id"],
                  default_config={"threshold": None})
@config_checked
def make_link_confidence(nlp: Language, name: str, threshold: Any) -> "LinkConfidence":
    install_extensions()
    return LinkConfidence(nlp.vocab, name, threshold=threshold, nlp=nlp)


class LinkConfidence(Pipe):
    """Writes `span._.kb_confidence` for every link decided before it; links below `threshold`
    become NIL. `initialize` calibrates it without labels, as the linker does; `calibrate` on a
    labelled dev set (`spacy_arbo calibrate`)."""

    def __init__(self, vocab: Vocab, name: str = "link_confidence", *, threshold: Optional[float] = None,
                 nlp: Optional[Language] = None) -> None:
        check_threshold(threshold)
        self.vocab, self.name, self.nlp = vocab, name, nlp
        self.threshold = threshold
        self.calibration: Optional[Calibration] = None

    def _features(self) -> ConfidenceFeatures:
        return ConfidenceFeatures(self.nlp, pipeline_linker(self.nlp, self.name))

    def __call__(self, doc: Doc) -> Doc:
        if self.calibration is None:
            raise ArboError(f"'{self.name}' is not calibrated: call nlp.initialize() or run "
                            "`python -m spacy_arbo calibrate` on a dev set.")
        spans = linked_spans([doc])
        write_confidence(spans, self.calibration, self._features())
        if self.threshold is not None:
            for span in spans:
                if span._.kb_confidence is not None and span._.kb_confidence < self.threshold:
                    write_kb_id(span, NIL)
        return doc

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *, nlp: Optional[Language] = None) -> None:
        """A label-free calibration: the KB's names linked by the components before this one."""
        self.nlp = nlp if nlp is not None else self.nlp
        linker = pipeline_linker(self.nlp, self.name)
        before, _ = neighbours(self.nlp, self)
        finders = set(mention_finders(self.nlp))
        # The components that link: those after the last one that finds mentions.
        start = max((i + 1 for i, (name, _) in enumerate(before) if name in finders), default=0)

        def link(docs: List[Doc]) -> List[Doc]:
            return list(pipe_through([proc for _, proc in before[start:]], docs))

        self.calibration = label_free_calibration(linker.require_retriever().kb, self.vocab, self.nlp.make_doc,
                                                  link, self._features(), label=linker.settings.name_label)

    def to_bytes(self, *, exclude: Iterable[str] = SimpleFrozenList()) -> bytes:
        return srsly.msgpack_dumps(None if self.calibration is None else self.calibration.to_dict())

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = SimpleFrozenList()) -> "LinkConfidence":
        try:
            data = srsly.msgpack_loads(bytes_data)
        except ValueError:
            raise ArboError(f"{self.name} bytes: not a saved confidence calibration (damaged msgpack).") from None
        self.calibration = None if data is None else Calibration.from_dict(data, f"{self.name} bytes")
        return self

    def to_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        if self.calibration is not None:
            with atomic_path(path / CALIBRATION_FILE) as tmp:
                srsly.write_msgpack(tmp, self.calibration.to_dict())

    def from_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> "LinkConfidence":
        file = Path(path) / CALIBRATION_FILE
        self.calibration = Calibration.from_dict(read_msgpack(file, "a confidence calibration"), str(file)) \
            if file.exists() else None
        return self
