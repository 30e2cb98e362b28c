"""Mentions a KB can find: spans of the text that read as one of the KB's names.

It is what a user with a KB and no annotated corpus has for a recognizer, and beside a trained
recognizer it proposes the mentions of types that the recognizer never saw. It proposes; the
linker decides: `kb_mention_filter`, placed after the linking components, removes the
proposals that were linked to NIL (below the linker's threshold), so a span that merely
spells a KB name in passing is dropped by the linker's score, not kept by the matcher's, and the
abbreviations that nothing else in the doc backs (`backed_short_forms`).

Names are matched as token sequences, case-blind except for abbreviations (short names with two
capitals or more, where case is what separates "ALL" from "all"), with the spelling variants
that separate a KB's name from the way a text writes it: plural and singular of the last word,
a hyphen as a space, British spelling, MeSH's inverted "Anemia, Hemolytic" read forwards, a
parenthesised abbreviation left out, a name as its adjective ("X-deficient", "hypertensive"). A
short form that the text defines ("Wilson disease (WD)") is proposed wherever it occurs when its
long form reads as a KB name; the KB's own abbreviations never where the doc defines them as
something holding no KB name ("cyclophosphamide (CP)"), those ending in a digit (a gene symbol's
form: "RB1") only where it defines them, and with `short_forms = "defined"` every one in capitals.
A category word that ends hundreds of the KB's names ("disease", `name_categories`) is not
proposed alone. A name inside a coordination of names
("breast and ovarian cancer") is proposed as the whole coordination (`coordinations`), which the
linker splits. A name is proposed with the words around it that the corpora keep in a mention: where
the condition lies in the KB's hierarchy, where it comes from, which subtype it is ("renal hamartomas",
"hereditary breast cancer", "SJS type 2": `mention_modifiers`). Words that end as some of the KB's
condition names do ("nephrotoxicity", `condition_endings`) are proposed though the KB lacks them.
"""
import re
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import filter_spans
from spacy.vocab import Vocab

from ..component_settings import check_at_least, check_choice, config_checked
from ..kb.entities import NIL
from ..kb.store import BaseEntityStore
from ..util import ArboError, atomic_path, read_json, read_msgpack
from .common.abbreviations import LongForms, short_form_spans
from .common.backed_short_forms import unbacked_short_forms
from .common.branch_words import branch_words
from .common.condition_endings import ending_spans, kb_endings
from .common.coordinations import coordinated_spans
from .common.kb_finder_settings import DEFAULT_LABEL, MODES, SHORT_FORMS
from .common.kb_versions import check_kb_version, kb_version, read_version, write_version
from .common.mention_modifiers import ORIGIN_WORDS, grown_over
from .common.name_categories import name_categories
from .common.name_matcher import ATTRS, NameMatcher

NAMES_FILE = "names.json"
# The matchers' token sequences and the names' normal forms, read back instead of remade at load.
MATCHERS_FILE = "matchers.msgpack"
# Names longer than this many tokens are descriptions, not something a text writes.
MAX_NAME_TOKENS = 12
_PARENTHESES = re.compile(r"\s*\([^()]*\)")
_HYPHEN = re.compile(r"\s*-\s*")
# A name as the adjective a text writes before its bearer: "G6PD-deficient patients", "C7 deficient
# sera", "hypertensive rats", "epileptic children". One-word names take only the suffixes whose
# adjective names the condition itself ("ischemic", "myotonic" qualify other things as often).
_DEFICIENCY = re.compile(r"^(\S.*?) deficiency$", re.IGNORECASE)
_ONE_WORD_ADJECTIVES = ((re.compile(r"(?<=\w{4})sion$", re.IGNORECASE), "sive"),
                        (re.compile(r"(?<=\w{2})lepsy$", re.IGNORECASE), "leptic"))
# American -> British spellings of medical words, as the KBs spell the one and texts the other.
_BRITISH = [(re.compile(pattern, re.IGNORECASE), british) for pattern, british in (
    (r"tumor", "tumour"), (r"(?<=[b-df-hj-np-tv-z])emi(?=as?\b|c\b)", "aemi"), (r"\bhem(?=[aoi])", "haem"),
    (r"\bedema", "oedema"), (r"\besophag", "oesophag"), (r"\bfetal", "foetal"))]


