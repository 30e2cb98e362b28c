"""One corpus through a pipeline, from input files to the output file: the inputs and the
pipeline checked before any work, the good records cut into shards, the shards not yet written
linked here (`nlp.pipe`, spaCy's `n_process` for several processes) or on Ray workers, and the
output put together from the shards. Every way of running sees the same batches (a shard is a
whole number of batches), so links that depend on the batch (clustering) are the same too."""
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, List, Optional, Sequence

from spacy.language import Language
from spacy.tokens import Doc
from tqdm import tqdm

from ..kb.entities import NIL
from ..pipeline.common.mention_finders import mention_finders
from ..pipeline_loading import load_pipeline
from ..ranges import check_range
from ..retrieval.sharded_encoding import import_ray
from ..util import ArboError, PathLike
from .formats import MENTION_SOURCES, OUTPUT_FORMATS
from .linked import LinkedDocuments
from .readers import import_bioc, input_files, read_records
from .records import BadRecords, Record, within_max_length
from .shards import RunRefused, Shard, ShardedOutput, chunks
from .writers import LinkedDocument


@dataclass
class Summary:
    """What a run did: documents and mentions linked by it, shards an earlier run had written."""

    documents: int = 0
    mentions: int = 0
    nil: int = 0
    review: int = 0
    shards: int = 0
    kept_shards: int = 0
    bad_records: int = 0
    warnings: int = 0
    seconds: float = 0.0
    input_mentions: Optional[Counter] = None

    def add(self, linked: Sequence[LinkedDocument]) -> None:
        mentions = [m for document in linked for m in document["mentions"]]
        self.documents += len(linked)
        self.mentions += len(mentions)
        self.nil += sum(m["kb_id"] == NIL for m in mentions)
        self.review += sum(bool(m.get("review")) for m in mentions)
        if self.input_mentions is not None:
            self.input_mentions.update(input_mention_counts(linked))


    def line(self, output: PathLike) -> str:
        rate = f", {self.documents / self.seconds:,.1f} documents/s" if self.seconds > 0 and self.documents else ""
        kept = f" ({self.kept_shards} of {self.shards} shards kept from an earlier run)" if self.kept_shards else ""
        review = f", {self.review:,} for review" if self.review else ""
        warnings = f", {self.warnings:,} warnings" if self.warnings else ""
        given = ""
        if self.input_mentions is not None:
            c = self.input_mentions
            given = (f"; {c['input']:,} of them the input's ({c['aligned']:,} aligned to token boundaries, "
                     f"{c['overlapping']:,} overlapping another (linked in copies of their document), "
                     f"{c['on_no_token']:,} on no token (NIL))")
        return (f"linked {self.documents:,} documents{kept}: {self.mentions:,} mentions ({self.nil:,} NIL{review})"
                f"{given}{rate}; {self.bad_records:,} bad records skipped{warnings}; wrote {output}")


def input_mention_counts(linked: Sequence[LinkedDocument]) -> Counter:
    """How the input's mentions were placed: all, aligned to tokens, overlapping another, on no token."""
    counts: Counter = Counter()
    for document in linked:
        given = [m for m in document["mentions"] if m.get("source", "input") == "input"]
        counts["input"] += len(given)
        counts["aligned"] += sum(bool(m.get("linked_span")) for m in given)
        counts["on_no_token"] += sum("linked_span" in m and m["linked_span"] is None for m in given)
        counts["overlapping"] += sum(any(o is not m and o["start"] < m["end"] and m["start"] < o["end"]
                                         for o in given) for m in given)
    return counts


class Progress:
    """tqdm's documents/s, with mentions/s beside it."""

    def __init__(self, enabled: bool) -> None:
        # disable=None: a bar only on a terminal.
        self.bar = tqdm(unit=" docs", desc="linking", disable=None if enabled else True, file=sys.stderr)
        self.mentions, self.start = 0, time.perf_counter()

    def update(self, linked: Sequence[LinkedDocument]) -> None:
        self.mentions += sum(len(document["mentions"]) for document in linked)
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        self.bar.set_postfix_str(f"{self.mentions / elapsed:,.0f} mentions/s", refresh=False)
        self.bar.update(len(linked))

    def close(self) -> None:
        self.bar.close()


class ShardPlan:
    """The shards of a record stream, those already written skipped (and counted)."""

    def __init__(self, records: Iterable[Record], shard_size: int, output: ShardedOutput) -> None:
        self.records, self.shard_size, self.output = records, shard_size, output
        self.n_shards = self.kept = 0

    def __iter__(self) -> Iterator[Shard]:
        for index, shard in enumerate(chunks(self.records, self.shard_size)):
            self.n_shards = index + 1
            if self.output.done(index):
                self.kept += 1
            else:
                yield index, shard


def link_here(nlp: Language, shards: Iterable[Shard], output: ShardedOutput, documents: LinkedDocuments,
              n_process: int, batch_size: int, on_shard: Callable[[List[LinkedDocument]], None]) -> None:
    """The shards' records through one `nlp.pipe` stream (`n_process` processes), each shard
    written as soon as its last document is back."""
    stream = ((documents.input(record), (index, record)) for index, records in shards for record in records)
    current: Optional[int] = None
    records: List[Record] = []
    docs: List[Doc] = []

    def flush() -> None:
        linked = documents.documents(records, docs)
        output.write(current, linked, docs)
        on_shard(linked)
        records.clear()
        docs.clear()

    for doc, (index, record) in nlp.pipe(stream, as_tuples=True, n_process=n_process, batch_size=batch_size,
                                         disable=documents.disabled):
        if index != current and records:
            flush()
        current = index
        records.append(record)
        docs.append(doc)
    if records:
        flush()


