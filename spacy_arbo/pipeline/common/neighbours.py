"""Where a component stands in its pipeline: the one walk for every component that reads its
neighbours (the reranker its retrievers and KB, the linker the memories, finders and candidate
readers around it)."""
from typing import Any, Iterable, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc

Named = List[Tuple[str, Any]]


def neighbours(nlp: Optional[Language], component: object, disabled: bool = False) -> Tuple[Named, Named]:
    """The (name, component) pairs before and after `component` in `nlp` (with `disabled`, the
    disabled ones too); both empty when `component` is not in it."""
    pipeline = list(nlp.components if disabled else nlp.pipeline) if nlp is not None else []
    position = next((i for i, (_, proc) in enumerate(pipeline) if proc is component), None)
    return ([], []) if position is None else (pipeline[:position], pipeline[position + 1:])


def pipe_through(components: Sequence[Any], docs: Iterable[Doc], batch_size: int = 64) -> Iterable[Doc]:
    """`docs` through `components` in order, in batches where a component has `pipe` (a plain
    function component has only `__call__`)."""
    for proc in components:
        docs = proc.pipe(docs, batch_size=batch_size) if hasattr(proc, "pipe") else map(proc, docs)
    return docs
