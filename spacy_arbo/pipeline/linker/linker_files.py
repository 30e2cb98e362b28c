"""What a saved `arbo_linker` holds: its settings (`cfg`), its weights, the KB, the indexes, the
transductive anchors and the corpus long forms.

The dense index is written only while it matches the weights: saving never encodes, and
a pipeline saved without it re-encodes the KB when first used.
"""
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Optional, Protocol

import srsly
from spacy import util
from thinc.api import Model

from ...component_settings import CFG, read_cfg, write_cfg
from ...kb.store import BaseEntityStore, EntityStore, open_store
from ...torch_model import is_built
from ...training.mentions import TrainingMentions
from ...util import ArboError, atomic_path
from .earlier_defaults import names_in_config_beside, settings_saved_without
from .linker_settings import LinkerSettings

if TYPE_CHECKING:
    from ...confidence.label_free import LabelFreeConfidence
    from ...encoders.linker_encoder import LinkerEncoder
    from ...retrieval.retriever import EntityRetriever
    from ...training.retriever_training import RetrieverTraining
    from .mention_inputs import MentionReader

logger = logging.getLogger("spacy_arbo")
# What the weights file holds for weights never built (a TF-IDF linker's encoder), so that a
# missing file can only mean a pipeline copied without its weights.
UNBUILT = b"spacy-arbo: weights never built\n"
# The label-free confidence calibration (`confidence.label_free.LabelFreeConfidence`), msgpack.
CONFIDENCE_FILE = "confidence"


class SavedLinker(Protocol):
    """What saving and loading read and write of an `arbo_linker`: they know it by these alone."""

    name: str
    settings: LinkerSettings
    model: Model
    retriever: Optional["EntityRetriever"]
    encoder: "LinkerEncoder"
    read_mentions: "MentionReader"
    training: "RetrieverTraining"
    confidence: "LabelFreeConfidence"

    @property
    def cfg(self) -> Dict[str, Any]: ...

    def configure(self, **changes: Any) -> None: ...

    def cfg_bytes(self) -> bytes: ...

    def load_cfg_bytes(self, data: bytes) -> None: ...

    def require_retriever(self) -> "EntityRetriever": ...

    def index_is_current(self) -> bool: ...

    def set_kb(self, kb: BaseEntityStore) -> None: ...


def _dense_index_is_saved(current: bool, name: str) -> bool:
    """`current`: whether the dense index holds the vectors of the current weights."""
    if not current:
        logger.warning("%s: the entity index lags the weights and is not saved; it is re-encoded "
                       "when the saved pipeline is first used.", name)
    return current


def _keeps_anchors(settings: LinkerSettings, corpus: TrainingMentions) -> bool:
    return settings.transductive and bool(len(corpus))


def _load_anchors(training: "RetrieverTraining", anchors: Optional[TrainingMentions]) -> None:
    if anchors is not None:
        training.corpus = anchors


def to_bytes(linker: SavedLinker, exclude: Iterable[str]) -> bytes:
    retriever = linker.require_retriever()
    serializers: Dict[str, Callable[[], bytes]] = {
        CFG: linker.cfg_bytes,
        "model": lambda: linker.model.to_bytes() if is_built(linker.model) else b"",
        "kb": retriever.kb.to_bytes,
        "indexes": lambda: srsly.msgpack_dumps(retriever.index_bytes(
            include_dense=_dense_index_is_saved(linker.index_is_current(), linker.name))),
        "anchors": lambda: linker.training.current_mentions(linker.encoder).to_bytes(retriever.kb)
        if _keeps_anchors(linker.settings, linker.training.corpus) else b"",
        "long_forms": linker.read_mentions.long_forms_bytes,
        "confidence": linker.confidence.to_bytes,
    }
    return util.to_bytes(serializers, exclude)