def check_output(output: Path, files: Sequence[Path]) -> None:
    """OUT replaces what is there at the end: a folder would be lost whole, an input would be read
    by a rerun as the documents to link."""
    if output.is_dir():
        raise ArboError(f"{output}: a folder; --output takes the path of the file to write.")
    if output.exists() and any(output.samefile(path) for path in files):
        raise ArboError(f"{output}: one of the inputs; write the output to another file.")


def link_corpus(pipeline: PathLike, inputs: Sequence[PathLike], output: PathLike, *, fmt: str = "jsonl",
                input_format: str = "auto", n_process: int = 1, batch_size: int = 64, shard_size: int = 1024,
                ray: bool = False, ray_address: Optional[str] = None, strict: bool = False,
                min_confidence: Optional[float] = None, candidates: int = 5, mentions: str = "pipeline",
                report: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
                progress: bool = True) -> Summary:
    """Link the documents of `inputs` with the pipeline saved at `pipeline` into `output`
    (`fmt`: jsonl, pubtator, bioc, bioc-json or spacy); see docs/annotate.md. With `ray`,
    `n_process` Ray workers (on the cluster at `ray_address`, else a local runtime) link the shards.
    Bad records go to `report` and are counted; `strict` makes the first one an error. `mentions`:
    link the pipeline's mentions, the input's own ("input"), or both (`input_mentions`)."""
    if fmt not in OUTPUT_FORMATS:
        raise ArboError(f"Unknown output format '{fmt}'; choose one of {', '.join(OUTPUT_FORMATS)}.")
    if mentions not in MENTION_SOURCES:
        raise ArboError(f"Unknown mention source '{mentions}'; choose one of {', '.join(MENTION_SOURCES)}.")
    if n_process < 1 or batch_size < 1 or shard_size < 1:
        raise ArboError(f"n_process, batch_size and shard_size must be >= 1; got {n_process}, {batch_size}, {shard_size}.")
    check_range("min_confidence", min_confidence, 0, 1, allow_none=True)
    if fmt == "spacy" and min_confidence is not None:
        raise ArboError("--min-confidence marks mentions for review in jsonl, pubtator and bioc output; .spacy "
                        "keeps the pipeline's docs as they are (read span._.kb_confidence there).")
    files = input_files(inputs, input_format)
    check_output(Path(output), [path for path, _ in files])
    if fmt in ("bioc", "bioc-json") or any(kind.startswith("bioc") for _, kind in files):
        import_bioc()
    if ray:
        import_ray("Linking on Ray")
    nlp = load_pipeline(pipeline)
    if mentions == "pipeline" and not mention_finders(nlp):
        raise ArboError(f"{pipeline}: no component finds mentions (sets doc.ents), so nothing would be linked; "
                        "add one: python -m spacy_arbo add-ner (a trained recognizer) or add-kb-finder (the KB's names), "
                        "or link the input's own mentions with --mentions input.")
    documents = LinkedDocuments(nlp, candidates, min_confidence, mentions)
    shard_size = -(-shard_size // batch_size) * batch_size  # whole batches: every run sees the same ones
    job = {"pipeline": str(Path(pipeline).resolve()), "inputs": [[str(p.resolve()), kind] for p, kind in files],
           "format": fmt, "batch_size": batch_size, "shard_size": shard_size, "min_confidence": min_confidence,
           "candidates": candidates, "mentions": mentions}
    shards = ShardedOutput(output, fmt, job)
    bad = BadRecords(report, strict)
    plan = ShardPlan(within_max_length(read_records(files, bad), nlp.max_length, bad), shard_size, shards)
    summary = Summary(input_mentions=Counter() if mentions != "pipeline" else None)
    bar, start = Progress(progress), time.perf_counter()

    def on_shard(linked: List[LinkedDocument]) -> None:
        summary.add(linked)
        bar.update(linked)

    try:
        if ray:
            from .ray_runner import link_on_ray

            link_on_ray(pipeline, plan, shards, documents, workers=n_process, address=ray_address,
                        batch_size=batch_size, on_shard=on_shard)
        else:
            link_here(nlp, plan, shards, documents, n_process, batch_size, on_shard)
    except BaseException as err:
        shards.discard(unless_a_shard=not isinstance(err, RunRefused))
        raise
    finally:
        bar.close()
    summary.seconds, summary.shards, summary.kept_shards = time.perf_counter() - start, plan.n_shards, plan.kept
    summary.bad_records, summary.warnings = bad.count, bad.warnings
    if not plan.n_shards:
        shards.discard()
        raise ArboError(f"No document could be read from {', '.join(map(str, inputs))} ({bad.count} bad records).")
    if summary.input_mentions is not None and not summary.input_mentions["input"] and not plan.kept:
        what = (f"none of the {summary.documents:,} documents of {', '.join(map(str, inputs))} holds a mention "
                "(PubTator annotation lines, BioC annotations, a JSONL 'mentions' list)")
        if mentions == "input":
            shards.discard()
            raise ArboError(f"--mentions input: {what}, so nothing would be linked; link the texts with the "
                            "pipeline's recognizer (leave --mentions out).")
        report(f"warning: --mentions both: {what}; only the pipeline's mentions were linked.")
    shards.finish(plan.n_shards)
    return summary