def last_word_forms(name: str) -> Set[str]:
    """`name` with its last word in the singular and in the plural (English rules for
    the regular cases: -s, -es, -ies, -is/-es)."""
    head, _, last = name.rpartition(" ")
    prefix = f"{head} " if head else ""
    lower = last.lower()
    forms = {name}
    if len(lower) < 3 or not lower[-1].isalpha():
        return forms
    if lower.endswith("ies") and len(lower) > 4:
        forms.add(prefix + last[:-3] + "y")
    elif lower.endswith(("sses", "xes", "ches", "shes")):
        forms.add(prefix + last[:-2])
    elif lower.endswith("is"):
        forms.add(prefix + last[:-2] + "es")
    elif lower.endswith("s") and not lower.endswith(("ss", "us")):
        forms.add(prefix + last[:-1])
    elif lower.endswith("y") and lower[-2] not in "aeiou":
        forms.add(prefix + last[:-1] + "ies")
    elif lower.endswith(("ss", "x", "ch", "sh")):
        forms.add(prefix + last + "es")
    elif not lower.endswith("us"):
        forms.add(prefix + last + "s")
    return forms


def british_spelling(name: str) -> str:
    for pattern, british in _BRITISH:
        name = pattern.sub(british, name)
    return name


def name_variants(name: str) -> Set[str]:
    """The ways a text may write the KB name `name`."""
    base = " ".join(name.split())
    written = {base, _PARENTHESES.sub("", base).strip()}
    for form in list(written):
        parts = [part.strip() for part in form.split(",")]
        if 1 < len(parts) <= 3 and all(parts):
            written.add(" ".join(reversed(parts)))
    written |= {_HYPHEN.sub(" ", form) for form in written}
    written |= {british_spelling(form) for form in written}
    variants = {variant for form in written if form for variant in last_word_forms(form)}
    return variants | {adjective for variant in variants for adjective in adjectives(variant)}


def adjectives(name: str) -> Set[str]:
    """The adjectives a text writes for `name` before what has it (`_DEFICIENCY`, `_ONE_WORD_ADJECTIVES`)."""
    found = _DEFICIENCY.match(name)
    if found:
        return {f"{found.group(1)}-deficient", f"{found.group(1)} deficient"}
    if " " in name or not name.isalpha():
        return set()
    return {pattern.sub(suffix, name) for pattern, suffix in _ONE_WORD_ADJECTIVES if pattern.search(name)}


def normal_form(name: str) -> str:
    """Case, hyphens and spacing aside: how a long form is looked up among the names."""
    return " ".join(_HYPHEN.sub(" ", name).lower().split())


def is_short_form(text: str) -> bool:
    """An abbreviation in capitals ("DM", "NF1", "HNPCC"), not a short name written in mixed
    case ("DiGeorge", "HbA1c"): what `short_forms = "defined"` proposes only where defined."""
    return is_abbreviation(text) and text == text.upper()


def is_abbreviation(name: str) -> bool:
    """Short, with two capitals or more ("DM", "NF1", "HNPCC"): matched in its own case, and
    kept however short."""
    return sum(c.isupper() for c in name) >= 2 and len(name.replace(" ", "")) <= 8


