"""The NIL mentions of annotated files (what `link` wrote, or any file `link` reads whose mentions
carry ids), read in their documents' context and encoded by the linker that links their label, as
the mentions of a `link` run were: the same tokenizer, the same mention reader and encoder."""
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from spacy.language import Language
from spacy.tokens import Span
from tqdm import tqdm

from ..annotation.input_mentions import UNLABELLED
from ..annotation.records import Record
from ..corpora.gold_mention import parse_gold_ids
from ..kb.entities import NIL
from ..kb.store import BaseEntityStore
from ..pipeline.arbo_linker import ArboLinker, arbo_linkers
from ..pipeline.linker.exact_names import WORDLESS
from ..util import ArboError

# Characters of text shown on each side of a mention in a proposal's contexts.
CONTEXT_CHARS = 80
# Mentions encoded per encoder call (each batch holds its docs until it is encoded).
ENCODE_BATCH = 256
# How many linked mentions with ids the KB lacks (outnumbering those with its ids) show a file linked with another KB.
FOREIGN_EVIDENCE = 10


@dataclass(frozen=True)
class NilMention:
    """A mention left NIL: where it is (document id, character offsets), what it says, and the
    text around it (`left`, `right`) that a curator reads it in."""

    doc: str
    start: int
    end: int
    text: str
    label: str
    left: str
    right: str

    def location(self) -> Dict[str, object]:
        return {"doc": self.doc, "start": self.start, "end": self.end, "text": self.text}


def is_nil(mention: Dict[str, object]) -> bool:
    """A mention `link` left NIL (below --min-confidence too): NIL, or PubTator's -1 (of each part).
    A mention without an id was not linked at all, so it is not NIL."""
    kb_id = str(mention.get("kb_id") or "")
    return bool(kb_id.strip()) and all(part == NIL for part in parse_gold_ids(kb_id))


@dataclass
class ForeignIds:
    """The linked mentions of the records and how many of them carry an id their linker's KB lacks
    (`foreign`; `first`: where the first was), which the mentions of a file linked with this
    pipeline never do."""

    linked: int = 0
    foreign: int = 0
    first: str = ""

    def check(self, record: Record, mention: Dict[str, object], kb: BaseEntityStore) -> None:
        """Count the linked `mention`; a file whose ids are mostly not the KB's is an error, since the NIL
        mentions it holds are another KB's."""
        self.linked += 1
        if all(part == NIL or kb.resolve(part) is not None for part in parse_gold_ids(str(mention["kb_id"]))):
            return
        self.foreign += 1
        self.first = self.first or f"{record.where}: '{mention.get('text', '')}' -> {mention['kb_id']}"
        if self.foreign >= FOREIGN_EVIDENCE and 2 * self.foreign > self.linked:
            self.refuse()

    def refuse(self) -> None:
        """Stop before encoding more: NIL mentions of another KB would be proposed as this one's new entities."""
        raise ArboError(f"{self.foreign:,} of the {self.linked:,} linked mentions read carry ids the pipeline's KB "
                        f"lacks ({self.first}): the input was linked with another KB, so its NIL mentions are that "
                        "KB's. Discover with the pipeline that linked it, or link the input again with this one.")

    def line(self) -> str:
        """The summary line's note of a few foreign ids (a gold file's ids of another vocabulary)."""
        return "" if not self.foreign else \
            f"; {self.foreign:,} of {self.linked:,} linked mentions carry ids the KB lacks (first: {self.first})"


@dataclass
class NilMentions:
    """Per linker name: its NIL mentions (the records' mentions with a NIL id and a label it links)
    and their vectors, in reading order; `unlinked_labels`: how many NIL mentions have a label no
    linker links (a recognizer's other types, which `link` writes NIL), left out; `foreign_ids`: the
    linked mentions whose ids the KB lacks."""

    encoded: Dict[str, Tuple[List["NilMention"], np.ndarray]]
    unlinked_labels: Counter
    foreign_ids: ForeignIds


