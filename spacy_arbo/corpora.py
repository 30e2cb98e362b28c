"""Entity-linking corpora (PubTator, BLINK/arboEL mention JSONL) as spaCy Docs.

Every gold mention becomes an entity in `doc.ents` whose `kb_id_` is the gold id as
the KB spells it (`NIL` when it has none or the KB lacks it), inside sentence
boundaries that never cut a mention, so that linkers can read context sentence by sentence.
"""
from itertools import islice
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union,
)

import spacy
import wasabi
from spacy.language import Language
from spacy.pipeline import Sentencizer
from spacy.tokens import Doc, DocBin, Span
from spacy.training import Example
from spacy.util import filter_spans, registry

from .kb.entities import NIL, normalize_id
from .kb.store import BaseEntityStore, open_store
from .util import ArboError, PathLike, atomic_path, read_json_objects, read_lines

CORPUS_FORMATS = ("auto", "pubtator", "blink")
# Gold ids that mean "this mention has no concept" in PubTator corpora.
NO_ID = "-1"
# The label of BLINK mentions that carry no `type`.
DEFAULT_LABEL = "ENTITY"

_TEXT_LINE = re.compile(r"^([^|\t]+)\|([ta])\|(.*)$")
_COMPOSITE_SEPARATOR = re.compile(r"[|+]")


class Mention(NamedTuple):
    """A gold mention: character offsets into its document's text, and its ids as written."""

    start: int
    end: int
    text: str
    type: str
    ids_raw: str


@dataclass
class PubTatorDocument:
    pmid: str
    title: str
    abstract: str
    mentions: List[Mention] = field(default_factory=list)

    @property
    def text(self) -> str:
        return f"{self.title} {self.abstract}"

    @property
    def title_end(self) -> int:
        return len(self.title)

    @property
    def user_data(self) -> Dict[str, str]:
        return {"doc_id": self.pmid}


@dataclass
class BlinkMention:
    """One JSONL line: a mention inside a context window cut from some source document."""

    doc_id: str
    context_left: str
    mention: str
    context_right: str
    label_id: str
    type: str = DEFAULT_LABEL
    context_doc_id: Optional[str] = None

    @property
    def text(self) -> str:
        return self.context_left + self.mention + self.context_right

    @property
    def title_end(self) -> int:
        return 0

    @property
    def mentions(self) -> List[Mention]:
        start = len(self.context_left)
        return [Mention(start, start + len(self.mention), self.mention, self.type, self.label_id)]

    @property
    def user_data(self) -> Dict[str, str]:
        data = {"doc_id": self.doc_id}
        if self.context_doc_id is not None:
            data["context_doc_id"] = self.context_doc_id
        return data


AnnotatedText = Union[PubTatorDocument, BlinkMention]


@dataclass
class ConversionReport:
    """What a conversion kept, changed and dropped, so that nothing is lost silently."""

    source: str = ""
    docs: int = 0
    mentions: int = 0
    entities: int = 0
    nil_mentions: int = 0
    no_id: int = 0
    not_in_kb: int = 0
    composite_mentions: int = 0
    composite_parts_dropped: int = 0
    skipped_by_type: int = 0
    expanded_spans: int = 0
    overlapping_dropped: int = 0
    unalignable_dropped: int = 0
    sentence_breaks_removed: int = 0
    entities_by_type: Counter = field(default_factory=Counter)

    _DESCRIPTIONS = {
        "docs": "documents",
        "mentions": "gold mentions read",
        "entities": "entities set on docs",
        "nil_mentions": "NIL mentions (no id or not in KB)",
        "no_id": "  of which without an id (-1)",
        "not_in_kb": "  of which with ids the KB lacks",
        "composite_mentions": "composite mentions (several ids)",
        "composite_parts_dropped": "composite id parts not in KB",
        "skipped_by_type": "mentions skipped by type filter",
        "expanded_spans": "spans expanded to token bounds",
        "overlapping_dropped": "overlapping mentions dropped",
        "unalignable_dropped": "mentions with no tokens dropped",
        "sentence_breaks_removed": "sentence breaks removed inside mentions",
    }

    def as_table(self) -> str:
        rows = [(text, f"{getattr(self, name):,}") for name, text in self._DESCRIPTIONS.items()]
        rows += [(f"  entities labelled {label}", f"{count:,}")
                 for label, count in sorted(self.entities_by_type.items())]
        header = f"Conversion of {self.source}\n" if self.source else ""
        return header + wasabi.table(rows, aligns=("l", "r"), max_col=60)

    def __str__(self) -> str:
        return self.as_table()


