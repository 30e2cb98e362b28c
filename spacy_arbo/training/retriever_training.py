"""What an `arbo_linker` update needs besides the loss: the gold (mention, entity) pairs of a
batch, the corpus's training mentions (ArboEL's graph nodes, the transductive anchors), and
the cadence at which negatives are mined afresh.

Mined negatives come from the entity index and the training-mention vectors as they were
at the last refresh: re-encoding after every step would cost more than the step.
"""
import logging
from typing import Callable, Iterable, List, Optional, Sequence

import numpy as np
import torch
from spacy.tokens import Doc, Span
from spacy.training import Example

from ..encoders.linker_encoder import LinkerEncoder
from ..encoders.templates import MentionInput
from ..kb.entities import NIL
from ..retrieval.retriever import EntityRetriever
from ..util import ArboError
from .mentions import TrainingBatch, TrainingMentions, gold_row, mention_key
from .objectives import Objective, TrainingState

logger = logging.getLogger("spacy_arbo")

ReadMentions = Callable[[Sequence[Span]], List[MentionInput]]


def check_trainable_ids(unknown: Sequence[str], total: int) -> None:
    """Gold ids the KB lacks train nothing: none known is an error (another KB, or ids
    written another way), some unknown a warning, so that neither goes unnoticed. Laxer than
    `gold_corpus.check_gold_ids` (scoring): any mention with a known id is worth training on."""
    if not unknown:
        return
    examples = ", ".join(repr(kb_id) for kb_id in sorted(set(unknown))[:3])
    if len(unknown) == total:
        raise ArboError(f"None of the {total:,} gold mentions of the training data has an id the KB holds "
                        f"(e.g. {examples}): was the corpus converted against this KB (`convert --kb`)?")
    logger.warning("%d of %d gold mentions of the training data have ids the KB lacks (e.g. %s); "
                   "they are not trained on.", len(unknown), total, examples)


class RetrieverTraining:
    """The training state of one linker: its objective, training mentions, update count and
    seeded generator (for sampled alias pairs and random negatives)."""

    def __init__(self, objective: Optional[Objective], seed: int) -> None:
        self.objective = objective
        self.corpus = TrainingMentions()
        self.updates = 0
        # The update count the training mentions' vectors were last encoded at.
        self.corpus_encoded_at: Optional[int] = None
        self.rng = np.random.default_rng(seed)

    def warn_of_limits(self, name: str) -> None:
        """Say where the objective is known to fall short, before training with it."""
        limits = self.objective.measured_limits() if self.objective is not None else None
        if limits:
            logger.warning("%s: %s", name, limits)

    def collect_mentions(self, docs: Iterable[Doc], retriever: EntityRetriever, read: ReadMentions) -> None:
        """Keep the gold mentions of `docs` whose entity the KB has."""
        kb = retriever.kb
        gold = [(ent, gold_row(kb, ent.kb_id_)) for doc in docs for ent in doc.ents if ent.kb_id_ not in ("", NIL)]
        linked = [(ent, row) for ent, row in gold if row is not None]
        check_trainable_ids([ent.kb_id_ for ent, row in gold if row is None], len(gold))
        # One call, so each doc's abbreviations are found once rather than once per mention.
        inputs = read([ent for ent, _ in linked])
        self.corpus = TrainingMentions.collect((ent, mention, row) for (ent, row), mention in zip(linked, inputs))
        self.corpus_encoded_at = None

    def encode_mentions(self, encoder: LinkerEncoder) -> None:
        """Re-encode the training mentions with the current weights."""
        if len(self.corpus):
            self.corpus.vectors = encoder.encode_mentions(self.corpus.mentions, progress=True)
            self.corpus.vectors_fingerprint = encoder.fingerprint()
            self.corpus_encoded_at = self.updates

    def current_mentions(self, encoder: LinkerEncoder) -> TrainingMentions:
        """The training mentions with vectors of the current weights."""
        if self.corpus.vectors is None or self.corpus.vectors_fingerprint != encoder.fingerprint():
            self.encode_mentions(encoder)
        return self.corpus

    def anchors(self, encoder: LinkerEncoder, name: str) -> TrainingMentions:
        """The training mentions that transductive clustering links through."""
        if not len(self.corpus):
            raise ArboError(
                f"'{name}': transductive clustering needs the training mentions. Train or initialize "
                "the pipeline with transductive = true, or call set_training_mentions(docs) "
                "(CLI: evaluate --anchors-from TRAIN.spacy).")
        return self.current_mentions(encoder)

    def batch(self, examples: Iterable[Example], spans: Callable[[Doc], List[Span]], retriever: EntityRetriever,
              read: ReadMentions, n_aliases: int) -> TrainingBatch:
        """Gold (mention, entity) pairs of the examples, plus `n_aliases` sampled KB aliases."""
        linked, rows = [], []
        for eg in examples:
            gold_by_offset = {(e.start_char, e.end_char): e for e in eg.reference.ents}
            for span in spans(eg.predicted):
                gold = gold_by_offset.get((span.start_char, span.end_char))
                row = gold_row(retriever.kb, gold.kb_id_) if gold is not None else None
                if row is not None:
                    linked.append(span)
                    rows.append(row)
        mentions = read(linked)
        corpus_ids = [self.corpus.keys.get(mention_key(s), -1) for s in linked]
        if n_aliases:
            pairs = retriever.alias_pairs()
            for i in self.rng.choice(len(pairs), size=min(n_aliases, len(pairs)), replace=False):
                mentions.append(MentionInput("", pairs[i][0], ""))
                rows.append(pairs[i][1])
                corpus_ids.append(-1)
        return TrainingBatch(mentions, np.asarray(rows, dtype=np.int64), np.asarray(corpus_ids, dtype=np.int64))

    def loss(self, batch: TrainingBatch, encoder: LinkerEncoder, retriever: EntityRetriever,
             refresh_every: int) -> torch.Tensor:
        """The objective's loss on `batch`, with gradients; every `refresh_every` updates the
        index and training-mention vectors it mines from are made current first."""
        objective = self.objective
        if self.updates % refresh_every == 0:
            if objective.uses_index:
                retriever.ensure_fresh(encoder)
            if objective.uses_corpus_vectors:
                self.encode_mentions(encoder)
        if objective.entity_cache != "none" and retriever.entity_vectors is None:
            # e.g. a prebuilt or loaded index: no vectors of its own yet
            retriever.ensure_fresh(encoder, force=True)
        loss = objective(TrainingState(encoder.module(), retriever, self.corpus, self.rng), batch)
        self.updates += 1
        return loss
