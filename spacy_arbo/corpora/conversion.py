"""Gold corpora (PubTator, BLINK/arboEL mention JSONL) converted into spaCy Docs.

Every gold mention becomes an entity in `doc.ents` whose `kb_id_` is the gold id as
the KB spells it (`NIL` when it has none or the KB lacks it), inside sentence
boundaries that never cut a mention, so that linkers can read context sentence by sentence.
"""
from itertools import islice
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import spacy
from spacy.language import Language
from spacy.pipeline import Sentencizer
from spacy.tokens import Doc
from spacy.util import filter_spans

from ..component_settings import check_at_least
from ..kb.entities import NIL, normalize_id
from ..kb.store import BaseEntityStore
from ..util import ArboError, PathLike, read_lines
from .blink import BlinkMention, read_blink_jsonl
from .conversion_report import ConversionReport
from .gold_mention import parse_gold_ids
from .pubtator import PubTatorDocument, read_pubtator

CORPUS_FORMATS = ("auto", "pubtator", "blink")

AnnotatedText = Union[PubTatorDocument, BlinkMention]

# One KB for every mention, or one per mention type (a corpus of chemicals and diseases whose
# ids come from two vocabularies, as a pipeline with a linker per label links them).
KBs = Union[BaseEntityStore, Mapping[str, BaseEntityStore], None]


def guess_corpus_format(path: PathLike) -> str:
    """`blink` for `.jsonl`/`.json` files or files starting with a JSON object, else `pubtator`."""
    path = Path(path)
    if path.suffix.lower() in (".jsonl", ".json"):
        return "blink"
    for _, line in read_lines(path):
        if line.strip():
            return "blink" if line.lstrip().startswith("{") else "pubtator"
    return "pubtator"


def _link(ids_raw: str, kb: Optional[BaseEntityStore], report: ConversionReport) -> str:
    parts = parse_gold_ids(ids_raw)
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
    kb: KBs,
    types: Optional[Sequence[str]],
    report: ConversionReport,
) -> Doc:
    doc = nlp.make_doc(record.text)
    spans = []
    for mention in record.mentions:
        report.mentions += 1
        report.mention_types[mention.type] += 1
        if types is not None and mention.type not in types:
            report.skipped_by_type += 1
            continue
        kb_id = _link(mention.ids_raw, kb.get(mention.type) if isinstance(kb, Mapping) else kb, report)
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
    kb: KBs = None,
    nlp: Optional[Language] = None,
    types: Optional[Sequence[str]] = None,
    fmt: str = "auto",
) -> Iterator[Doc]:
    """Convert lazily, counting into `report` as documents go by. With a KB per type, the
    types kept are those with a KB unless `types` says which (each must have one)."""
    source = Path(source)
    if isinstance(kb, Mapping):
        types = _types_with_kb(kb, types)
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


def _types_with_kb(kb: Mapping[str, BaseEntityStore], types: Optional[Sequence[str]]) -> List[str]:
    if types is None:
        return list(kb)
    lacking = [t for t in types if t not in kb]
    if lacking:
        raise ArboError(f"--types {', '.join(lacking)}: no KB given for that type; the KBs are given for "
                        f"{', '.join(kb)} (--kb TYPE=DIR ...).")
    return list(types)


def convert_corpus(
    source: PathLike,
    kb: KBs = None,
    nlp: Optional[Language] = None,
    types: Optional[Sequence[str]] = None,
    fmt: str = "auto",
    limit: int = 0,
) -> Tuple[List[Doc], ConversionReport]:
    """Read a PubTator or BLINK JSONL file into gold Docs (`nlp` defaults to a blank "en");
    `limit` keeps only the first N documents (0: all); `kb` is one KB or one per type. A file
    without documents, and `types` that no mention has (NCBI Disease's are SpecificDisease,
    DiseaseClass, Modifier and CompositeMention), are errors: either would write a corpus with
    nothing in it."""
    check_at_least(0, limit=limit)
    report = ConversionReport()
    docs = iter_corpus(source, report, kb=kb, nlp=nlp, types=types, fmt=fmt)
    docs = list(islice(docs, limit) if limit else docs)
    if not docs:
        raise ArboError(f"{source}: no documents to convert (an empty file?).")
    types = _types_with_kb(kb, types) if isinstance(kb, Mapping) else types
    missing = [t for t in types or () if t not in report.mention_types]
    if missing:
        present = ", ".join(f"{t} ({n:,})" for t, n in report.mention_types.most_common()) or "none"
        where = f" in the first {len(docs):,} documents (--limit)" if limit and len(docs) == limit else ""
        raise ArboError(f"{source}: no mention{where} has type {', '.join(missing)} (--types); "
                        f"its mention types{where}: {present}.")
    return docs, report
