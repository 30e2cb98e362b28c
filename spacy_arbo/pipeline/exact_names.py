"""KB names that name one entity only. With `kb_names_first`, a mention written exactly as one
(case and punctuation aside, as the link memory compares texts; an abbreviation read as the long
form its doc defines, as the encoder reads it) is linked to that entity before anything is
encoded, as the link memory links the texts it remembers: most mentions of a corpus spell a KB
name, and encoding them only to find that name again is most of a linker's time. Short forms are
read spelt out because as written they name whatever the KB's aliases say ("AS" is Angelman
syndrome there), not what the doc means. Not before a reranker: it reads every candidate."""
from typing import Dict, List, Optional, Tuple

from spacy.language import Language

from ..retrieval.retriever import EntityRetriever
from .link_memory import memory_key

CANDIDATES = "span._.kb_candidates"


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


def candidates_read_after(nlp: Optional[Language], component: object) -> bool:
    """Whether a component after `component` in `nlp` reads `span._.kb_candidates` (a
    reranker): it needs every mention's candidates, and a mention answered by its name has
    only the one it names."""
    if nlp is None or component not in [proc for _, proc in nlp.pipeline]:
        return False
    later = nlp.pipe_names[[proc for _, proc in nlp.pipeline].index(component) + 1:]
    return any(CANDIDATES in nlp.get_pipe_meta(name).requires for name in later)
