"""The gold corpus a command scores or tunes a pipeline on, read and checked against it.

Scores over a corpus without a gold link, or whose gold ids the pipeline's KB does not hold
(a corpus converted against another KB, or without `--kb`), are zeros that read as results,
and every setting a tuner tries ties at them. Both are named before any linking.
"""
import warnings
from dataclasses import dataclass
from typing import Callable, Iterable, List, Optional, Tuple

from spacy.language import Language
from spacy.tokens import Doc

from .corpora import read_docbin
from .kb.entities import NIL, split_ids
from .kb.store import BaseEntityStore
from .pipeline.common.kb_versions import kb_holders, label_kb, several_kbs
from .util import ArboError, ArboWarning, PathLike

# Under this share of its distinct gold ids in the KB, a corpus is taken to be of another KB:
# an error. At or above it, ids the KB lacks are a warning (their mentions can only be wrong).
KNOWN_ID_FLOOR = 0.5
EXAMPLES = 3


@dataclass(frozen=True)
class GoldIdAgreement:
    """How many distinct gold ids of a corpus a KB holds, and a few of those it does not."""

    known: int
    total: int
    unknown_examples: Tuple[str, ...]
    unknown_mentions: int

    @property
    def share(self) -> float:
        return self.known / self.total if self.total else 1.0

    def describe(self, owner: str) -> str:
        return (f"{self.known:,} of its {self.total:,} gold ids ({self.share:.0%}) are in {owner}'s KB; "
                f"{self.total - self.known:,} missing (e.g. {', '.join(self.unknown_examples)}), "
                f"on {self.unknown_mentions:,} mentions")


def gold_id_agreement(docs: Iterable[Doc], kb_of: Callable[[str], Optional[BaseEntityStore]]) -> GoldIdAgreement:
    """The distinct parts of the gold ids of `docs` (NIL aside) that the KB of their label
    (`kb_of`; None: a label no component links) resolves."""
    known, unknown, unknown_mentions = set(), set(), 0
    for doc in docs:
        for ent in doc.ents:
            kb = kb_of(ent.label_)
            if kb is None:
                continue
            parts = [part for part in split_ids(ent.kb_id_) if part != NIL]
            missing = {part for part in parts if kb.resolve(part) is None}  # alt ids count, as in training
            known.update(set(parts) - missing)
            unknown.update(missing)
            unknown_mentions += bool(missing)
    return GoldIdAgreement(len(known), len(known) + len(unknown), tuple(sorted(unknown)[:EXAMPLES]), unknown_mentions)


def check_gold_ids(docs: List[Doc], nlp: Language, corpus: PathLike) -> None:
    """An error when under `KNOWN_ID_FLOOR` of the corpus's gold ids are in the KB the pipeline
    links to, a warning (`ArboWarning`) when some are not."""
    holders = kb_holders(nlp)
    if not holders:
        return
    name = ", ".join(dict.fromkeys(owner for owner, _ in holders)) if several_kbs(nlp) else holders[-1][0]
    agreement = gold_id_agreement(docs, lambda label: (label_kb(nlp, label) or (None, None))[1])
    if agreement.known == agreement.total:
        return
    message = f"{corpus}: {agreement.describe(name)}"
    if agreement.share < KNOWN_ID_FLOOR:
        raise ArboError(f"{message}: the corpus is of another KB; convert it against this one "
                        "(convert --kb KB_DIR, which spells its ids as the KB does and the others NIL).")
    warnings.warn(f"{message}: those mentions cannot be linked right.", ArboWarning, stacklevel=2)


def read_gold_links(path: PathLike, nlp: Language) -> List[Doc]:
    """The gold corpus at `path`, which must have gold links, their ids those of the pipeline's
    KB (`check_gold_ids`)."""
    docs = read_docbin(path, nlp.vocab)
    if not any(ent.kb_id_ for doc in docs for ent in doc.ents):
        what = "no documents" if not docs else "no gold mentions" if not any(doc.ents for doc in docs) \
            else "no gold mention with a kb id"
        raise ArboError(f"{path} has {what}: nothing to score links on (convert a gold corpus with `convert`).")
    check_gold_ids(docs, nlp, path)
    return docs
