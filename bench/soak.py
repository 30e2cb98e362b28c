"""Resident memory of a linking pipeline over a long `nlp.pipe` stream, with one and with two
processes: a soak run.

The stream is the sentences of real corpora (their gold mentions as the entities to link, ids
removed), each made unique by a leading "Record N :" so that no cache can serve a repeat, cycled
until `--docs` documents have passed. Every `--every` documents the resident memory of this process
and of its worker processes (read from /proc) is sampled; the summary compares it after
`--compare` documents with the end of the run. With `--trim`, each sample also gives this process's memory
after glibc's `malloc_trim` (workers are not trimmed): what stays then is held, not merely kept
by the allocator.

Why: a service links documents for weeks; any cache that grows with the stream (mention inputs,
vectors, memory lookups) shows up here as resident memory that climbs instead of levelling off.

    python bench/soak.py training/ncbi/final --corpora corpus/ncbi/train.spacy corpus/ncbi/dev.spacy \\
        corpus/ncbi/test.spacy [--docs 100000] [--every 5000] [--compare 10000] [--n-process 1 2] \\
        [--batch-size 256] [--trim] [--output soak.json]
"""
import argparse
import ctypes
import json
import os
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import spacy
from spacy.language import Language
from spacy.tokens import Doc, Span

from spacy_arbo.corpora import read_docbin
from spacy_arbo.kb.entities import NIL

# Workers fork after the tokenizer has run; its threads would be turned off there anyway.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def rss_mb(pid: int) -> float:
    """Resident memory of `pid` and every process below it, in MiB."""
    children: Dict[int, List[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(name))
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        total += int(fields.get("VmRSS", "0 kB").split()[0]) / 1024
        stack.extend(children.get(current, []))
    return total


def sentences(nlp: Language, corpora: List[Path]) -> List[Doc]:
    """The corpora's sentences as docs holding their gold mentions, kb ids removed."""
    splitter = spacy.blank("en")
    splitter.add_pipe("sentencizer")
    found = []
    for path in corpora:
        for doc in splitter.pipe(read_docbin(path, nlp.vocab)):
            for sent in doc.sents:
                piece = sent.as_doc()
                piece.ents = [Span(piece, e.start, e.end, label=e.label_) for e in piece.ents]
                found.append(piece)
    if not found:
        raise SystemExit(f"No sentences in {', '.join(map(str, corpora))}.")
    return found


def stream(nlp: Language, pieces: List[Doc], total: int) -> Iterator[Doc]:
    for number in range(total):
        piece = pieces[number % len(pieces)]
        words = ["Record", str(number), ":", *(t.text for t in piece)]
        spaces = [True, False, True, *(bool(t.whitespace_) for t in piece)]
        doc = Doc(nlp.vocab, words=words, spaces=spaces)
        doc.ents = [Span(doc, e.start + 3, e.end + 3, label=e.label_) for e in piece.ents]
        yield doc


def sample(pid: int, trim: bool) -> Dict[str, float]:
    found = {"rss_mb": round(rss_mb(pid), 1)}
    if trim:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        found["rss_trimmed_mb"] = round(rss_mb(pid), 1)
    return found


def soak(nlp: Language, pieces: List[Doc], total: int, every: int, n_process: int, batch_size: int,
         trim: bool) -> Dict[str, Any]:
    pid = os.getpid()
    samples = [{"docs": 0, **sample(pid, trim), "seconds": 0.0}]
    linked = mentions = 0
    started = time.perf_counter()
    for done, doc in enumerate(nlp.pipe(stream(nlp, pieces, total), n_process=n_process, batch_size=batch_size), 1):
        mentions += len(doc.ents)
        linked += sum(1 for ent in doc.ents if ent.kb_id_ not in ("", NIL))
        if done % every == 0 or done == total:
            samples.append({"docs": done, **sample(pid, trim), "seconds": round(time.perf_counter() - started, 1)})
            print(json.dumps({"n_process": n_process, **samples[-1]}), flush=True)
    return {"n_process": n_process, "docs": total, "mentions": mentions, "linked": linked,
            "docs_per_second": round(total / (time.perf_counter() - started), 1), "samples": samples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline")
    parser.add_argument("--corpora", nargs="+", type=Path, required=True, help="DocBins with gold mentions")
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=5_000)
    parser.add_argument("--compare", type=int, default=10_000, help="the sample the end is compared with")
    parser.add_argument("--n-process", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--trim", action="store_true", help="also sample memory after malloc_trim (glibc)")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    if args.compare % args.every or not 0 < args.compare <= args.docs:
        raise SystemExit("--compare must be a multiple of --every, at most --docs.")
    nlp = spacy.load(args.pipeline)
    pieces = sentences(nlp, args.corpora)
    print(f"{len(pieces):,} sentences, {sum(len(p.ents) for p in pieces):,} mentions; "
          f"{args.docs:,} documents a run", flush=True)
    runs = []
    for n_process in args.n_process:
        run = soak(nlp, pieces, args.docs, args.every, n_process, args.batch_size, args.trim)
        by_docs = {sample["docs"]: sample["rss_mb"] for sample in run["samples"]}
        run["rss_end_over_compare"] = round(by_docs[args.docs] / by_docs[args.compare], 3)
        runs.append(run)
        print(f"n_process {n_process}: {run['docs_per_second']} docs/s; RSS {by_docs[args.compare]:,.0f} MiB after "
              f"{args.compare:,} docs, {by_docs[args.docs]:,.0f} after {args.docs:,} "
              f"({run['rss_end_over_compare']:.3f}x)", flush=True)
    if args.output:
        result = {"pipeline": args.pipeline, "corpora": [str(c) for c in args.corpora], "sentences": len(pieces),
                  "compare": args.compare, "runs": runs}
        args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf8")
        print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()
