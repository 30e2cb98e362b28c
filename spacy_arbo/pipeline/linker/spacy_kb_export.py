"""A trained `arbo_linker`'s KB and entity vectors as a KB for spaCy's own `entity_linker`."""
from ...retrieval.spacy_kb import ArboKnowledgeBase
from ...util import ArboError
from ..arbo_linker import ArboLinker


def spacy_kb_from_linker(linker: ArboLinker, top_k: int = 10) -> ArboKnowledgeBase:
    """The KB of a dense `arbo_linker`, with the entity vectors of its current weights."""
    if not linker.settings.uses_dense:
        raise ArboError(f"'{linker.name}' has no entity vectors (candidate_source = 'tfidf'): "
                        "use a dense or hybrid arbo_linker, or ArboKnowledgeBase.set_entities.")
    linker.ensure_fresh()
    retriever = linker.require_retriever()
    vectors = retriever.entity_vectors
    if vectors is None:  # a loaded index keeps no per-entity copy of its vectors
        vectors = linker.encode_entities(retriever.entity_inputs())
    kb = ArboKnowledgeBase(linker.vocab, vectors.shape[1], top_k=top_k)
    kb.set_entities(retriever.kb, vectors)
    return kb
