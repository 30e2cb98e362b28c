"""How candidates are generated (`RetrievalSettings`), apart from the retriever (FAISS, spaCy):
the linker's settings build on these, and the command line lists them without importing either."""
import hashlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import srsly

from ..component_settings import check_at_least, check_choice, check_types
from ..encoders.templates import ENTITY_FIELDS
from ..util import ArboError

CANDIDATE_SOURCES = ("dense", "tfidf", "hybrid")
# Settings that change what the entity tower encodes, hence the index.
ENTITY_TEXT_SETTINGS = ("entity_fields", "max_aliases", "index_aliases")


@dataclass(frozen=True)
class RetrievalSettings:
    """How candidates are generated. `index` holds `FaissIndex.build` options
    (`kind`: auto, flat, hnsw, ivfpq, ivfsq); `index_aliases` gives every KB alias its own vector."""

    candidate_source: str = "hybrid"
    top_k: int = 16
    entity_fields: List[str] = field(default_factory=list)
    max_aliases: int = 8
    index: Dict[str, Any] = field(default_factory=lambda: {"kind": "auto"})
    index_aliases: bool = True
    batch_size: int = 64
    use_gpu_index: Optional[bool] = None
    # Added to the scores of dictionary names (`EntityRetriever.set_dictionary`): above 0
    # they win over KB names, below 0 they only break ties.
    dictionary_offset: float = 0.0
    # "hybrid" fusion: null for reciprocal rank fusion, else dense score + this x TF-IDF score.
    sparse_weight: Optional[float] = 0.5

    def __post_init__(self) -> None:
        check_types(self)
        check_choice("candidate_source", self.candidate_source, CANDIDATE_SOURCES)
        check_at_least(1, top_k=self.top_k, batch_size=self.batch_size)
        check_at_least(0, max_aliases=self.max_aliases)
        unknown = [f for f in self.entity_fields if f not in ENTITY_FIELDS]
        if unknown:
            raise ArboError(f"Unknown entity_fields {unknown}; expected a subset of {ENTITY_FIELDS}.")
        # Owned copies: the config's lists and dicts stay the caller's.
        object.__setattr__(self, "entity_fields", list(self.entity_fields))
        object.__setattr__(self, "index", dict(self.index))

    @property
    def uses_dense(self) -> bool:
        return self.candidate_source != "tfidf"

    @property
    def uses_tfidf(self) -> bool:
        return self.candidate_source != "dense"

    def texts_key(self) -> str:
        texts = srsly.json_dumps([getattr(self, k) for k in ENTITY_TEXT_SETTINGS])
        return hashlib.sha1(texts.encode("utf8")).hexdigest()[:8]
