"""A 1M- or 10M-entity index on one machine: build time, memory, latency and recall.

Entity vectors are synthetic and clustered like encoder outputs (names of one disease
family share a coarse centre, synonyms of one concept a fine one), generated chunk by
chunk so that the float32 matrix of all vectors never exists: the index is built with
`FaissIndex.build_from_chunks`, saved, then served by a fresh process that only loads
it, as a pipeline would. Queries are new draws around the fine centres (mentions of KB
concepts); recall@k is against exact search over all vectors, computed chunk by chunk in
the same pass, whose time per query is the baseline of the latency ratios.

With `--real PIPELINE` the vectors are real instead: that pipeline's entity tower over its
KB's names and aliases, then word n-grams of corpora; the queries are its mention vectors
of one corpus's gold mentions, and nprobe is tuned on those of other corpus files (pooled, each
also on the recall curve; every train and dev set there is: one dev set alone can be easier
than the mentions the index will serve). `--vectors-cache DIR` keeps the encoded vectors, so that a run
with other codes or tuning corpora compares on the same vectors without encoding again.

Why: `index.kind = "auto"` must serve KBs of millions of entities within one machine's
memory at a recall target; this measures that without a real KB of that size.

    python bench/scale_bench.py --n 1000000 --json bench/results/scale/index_1m.json
    python bench/scale_bench.py --n 10000000 --json bench/results/scale/index_10m.json
    python bench/scale_bench.py --n 1000000 --real training/ncbi/final --strings-from corpus/*/train.spacy \
        --measure-on corpus/ncbi/test.spacy --tune-on corpus/ncbi/train.spacy corpus/ncbi/dev.spacy \
        corpus/bc5cdr/train.spacy corpus/bc5cdr/dev.spacy
"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import faiss
import numpy as np

from spacy_arbo.encoders.templates import EntityInput
from spacy_arbo.retrieval.faiss_index import INDEX_FILE, MAX_DEFAULT_NLIST, MAX_POINTS_PER_CENTROID, SQ_TYPES, \
    ExactTopK, FaissIndex
from spacy_arbo.retrieval.faiss_recall import recall_queries
from spacy_arbo.util import atomic_path

CHUNK = 200_000
# ann-benchmarks' tolerance: a found vector scoring within this of the exact k-th counts as
# found, since near-duplicate strings crowd the k-th place and which of them is k-th is noise.
NEAR_TIE = 1e-3
COARSE_CENTRES = 1024
# One fine centre (a concept with its synonyms) per this many vectors.
VECTORS_PER_CONCEPT = 50


class SyntheticVectors:
    """Deterministic clustered unit vectors: row block [start, stop) is always the same."""

    def __init__(self, n: int, dim: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.n, self.dim, self.seed = n, dim, seed
        self.coarse = _unit(rng.standard_normal((COARSE_CENTRES, dim), dtype=np.float32))
        self.fine = _unit(rng.standard_normal((max(1, n // VECTORS_PER_CONCEPT), dim), dtype=np.float32))

    def draw(self, rng: np.random.Generator, count: int, noise: float = 0.5) -> np.ndarray:
        concept = rng.integers(0, len(self.fine), count)
        jitter = _unit(rng.standard_normal((count, self.dim), dtype=np.float32))
        return _unit(0.6 * self.coarse[concept % COARSE_CENTRES] + 0.6 * self.fine[concept] + noise * jitter)

    def block(self, start: int, stop: int) -> np.ndarray:
        return self.draw(np.random.default_rng([self.seed, 1, start]), stop - start)

    def sample(self, count: int, stream: int) -> np.ndarray:
        return self.draw(np.random.default_rng([self.seed, 2, stream]), count)

    def training_sample(self, count: int) -> np.ndarray:
        return self.sample(count, stream=0)

    def queries(self, count: int) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """(measured queries, tuning queries: None, the index's own sampled vectors)."""
        return self.sample(count, stream=1), None

    def tuning_sets(self) -> Dict[str, np.ndarray]:
        return {}

    def describe(self) -> Dict[str, Any]:
        return {"vectors": "synthetic"}


class EncodedTexts:
    """Real vectors: a trained linker's entity tower over real strings (the KB's names and
    aliases as its index holds them, then the word n-grams of corpora, longest last), queried
    with its mention tower's vectors of gold mentions (one corpus measures, others tune)."""

    def __init__(self, pipeline: str, n: int, corpora: List[Path], measure: Path, tune: List[Path],
                 cache: Optional[Path], folder: Path, seed: int) -> None:
        import spacy

        from spacy_arbo.corpora import read_docbin

        nlp = spacy.load(pipeline)
        self.linker = next(proc for _, proc in nlp.pipeline if hasattr(proc, "encode_mentions"))
        self.n, self.seed = n, seed
        self.corpora = {"strings": [str(c) for c in corpora], "measure": str(measure),
                        "tune": [str(path) for path in tune]}
        source = {"pipeline": str(pipeline), "n": n, "strings": self.corpora["strings"]}
        if cache is not None and (cache / "meta.json").exists():
            meta = json.loads((cache / "meta.json").read_text())
            if meta["source"] != source:
                raise SystemExit(f"--vectors-cache {cache} holds the vectors of {meta['source']}, not of {source}.")
            self.matrix = np.load(cache / "vectors.npy", mmap_mode="r")
            self.sources, self.encode_s, self.cached = meta["sources"], meta["encode_s"], True
        else:
            self.encode(nlp, corpora, folder)
            self.cached = False
            if cache is not None:
                with atomic_path(cache) as tmp:
                    tmp.mkdir()
                    shutil.copyfile(folder / "vectors.npy", tmp / "vectors.npy")
                    (tmp / "meta.json").write_text(json.dumps(
                        {"source": source, "sources": self.sources, "encode_s": self.encode_s}))
        self.mentions = {"measure": self.mention_vectors(read_docbin(measure, nlp.vocab)),
                         "tune": [self.mention_vectors(read_docbin(path, nlp.vocab)) for path in tune]}

    def encode(self, nlp, corpora: List[Path], folder: Path) -> None:
        from spacy_arbo.corpora import read_docbin

        n = self.n
        kb_texts = self.linker.retriever.entity_texts()[0]
        strings = dict.fromkeys(text.title for text in kb_texts)
        docs = [doc for path in corpora for doc in read_docbin(path, nlp.vocab)]
        for width in range(1, 7):
            for doc in docs:
                for start in range(len(doc) - width + 1):
                    span = doc[start:start + width]
                    if any(token.is_alpha for token in span):
                        strings.setdefault(span.text)
            if len(strings) >= n:
                break
        if len(strings) < n:
            raise SystemExit(f"The KB and the corpora give {len(strings):,} distinct strings; --n asks for {n:,}.")
        texts = (kb_texts + [EntityInput(text, "") for text in list(strings)[len(kb_texts):n]])[:n]
        self.sources = {"kb_texts": min(n, len(kb_texts)), "ngrams": max(0, n - len(kb_texts)),
                        "max_ngram_words": width}
        started = time.perf_counter()
        self.matrix = np.lib.format.open_memmap(folder / "vectors.npy", mode="w+", dtype=np.float32,
                                                shape=(n, self.linker.encoder.dim))
        for start in range(0, n, CHUNK):
            self.matrix[start:start + CHUNK] = self.linker.encoder.encode_entities(texts[start:start + CHUNK])
            print(f"\r  encoded {min(n, start + CHUNK):,} / {n:,}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        self.matrix.flush()
        self.encode_s = round(time.perf_counter() - started, 1)

    def mention_vectors(self, docs) -> np.ndarray:
        spans = [ent for doc in docs for ent in doc.ents]
        return self.linker.encode_mentions(self.linker.mention_inputs(spans)).astype(np.float32)

    def block(self, start: int, stop: int) -> np.ndarray:
        return np.ascontiguousarray(self.matrix[start:stop])

    def training_sample(self, count: int) -> np.ndarray:
        rows = np.sort(np.random.default_rng([self.seed, 0]).choice(self.n, size=min(count, self.n), replace=False))
        return np.ascontiguousarray(self.matrix[rows])

    def queries(self, count: int) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        return self.mentions["measure"], np.vstack(self.mentions["tune"])

    def tuning_sets(self) -> Dict[str, np.ndarray]:
        """Each tuning corpus's queries apart, when several are pooled to tune on."""
        if len(self.mentions["tune"]) == 1:
            return {}
        return {f"tuning queries: {Path(path).parent.name}/{Path(path).stem}": queries
                for path, queries in zip(self.corpora["tune"], self.mentions["tune"])}

    def describe(self) -> Dict[str, Any]:
        return {"vectors": "real", **self.sources, "encode_s": self.encode_s, "vectors_from_cache": self.cached,
                **self.corpora,
                "queries_measure": len(self.mentions["measure"]),
                "queries_tune": sum(len(queries) for queries in self.mentions["tune"])}


def _unit(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def rss_gb() -> Tuple[float, float]:
    """(current, peak) resident memory of this process in GB; the peak (VmHWM) starts
    afresh in a new process, unlike getrusage's, which a child inherits."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return int(status["VmRSS"].split()[0]) / 2 ** 20, int(status["VmHWM"].split()[0]) / 2 ** 20


def build(args: argparse.Namespace, out: Path) -> Dict[str, Any]:
    data = SyntheticVectors(args.n, args.dim, args.seed) if args.real is None else EncodedTexts(
        args.real, args.n, args.strings_from, args.measure_on, args.tune_on, args.vectors_cache, out, args.seed)
    queries, tuning = data.queries(args.queries)
    exact = ExactTopK(queries, args.k)
    timings = {"generate": 0.0, "exact": 0.0}

    def chunks() -> Iterator[Tuple[np.ndarray, Optional[np.ndarray]]]:
        for start in range(0, args.n, CHUNK):
            stop = min(args.n, start + CHUNK)
            began = time.perf_counter()
            block = data.block(start, stop)
            timings["generate"] += time.perf_counter() - began
            began = time.perf_counter()
            exact.update(block, np.arange(start, stop, dtype=np.int64))
            timings["exact"] += time.perf_counter() - began
            for probe in others.values():
                probe.update(block, np.arange(start, stop, dtype=np.int64))
            yield block, None
            print(f"\r  added {stop:,} / {args.n:,}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)

    sample = data.training_sample(min(args.n, MAX_DEFAULT_NLIST * MAX_POINTS_PER_CENTROID))
    # Recall against exact search for other queries too: the indexed vectors the index tunes
    # on by default, and the tuning queries where there are some.
    # Several tuning sets are each probed; their pooled recall is the mean over their queries.
    others = {"indexed vectors": ExactTopK(recall_queries(sample, 0), args.k)}
    tuning_sets = data.tuning_sets()
    if tuning_sets:
        others.update({name: ExactTopK(mentions, args.k) for name, mentions in tuning_sets.items()})
    elif tuning is not None:
        others["tuning queries"] = ExactTopK(tuning, args.k)
    began = time.perf_counter()
    index = FaissIndex.build_from_chunks(chunks(), count=args.n, sample=sample, kind=args.kind,
                                         sq_type=args.sq_type, recall_target=args.recall_target, recall_k=args.k,
                                         tuning_queries=tuning, use_gpu=False)
    total = time.perf_counter() - began
    index.to_disk(out / "index")
    np.savez(out / "exact.npz", queries=queries, ids=exact.pool_ids, scores=exact.pool_scores, k=args.k)
    curve = nprobe_curve(out, exact, others, args.k, pooled=list(tuning_sets)) if index.kind.startswith("ivf") \
        else None
    return {
        "n": args.n, "dim": index.dim, **data.describe(), "kind": index.kind, "params": index.params,
        "nprobe_curve": curve,
        "build_s": round(total - timings["generate"] - timings["exact"], 1),
        "generate_s": round(timings["generate"], 1),
        "queries": len(queries), "exact_ms_per_query": round(timings["exact"] * 1000 / len(queries), 2),
        "build_peak_rss_gb": round(rss_gb()[1], 2),
        "index_gb": round((out / "index" / INDEX_FILE).stat().st_size / 1e9, 3),
    }


def nprobe_curve(path: Path, measured: ExactTopK, others: Dict[str, ExactTopK], k: int,
                 pooled: List[str]) -> List[Dict[str, Any]]:
    """Recall@k against exact search of each kind of query at every power-of-two nprobe; for
    the measured queries also counting scores within NEAR_TIE of the k-th as found, and for
    the `pooled` probes (tuning sets) also their mean over all their queries."""
    index = faiss.read_index(str(path / "index" / INDEX_FILE))
    ivf = faiss.extract_index_ivf(index)
    curve = []
    for nprobe in sorted({min(2 ** i, ivf.nlist) for i in range(ivf.nlist.bit_length() + 1)}):
        ivf.nprobe = nprobe
        found = index.search(measured.queries, k)[1]
        recalls = {name: probe.recall(index.search(probe.queries, k)[1]) for name, probe in others.items()}
        if pooled:
            recalls["tuning queries"] = sum(recalls[name] * len(others[name].queries) for name in pooled) / \
                sum(len(others[name].queries) for name in pooled)
        curve.append({"nprobe": nprobe, "measured queries": round(measured.recall(found), 4),
                      f"measured queries, within {NEAR_TIE}": round(measured.recall(found, NEAR_TIE), 4),
                      **{name: round(recall, 4) for name, recall in recalls.items()}})
    return curve


def serve(path: Path, batch: int) -> Dict[str, Any]:
    """Load the saved index alone and time searches, as a linking process would."""
    before = rss_gb()[0]
    began = time.perf_counter()
    index = FaissIndex.from_disk(path / "index", use_gpu=False)
    load = time.perf_counter() - began
    reference = np.load(path / "exact.npz")
    queries, k = reference["queries"], int(reference["k"])
    index.search(queries[:batch], k)  # warm up
    single = []
    for query in queries[:1000]:
        began = time.perf_counter()
        index.search(query[None], k)
        single.append((time.perf_counter() - began) * 1000)
    batched, found = [], []
    for start in range(0, len(queries), batch):
        began = time.perf_counter()
        found.append(index.search(queries[start:start + batch], k)[1])
        batched.append((time.perf_counter() - began) * 1000 / len(queries[start:start + batch]))
    exact = ExactTopK(queries, k)
    exact.pool_ids, exact.pool_scores = reference["ids"], reference["scores"]
    found = np.vstack(found)
    current, peak = rss_gb()
    return {
        "load_s": round(load, 1), "serve_rss_gb": round(current, 2), "serve_peak_rss_gb": round(peak, 2),
        "python_rss_gb": round(before, 2),
        "single_p50_ms": round(float(np.percentile(single, 50)), 3),
        "single_p99_ms": round(float(np.percentile(single, 99)), 3),
        "batched_p50_ms": round(float(np.percentile(batched, 50)), 3),
        "batched_p99_ms": round(float(np.percentile(batched, 99)), 3),
        f"recall@{k}": round(exact.recall(found), 4),
        f"recall@{k} within {NEAR_TIE}": round(exact.recall(found, NEAR_TIE), 4),
        "batch": batch, "threads": faiss.omp_get_max_threads(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="entity vectors")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--kind", default="auto")
    parser.add_argument("--sq-type", default="8bit", choices=sorted(SQ_TYPES),
                        help="the codes of an ivfsq index (fp16: twice the memory of 8bit, nearly exact distances)")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--k", type=int, default=64)
    parser.add_argument("--recall-target", type=float, default=0.95)
    parser.add_argument("--batch", type=int, default=64, help="queries per batched search (a batch of mentions)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--real", metavar="PIPELINE", help="real vectors: this pipeline's linker encodes strings")
    parser.add_argument("--strings-from", nargs="+", type=Path, default=[], metavar="DOCS.spacy",
                        help="--real: corpora whose word n-grams follow the KB's texts")
    parser.add_argument("--measure-on", type=Path, metavar="DOCS.spacy", help="--real: gold mentions measured")
    parser.add_argument("--tune-on", nargs="+", type=Path, default=[], metavar="DOCS.spacy",
                        help="--real: gold mentions nprobe is tuned on (several: pooled, each also on the curve)")
    parser.add_argument("--vectors-cache", type=Path, metavar="DIR",
                        help="--real: keep the encoded vectors here and reuse them when the same run asks again")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--serve", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.real and not (args.strings_from and args.measure_on and args.tune_on):
        parser.error("--real needs --strings-from, --measure-on and --tune-on")
    if args.serve:
        print(json.dumps(serve(args.serve, args.batch)))
        return
    with tempfile.TemporaryDirectory(prefix="scale_bench_") as tmp:
        built = build(args, Path(tmp))
        print(f"built {built['kind']} over {args.n:,} vectors in {built['build_s']} s, {built['params']}",
              file=sys.stderr)
        # A fresh process: the serving figures exclude what building held.
        served = subprocess.run([sys.executable, __file__, "--serve", tmp, "--batch", str(args.batch)],
                                check=True, capture_output=True, text=True)
        result = {**built, **json.loads(served.stdout.strip().splitlines()[-1])}
    result["x_exact_batched"] = round(result["exact_ms_per_query"] / result["batched_p50_ms"], 1)
    rows = [("vectors", f"{args.n:,} x {args.dim}"), ("index", f"{result['kind']} {result['params']}"),
            ("build s (train + add + tune)", result["build_s"]), ("build peak RSS GB", result["build_peak_rss_gb"]),
            ("index file GB", result["index_gb"]), ("load s", result["load_s"]),
            ("serving RSS GB (peak)", f"{result['serve_rss_gb']} ({result['serve_peak_rss_gb']})"),
            ("single query p50 / p99 ms", f"{result['single_p50_ms']} / {result['single_p99_ms']}"),
            (f"batched ({args.batch}) p50 / p99 ms per query", f"{result['batched_p50_ms']} / {result['batched_p99_ms']}"),
            ("exact search ms per query (chunked, batched)", result["exact_ms_per_query"]),
            ("speed-up over exact (batched p50)", result["x_exact_batched"]),
            (f"recall@{args.k} vs exact ({result['queries']:,} queries)", result[f"recall@{args.k}"]),
            (f"  counting scores within {NEAR_TIE} of the {args.k}th", result[f"recall@{args.k} within {NEAR_TIE}"])]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
