"""Entity discovery: clusters of mentions whose entity the KB lacks, proposed as new KB entries
(ArboEL, Agarwal et al. 2022, section 3.5)."""
from .corpus_discovery import discover_corpus
from .gold_discovery import (
    DISCOVERY_MIN_SIMILARITY, check_clustered, check_corpus, clustering_linkers, discover_entities, discovery_notes,
)
from .nil_mentions import NilMention, nil_mentions
from .proposal_page import proposal_page, write_proposal_page
from .proposals import (
    DEFAULT_MIN_ENTITY_SIMILARITY, DEFAULT_MIN_SIMILARITY, Discovery, Proposal, propose_entities, suggested_parent,
    write_proposals,
)

__all__ = [
    "DEFAULT_MIN_ENTITY_SIMILARITY", "DEFAULT_MIN_SIMILARITY", "DISCOVERY_MIN_SIMILARITY", "Discovery", "NilMention",
    "Proposal", "check_clustered", "check_corpus",
    "clustering_linkers", "discover_corpus", "discover_entities", "discovery_notes", "nil_mentions",
    "propose_entities", "proposal_page", "suggested_parent", "write_proposal_page", "write_proposals",
]