class KBMentionFinder(Pipe):
    """Proposes every span that matches a KB name as a mention with `label`: in "add" mode
    beside the mentions already in `doc.ents` (those win where they overlap), in "replace"
    mode instead of them. The proposals it adds are also kept in `doc.spans[spans_key]`.
    Names shorter than `min_chars` (abbreviations aside) and stop words are not matched; with
    `short_forms` "defined" (`SHORT_FORMS`), the KB's abbreviations only where the doc defines them."""

    def __init__(self, vocab: Vocab, name: str, *, label: str, mode: str, min_chars: int, spans_key: str,
                 make_doc: Callable[[str], Doc], nlp: Optional[Language] = None, short_forms: str = "all",
                 modifiers: bool = True) -> None:
        """`make_doc`: the pipeline's tokenizer, so that names are cut into tokens as texts are;
        `nlp`: the pipeline, whose KB the names must be of (`kb_versions`)."""
        check_choice("mode", mode, MODES)
        check_choice("short_forms", short_forms, SHORT_FORMS)
        check_at_least(1, min_chars=min_chars)
        self.vocab = vocab
        self.name = name
        self.cfg: Dict[str, Any] = {"label": label, "mode": mode, "min_chars": min_chars, "spans_key": spans_key,
                                    "short_forms": short_forms, "modifiers": modifiers}
        self.names: List[str] = []
        self.nlp = nlp
        # The version of the KB the names are of (None: names given by hand, or saved before
        # versions were recorded).
        self.kb_version: Optional[str] = None
        self._make_doc = make_doc
        self._matchers: Dict[str, NameMatcher] = {}
        self._known: Set[str] = set()
        self._categories: Set[str] = set()
        self._branch_words: Set[str] = set()
        self._endings: Tuple[str, ...] = ()
        self._long_forms: Optional[LongForms] = None

    @property
    def label(self) -> str:
        """The label of its proposals: the KB it must match is the one its label is linked to."""
        return self.cfg["label"]

    def initialize(self, get_examples: Optional[Callable[[], Iterable[Example]]] = None, *,
                   nlp: Optional[Language] = None, kb_loader: Optional[Callable[[Vocab], BaseEntityStore]] = None) -> None:
        """Reads the names of the KB that `kb_loader` gives (e.g. `spacy_arbo.KBFromDir.v1`)."""
        if kb_loader is None:
            raise ArboError(f"{self.name}: initialize needs a kb_loader, e.g. "
                            f"[initialize.components.{self.name}.kb_loader] @misc = \"spacy_arbo.KBFromDir.v1\".")
        self.set_kb(kb_loader(self.vocab))

    def set_kb(self, kb: BaseEntityStore) -> None:
        """Match the names of `kb` from now on."""
        self.set_names([text for text, _ in kb.alias_pairs()])
        self._branch_words = branch_words(kb, self._stop_words())
        self.kb_version = kb_version(kb)

    def follow_kb(self, kb: BaseEntityStore) -> Optional[str]:
        """After `kb add` / `kb remove`: match the updated KB's names; names given by hand
        (`set_names`, of no known KB) are kept as they are."""
        if self.kb_version is None:
            return f"keeps the {len(self.names):,} names it was given (of no KB)"
        self.set_kb(kb)
        return f"matches the {len(self.names):,} names of the updated KB"

    def set_names(self, names: Iterable[str]) -> None:
        """Match these names (and their variants) from now on; they are of no known KB."""
        self.kb_version = None
        self._branch_words = set()
        self.names = sorted({" ".join(n.split()) for n in names if n and n.strip()})
        if not self.names:
            raise ArboError(f"{self.name}: the KB has no names to match.")
        self._build()

    def _build(self) -> None:
        stop_words = self._stop_words()
        by_case: Dict[str, Set[str]] = {"LOWER": set(), "ORTH": set()}
        for name in self.names:
            for variant in name_variants(name):
                exact = is_abbreviation(variant)
                if not exact and (len(variant) < self.cfg["min_chars"] or variant.lower() in stop_words):
                    continue
                by_case["ORTH" if exact else "LOWER"].add(variant)
        self._known = {normal_form(v) for variants in by_case.values() for v in variants}
        self._categories = self._name_categories()
        self._endings = kb_endings(self.names)
        self._matchers = {attr: NameMatcher.from_docs(attr, (doc for doc in map(self._make_doc, sorted(variants))
                                                             if 0 < len(doc) <= MAX_NAME_TOKENS))
                          for attr, variants in by_case.items()}

    def _name_categories(self) -> Set[str]:
        """The categories, as each variant of them may be written ("tumours")."""
        return {variant.lower() for category in name_categories(normal_form(name) for name in self.names)
                for variant in name_variants(category)}

    def name_words(self) -> Set[str]:
        """The lower-cased words of every name variant it matches."""
        return {word for name in self._known for word in name.split()}

    def _stop_words(self) -> Set[str]:
        lang = self.vocab.lang or "en"
        try:
            from spacy.util import get_lang_class

            return set(get_lang_class(lang).Defaults.stop_words)
        except (ImportError, KeyError):
            return set()

    def __call__(self, doc: Doc) -> Doc:
        if not self._matchers:
            raise ArboError(f"{self.name} has no KB names: initialize it with a kb_loader or call set_names.")
        check_kb_version(self.name, self, self.nlp)
        long_forms = self._doc_long_forms(doc)
        found = [Span(doc, start, end, label=self.cfg["label"])
                 for matcher in self._matchers.values() for start, end in matcher(doc)
                 if end - start > 1 or doc[start].lower_ not in self._categories]
        found = [span for span in found if self._names_what_the_doc_means(span, long_forms)]
        found = [span for span in found if not self._only_where_defined(span.text)]  # those are added below
        found += coordinated_spans(found, lambda text: normal_form(text) in self._known)
        found += self._defined_short_forms(doc, long_forms)
        found += ending_spans(doc, self._endings, self.cfg["label"])
        if self.cfg["modifiers"]:
            found = grown_over(found, self._branch_words | ORIGIN_WORDS)
        if self.cfg["mode"] == "replace":
            proposals = filter_spans(found)
            doc.ents = proposals
        else:
            taken = {i for ent in doc.ents for i in range(ent.start, ent.end)}
            proposals = [s for s in filter_spans(found) if not taken.intersection(range(s.start, s.end))]
            doc.ents = sorted([*doc.ents, *proposals], key=lambda span: span.start)
        doc.spans[self.cfg["spans_key"]] = proposals
        return doc

    def _only_where_defined(self, text: str) -> bool:
        """An abbreviation proposed only where the doc defines it: with `short_forms` "defined" every
        one, otherwise those ending in a digit, the form of gene symbols ("RB1", "WT1"), which
        texts write for the gene far more often than for a disease named after it."""
        return is_short_form(text) and (self.cfg["short_forms"] == "defined" or text[-1].isdigit())

    def _doc_long_forms(self, doc: Doc) -> Dict[Tuple[int, int], str]:
        """(start_char, end_char) of each short form the doc defines -> its long form."""
        if self._long_forms is None:
            self._long_forms = LongForms(self.vocab)
        return self._long_forms(doc)

    def _names_what_the_doc_means(self, span: Span, long_forms: Dict[Tuple[int, int], str]) -> bool:
        """False for a KB name that the doc defines as the short form of something without a
        KB name in it ("cyclophosphamide (CP)", where CP is a disease's alias)."""
        long_form = long_forms.get((span.start_char, span.end_char))
        return long_form is None or self._reads_as_name(long_form) or self._holds_a_name(long_form)

    def _holds_a_name(self, text: str) -> bool:
        doc = self._make_doc(text)
        return any(end - start > 1 or doc[start].lower_ not in self._categories
                   for start, end in self._matchers["LOWER"](doc))

    def _defined_short_forms(self, doc: Doc, long_forms: Dict[Tuple[int, int], str]) -> List[Span]:
        """Every occurrence of a short form whose definition's long form reads as a KB name."""
        label = self.cfg["label"]
        return short_form_spans(doc, long_forms, lambda long_form: label if self._reads_as_name(long_form) else None)

    def _reads_as_name(self, long_form: str) -> bool:
        """The long form, or its last two words or more (the detector's long forms may start a
        sentence too early), is a KB name, or one with a category word after it ("von
        Hippel-Lindau" for von Hippel-Lindau disease)."""
        words = normal_form(long_form).split()
        tails = [" ".join(words[i:]) for i in range(max(1, len(words) - 1))]
        return any(tail in self._known or any(f"{tail} {category}" in self._known for category in self._categories)
                   for tail in tails)

    # Serialization: the names, and the matchers as token strings (remade from the names only for
    # a finder saved without them) ------------------------------------------------------------

    def _matcher_data(self) -> Dict[str, Any]:
        return {"known": sorted(self._known), "categories": sorted(self._categories),
                "branch_words": sorted(self._branch_words),
                **{attr: m.to_list() for attr, m in self._matchers.items()}}

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        return srsly.msgpack_dumps({"cfg": self.cfg, "names": self.names, "kb_version": self.kb_version,
                                    "matchers": self._matcher_data()})

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "KBMentionFinder":
        data = srsly.msgpack_loads(bytes_data)
        self._load(data, data.get("matchers"), f"{self.name}'s bytes", f"{self.name}'s bytes")
        self.kb_version = data.get("kb_version")
        return self

    def to_disk(self, path: Path, *, exclude: Iterable[str] = tuple()) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        with atomic_path(path / NAMES_FILE) as tmp:
            srsly.write_json(tmp, {"cfg": self.cfg, "names": self.names})
        with atomic_path(path / MATCHERS_FILE) as tmp:
            srsly.write_msgpack(tmp, self._matcher_data())
        write_version(path, self.kb_version)

    def from_disk(self, path: Path, *, exclude: Iterable[str] = tuple()) -> "KBMentionFinder":
        file, matchers = Path(path) / NAMES_FILE, Path(path) / MATCHERS_FILE
        saved = read_msgpack(matchers, f"{self.name}'s matchers") if matchers.exists() else None
        self._load(read_json(file), saved, str(file), str(matchers))
        self.kb_version = read_version(Path(path))
        return self

    def _load(self, data: Any, matchers: Optional[Dict[str, Any]], origin: str, matchers_origin: str
              ) -> "KBMentionFinder":
        try:
            names, cfg = list(data["names"]), dict(data["cfg"])
        except (KeyError, TypeError) as err:
            raise ArboError(f"{origin}: not a {self.name} names file (no {err}).") from None
        self.cfg.update(cfg)
        self.names = names
        if matchers is None:
            self._build()
            return self
        try:
            self._known = set(matchers["known"])
            # Saved before categories were: read off the names.
            self._categories = set(matchers["categories"]) if "categories" in matchers else self._name_categories()
            self._matchers = {attr: NameMatcher(attr, matchers[attr]) for attr in ATTRS}
            # Saved before branch words were: none (words of origin and subtypes still grow its names).
            self._branch_words = set(matchers.get("branch_words", ()))
            self._endings = kb_endings(names)
        except (KeyError, TypeError) as err:
            raise ArboError(f"{matchers_origin}: {self.name}'s matchers are damaged (no {err}).") from None
        return self

