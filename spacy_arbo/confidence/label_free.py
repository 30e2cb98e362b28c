"""Links to calibrate on without a labelled corpus: names of the KB's own entities, as written
and as corpora write them otherwise (a word dropped or added, a plural, a typo, words reordered),
each in a neutral sentence. A link is right when it finds the entity the name was taken from.
`LabelFreeConfidence` is an arbo_linker's own calibration, fitted so and saved with it."""
import logging
import random
from dataclasses import dataclass
from typing import Callable, Iterable, List, Optional, Protocol, Sequence, Tuple

import srsly
from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.vocab import Vocab

from ..encoders.vector_cache import VectorCache
from ..kb.store import BaseEntityStore
from ..util import ArboError
from .calibration import Calibration, fit_calibration
from .features import FEATURES, ConfidenceFeatures, KBNames, write_confidence

logger = logging.getLogger("spacy_arbo")

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


def _calibration(data: bytes) -> Calibration:
    try:
        return Calibration.from_dict(srsly.msgpack_loads(data), "a cached label-free calibration")
    except (ValueError, TypeError, AttributeError) as err:
        raise ArboError(f"not a calibration ({type(err).__name__}).") from None


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
                  seed: int = 0, label: str = "ENTITY") -> Tuple[List[Doc], List[str]]:
    """Up to `n` docs, each a sentence holding one name of a KB entity as its one mention (labelled
    `label`), and the id of the entity each name was taken from."""
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
        span = doc.char_span(before, before + len(text), label=label)
        if span is None:  # a name the tokenizer splits inside a token
            continue
        doc.ents = [span]
        docs.append(doc)
        ids.append(entity.id)
    return docs, ids


def label_free_calibration(kb: BaseEntityStore, vocab: Vocab, make_doc: Callable[[str], Doc],
                           link: Callable[[List[Doc]], Iterable[Doc]],
                           features: Callable[[Sequence[Span]], List[List[float]]],
                           n: int = N_MENTIONS, seed: int = 0, label: str = "ENTITY") -> Calibration:
    """Fit a calibration on the links `link` makes for the KB's own names (`name_mentions`,
    labelled `label`: one the linker links)."""
    docs, ids = name_mentions(kb, vocab, make_doc, n, seed, label)
    spans = [doc.ents[0] for doc in link(docs)]
    return fit_calibration(features(spans), [span.kb_id_ == kb_id for span, kb_id in zip(spans, ids)],
                           source="label-free", ignore=UNLIKE_IN_CORPORA)


class NameSettings(Protocol):
    """What fitting on a KB's names reads of a linker's settings (`LinkerSettings` has them)."""

    @property
    def seed(self) -> int:
        """Picks the names."""

    @property
    def name_label(self) -> str:
        """A label the linker links: the names' label."""


@dataclass(frozen=True)
class NameLinking:
    """What fitting on a KB's names needs of a linker: its KB, its pipeline (how texts become
    docs, which link memories follow it), how it links docs, which of the KB's names name one
    entity, and its settings."""

    kb: BaseEntityStore
    nlp: Language
    link: Callable[[List[Doc]], Iterable[Doc]]
    names: KBNames
    settings: NameSettings

    def features(self) -> ConfidenceFeatures:
        return ConfidenceFeatures(self.nlp, self.names)


class LabelFreeConfidence:
    """An arbo_linker's own calibration, fitted on its KB's names for the weights and scoring
    settings it links with: `fitted_for` is the linker's `key` for them, compared where they may
    change (initialize, configure, saving after training), never while the linker pipes; a loaded
    linker keeps the calibration saved with it. `linking` says what to fit with, None while there
    is nothing to fit (confidence off, no KB); `index_current`, whether the linker's entity index
    holds the vectors of its weights (linking with one that lags them encodes the KB)."""

    def __init__(self, name: str, linking: Callable[[], Optional[NameLinking]], key: Callable[[], str],
                 index_current: Callable[[], bool]) -> None:
        self.name = name
        self._linking = linking
        self._key = key
        self._index_current = index_current
        self.calibration: Optional[Calibration] = None
        self.fitted_for: Optional[str] = None

    def refit(self, saving: bool = False, cache: Optional[VectorCache] = None) -> None:
        """Fit on the links the linker makes of the KB's names, unless fitted for its current key
        (with `cache`, read where the same weights, settings, KB and pipeline were fitted before).
        `saving` never encodes the KB: behind an index that lags the weights (left out of the saved
        pipeline), it keeps the calibration it has. A linker that cannot link yet (a transductive
        one before its training mentions) is left as it is, and says so."""
        linking = self._linking()
        if linking is None or self.fitted_for == self._key() or (saving and not self._index_current()):
            return

        def fit() -> Calibration:
            return label_free_calibration(linking.kb, linking.nlp.vocab, linking.nlp.make_doc, linking.link,
                                          linking.features(), seed=linking.settings.seed,
                                          label=linking.settings.name_label)

        try:
            if cache is None:
                self.calibration = fit()
            else:
                what = (f"label-free confidence {self._key()} kb={linking.kb.fingerprint()} "
                        f"seed={linking.settings.seed} n={N_MENTIONS} label={linking.settings.name_label} "
                        f"features={','.join(FEATURES)} "
                        f"pipes={','.join(linking.nlp.pipe_names)}")
                self.calibration = cache.remember(what, lambda: srsly.msgpack_dumps(fit().to_dict()), _calibration)
        except ArboError as err:
            logger.info("%s: confidence not calibrated (%s); it is when its settings change or it is saved.",
                        self.name, err)
            return
        self.fitted_for = self._key()  # read after linking, which may build the weights

    def write(self, spans: Sequence[Span]) -> None:
        """`span._.kb_confidence` of the linked `spans`, while the confidence is on."""
        linking = self._linking()
        if linking is not None:
            write_confidence(spans, self.calibration, linking.features())

    def to_bytes(self) -> bytes:
        return srsly.msgpack_dumps(None if self.calibration is None else
                                   {"calibration": self.calibration.to_dict(), "fitted_for": self.fitted_for})

    def from_bytes(self, data: bytes, where: str) -> None:
        try:
            saved = srsly.msgpack_loads(data) if data else None
        except ValueError:
            raise ArboError(f"{where}: not a saved confidence calibration (damaged msgpack).") from None
        if saved is None:
            self.calibration = self.fitted_for = None
            return
        if not isinstance(saved, dict) or set(saved) != {"calibration", "fitted_for"} or \
                not isinstance(saved["calibration"], dict):
            raise ArboError(f"{where}: not a saved confidence calibration.")
        if list(saved["calibration"].get("features", [])) != list(FEATURES):
            logger.info("%s: the confidence was calibrated on other features; it is calibrated again when "
                        "the linker is initialized, configured or saved.", where)
            self.calibration = self.fitted_for = None
            return
        self.calibration = Calibration.from_dict(saved["calibration"], where)
        self.fitted_for = saved["fitted_for"]