def _read_mention(doc: PubTatorDocument, fields: List[str], where: str) -> Mention:
    if len(fields) not in (6, 7):
        raise ArboError(
            f"{where}: expected 6 tab-separated fields (PMID, start, end, text, type, ids), "
            f"found {len(fields)}."
        )
    try:
        start, end = int(fields[1]), int(fields[2])
    except ValueError:
        raise ArboError(
            f"{where}: offsets must be integers, found '{fields[1]}' and '{fields[2]}'."
        ) from None
    text = doc.text
    if not 0 <= start < end <= len(text):
        raise ArboError(
            f"{where}: offsets {start}-{end} lie outside the text ({len(text)} characters)."
        )
    # Offsets are authoritative; the annotated string sometimes carries stray white
    # space (NCBI Disease train has one such line).
    if fields[3].strip() != text[start:end]:
        raise ArboError(
            f"{where}: mention text '{fields[3]}' does not match the text at {start}-{end}: "
            f"'{text[start:end]}'."
        )
    # A seventh field (BC5CDR) spells out the parts of a composite mention; ids carry them.
    return Mention(start, end, text[start:end], fields[4], fields[5])


def read_pubtator(path: PathLike) -> Iterator[PubTatorDocument]:
    """Read PubTator documents; relation lines (`PMID CID chem disease`) are skipped."""
    path = Path(path)
    doc: Optional[PubTatorDocument] = None
    has_abstract = False
    for number, line in read_lines(path):
        where = f"{path}:{number}"
        if not line.strip():
            continue
        match = _TEXT_LINE.match(line)
        if match:
            pmid, kind, text = match.groups()
            if kind == "t":
                if doc is not None:
                    yield doc
                doc, has_abstract = PubTatorDocument(pmid, text, ""), False
            elif doc is None or doc.pmid != pmid or has_abstract:
                raise ArboError(f"{where}: abstract line of {pmid} does not follow its title line.")
            else:
                doc.abstract, has_abstract = text, True
            continue
        fields = line.split("\t")
        if doc is None or fields[0] != doc.pmid:
            raise ArboError(f"{where}: annotation for PMID '{fields[0]}' outside that document.")
        if len(fields) == 4 and not fields[1].isdigit():
            continue
        if not has_abstract:
            raise ArboError(f"{where}: mention before the abstract line of {doc.pmid}.")
        doc.mentions.append(_read_mention(doc, fields, where))
    if doc is not None:
        yield doc


def _optional_id(record: Dict, keys: Sequence[str], where: str) -> Optional[str]:
    for key in keys:
        value = record.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise ArboError(f"{where}: field '{key}' must be a string or an integer.")
        return str(value)
    return None


def read_blink_jsonl(path: PathLike) -> Iterator[BlinkMention]:
    """Read BLINK/arboEL mention JSONL: one mention and its context window per line."""
    path = Path(path)
    for number, where, record in read_json_objects(path):
        for key in ("context_left", "mention", "context_right"):
            if not isinstance(record.get(key), str):
                raise ArboError(f"{where}: missing or non-string field '{key}'.")
        if not record["mention"].strip():
            raise ArboError(f"{where}: field 'mention' is empty.")
        label_id = _optional_id(record, ("label_id",), where)
        if label_id is None:
            raise ArboError(f"{where}: missing field 'label_id'.")
        label = record.get("type") or DEFAULT_LABEL
        if not isinstance(label, str):
            raise ArboError(f"{where}: field 'type' must be a string.")
        yield BlinkMention(
            doc_id=_optional_id(record, ("mention_id",), where) or f"{path.name}:{number}",
            context_left=record["context_left"],
            mention=record["mention"],
            context_right=record["context_right"],
            label_id=label_id,
            type=label,
            context_doc_id=_optional_id(record, ("context_doc_id", "doc_id"), where),
        )


def guess_corpus_format(path: PathLike) -> str:
    """`blink` for `.jsonl`/`.json` files or files starting with a JSON object, else `pubtator`."""
    path = Path(path)
    if path.suffix.lower() in (".jsonl", ".json"):
        return "blink"
    for _, line in read_lines(path):
        if line.strip():
            return "blink" if line.lstrip().startswith("{") else "pubtator"
    return "pubtator"


def split_ids(ids_raw: str) -> List[str]:
    """The concept ids of a gold id field: composite ids split, `-1` and blanks removed."""
    parts = (part.strip() for part in _COMPOSITE_SEPARATOR.split(ids_raw))
    return [part for part in parts if part and part != NO_ID]