def nil_mentions(nlp: Language, records: Iterable[Record], progress: bool = True) -> NilMentions:
    """The NIL mentions of `records`, each encoded by the last linker that links its label."""
    linkers = arbo_linkers(nlp)
    if not linkers:
        raise ArboError(f"discover encodes mentions with an arbo_linker; the pipeline has none "
                        f"(its components: {', '.join(nlp.pipe_names) or 'none'}).")
    unlinked: Counter = Counter()
    pending: Dict[str, List[Tuple[NilMention, Span]]] = {linker.name: [] for linker in linkers}
    found: Dict[str, Tuple[List[NilMention], List[np.ndarray]]] = {linker.name: ([], []) for linker in linkers}
    by_name = {linker.name: linker for linker in linkers}
    foreign = ForeignIds()
    bar = tqdm(desc="encoding NIL mentions", unit=" mentions", disable=not progress)
    with ExitStack() as reusing:  # a mention read alike anywhere in the corpus is encoded once, to one vector
        for linker in linkers:
            reusing.enter_context(linker.reusing_mention_vectors())
        for record in records:
            for mention in record.gold:
                owner = _owner(linkers, str(mention.get("label") or UNLABELLED))
                kb = by_name[owner].kb if owner is not None else None
                if kb is not None and str(mention.get("kb_id") or "").strip() and not is_nil(mention):
                    foreign.check(record, mention, kb)
            mentions = [m for m in record.gold if is_nil(m)]
            if not mentions:
                continue
            doc = nlp.make_doc(record.text)
            for mention in mentions:
                span = doc.char_span(mention["start"], mention["end"], label=mention["label"] or UNLABELLED,
                                     alignment_mode="expand")
                if span is None or WORDLESS.match(span.text):
                    continue  # no word character: the linker links none, nor does discovery read one
                owner = _owner(linkers, span.label_)
                if owner is None:
                    unlinked[span.label_] += 1
                    continue
                pending[owner].append((_nil_mention(record, mention), span))
                if len(pending[owner]) >= ENCODE_BATCH:
                    bar.update(_encode(by_name[owner], pending[owner], found[owner]))
        for name, batch in pending.items():
            bar.update(_encode(by_name[name], batch, found[name]))
    bar.close()
    return NilMentions({name: (mentions, np.vstack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32))
                        for name, (mentions, vectors) in found.items()}, unlinked, foreign)


def _check_encodes_alone(linker: ArboLinker) -> None:
    """Discovery reads mentions in a tokenized text alone; a linker whose mention encoder reads
    the sentence's parse (knowledge units on mentions) would need the whole pipeline."""
    if linker.read_mentions.reads_sentences:
        raise ArboError(f"{linker.name} reads each mention's sentence as knowledge units, which discover does not "
                        "parse; discover with a linker whose mentions are read as text (graph_sides without "
                        "'mentions').")
    if not linker.settings.uses_dense:
        raise ArboError(f"{linker.name} has no mention vectors (candidate_source "
                        f"'{linker.settings.candidate_source}'): discover clusters mention vectors; use a dense or "
                        "hybrid linker.")


def _owner(linkers: Sequence[ArboLinker], label: str) -> Optional[str]:
    """The last linker that links `label` (as `link` wrote its id), None when none does."""
    owners = [linker.name for linker in linkers if linker.settings.links_label(label)]
    return owners[-1] if owners else None


def _nil_mention(record: Record, mention: Dict[str, object]) -> NilMention:
    start, end, text = int(mention["start"]), int(mention["end"]), record.text
    return NilMention(record.id, start, end, text[start:end], str(mention["label"] or ""),
                      " ".join(text[max(0, start - CONTEXT_CHARS):start].split()),
                      " ".join(text[end:end + CONTEXT_CHARS].split()))


def _encode(linker: ArboLinker, batch: List[Tuple[NilMention, Span]],
            found: Tuple[List[NilMention], List[np.ndarray]]) -> int:
    if not batch:
        return 0
    _check_encodes_alone(linker)
    linker.ensure_fresh()
    vectors = linker.encode_mentions(linker.mention_inputs([span for _, span in batch]))
    found[0].extend(mention for mention, _ in batch)
    found[1].append(np.asarray(vectors, dtype=np.float32))
    count = len(batch)
    batch.clear()
    return count
