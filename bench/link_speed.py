"""Annotating a corpus with `link`: documents/s with 1 and 2 processes and 1 and 2 Ray workers,
as ratios against the single process of the same run (and whether every run wrote the same
bytes), Ray's overhead at equal workers, and resident memory over a long run.

The speed corpus is `--docs` documents made by cycling the abstracts of `--corpus` (title +
abstract, a PubTator file), each made unique by a leading "Record N :" so that no cache serves a
repeat; the soak corpus is `--soak-docs` of them (100,000 for the real measurement), linked by
one process while the resident memory of this process and its children is sampled every
`--every` seconds against the documents written; its summary compares the memory after
`--compare` documents with the end of the run. Times are `link`'s own (pipeline loading in the
driver aside; worker start-up, Ray's included, counted).

Why: `link` must stream (memory flat whatever the corpus size) and spread over processes or a Ray
cluster; this says what each costs and buys on this machine.

    python bench/link_speed.py PIPELINE [--corpus $SPACY_ARBO_DATA/ncbi_disease/NCBItestset_corpus.txt] \\
        [--docs 2000] [--workers 1 2] [--ray] [--soak-docs 100000] [--compare 10000] [--every 5] \\
        [--output link_speed.json]
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import psutil

from spacy_arbo.annotation import link_corpus
from spacy_arbo.cli import reporting_errors
from spacy_arbo.corpora import read_pubtator

BATCH_SIZE, SHARD_SIZE = 64, 1024


def write_corpus(source: Path, n: int, path: Path) -> None:
    texts = [doc.text for doc in read_pubtator(source)]
    with open(path, "w", encoding="utf8") as handle:
        for i in range(n):
            handle.write(json.dumps({"id": str(i), "text": f"Record {i} : {texts[i % len(texts)]}"}) + "\n")


def rss_mb() -> float:
    """Resident memory of this process and every process below it, in MiB."""
    me = psutil.Process()
    total = 0
    for process in [me, *me.children(recursive=True)]:
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total / 2**20


def timed_run(pipeline: str, corpus: Path, output: Path, **options: Any) -> Dict[str, Any]:
    summary = link_corpus(pipeline, [corpus], output, report=print, progress=False, batch_size=BATCH_SIZE,
                          shard_size=SHARD_SIZE, **options)
    return {"documents": summary.documents, "mentions": summary.mentions, "seconds": round(summary.seconds, 2),
            "docs_per_second": round(summary.documents / summary.seconds, 1),
            "mentions_per_second": round(summary.mentions / summary.seconds, 1)}


def run_name(n: int, ray: bool) -> str:
    return f"{n} Ray worker{'s' * (n > 1)}" if ray else f"{n} process{'es' * (n > 1)}"


def speed(pipeline: str, corpus: Path, folder: Path, workers: List[int], ray: bool) -> Dict[str, Any]:
    runs: Dict[str, Dict[str, Any]] = {}
    outputs = []
    for on_ray in [False] + ([True] if ray else []):
        for n in workers:
            name, output = run_name(n, on_ray), folder / f"{'ray' if on_ray else 'processes'}_{n}.jsonl"
            runs[name] = timed_run(pipeline, corpus, output, n_process=n, ray=on_ray)
            outputs.append(output.read_bytes())
            print(f"{name}: {runs[name]['docs_per_second']:,.1f} docs/s", flush=True)
    base = runs["1 process"]["docs_per_second"]
    for row in runs.values():
        row["ratio_to_1_process"] = round(row["docs_per_second"] / base, 3)
    overhead = {f"{n} workers": round(runs[run_name(n, False)]["docs_per_second"]
                                      / runs[run_name(n, True)]["docs_per_second"], 3) for n in workers} if ray else {}
    return {"runs": runs, "identical_outputs": all(o == outputs[0] for o in outputs),
            "process_over_ray_speed": overhead}


def soak(pipeline: str, corpus: Path, folder: Path, compare: int, every: float) -> Dict[str, Any]:
    output = folder / "soak.pubtator"
    parts = output.with_name(output.name + ".parts")
    samples: List[Dict[str, float]] = []
    done = threading.Event()

    def sample() -> None:
        start = time.perf_counter()
        while not done.wait(every):
            written = len(list(parts.glob("*.jsonl"))) * SHARD_SIZE
            samples.append({"seconds": round(time.perf_counter() - start, 1), "documents": written,
                            "rss_mb": round(rss_mb(), 1)})

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    run = timed_run(pipeline, corpus, output, fmt="pubtator")
    done.set()
    sampler.join()
    after = next((s for s in samples if s["documents"] >= compare), None)
    end = samples[-1] if samples else None
    growth = round(end["rss_mb"] / after["rss_mb"] - 1, 4) if after and end else None
    return {**run, "samples": samples, "rss_mb_after_compare": after and after["rss_mb"],
            "rss_mb_at_end": end and end["rss_mb"], "growth_after_compare": growth, "compare": compare}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline")
    data = Path(os.environ.get("SPACY_ARBO_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--corpus", type=Path, default=data / "ncbi_disease" / "NCBItestset_corpus.txt")
    parser.add_argument("--docs", type=int, default=2000, help="documents of the speed runs")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--ray", action="store_true", help="also on a local Ray runtime of as many workers")
    parser.add_argument("--soak-docs", type=int, default=0, help="documents of the memory run (0: none)")
    parser.add_argument("--compare", type=int, default=10000)
    parser.add_argument("--every", type=float, default=5.0, help="seconds between memory samples")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()

    def run() -> None:
        with tempfile.TemporaryDirectory(prefix="link-speed-") as tmp:
            folder = Path(tmp)
            write_corpus(args.corpus, args.docs, folder / "speed.jsonl")
            figures: Dict[str, Any] = {"pipeline": args.pipeline, "corpus": str(args.corpus), "docs": args.docs,
                                       "batch_size": BATCH_SIZE, "shard_size": SHARD_SIZE, "cpus": os.cpu_count()}
            figures["speed"] = speed(args.pipeline, folder / "speed.jsonl", folder, args.workers, args.ray)
            if args.soak_docs:
                write_corpus(args.corpus, args.soak_docs, folder / "soak.jsonl")
                figures["soak"] = soak(args.pipeline, folder / "soak.jsonl", folder, args.compare, args.every)
        print(json.dumps({k: v for k, v in figures.items() if k != "soak"}, indent=1))
        if "soak" in figures:
            s = figures["soak"]
            print(f"soak: {s['documents']:,} documents, {s['docs_per_second']} docs/s; RSS {s['rss_mb_after_compare']} MiB "
                  f"after {s['compare']:,}, {s['rss_mb_at_end']} MiB at the end ({s['growth_after_compare']:+.1%})")
        if args.output:
            args.output.write_text(json.dumps(figures, indent=1) + "\n")

    sys.exit(reporting_errors(run))


if __name__ == "__main__":
    main()