def drop_unlinked_proposals(doc: Doc, spans_key: str) -> Doc:
    """Remove from `doc.ents` the proposals of `doc.spans[spans_key]` that the linker linked
    to NIL or not at all; the recognizer's own NIL mentions stay (they may be entities the
    KB lacks)."""
    if spans_key not in doc.spans:
        return doc
    proposed = {(span.start, span.end) for span in doc.spans[spans_key]}
    doc.ents = [ent for ent in doc.ents if (ent.start, ent.end) not in proposed or ent.kb_id_ not in ("", NIL)]
    kept = {(ent.start, ent.end) for ent in doc.ents}
    doc.spans[spans_key] = [span for span in doc.spans[spans_key] if (span.start, span.end) in kept]
    return doc


def drop_unbacked_short_forms(doc: Doc, spans_key: str, long_forms: LongForms) -> Doc:
    """Remove from `doc.ents` the proposals of `doc.spans[spans_key]` that are abbreviations the doc
    neither defines nor names the entity of otherwise (`backed_short_forms`)."""
    if spans_key not in doc.spans:
        return doc
    short_forms = [span for span in doc.spans[spans_key] if is_short_form(span.text)]
    if not short_forms:
        return doc
    ents = {(ent.start, ent.end): ent for ent in doc.ents}
    unbacked = unbacked_short_forms([ents[s.start, s.end] for s in short_forms if (s.start, s.end) in ents],
                                    [ent for ent in doc.ents if not is_short_form(ent.text)], set(long_forms(doc)))
    doc.ents = [ent for ent in doc.ents if (ent.start, ent.end) not in unbacked]
    doc.spans[spans_key] = [span for span in doc.spans[spans_key] if (span.start, span.end) not in unbacked]
    return doc


