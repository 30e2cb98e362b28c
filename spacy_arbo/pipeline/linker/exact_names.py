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
score (NIL below its threshold) can drop.

`known_links` decides what the linker knows before encoding: the memory's links first, then the names."""
import re
from typing import Callable, Dict, List, Optional, Protocol, Sequence, Set, Tuple

from spacy.language import Language
from spacy.tokens import Span

from ...encoders.templates import MentionInput
from ...kb.entities import NIL
from ...retrieval.retriever import EntityRetriever
from ..common.links import CANDIDATES
from ..common.neighbours import neighbours
from ..kb_mention_finder import KBMentionFinder
from ..link_memory import memories_after, memory_key, remembered_candidates
from .link_decisions import Link, remembered_links

# Where a span is: (id of its doc, start, end).
SpanKey = Tuple[int, int, int]
# A mention without a single word character ("  ", "--") names nothing: it is not linked.
WORDLESS = re.compile(r"^\W*$")


class KnownLinkSettings(Protocol):
    """The settings `known_links` reads (`LinkerSettings` has them)."""

    linking: str
    memory_first: bool

    @property
    def names_first(self) -> bool: ...


class ExactNames:
    """Normalised KB name -> the one entity id it names (names of two entities or more left
    out), of the KB of `retriever` (the linker's), rebuilt when its list of names is another one
    (a KB update)."""

    def __init__(self, retriever: Callable[[], EntityRetriever]) -> None:
        self._retriever = retriever
        self._source: Optional[List[Tuple[str, int]]] = None
        self._ids: Dict[str, str] = {}

    def kb_names(self) -> Dict[str, str]:
        retriever = self._retriever()
        alias_pairs, kb = retriever.alias_pairs(), retriever.kb
        if alias_pairs is not self._source:
            owners: Dict[str, set] = {}
            for text, row in alias_pairs:
                owners.setdefault(memory_key(text), set()).add(kb.ids[row])
            self._ids = {key: next(iter(ids)) for key, ids in owners.items() if key and len(ids) == 1}
            self._source = alias_pairs
        return self._ids

    def links(self, spans: Sequence[Span], mentions: Sequence[MentionInput],
              left: Set[SpanKey]) -> List[Optional[Link]]:
        """For each span (read as `mentions`), the link to the one entity it names, its one
        candidate scored 1.0; None where the linker must decide (the spans `left` to it)."""
        names = self.kb_names()
        found = [None if (id(span.doc), span.start, span.end) in left else names.get(memory_key(mention.mention))
                 for span, mention in zip(spans, mentions)]
        return [None if kb_id is None else Link(remembered_candidates(kb_id, 1.0), kb_id) for kb_id in found]

    def answer(self, nlp: Optional[Language], component: object, spans: Sequence[Span], linkable: List[int],
               mentions: List[MentionInput], links: List[Link]) -> Tuple[List[int], List[MentionInput]]:
        """Write into `links` (one per span) the links of the `linkable` spans (read as
        `mentions`) that name one entity, unless `component` (the linker) leaves all of them to
        itself in `nlp`; the spans and mentions left to it."""
        if candidates_read_after(nlp, component):
            return linkable, mentions
        chosen = [spans[i] for i in linkable]
        named = self.links(chosen, mentions, proposals_before(nlp, component, chosen))
        for i, link in zip(linkable, named):
            links[i] = link or links[i]
        left = [j for j, link in enumerate(named) if link is None]
        return [linkable[j] for j in left], [mentions[j] for j in left]


def candidates_read_after(nlp: Optional[Language], component: object) -> bool:
    """Whether a component after `component` in `nlp` reads `span._.kb_candidates`."""
    return any(CANDIDATES in nlp.get_pipe_meta(name).requires for name, _ in neighbours(nlp, component)[1])


def proposals_before(nlp: Optional[Language], component: object, spans: Sequence[Span]) -> Set[SpanKey]:
    """(doc id, start, end) of the spans' docs' proposals by `kb_mention_finder`s before `component`."""
    keys = [proc.cfg["spans_key"] for _, proc in neighbours(nlp, component)[0] if isinstance(proc, KBMentionFinder)]
    docs = {id(span.doc): span.doc for span in spans}
    return {(doc_id, proposal.start, proposal.end) for doc_id, doc in docs.items() for key in keys
            if key in doc.spans for proposal in doc.spans[key]}


def known_links(nlp: Optional[Language], component: object, spans: Sequence[Span], settings: KnownLinkSettings,
                read: Callable[[Sequence[Span]], List[MentionInput]],
                names: ExactNames) -> Tuple[List[Link], List[int], List[MentionInput]]:
    """For the `spans` that `component` (a linker) links in `nlp`: a link per span (NIL where it
    must decide, or nothing is named), the indexes of those it must decide and how they read (`read`).
    With `memory_first` the link memories after it answer the texts they remember, with
    `kb_names_first` the KB's names (`names`) those they spell."""
    memory_first = settings.linking == "independent" and settings.memory_first
    remembered = remembered_links(spans, memories_after(nlp, component) if memory_first else [])
    links = [known or Link([], NIL) for known in remembered]
    linkable = [i for i, span in enumerate(spans) if remembered[i] is None and not WORDLESS.match(span.text)]
    mentions = read([spans[i] for i in linkable])
    if settings.names_first:
        linkable, mentions = names.answer(nlp, component, spans, linkable, mentions, links)
    return links, linkable, mentions
