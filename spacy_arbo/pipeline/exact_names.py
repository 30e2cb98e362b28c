"""KB names that name one entity only. With `kb_names_first`, a mention written exactly as one
(case and punctuation aside, as the link memory compares texts) is linked to that entity before
anything is encoded, as the link memory links the texts it remembers: most mentions of a corpus
spell a KB name, and encoding them only to find that name again is most of a linker's time."""
from typing import Dict, List, Optional, Tuple

from ..retrieval.retriever import EntityRetriever
from .link_memory import memory_key


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