def _link(ids_raw: str, kb: Optional[BaseEntityStore], report: ConversionReport) -> str:
    parts = split_ids(ids_raw)
    linked = [kb.resolve(part) if kb is not None else normalize_id(part) for part in parts]
    kept = list(dict.fromkeys(i for i in linked if i))
    if len(parts) > 1:
        report.composite_mentions += 1
        report.composite_parts_dropped += len(parts) - sum(1 for i in linked if i)
    if not parts:
        report.no_id += 1
    elif not kept:
        report.not_in_kb += 1
    if not kept:
        report.nil_mentions += 1
        return NIL
    return "|".join(kept)


def _set_sentences(
    doc: Doc, title_end: int, sentencizer: Sentencizer, report: ConversionReport
) -> None:
    sentencizer(doc)
    if title_end:
        for token in doc:
            if token.idx >= title_end and not token.is_space:
                token.is_sent_start = True
                break
            token.is_sent_start = token.i == 0
    for ent in doc.ents:
        for token in ent[1:]:
            if token.is_sent_start:
                token.is_sent_start = False
                report.sentence_breaks_removed += 1


def _make_doc(
    record: AnnotatedText,
    nlp: Language,
    sentencizer: Sentencizer,
    kb: Optional[BaseEntityStore],
    types: Optional[Sequence[str]],
    report: ConversionReport,
) -> Doc:
    doc = nlp.make_doc(record.text)
    spans = []
    for mention in record.mentions:
        report.mentions += 1
        if types is not None and mention.type not in types:
            report.skipped_by_type += 1
            continue
        kb_id = _link(mention.ids_raw, kb, report)
        span = doc.char_span(mention.start, mention.end, label=mention.type, kb_id=kb_id,
                             alignment_mode="expand")
        if span is None:
            report.unalignable_dropped += 1
            continue
        if (span.start_char, span.end_char) != (mention.start, mention.end):
            report.expanded_spans += 1
        spans.append((span, mention.ids_raw))
    kept = filter_spans(span for span, _ in spans)
    report.overlapping_dropped += len(spans) - len(kept)
    doc.ents = kept
    _set_sentences(doc, record.title_end, sentencizer, report)
    raw_ids: Dict[Tuple[int, int], str] = {}
    for span, ids_raw in spans:
        raw_ids.setdefault((span.start, span.end), ids_raw)
    doc.user_data.update(record.user_data)
    doc.user_data["raw_ids"] = [
        [e.start_char, e.end_char, raw_ids[e.start, e.end]] for e in doc.ents
    ]
    report.docs += 1
    report.entities += len(doc.ents)
    report.entities_by_type.update(e.label_ for e in doc.ents)
    return doc


def iter_corpus(
    source: PathLike,
    report: ConversionReport,
    kb: Optional[BaseEntityStore] = None,
    nlp: Optional[Language] = None,
    types: Optional[Sequence[str]] = None,
    fmt: str = "auto",
) -> Iterator[Doc]:
    """Convert lazily, counting into `report` as documents go by."""
    source = Path(source)
    if not source.is_file():
        raise ArboError(f"Corpus file '{source}' does not exist.")
    if fmt not in CORPUS_FORMATS:
        raise ArboError(f"Unknown corpus format '{fmt}'; expected one of {CORPUS_FORMATS}.")
    fmt = guess_corpus_format(source) if fmt == "auto" else fmt
    records: Iterable[AnnotatedText] = (
        read_blink_jsonl(source) if fmt == "blink" else read_pubtator(source)
    )
    nlp = nlp if nlp is not None else spacy.blank("en")
    sentencizer = Sentencizer()
    report.source = str(source)
    for record in records:
        yield _make_doc(record, nlp, sentencizer, kb, types, report)


def convert_corpus(
    source: PathLike,
    kb: Optional[BaseEntityStore] = None,
    nlp: Optional[Language] = None,
    types: Optional[Sequence[str]] = None,
    fmt: str = "auto",
    limit: int = 0,
) -> Tuple[List[Doc], ConversionReport]:
    """Read a PubTator or BLINK JSONL file into gold Docs (`nlp` defaults to a blank "en");
    `limit` keeps only the first N documents (0: all)."""
    report = ConversionReport()
    docs = iter_corpus(source, report, kb=kb, nlp=nlp, types=types, fmt=fmt)
    return list(islice(docs, limit) if limit else docs), report


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


@dataclass(frozen=True)
class NamedCorpus:
    """A corpus known by name: its splits as paths below an assets directory (laid out like
    the data mirror, `$SPACY_ARBO_DATA`) and the mention types kept (None: all)."""

    name: str
    title: str
    train: str
    dev: str
    test: str
    types: Optional[Tuple[str, ...]] = None
    # How the splits differ from the corpus's own, printed with every conversion.
    note: str = ""

    @property
    def splits(self) -> Dict[str, str]:
        return {"train": self.train, "dev": self.dev, "test": self.test}


