"""Links to calibrate on without a labelled corpus: names of the KB's own entities, as written
and as corpora write them otherwise (a word dropped or added, a plural, a typo, words reordered),
each in a neutral sentence. A link is right when it finds the entity the name was taken from."""
import random
from typing import Callable, List, Sequence, Tuple

from spacy.tokens import Doc, Span
from spacy.vocab import Vocab

from ..kb.store import BaseEntityStore
from .calibration import Calibration, fit_calibration

# How many KB names to link: enough for a few hundred wrong links on a large KB, and on a small
# one this many per entity.
N_MENTIONS = 2000
PER_ENTITY = 20
# Share of the names kept as the KB writes them; the others are varied (`vary`).
AS_WRITTEN = 0.5
MODIFIERS = ("familial", "hereditary", "congenital", "severe", "acute", "chronic", "primary", "idiopathic",
             "early onset", "recurrent")
# The weight, among up to seven other ways of varying a name, of putting another name's word in.
SWAPS = 2
# What tells right links from wrong ones otherwise in a KB's names than in a corpus's mentions, so
# the label-free calibration leaves it out: how a mention is written (its length, its case), and
# whether a link memory remembers its text (the memory links a corpus's texts as its annotators
# did; scored against the entity a KB name was taken from, those links look wrong wherever the
# annotators chose another entity, while on the corpus's own texts they are nearly always right).
UNLIKE_IN_CORPORA = ("log_chars", "words", "lowercase", "remembered")
SENTENCES = ("Patients with {} were enrolled.", "We report a case of {} in a child.", "{} was diagnosed.",
             "The risk of {} increased.", "Mutations cause {} in this family.")


def vary(name: str, rng: random.Random, other_words: Sequence[str]) -> str:
    """`name` as a corpus might write it instead, or with a word of another name in place of
    one of its own (what a dictionary's near misses look like)."""
    words = name.split()
    ways = ["modifier", "typo", "case"] + ["swap"] * SWAPS
    if len(words) > 1:
        ways += ["drop", "drop", "reorder"]
    if words and words[-1][-1:].isalpha() and not words[-1].endswith("s"):
        ways.append("plural")
    way = rng.choice(ways)
    if way == "drop":
        del words[rng.randrange(len(words))]
    elif way == "reorder":
        cut = rng.randrange(1, len(words))
        words = words[cut:] + ["of"] + words[:cut]
    elif way == "plural":
        words[-1] += "s"
    elif way == "swap":
        words[rng.randrange(len(words))] = rng.choice(other_words)
    elif way == "modifier":
        words.insert(0, rng.choice(MODIFIERS))
    elif way == "typo":
        long = [i for i, w in enumerate(words) if len(w) >= 5]
        if long:
            i = rng.choice(long)
            j = rng.randrange(1, len(words[i]) - 1)
            words[i] = words[i][:j] + words[i][j + 1:]
    else:
        words = [w.lower() if w[:1].isupper() else w.capitalize() for w in words]
    return " ".join(words) or name


def name_mentions(kb: BaseEntityStore, vocab: Vocab, make_doc: Callable[[str], Doc], n: int = N_MENTIONS,
                  seed: int = 0) -> Tuple[List[Doc], List[str]]:
    """Up to `n` docs, each a sentence holding one name of a KB entity as its one mention, and the id
    of the entity each name was taken from."""
    rng = random.Random(seed)
    rows = [rng.randrange(len(kb)) for _ in range(min(n, PER_ENTITY * len(kb)))]
    other_words = [w for row in rows for w in kb.entity_at(row).name.split() if len(w) > 3] or ["disease"]
    docs, ids = [], []
    for row in rows:
        entity = kb.entity_at(row)
        names = [text for text in (entity.name, *entity.aliases) if text.strip()]
        if not names:
            continue
        name = rng.choice(names)
        text = name if rng.random() < AS_WRITTEN else vary(name, rng, other_words)
        sentence = rng.choice(SENTENCES)
        if sentence.startswith("{}"):
            text = text[:1].upper() + text[1:]
        before = sentence.index("{}")
        doc = make_doc(sentence.format(text))
        span = doc.char_span(before, before + len(text), label="ENTITY")
        if span is None:  # a name the tokenizer splits inside a token
            continue
        doc.ents = [span]
        docs.append(doc)
        ids.append(entity.id)
    return docs, ids


def label_free_calibration(kb: BaseEntityStore, vocab: Vocab, make_doc: Callable[[str], Doc],
                           link: Callable[[List[Doc]], List[Doc]],
                           features: Callable[[Sequence[Span]], List[List[float]]],
                           n: int = N_MENTIONS, seed: int = 0) -> Calibration:
    """Fit a calibration on the links `link` makes for the KB's own names (`name_mentions`)."""
    docs, ids = name_mentions(kb, vocab, make_doc, n, seed)
    spans = [doc.ents[0] for doc in link(docs)]
    return fit_calibration(features(spans), [span.kb_id_ == kb_id for span, kb_id in zip(spans, ids)],
                           source="label-free", ignore=UNLIKE_IN_CORPORA)
