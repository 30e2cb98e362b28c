"""The dual encoder as `arbo_linker` runs it: at the configured precision, in batches of
similar length, and with the one rule that says which vectors are current.

Vectors (the entity index, dictionary names, training mentions) are stamped with the
fingerprint of the weights that made them and are current while it matches. Hashing the
weights is costly, so the fingerprint is recomputed only when the weights version moves:
every place that changes weights (an update, loading, swapping in parameter averages) bumps
it, and nothing else needs to know that caches exist.
"""
from contextlib import contextmanager
from typing import Callable, Dict, Iterator, Optional, Protocol, Sequence, Tuple

import numpy as np
from thinc.api import Model

from ..torch_model import get_module, is_built
from ..util import ArboError
from .batching import encode_by_length
from .dual import DualEncoder
from .precision import resolve_precision
from .templates import EntityInput, MentionInput, entity_length
from .vector_cache import VectorCache


class EncoderSettings(Protocol):
    """The settings an encoder reads (`LinkerSettings` has them)."""

    uses_dense: bool
    precision: str
    batch_size: int


def mention_length(mention: MentionInput) -> int:
    """What mentions are grouped into batches by."""
    return len(mention.left) + len(mention.mention) + len(mention.right)


class LinkerEncoder:
    """Encodes mentions and entity texts with a pipe's thinc dual-encoder model."""

    def __init__(self, model: Model, name: str, settings: Callable[[], EncoderSettings]) -> None:
        self.model = model
        self.name = name
        # The pipe's settings are replaced, not mutated, by `configure`: read them each time.
        self._settings = settings
        self.version = 0
        self._fingerprints: Dict[bool, Tuple[int, str]] = {}
        # Mention vectors kept across passes, inside `reusing_mention_vectors` only.
        self._mention_vectors: Optional[Dict[MentionInput, np.ndarray]] = None

    def weights_changed(self) -> None:
        """Call after anything that may change the weights: vectors made before are checked
        against a new fingerprint when next used."""
        self.version += 1

    def module(self) -> DualEncoder:
        """The torch module at the configured precision; a pipe without one (TF-IDF
        candidates) builds the configured, untrained encoder when switched to dense ones."""
        settings = self._settings()
        if not is_built(self.model):
            if not settings.uses_dense:
                raise ArboError(
                    f"'{self.name}' takes its candidates from TF-IDF (candidate_source = 'tfidf') and "
                    "has no dual encoder to train or encode with: use candidate_source 'dense' or 'hybrid'.")
            self.model.initialize()
            self.weights_changed()
        module = get_module(self.model)
        module.set_precision(resolve_precision(settings.precision, module.device))
        return module

    def fingerprint(self, entities_only: bool = False) -> str:
        """The fingerprint of the current weights (with `entities_only`, of those entity
        vectors depend on), hashed once per weights version."""
        cached = self._fingerprints.get(entities_only)
        if cached is None or cached[0] != self.version:
            cached = self._fingerprints[entities_only] = (self.version, self.module().fingerprint(entities_only))
        return cached[1]

    @property
    def dim(self) -> int:
        return self.module().dim

    def encode_mentions(self, mentions: Sequence[MentionInput], progress: bool = False) -> np.ndarray:
        """One vector per mention; a mention read twice (same text, context and long form) in
        one call, or inside `reusing_mention_vectors` in any call, is encoded once."""
        kept = {} if self._mention_vectors is None else self._mention_vectors
        unseen = [m for m in dict.fromkeys(mentions) if m not in kept]
        vectors = encode_by_length(
            unseen, lambda batch: self.model.ops.to_numpy(self.model.predict((batch, []))[0]), mention_length,
            self.dim, self._settings().batch_size, progress=progress, desc=f"{self.name}: encoding mentions")
        kept.update(zip(unseen, vectors))
        return np.stack([kept[m] for m in mentions]) if mentions else vectors

    @contextmanager
    def reusing_mention_vectors(self) -> Iterator[None]:
        """Within the block a mention read again (same text, context and long form) is not
        encoded again: for passes over the same docs that differ only after the encoder. The
        weights must not change inside. A block inside another keeps the outer one's vectors."""
        outer = self._mention_vectors
        self._mention_vectors = {} if outer is None else outer
        try:
            yield
        finally:
            self._mention_vectors = outer

    def encode_entities(self, entities: Sequence[EntityInput], progress: bool = False,
                        cache: Optional[VectorCache] = None) -> np.ndarray:
        """One vector per entity text; with `cache`, read from it where these weights, settings
        and texts were encoded before (in any process)."""
        def encode(texts: Sequence[EntityInput]) -> np.ndarray:
            return encode_by_length(
                texts, lambda batch: self.model.ops.to_numpy(self.model.predict(([], batch))[1]), entity_length,
                self.dim, self._settings().batch_size, progress=progress, desc=f"{self.name}: encoding entities")

        return encode(entities) if cache is None else cache.encode(self.vectors_key(), entities, encode)

    def vectors_key(self) -> str:
        """What entity vectors depend on besides their texts: the entity-side weights, the
        precision and the batch size (batches pad texts together) they are encoded at."""
        module, settings = self.module(), self._settings()
        precision = resolve_precision(settings.precision, module.device)
        return f"{self.fingerprint(entities_only=True)}:{precision}:{settings.batch_size}:{self.dim}"