NAMED_CORPORA: Dict[str, NamedCorpus] = {
    corpus.name: corpus for corpus in (
        NamedCorpus(
            "ncbi", "NCBI Disease",
            train="ncbi_disease/NCBItrainset_corpus.txt",
            dev="ncbi_disease/NCBIdevelopset_corpus.txt",
            test="ncbi_disease/NCBItestset_corpus.txt",
        ),
        NamedCorpus(
            "bc5cdr", "BC5CDR disease mentions",
            train="bc5cdr/CDR_train.PubTator.txt",
            dev="bc5cdr/CDR_dev.PubTator.txt",
            # BC5CDR's public test set is not in the data mirror: evaluate on its dev set.
            test="bc5cdr/CDR_dev.PubTator.txt",
            types=("Disease",),
            note="BC5CDR's test set is not in the data mirror, so the evaluation split (test.spacy) "
                 "is its dev set CDR_dev, the same documents as dev.spacy: model selection and "
                 "tuning on dev see the evaluation documents.",
        ),
    )
}


def named_corpus(name: str) -> NamedCorpus:
    if name not in NAMED_CORPORA:
        raise ArboError(f"Unknown corpus '{name}'; known corpora: {', '.join(NAMED_CORPORA)}.")
    return NAMED_CORPORA[name]


class SplitConversion(NamedTuple):
    split: str
    source: Path
    output: Path
    report: ConversionReport
    # The split this one is a copy of (test of dev when the corpus has no test set), or "".
    same_as: str = ""


def convert_named_corpus(
    name: str,
    assets_dir: PathLike,
    out_dir: PathLike,
    kb: Optional[BaseEntityStore] = None,
    limits: Optional[Dict[str, int]] = None,
) -> List[SplitConversion]:
    """Write `out_dir/{train,dev,test}.spacy` for a named corpus; `limits` maps a split to
    the number of documents kept (0 or missing: all). Every source is checked first, so a
    missing file writes nothing."""
    corpus = named_corpus(name)
    assets_dir, out_dir = Path(assets_dir), Path(out_dir)
    sources = {split: assets_dir / path for split, path in corpus.splits.items()}
    for split, source in sources.items():
        if not source.is_file():
            raise ArboError(f"Corpus '{name}': {split} file '{source}' does not exist.")
    limits = limits or {}
    done: Dict[Tuple[Path, int], SplitConversion] = {}
    results = []
    for split, source in sources.items():
        output = out_dir / f"{split}.spacy"
        limit = limits.get(split, 0)
        earlier = done.get((source, limit))
        if earlier is not None:
            with atomic_path(output) as tmp:
                shutil.copyfile(earlier.output, tmp)
            result = SplitConversion(split, source, output, earlier.report, earlier.split)
        else:
            docs, report = convert_corpus(source, kb=kb, types=corpus.types, fmt="pubtator", limit=limit)
            write_docbin(docs, output)
            result = done[source, limit] = SplitConversion(split, source, output, report)
        results.append(result)
    return results


@registry.readers("spacy_arbo.PubTatorCorpus.v1")
def create_pubtator_reader(
    path: Path,
    kb_path: Optional[Path] = None,
    types: Optional[List[str]] = None,
    limit: int = 0,
) -> Callable[[Language], Iterator[Example]]:
    """Train straight from a PubTator file (the `.spacy` DocBin with spaCy's Corpus is the default).

    `kb_path` is an entity store directory; `limit` caps the examples per pass (0: all).
    """
    kb = open_store(kb_path) if kb_path is not None else None

    def read(nlp: Language) -> Iterator[Example]:
        docs = iter_corpus(path, ConversionReport(), kb=kb, nlp=nlp, types=types, fmt="pubtator")
        for count, gold in enumerate(docs, start=1):
            yield Example(nlp.make_doc(gold.text), gold)
            if count == limit:
                break

    return read


@registry.augmenters("spacy_arbo.one_label.v1")
def create_one_label_augmenter(label: str = "Disease") -> Callable[[Language, Example], Iterator[Example]]:
    """Give every gold entity one label: a recognizer for linking needs mentions, not the
    corpus's mention types (NCBI Disease has four: SpecificDisease, DiseaseClass, ...)."""

    def relabel(nlp: Language, example: Example) -> Iterator[Example]:
        reference = example.reference.copy()
        reference.ents = [Span(reference, e.start, e.end, label=label, kb_id=e.kb_id_) for e in reference.ents]
        yield Example(example.predicted, reference)

    return relabel
