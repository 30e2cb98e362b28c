"""`span._.kb_confidence`: the probability that a link is right, written by the linker (calibrated
without labels on the KB's own names) and, calibrated on a labelled dev set, by a `link_confidence`
component at the end of the pipeline, which sees the links every component before it decided
(reranker, link memory) and can leave the unsure ones NIL (`threshold`, a confidence)."""
import logging
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import SimpleFrozenList
from spacy.vocab import Vocab

from ..confidence.calibration import Calibration
from ..confidence.features import FEATURES, link_features
from ..confidence.label_free import label_free_calibration
from ..kb.entities import NIL
from ..component_settings import config_checked
from ..util import ArboError, atomic_path, read_msgpack
from .link_memory import LinkMemory, memory_key
from .links import read_kb_id, write_kb_id
from .mention_finders import mention_finders
from .neighbours import neighbours, pipe_through

if not Span.has_extension("kb_confidence"):
    Span.set_extension("kb_confidence", default=None)

# msgpack: JSON would round the weights, and a loaded pipeline would not repeat its confidences.
CALIBRATION_FILE = "calibration"
logger = logging.getLogger("spacy_arbo")


class ConfidenceFeatures:
    """The features of links in a pipeline: which texts its link memories remember and which name
    one entity of its linker's KB."""

    def __init__(self, nlp: Optional[Language], linker: Any) -> None:
        self.memories = [proc for _, proc in nlp.pipeline if isinstance(proc, LinkMemory)] if nlp else []
        self.kb_names = linker.exact_names.ids(linker.require_retriever())

    def __call__(self, spans: Sequence[Span]) -> List[List[float]]:
        ids_per_doc: Dict[int, Counter] = {}
        for span in spans:
            if id(span.doc) not in ids_per_doc:
                ids_per_doc[id(span.doc)] = Counter(read_kb_id(ent) for ent in span.doc.ents)
        rows = []
        for span in spans:
            kb_id = read_kb_id(span)
            rows.append(link_features(span, kb_id, any(m.lookup(span) is not None for m in self.memories),
                                      memory_key(span.text) in self.kb_names, ids_per_doc[id(span.doc)][kb_id] - 1))
        return rows


def linked_spans(docs: Iterable[Doc]) -> List[Span]:
    """The mentions some component linked (NIL or not): those with candidates or an id."""
    return [ent for doc in docs for ent in doc.ents
            if read_kb_id(ent) != NIL or (ent.has_extension("kb_candidates") and ent._.kb_candidates is not None)]


def write_confidence(spans: Sequence[Span], calibration: Optional[Calibration],
                     features: Callable[[Sequence[Span]], List[List[float]]]) -> None:
    """`kb_confidence` of each linked span; None for NIL links and without a calibration."""
    if calibration is None or not spans:
        return
    for span, confidence in zip(spans, calibration(features(spans))):
        span._.kb_confidence = None if read_kb_id(span) == NIL else float(confidence)


class LabelFreeConfidence:
    """The linker's own calibration, fitted on the KB's names (`label_free`) for the weights and
    scoring settings it links with, and fitted again when they change (training, `configure`)."""

    def __init__(self) -> None:
        self.calibration: Optional[Calibration] = None
        self.fitted_for: Optional[str] = None
        self._fitting = False

    def fit(self, linker: Any) -> None:
        self._fitting = True
        try:
            self.calibration = label_free_calibration(
                linker.require_retriever().kb, linker.vocab, _make_doc(linker), lambda docs: list(linker.pipe(docs)),
                ConfidenceFeatures(linker.nlp, linker), seed=linker.settings.seed)
        finally:
            self._fitting = False
        self.fitted_for = linker.confidence_key()

    def fit_if_it_links(self, linker: Any) -> None:
        """Fit at initialize, unless the linker cannot link yet (a transductive one before its
        training mentions): then on first use, where linking says what is missing."""
        try:
            self.fit(linker)
        except ArboError as err:
            logger.info("%s: confidence not calibrated yet (%s); it is calibrated on first use.", linker.name, err)

    def write(self, linker: Any, spans: Sequence[Span]) -> None:
        if self._fitting or not spans:
            return
        if self.fitted_for != linker.confidence_key():
            logger.info("%s: calibrating its confidence on the KB's names for its current weights and settings.",
                        linker.name)
            self.fit(linker)
        write_confidence(spans, self.calibration, ConfidenceFeatures(linker.nlp, linker))

    def to_bytes(self) -> bytes:
        return srsly.msgpack_dumps(None if self.calibration is None else
                                   {"calibration": self.calibration.to_dict(), "fitted_for": self.fitted_for})

    def from_bytes(self, data: bytes, where: str) -> None:
        try:
            saved = srsly.msgpack_loads(data) if data else None
        except ValueError:
            raise ArboError(f"{where}: not a saved confidence calibration (damaged msgpack).") from None
        if saved is None:
            self.calibration = self.fitted_for = None
            return
        if not isinstance(saved, dict) or set(saved) != {"calibration", "fitted_for"} or \
                not isinstance(saved["calibration"], dict):
            raise ArboError(f"{where}: not a saved confidence calibration.")
        if list(saved["calibration"].get("features", [])) != list(FEATURES):
            logger.info("%s: the confidence was calibrated on other features; it is calibrated again on first use.",
                        where)
            self.calibration = self.fitted_for = None
            return
        self.calibration = Calibration.from_dict(saved["calibration"], where)
        self.fitted_for = saved["fitted_for"]


def _make_doc(linker: Any) -> Callable[[str], Doc]:
    return linker.nlp.make_doc if linker.nlp is not None else (lambda text: Doc(linker.vocab, words=text.split()))


def pipeline_linker(nlp: Language, what: str) -> Any:
    """The last component of `nlp` with an entity retriever (an arbo_linker)."""
    linkers = [proc for _, proc in nlp.pipeline if hasattr(proc, "exact_names") and hasattr(proc, "require_retriever")]
    if not linkers:
        raise ArboError(f"{what}: the pipeline has no arbo_linker whose KB it could read.")
    return linkers[-1]


def check_threshold(threshold: Any) -> None:
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))
                                  or not 0 <= threshold <= 1):
        raise ArboError(f"threshold takes a confidence in [0, 1] or null; got {threshold!r}.")


@Language.factory("link_confidence", requires=["token.ent_kb_id"], assigns=["span._.kb_confidence", "token.ent_kb_id"],
                  default_config={"threshold": None})
@config_checked
def make_link_confidence(nlp: Language, name: str, threshold: Any) -> "LinkConfidence":
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
                                                  link, self._features())

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
