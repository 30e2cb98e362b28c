"""What `arbo_linker` is configured with: its settings, and the model it gets by default.
Light (no spaCy, torch or FAISS), so that the command line lists the settings `--set` takes."""
import dataclasses
from dataclasses import dataclass, field
from typing import List, Optional

import srsly
from confection import Config

from ...component_settings import check_at_least, check_choice
from ...encoders.precision_names import PRECISIONS
from ...linking.graph_kinds import GRAPHS
from ...retrieval.retrieval_settings import RetrievalSettings
from ...util import ArboError

LINKINGS = ("independent", "clustering")
# Settings that change no candidate's score (an induced variant swaps places with its entity, scores kept).
UNSCORED = {"threshold", "kb_ents_threshold", "max_entities_per_mention", "labels", "labels_discard", "overwrite",
            "use_gold_ents", "refresh_every", "alias_pairs_per_batch", "batch_size", "use_gpu_index", "precision",
            "confidence", "induced_variants"}
SCOPES = ("batch", "doc")
# How a coordinated mention ("breast and ovarian cancer") is linked: as one mention, split
# into its parts whenever they name different entities, or split only when the parts'
# retrieval scores average at least the whole mention's.
COMPOSITES = ("whole", "split", "best")

# The offline MiniLM as one tower shared by mentions and entities.
DEFAULT_MODEL = Config().from_str(
    """
[model]
@architectures = "spacy_arbo.DualEncoder.v1"
similarity = "cosine"
scale = 20.0
learn_scale = true

[model.mention_tower]
@architectures = "spacy_arbo.TransformerTower.v1"
pooling = "mean"
max_length = 64
use_markers = false

[model.mention_tower.name]
@misc = "spacy_arbo.default_encoder_path.v1"
"""
)["model"]


@dataclass(frozen=True)
class LinkerSettings(RetrievalSettings):
    """The retrieval settings plus how links are decided, read and trained. spaCy's names
    where they mean the same: `threshold` (NIL below it), `labels_discard`, `overwrite`,
    `use_gold_ents`."""

    threshold: Optional[float] = None
    kb_ents_threshold: Optional[float] = None
    max_entities_per_mention: int = 5
    # The entity labels this linker links (empty: all), so each type of a pipeline goes to its own KB.
    labels: List[str] = field(default_factory=list)
    labels_discard: List[str] = field(default_factory=list)
    overwrite: bool = True
    use_gold_ents: bool = True
    context_chars: int = 0
    use_long_form: bool = True
    composites: str = "best"
    linking: str = "independent"
    graph: str = "directed"
    knn_mentions: int = 8
    min_similarity: Optional[float] = None
    clustering_scope: str = "batch"
    transductive: bool = False
    memory_first: bool = True
    kb_names_first: bool = True
    # A disease the doc says a substance induced links to the KB's drug-induced entity of it (`induced_variants`).
    induced_variants: bool = True
    # `span._.kb_confidence`, calibrated on the KB's own names (`link_confidence`).
    confidence: bool = True
    refresh_every: int = 200
    alias_pairs_per_batch: int = 0
    precision: str = "auto"
    seed: int = 0

    def scoring_key(self) -> str:
        """The settings that change how links score (what a confidence calibration depends on)."""
        return srsly.json_dumps({k: v for k, v in dataclasses.asdict(self).items() if k not in UNSCORED})

    def links_label(self, label: str) -> bool:
        return label not in self.labels_discard and (not self.labels or label in self.labels)

    @property
    def name_label(self) -> str:
        """A label this linker links: the label-free confidence labels the KB names it links so
        (a linker of Chemical mentions left names labelled otherwise unlinked, all "wrong")."""
        linked = [label for label in (*self.labels, "ENTITY") if self.links_label(label)]
        return linked[0] if linked else "_".join(["ENTITY", *self.labels_discard])

    @property
    def names_first(self) -> bool:
        """Mentions written as an unambiguous KB name are linked before encoding."""
        return self.kb_names_first and self.linking == "independent"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("linking", self.linking, LINKINGS)
        check_choice("composites", self.composites, COMPOSITES)
        check_choice("graph", self.graph, GRAPHS)
        check_choice("clustering_scope", self.clustering_scope, SCOPES)
        check_choice("precision", self.precision, PRECISIONS)
        check_at_least(1, refresh_every=self.refresh_every, max_entities_per_mention=self.max_entities_per_mention)
        check_at_least(0, knn_mentions=self.knn_mentions, context_chars=self.context_chars,
                       alias_pairs_per_batch=self.alias_pairs_per_batch)
        if self.linking == "clustering" and not self.uses_dense:
            raise ArboError("linking = 'clustering' needs mention vectors: use candidate_source 'dense' or 'hybrid'.")
        object.__setattr__(self, "labels", list(self.labels))
        object.__setattr__(self, "labels_discard", list(self.labels_discard))
        if set(self.labels) & set(self.labels_discard):
            raise ArboError(f"labels and labels_discard share {sorted(set(self.labels) & set(self.labels_discard))}: "
                            "a label is either linked or discarded.")
