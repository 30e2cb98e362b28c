"""Encode a KB's names in one process and on N Ray workers (`index-kb --workers N`), in
one run: seconds, texts/s and the largest difference between the two sets of vectors.

PIPELINE is a trained arbo_linker pipeline (e.g. the workflow's
`training/ncbi/retriever/model-best`); the KB defaults to CTD diseases from the data mirror
($SPACY_ARBO_DATA), every name and alias indexed (`index_aliases`). `--limit N` keeps the
first N entities. The Ray time includes starting the runtime and loading the pipeline in
every worker. Needs `pip install 'spacy-arbo[ray]'`.

Why: the vectors from Ray workers must equal one process's (an index built either way must
link the same), and the runtime's start-up tells from which KB size more workers pay.

    python bench/ray_encoding.py PIPELINE [--kb CTD_diseases.tsv.gz] [--workers 2]
        [--limit N] [--shard-size 4096] [--output bench_ray_encoding.json]
"""
import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from spacy_arbo.kb.readers import read_kb
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.retrieval.sharded_encoding import SHARD_SIZE, encode_entities_on_ray, load_linker

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SPACY_ARBO_DATA", str(ROOT.parent / "shared" / "data")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline")
    parser.add_argument("--kb", default=str(DATA / "ctd" / "CTD_diseases_2017-06-06.tsv.gz"),
                        help="a KB source file (any format `build-kb` reads)")
    parser.add_argument("--component", default="arbo_linker")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="keep only the first N entities")
    parser.add_argument("--shard-size", type=int, default=SHARD_SIZE, help="texts per shard")
    parser.add_argument("--output", default="bench_ray_encoding.json")
    args = parser.parse_args()
    kb = read_kb(args.kb)
    if args.limit:
        kb = EntityStore(list(kb)[: args.limit], source=kb.source)
    with tempfile.TemporaryDirectory() as tmp:
        # The workers read the KB from disk, as `index-kb` gives it to them.
        kb.to_disk(Path(tmp) / "kb")
        linker = load_linker(args.pipeline, args.component, Path(tmp) / "kb")
        linker.configure(index_aliases=True)
        inputs = linker.retriever.entity_texts()[0]
        print(f"{len(kb):,} entities, {len(inputs):,} texts; {os.cpu_count()} cores", flush=True)
        started = time.perf_counter()
        single = linker.encode_entities(inputs, progress=True)
        single_seconds = time.perf_counter() - started
        print(f"one process ({torch.get_num_threads()} threads): {single_seconds:.1f}s", flush=True)
        started = time.perf_counter()
        sharded = encode_entities_on_ray(linker, args.pipeline, kb_dir=Path(tmp) / "kb", workers=args.workers,
                                         shard_size=args.shard_size)
        ray_seconds = time.perf_counter() - started
    difference = np.abs(sharded - single).max(axis=1)
    result = {
        "pipeline": args.pipeline, "kb": args.kb, "entities": len(kb), "texts": len(inputs),
        "precision": linker.settings.precision, "batch_size": linker.settings.batch_size, "cores": os.cpu_count(),
        "single_seconds": single_seconds, "single_texts_per_second": len(inputs) / single_seconds,
        "workers": args.workers, "shard_size": args.shard_size, "ray_seconds": ray_seconds, "ray_texts_per_second": len(inputs) / ray_seconds,
        "max_abs_difference": float(difference.max()), "rows_differing": int((difference > 0).sum()),
    }
    print(f"Ray, {args.workers} workers: {ray_seconds:.1f}s ({result['ray_texts_per_second']:.0f} texts/s, "
          f"one process {result['single_texts_per_second']:.0f}); max |difference| "
          f"{result['max_abs_difference']:.3g} ({result['rows_differing']:,} rows differ)")
    Path(args.output).write_text(json.dumps(result, indent=2))
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()