@Language.factory("kb_mention_finder", assigns=["doc.ents", "doc.spans"],
                  default_config={"label": DEFAULT_LABEL, "mode": "add", "min_chars": 3, "spans_key": "kb_mentions",
                                  "short_forms": "all", "modifiers": True})
@config_checked
def make_kb_mention_finder(nlp: Language, name: str, label: str, mode: Any, min_chars: Any,
                           spans_key: str, short_forms: Any, modifiers: bool) -> KBMentionFinder:
    check_choice("mode", mode, MODES)
    return KBMentionFinder(nlp.vocab, name, label=label, mode=mode, min_chars=min_chars, spans_key=spans_key,
                           make_doc=nlp.make_doc, nlp=nlp, short_forms=short_forms, modifiers=modifiers)


@Language.factory("kb_mention_filter", requires=["doc.ents"], assigns=["doc.ents"],
                  default_config={"spans_key": "kb_mentions", "backed_short_forms": True})
def make_kb_mention_filter(nlp: Language, name: str, spans_key: str, backed_short_forms: bool) -> Callable[[Doc], Doc]:
    """Put after the linking components (link memory included): it drops the KB finder's
    proposals that were linked to NIL, and with `backed_short_forms` its abbreviations that the
    doc neither defines nor backs with a mention written out of the same entity."""
    long_forms = LongForms(nlp.vocab)

    def kb_mention_filter(doc: Doc) -> Doc:
        doc = drop_unlinked_proposals(doc, spans_key)
        return drop_unbacked_short_forms(doc, spans_key, long_forms) if backed_short_forms else doc

    return kb_mention_filter
