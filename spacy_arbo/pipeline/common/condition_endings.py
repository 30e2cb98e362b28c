"""Words whose ending makes them conditions: "nephrotoxicity", "neurotoxicity", "hepatotoxicity" and
"toxicity" itself, which texts on drug effects write for the damage a drug does, while a KB such as
CTD spells only a few of them ("Cardiotoxicity"). An ending is read where some name of the KB ends a
word with it, so a KB without such names (chemicals, genes) proposes none."""
from typing import Iterable, List, Tuple

from spacy.tokens import Doc, Span

ENDINGS = ("toxicity", "toxicities")


def kb_endings(names: Iterable[str]) -> Tuple[str, ...]:
    """The `ENDINGS` that end a word of some name in `names`."""
    words = {word for name in names for word in name.lower().split()}
    return tuple(ending for ending in ENDINGS if any(word.endswith(ending) for word in words))


def ending_spans(doc: Doc, endings: Tuple[str, ...], label: str) -> List[Span]:
    """A one-token span for every word of `doc` that ends with one of `endings`."""
    if not endings:
        return []
    return [Span(doc, token.i, token.i + 1, label=label) for token in doc
            if token.is_alpha and token.lower_.endswith(endings)]
