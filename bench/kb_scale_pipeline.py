"""A saved pipeline over a 1M-entity KB: load time, memory and linking, disk store vs in-memory.

Builds a synthetic KB of generated names (`SYN:0000001 "Kavorine syndrome type 12"`, ...),
written streamed as a `DiskEntityStore`, an `arbo_linker` over it with the hashed n-gram
tower (the index and the store are what this measures, not a transformer's encoding time)
and `index.kind = "auto"`, and saves it; a copy holds the same KB as an in-memory
`EntityStore`. Each pipeline is then loaded by a fresh process that links mentions
(lower-cased names, one letter dropped from a third of them) and reports load seconds,
resident memory and mentions per second side by side.

Why: a KB of millions of entities (UMLS, Wikidata) must load and serve without a Python
object per entity; this measures what `build-kb --store disk` saves against the default store.

    python bench/kb_scale_pipeline.py --entities 1000000 --json bench/results/scale/kb_pipeline_1m.json
"""
import argparse
import importlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import numpy as np

SYLLABLES = ["ka", "vo", "ri", "ne", "lu", "ta", "mi", "so", "de", "pra", "cor", "bel", "xan", "thu", "gle", "dro",
             "fen", "hal", "ist", "qua", "rom", "sep", "tor", "ul", "vex", "wen", "yo", "zi", "mo", "ar", "el", "os"]
KINDS = ["disease", "syndrome", "deficiency", "carcinoma", "dystrophy", "anemia", "fever", "neuropathy"]


def entity(row: int):
    from spacy_arbo.kb.entities import Entity

    rng = np.random.default_rng([7, row])
    stem = "".join(SYLLABLES[i] for i in rng.integers(0, len(SYLLABLES), 3)).capitalize()
    name = f"{stem} {KINDS[row % len(KINDS)]} type {row % 997}"
    return Entity(f"SYN:{row:07d}", name, (f"{stem.lower()} {KINDS[row % len(KINDS)]} {row % 997}",))


def entities(n: int) -> Iterator[Any]:
    return (entity(row) for row in range(n))


def build(n: int, root: Path) -> Dict[str, Any]:
    import spacy

    from spacy_arbo.kb.disk_store import DiskEntityStore
    from spacy_arbo.kb.store import EntityStore
    from spacy_arbo.pipeline.linker.earlier_defaults import EARLIER_DEFAULTS

    began = time.perf_counter()
    DiskEntityStore.write(entities(n), root / "kb", source="synthetic")
    store_s = time.perf_counter() - began
    nlp = spacy.blank("en")
    nlp.add_pipe("arbo_linker", config={
        **EARLIER_DEFAULTS,  # the dense linker the recorded runs measured
        "model": {"@architectures": "spacy_arbo.DualEncoder.v1",
                  "mention_tower": {"@architectures": "spacy_arbo.HashedNgramTower.v1", "embed_dim": 64,
                                    "out_dim": 64, "seed": 0}},
        "top_k": 8, "use_long_form": False})
    nlp.config["initialize"]["components"]["arbo_linker"] = {
        "kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1", "path": str(root / "kb")}}
    began = time.perf_counter()
    nlp.initialize()
    index_s = time.perf_counter() - began
    nlp.to_disk(root / "disk")
    shutil.copytree(root / "disk", root / "memory")
    kb_dir = root / "memory" / "arbo_linker" / "kb"
    shutil.rmtree(kb_dir)
    EntityStore(entities(n), source="synthetic").to_disk(kb_dir)
    index = nlp.get_pipe("arbo_linker").retriever.dense
    return {"entities": n, "store_write_s": round(store_s, 1), "encode_and_index_s": round(index_s, 1),
            "index": f"{index.kind} {index.params}"}


def mentions(n: int, count: int) -> List[Tuple[str, str]]:
    rng = np.random.default_rng(11)
    picked = []
    for row in rng.choice(n, count, replace=False).tolist():
        name = entity(row).name.lower()
        if row % 3 == 0:
            cut = int(rng.integers(1, 6))
            name = name[:cut] + name[cut + 1:]
        picked.append((name, f"SYN:{row:07d}"))
    return picked


def rss_gb() -> float:
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return int(status["VmRSS"].split()[0]) / 2 ** 20


def serve(path: Path, n: int, count: int) -> Dict[str, Any]:
    began = time.perf_counter()
    import spacy

    importlib.import_module("spacy_arbo.pipeline.arbo_linker")  # torch and the components: the baseline
    import_s = time.perf_counter() - began
    baseline = rss_gb()
    began = time.perf_counter()
    nlp = spacy.load(path)
    load_s = time.perf_counter() - began
    loaded = rss_gb()
    gold = mentions(n, count)
    docs = []
    for start in range(0, len(gold), 10):
        batch = gold[start:start + 10]
        doc = nlp.make_doc("; ".join(name for name, _ in batch) + ".")
        spans, offset = [], 0
        for name, _ in batch:
            spans.append(doc.char_span(offset, offset + len(name), label="Disease", alignment_mode="expand"))
            offset += len(name) + 2
        doc.ents = [s for s in spans if s is not None]
        docs.append(doc)
    list(nlp.pipe(docs[:2]))  # warm-up: first calls set up thread pools
    began = time.perf_counter()
    linked = [ent.kb_id_ for doc in nlp.pipe(docs, batch_size=32) for ent in doc.ents]
    link_s = time.perf_counter() - began
    kb = nlp.get_pipe("arbo_linker").kb
    return {"store": type(kb).__name__, "import_s": round(import_s, 2), "load_s": round(load_s, 2), "python_baseline_rss_gb": round(baseline, 2),
            "rss_after_load_gb": round(loaded, 2), "rss_after_linking_gb": round(rss_gb(), 2),
            "mentions": len(linked), "mentions_per_s": round(len(linked) / link_s, 1),
            "accuracy": round(float(np.mean([p == g for p, (_, g) in zip(linked, gold)])), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=1_000_000)
    parser.add_argument("--mentions", type=int, default=1000)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--serve", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        print(json.dumps(serve(args.serve, args.entities, args.mentions)))
        return
    with tempfile.TemporaryDirectory(prefix="kb_scale_") as tmp:
        built = build(args.entities, Path(tmp))
        print(json.dumps(built), file=sys.stderr)
        served = {}
        for kind in ("disk", "memory"):
            run = subprocess.run([sys.executable, __file__, "--serve", str(Path(tmp) / kind), "--entities",
                                  str(args.entities), "--mentions", str(args.mentions)],
                                 check=True, capture_output=True, text=True)
            served[kind] = json.loads(run.stdout.strip().splitlines()[-1])
    keys = ["store", "import_s", "load_s", "python_baseline_rss_gb", "rss_after_load_gb", "rss_after_linking_gb", "mentions",
            "mentions_per_s", "accuracy"]
    print(f"{args.entities:,} entities; store written in {built['store_write_s']} s, encoded and indexed in "
          f"{built['encode_and_index_s']} s; index {built['index']}")
    print(f"{'':<24}{'disk store':>14}{'in memory':>14}")
    for key in keys:
        print(f"{key:<24}{served['disk'][key]!s:>14}{served['memory'][key]!s:>14}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**built, **{k: v for k, v in served.items()}}, indent=2) + "\n")


if __name__ == "__main__":
    main()