def from_bytes(linker: SavedLinker, data: bytes, exclude: Iterable[str]) -> None:
    deserializers: Dict[str, Callable[[bytes], Any]] = {
        CFG: linker.load_cfg_bytes,
        "model": lambda b: linker.model.from_bytes(b) if b else None,
        "kb": lambda b: linker.set_kb(EntityStore.from_bytes(b)),
        "indexes": lambda b: linker.require_retriever().load_index_bytes(srsly.msgpack_loads(b)),
        "anchors": lambda b: _load_anchors(
            linker.training, TrainingMentions.from_bytes(b, linker.require_retriever().kb) if b else None),
        "long_forms": linker.read_mentions.load_long_forms_bytes,
        "confidence": lambda b: linker.confidence.from_bytes(b, f"{linker.name} bytes"),
    }
    util.from_bytes(data, deserializers, exclude)
    _after_load(linker)


def to_disk(linker: SavedLinker, path: Path, exclude: Iterable[str]) -> None:
    retriever = linker.require_retriever()
    serializers: Dict[str, Callable[[Path], Any]] = {
        CFG: lambda p: write_cfg(p, linker.cfg),
        "kb": retriever.kb.to_disk,
        "indexes": lambda p: retriever.to_disk(p, include_dense=_dense_index_is_saved(linker.index_is_current(),
                                                                                       linker.name)),
    }
    serializers["model"] = linker.model.to_disk if is_built(linker.model) else lambda p: Path(p).write_bytes(UNBUILT)
    if _keeps_anchors(linker.settings, linker.training.corpus):
        serializers["anchors"] = lambda p: linker.training.current_mentions(linker.encoder).to_disk(p, retriever.kb)
    if linker.read_mentions.corpus_long_forms:
        serializers["long_forms"] = linker.read_mentions.write_long_forms
    if linker.confidence.calibration is not None:
        serializers[CONFIDENCE_FILE] = lambda p: _write_atomically(p, linker.confidence.to_bytes())
    util.to_disk(path, serializers, exclude)


def _write_atomically(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def from_disk(linker: SavedLinker, path: Path, exclude: Iterable[str]) -> None:
    """A saved linker. `spacy.load` made it from the config.cfg saved with it, which holds the
    values of its `cfg`, and from the settings given at load time, which stand; what its `cfg`
    adds is which settings it was saved with: those it lacks take their earlier defaults."""
    deserializers: Dict[str, Callable[[Path], Any]] = {
        CFG: lambda p: _take_earlier_defaults(linker, p),
        "model": lambda p: _load_model(linker.model, linker.settings.uses_dense, p),
        "kb": lambda p: linker.set_kb(open_store(p)),
        "indexes": lambda p: linker.require_retriever().from_disk(p),
        "anchors": lambda p: _load_anchors(
            linker.training, TrainingMentions.from_disk(p, linker.require_retriever().kb) if p.exists() else None),
        "long_forms": linker.read_mentions.read_long_forms,
        CONFIDENCE_FILE: lambda p: linker.confidence.from_bytes(p.read_bytes() if p.exists() else b"", str(p)),
    }
    util.from_disk(path, deserializers, exclude)
    _after_load(linker)


def _take_earlier_defaults(linker: SavedLinker, cfg_file: Path) -> None:
    """The settings a linker was saved with are the names in its `cfg`, or, saved before it had
    one, in its block of the config.cfg beside it."""
    saved = read_cfg(cfg_file)
    if saved is None:
        saved = names_in_config_beside(cfg_file.parent, linker.name)
    if saved is not None:
        linker.configure(**settings_saved_without(saved, linker.settings))


def _after_load(linker: SavedLinker) -> None:
    """Vectors saved from other weights or entity texts are re-encoded on first use."""
    linker.encoder.weights_changed()
    if linker.retriever is None:  # the KB was excluded
        return
    linker.read_mentions.check_knowledge_units()
    if linker.retriever.dense is not None and not linker.index_is_current():
        logger.info("%s: the saved entity index does not match the settings or weights; it is "
                    "re-encoded on first use.", linker.name)


def _load_model(model: Model, uses_dense: bool, path: Path) -> None:
    if path.exists():
        if path.stat().st_size != len(UNBUILT) or path.read_bytes() != UNBUILT:
            model.from_disk(path)
        return
    # Earlier versions wrote nothing for weights never built, which only a TF-IDF linker has.
    if uses_dense:
        raise ArboError(f"{path.parent}: the linker's weights file '{path.name}' is missing, so it would encode "
                        "with the untrained encoder; copy the saved pipeline again, whole.")
