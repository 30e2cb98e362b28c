"""KB names that name one entity only. With `kb_names_first`, a mention written exactly as one
(case and punctuation aside, as the link memory compares texts; an abbreviation read as the long
form its doc defines, as the encoder reads it) is linked to that entity before anything is
encoded, as the link memory links the texts it remembers: most mentions of a corpus spell a KB
name, and encoding them only to find that name again is most of a linker's time. Short forms are
read spelt out because as written they name whatever the KB's aliases say ("AS" is Angelman
syndrome there), not what the doc means.

Two kinds of mention are left to the linker: all of them when a component after it reads their
candidates (a reranker: a mention answered by name has one), and the proposals of a
`kb_mention_finder` before it, which spell a KB name by construction and which only the linker's
score (NIL below its threshold) can drop."""
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from spacy.language import Language
from spacy.tokens import Span

from ..encoders.templates import MentionInput
from ..retrieval.retriever import EntityRetriever
from .kb_mention_finder import KBMentionFinder
from .link_decisions import Link
from .link_memory import memory_key, remembered_candidates
from .links import CANDIDATES
from .neighbours import neighbours


class ExactNames:
    """Normalised KB name -> the one entity id it names (names of two entities or more left
    out), rebuilt when the retriever's list of names is another one (a KB update)."""

    def __init__(self) -> None:
        self._source: Optional[List[Tuple[str, int]]] = None
        self._ids: Dict[str, str] = {}

    def ids(self, retriever: EntityRetriever) -> Dict[str, str]:
        alias_pairs, kb = retriever.alias_pairs(), retriever.kb
        if alias_pairs is not self._source:
            owners: Dict[str, set] = {}
            for text, row in alias_pairs:
                owners.setdefault(memory_key(text), set()).add(kb.ids[row])
            self._ids = {key: next(iter(ids)) for key, ids in owners.items() if key and len(ids) == 1}
            self._source = alias_pairs
        return self._ids

    def links(self, linker: Any, spans: Sequence[Span], mentions: Sequence[MentionInput]) -> List[Optional[Link]]:
        """For each span (read as `mentions`), the link to the one entity it names, its one
        candidate scored 1.0; None where the linker must decide."""
        if candidates_read_after(linker.nlp, linker):
            return [None] * len(spans)
        names = self.ids(linker.require_retriever())
        proposed = proposals_before(linker.nlp, linker, spans)
        found = [None if (id(span.doc), span.start, span.end) in proposed else names.get(memory_key(mention.mention))
                 for span, mention in zip(spans, mentions)]
        return [None if kb_id is None else Link(remembered_candidates(kb_id, 1.0), kb_id) for kb_id in found]

    def answer(self, linker: Any, spans: Sequence[Span], linkable: List[int], mentions: List[MentionInput],
               links: List[Any]) -> Tuple[List[int], List[MentionInput]]:
        """With `kb_names_first`, write into `links` (one per span) the links of the `linkable`
        spans (read as `mentions`) that name one entity; the spans and mentions left to the linker."""
        if not linker.settings.names_first:
            return linkable, mentions
        named = self.links(linker, [spans[i] for i in linkable], mentions)
        for i, link in zip(linkable, named):
            links[i] = link or links[i]
        left = [j for j, link in enumerate(named) if link is None]
        return [linkable[j] for j in left], [mentions[j] for j in left]


def candidates_read_after(nlp: Optional[Language], component: object) -> bool:
    """Whether a component after `component` in `nlp` reads `span._.kb_candidates`."""
    return any(CANDIDATES in nlp.get_pipe_meta(name).requires for name, _ in neighbours(nlp, component)[1])


def proposals_before(nlp: Optional[Language], component: object, spans: Sequence[Span]) -> Set[Tuple[int, int, int]]:
    """(doc id, start, end) of the spans' docs' proposals by `kb_mention_finder`s before `component`."""
    keys = [proc.cfg["spans_key"] for _, proc in neighbours(nlp, component)[0] if isinstance(proc, KBMentionFinder)]
    docs = {id(span.doc): span.doc for span in spans}
    return {(doc_id, proposal.start, proposal.end) for doc_id, doc in docs.items() for key in keys
            if key in doc.spans for proposal in doc.spans[key]}
