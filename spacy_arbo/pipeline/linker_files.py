"""What a saved `arbo_linker` holds: its weights, the KB, the indexes, the transductive
anchors and the corpus long forms. Its settings live in the pipeline's config.

The dense index is written only while it matches the weights: saving never encodes, and
a pipeline saved without it re-encodes the KB when first used.
"""
import logging
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Optional

import srsly
from spacy import util

from ..kb.store import EntityStore, open_store
from ..torch_model import is_built
from ..training.mentions import TrainingMentions
from ..util import ArboError, atomic_path
from .earlier_defaults import settings_saved_without

logger = logging.getLogger("spacy_arbo")
# What the weights file holds for weights never built (a TF-IDF linker's encoder), so that a
# missing file can only mean a pipeline copied without its weights.
UNBUILT = b"spacy-arbo: weights never built\n"
# The label-free confidence calibration (`link_confidence.LabelFreeConfidence`), msgpack.
CONFIDENCE_FILE = "confidence"


def _dense_index_is_saved(linker: Any) -> bool:
    current = linker.index_is_current()
    if not current:
        logger.warning("%s: the entity index lags the weights and is not saved; it is re-encoded "
                       "when the saved pipeline is first used.", linker.name)
    return current


def _keeps_anchors(linker: Any) -> bool:
    return linker.settings.transductive and bool(len(linker.corpus))


def _current_anchors(linker: Any) -> TrainingMentions:
    return linker.training.current_mentions(linker.encoder)


def _load_anchors(linker: Any, anchors: Optional[TrainingMentions]) -> None:
    if anchors is not None:
        linker.training.corpus = anchors


def to_bytes(linker: Any, exclude: Iterable[str]) -> bytes:
    retriever = linker.require_retriever()
    serializers: Dict[str, Callable[[], bytes]] = {
        "model": lambda: linker.model.to_bytes() if is_built(linker.model) else b"",
        "kb": retriever.kb.to_bytes,
        "indexes": lambda: srsly.msgpack_dumps(retriever.index_bytes(include_dense=_dense_index_is_saved(linker))),
        "anchors": lambda: _current_anchors(linker).to_bytes(retriever.kb) if _keeps_anchors(linker) else b"",
        "long_forms": linker.read_mentions.long_forms_bytes,
        "confidence": linker.confidence.to_bytes,
    }
    return util.to_bytes(serializers, exclude)


def from_bytes(linker: Any, data: bytes, exclude: Iterable[str]) -> None:
    deserializers = {
        "model": lambda b: linker.model.from_bytes(b) if b else None,
        "kb": lambda b: linker.set_kb(EntityStore.from_bytes(b)),
        "indexes": lambda b: linker.require_retriever().load_index_bytes(srsly.msgpack_loads(b)),
        "anchors": lambda b: _load_anchors(linker, TrainingMentions.from_bytes(b, linker.kb) if b else None),
        "long_forms": linker.read_mentions.load_long_forms_bytes,
        "confidence": lambda b: linker.confidence.from_bytes(b, f"{linker.name} bytes"),
    }
    util.from_bytes(data, deserializers, exclude)
    _after_load(linker)


def to_disk(linker: Any, path: Path, exclude: Iterable[str]) -> None:
    retriever = linker.require_retriever()
    serializers = {
        "kb": retriever.kb.to_disk,
        "indexes": lambda p: retriever.to_disk(p, include_dense=_dense_index_is_saved(linker)),
    }
    serializers["model"] = linker.model.to_disk if is_built(linker.model) else lambda p: Path(p).write_bytes(UNBUILT)
    if _keeps_anchors(linker):
        serializers["anchors"] = lambda p: _current_anchors(linker).to_disk(p, retriever.kb)
    if linker.corpus_long_forms:
        serializers["long_forms"] = linker.read_mentions.write_long_forms
    if linker.confidence.calibration is not None:
        serializers[CONFIDENCE_FILE] = lambda p: _write_atomically(p, linker.confidence.to_bytes())
    util.to_disk(path, serializers, exclude)


def _write_atomically(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def from_disk(linker: Any, path: Path, exclude: Iterable[str]) -> None:
    """A saved linker, with the settings of the config it was saved with (`earlier_defaults`)."""
    linker.configure(**settings_saved_without(path, linker.name, linker.settings))
    _from_current_disk(linker, path, exclude)
    _after_load(linker)


def _after_load(linker: Any) -> None:
    """Vectors saved from other weights or entity texts are re-encoded on first use."""
    linker.encoder.weights_changed()
    if linker.retriever is None:  # the KB was excluded
        return
    linker.read_mentions.check_knowledge_units()
    if linker.retriever.dense is not None and not linker.index_is_current():
        logger.info("%s: the saved entity index does not match the settings or weights; it is "
                    "re-encoded on first use.", linker.name)


def _from_current_disk(linker: Any, path: Path, exclude: Iterable[str]) -> None:
    deserializers = {
        "model": lambda p: _load_model(linker, p),
        "kb": lambda p: linker.set_kb(open_store(p)),
        "indexes": lambda p: linker.require_retriever().from_disk(p),
        "anchors": lambda p: _load_anchors(linker, TrainingMentions.from_disk(p, linker.kb) if p.exists() else None),
        "long_forms": linker.read_mentions.read_long_forms,
        CONFIDENCE_FILE: lambda p: linker.confidence.from_bytes(p.read_bytes() if p.exists() else b"", str(p)),
    }
    util.from_disk(path, deserializers, exclude)


def _load_model(linker: Any, path: Path) -> None:
    if path.exists():
        if path.stat().st_size != len(UNBUILT) or path.read_bytes() != UNBUILT:
            linker.model.from_disk(path)
        return
    # Earlier versions wrote nothing for weights never built, which only a TF-IDF linker has.
    if linker.settings.uses_dense:
        raise ArboError(f"{path.parent}: the linker's weights file '{path.name}' is missing, so it would encode "
                        "with the untrained encoder; copy the saved pipeline again, whole.")
