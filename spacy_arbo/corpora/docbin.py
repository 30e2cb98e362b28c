"""Gold corpora on disk as spaCy `.spacy` DocBins: writing, reading, joining several."""
from pathlib import Path
from typing import Dict, Iterable, List, Sequence, Tuple

from spacy.tokens import Doc, DocBin

from ..util import ArboError, PathLike, atomic_path


def write_docbin(docs: Iterable[Doc], path: PathLike) -> None:
    """Write a `.spacy` file, with `user_data` so that document ids survive."""
    doc_bin = DocBin(docs=docs, store_user_data=True)
    with atomic_path(path) as tmp:
        doc_bin.to_disk(tmp)


def read_docbin(path: PathLike, vocab) -> List[Doc]:
    path = Path(path)
    if not path.exists():
        raise ArboError(f"Corpus file '{path}' does not exist.")
    try:
        return list(DocBin().from_disk(path).get_docs(vocab))
    except Exception as err:  # msgpack and spaCy raise several unrelated types
        raise ArboError(f"{path}: not a readable .spacy DocBin ({err}).") from None


def join_docbins(inputs: Sequence[PathLike], output: PathLike, vocab) -> List[Tuple[Path, int]]:
    """Write the documents of several `.spacy` files as one (one training set from two
    corpora that share a KB: the workflow's retriever learns from NCBI Disease and BC5CDR
    train); returns (input, documents) per input. A document text found in two inputs is
    an error, since training would count it twice and a copied split would leak."""
    inputs, output = [Path(path) for path in inputs], Path(output)
    if not inputs:
        raise ArboError("join-corpora needs at least one input .spacy file.")
    if output.resolve() in {path.resolve() for path in inputs}:
        raise ArboError(f"join-corpora: the output '{output}' is also an input.")
    first_seen: Dict[str, Path] = {}
    joined: List[Doc] = []
    counts = []
    for path in inputs:
        docs = read_docbin(path, vocab)
        for doc in docs:
            earlier = first_seen.setdefault(doc.text, path)
            if earlier is not path:
                title = doc.text[:60].replace("\n", " ")
                raise ArboError(f"join-corpora: the document '{title}...' is in both '{earlier}' and '{path}'.")
        joined.extend(docs)
        counts.append((path, len(docs)))
    write_docbin(joined, output)
    return counts
