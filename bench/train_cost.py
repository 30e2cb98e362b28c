"""What a retriever update costs, and what the same wall-clock budget buys: today's
`configs/retriever_plain.cfg` against cheaper settings and `configs/retriever_frozen.cfg`, side by
side in one process, on NCBI Disease train/dev + CTD.

Each variant trains from the same seed on the same batches for the same training time
(evaluations and their KB refreshes are not counted), and is scored on dev at each of
`--eval-minutes`. With `--target`, a variant stops at the first evaluation whose dev
recall@1 reaches it, and the minutes it took are compared with today's. Printed per variant:
seconds per update, mention-updates per second, KB texts encoded per second in its
refreshes, dev recall@1 / @64 at each budget, and the time to the target.

Why: the workflow must fit a CPU budget, so recipes and objectives are compared by what the
same minutes buy, not by what one update buys.

    python bench/train_cost.py [--data DIR] [--eval-minutes 5 10 15] [--target 0.830]
        [--variants today bf16 bf16_frozen3] [--output bench_train_cost.json] [--save DIR] [--precision fp32]

The KB and DocBins in `--work` are used as they are when there: an out-of-KB draw's (`hold-out-kb
... --train`) trains retrievers that never saw its held-out entities, for bench/curator_loop.py.
"""
import argparse
import json
import os
import random
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from spacy.training.initialize import init_nlp
from spacy.util import fix_random_seed, load_config, registry

from spacy_arbo.corpora import convert_corpus, write_docbin
from spacy_arbo.evaluation import evaluate_linking
from spacy_arbo.kb.readers import read_kb

ROOT = Path(__file__).resolve().parents[1]
# Config overrides per variant; "today" is configs/retriever_plain.cfg in fp32, as before bf16.
FP32 = {"components.arbo_linker.precision": "fp32"}
BF16 = {"components.arbo_linker.precision": "bf16"}
BATCH2 = {"training.batcher.size": 2, "components.arbo_linker.alias_pairs_per_batch": 16,
          "components.arbo_linker.refresh_every": 100}
NEGATIVES8 = {"components.arbo_linker.objective.max_negatives": 8}
VARIANTS: Dict[str, Dict[str, Any]] = {
    "today": FP32,
    "cached_negatives": {**FP32, "components.arbo_linker.objective.entity_cache": "negatives"},
    "cached_all": {**FP32, "components.arbo_linker.objective.entity_cache": "all"},
    "bf16": BF16,
    "bf16_lr1e-4": {**BF16, "training.optimizer.learn_rate": 1e-4},
    "bf16_frozen3": {**BF16, "components.arbo_linker.model.mention_tower.frozen_layers": 3},
    # half the batch: 2 abstracts and 16 alias pairs an update (the same mix, twice the updates), refreshing
    # after as many mentions as before; precision "auto" as in the config, so compare it with `today` on a
    # CPU without bf16 and with `bf16` on one with it
    "batch2": BATCH2,
    # at most 8 mined negatives kept per mention instead of 16: fewer entity texts encoded with gradient
    "negatives8": NEGATIVES8,
    "batch2_negatives8": {**BATCH2, **NEGATIVES8},
    # Other objectives at the same budget ("objective" replaces the config's whole block).
    "in_batch": {**BF16, "objective": {"@losses": "spacy_arbo.in_batch.v1"}},
    "proxy": {**BF16, "objective": {"@losses": "spacy_arbo.proxy.v1"}},
    "proxy_delta0.2": {**BF16, "objective": {"@losses": "spacy_arbo.proxy.v1", "delta": 0.2}},
    "proxy_delta0.4": {**BF16, "objective": {"@losses": "spacy_arbo.proxy.v1", "delta": 0.4}},
    "proxy_delta0.4_cached_k32": {**BF16, "objective": {"@losses": "spacy_arbo.proxy.v1", "delta": 0.4, "k": 32,
                                                        "entity_cache": "negatives"}},
    "fgsm_proxy_delta0.4": {**BF16, "objective": {"@losses": "spacy_arbo.fgsm.v1",
                                                  "base": {"@losses": "spacy_arbo.proxy.v1", "delta": 0.4}}},
    "arborescence": {**BF16, "objective": {"@losses": "spacy_arbo.arborescence.v1"}},
    # The recipes of `weasel run objectives` (configs/retriever_{arborescence,proxy,fgsm}.cfg).
    "arborescence_recipe": {**BF16, "objective": {"@losses": "spacy_arbo.arborescence.v1", "entity_weight": 1.0}},
    "proxy_recipe": {**BF16, "objective": {"@losses": "spacy_arbo.proxy.v1", "delta": 0.4, "k": 4,
                                           "share_negatives": True}},
    "proxy_mined_k16": {**BF16, "objective": {"@losses": "spacy_arbo.proxy.v1", "delta": 0.4, "negatives": "mined",
                                              "k": 16, "max_negatives": 16, "share_negatives": True}},
    # mined as hard_negatives.v1 mines: above the gold among the top 10, up to 16 kept
    "proxy_mined": {**BF16, "objective": {"@losses": "spacy_arbo.proxy.v1", "delta": 0.4, "negatives": "mined",
                                          "k": 10, "share_negatives": True}},
    "proxy_mined_delta0.6": {**BF16, "objective": {"@losses": "spacy_arbo.proxy.v1", "delta": 0.6,
                                                   "negatives": "mined", "k": 10, "share_negatives": True}},
    "proxy_mined_alpha16": {**BF16, "objective": {"@losses": "spacy_arbo.proxy.v1", "alpha": 16.0, "delta": 0.4,
                                                  "negatives": "mined", "k": 10, "share_negatives": True}},
    "fgsm_recipe": {**BF16, "objective": {"@losses": "spacy_arbo.fgsm.v1",
                                          "base": {"@losses": "spacy_arbo.hard_negatives.v1"}}},
    # configs/retriever_frozen.cfg: only the mention tower trains, against the vectors of a separate, frozen
    # entity tower, with a softmax over the whole KB.
    "frozen_entities_kb_softmax": {"config": "retriever_frozen.cfg"},
}


def prepare(data: Path, work: Path) -> Dict[str, Path]:
    """The KB store and train/dev DocBins, made once in `work`."""
    paths = {"kb": work / "kb", "train": work / "train.spacy", "dev": work / "dev.spacy"}
    if not paths["kb"].exists():
        read_kb(data / "ctd" / "CTD_diseases_2017-06-06.tsv.gz", "ctd").to_disk(paths["kb"])
    from spacy_arbo.kb.store import EntityStore

    kb = EntityStore.from_disk(paths["kb"])
    for split, name in (("train", "NCBItrainset_corpus.txt"), ("dev", "NCBIdevelopset_corpus.txt")):
        if not paths[split].exists():
            docs, _ = convert_corpus(data / "ncbi_disease" / name, kb=kb)
            write_docbin(docs, paths[split])
    return paths


def run_variant(name: str, overrides: Dict[str, Any], paths: Dict[str, Path], budgets: List[float],
                seed: int, target: Optional[float] = None, encoder: Optional[str] = None,
                save: Optional[Path] = None) -> Dict[str, Any]:
    overrides = dict(overrides)
    objective = overrides.pop("objective", None)
    config_name = overrides.pop("config", "retriever_plain.cfg")
    config = load_config(ROOT / "configs" / config_name, overrides={
        "paths.train": str(paths["train"]), "paths.dev": str(paths["dev"]), "paths.kb": str(paths["kb"]),
        "system.seed": seed, "training.seed": seed, "paths.encoder": encoder, **overrides,
    })
    if objective is not None:
        config["components"]["arbo_linker"]["objective"] = objective
    fix_random_seed(seed)
    nlp = init_nlp(config)
    linker = nlp.get_pipe("arbo_linker")
    filled = nlp.config.interpolate()
    resolved = registry.resolve(filled["training"])
    optimizer, batcher = resolved["optimizer"], resolved["batcher"]
    train_corpus = registry.resolve(filled["corpora"])["train"]
    from spacy_arbo.corpora import read_docbin

    dev_docs = read_docbin(paths["dev"], nlp.vocab)
    refresh_texts, refresh_seconds = [], []
    original_refresh = linker.refresh_index

    def timed_refresh(progress: bool = True) -> None:
        started = time.perf_counter()
        original_refresh(progress=False)
        refresh_seconds.append(time.perf_counter() - started)
        refresh_texts.append(len(linker.retriever.entity_texts()[0]))

    linker.refresh_index = timed_refresh
    trained, updates, mentions, results = 0.0, 0, 0, []
    pending = sorted(budgets)
    examples = list(train_corpus(nlp))
    while pending:
        random.shuffle(examples)  # per epoch, as spacy train does; seeded above
        for batch in batcher(examples):
            started = time.perf_counter()
            nlp.update(batch, sgd=optimizer, drop=float(filled["training"]["dropout"]))
            trained += time.perf_counter() - started
            updates += 1
            mentions += sum(len(eg.reference.ents) for eg in batch)
            if trained >= pending[0] * 60:
                metrics = evaluate_linking(nlp, dev_docs)
                results.append({"minutes": pending.pop(0), "updates": updates, "recall@1": metrics["recall@1"],
                                "recall@64": metrics["recall@64"]})
                print(f"  {name}: {results[-1]}", flush=True)
                if target is not None and metrics["recall@1"] >= target:
                    pending = []
                if not pending:
                    break
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        nlp.to_disk(save / name)
    return {
        "variant": name, "config": config_name,
        "overrides": {**overrides, "objective": objective} if objective else overrides,
        "updates": updates, "train_seconds": trained,
        "seconds_per_update": trained / updates, "mention_updates_per_second": mentions / trained,
        "kb_texts_per_second": sum(refresh_texts) / sum(refresh_seconds) if refresh_seconds else None,
        "dev": results,
        "minutes_to_target": next((r["minutes"] for r in results if target is not None and r["recall@1"] >= target), None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = os.environ.get("SPACY_ARBO_DATA", str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--data", default=default_data)
    parser.add_argument("--work", default="bench_work", help="where the KB and DocBins are made (reused)")
    parser.add_argument("--eval-minutes", nargs="+", type=float, default=[2.5, 5.0, 10.0])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--precision", choices=["fp32", "bf16", "auto"], default=None,
                        help="every variant's precision (default: each its own; bf16 needs a CPU with it)")
    parser.add_argument("--encoder", default=None,
                        help="start every variant from this encoder (e.g. from export-encoder) instead of MiniLM")
    parser.add_argument("--target", type=float, default=None,
                        help="stop a variant once its dev recall@1 reaches this (today's: 0.830)")
    parser.add_argument("--output", default="bench_train_cost.json")
    parser.add_argument("--save", type=Path, default=None, help="write each variant's trained pipeline to SAVE/VARIANT")
    args = parser.parse_args()
    paths = prepare(Path(args.data), Path(args.work))
    rows = []
    for name in args.variants:
        print(f"{name}: training for {max(args.eval_minutes):g} minutes", flush=True)
        overrides = {**VARIANTS[name], **({"components.arbo_linker.precision": args.precision} if args.precision else {})}
        rows.append(run_variant(name, overrides, paths, args.eval_minutes, args.seed, args.target,
                                args.encoder, args.save))
    base = next((row for row in rows if row["variant"] == "today"), rows[0])
    print(f"\n| variant | s/update | mention-updates/s | KB texts/s | minutes to R@1 {args.target or '-'} | "
          + " | ".join(f"R@1 / R@64 at {m:g} min" for m in sorted(args.eval_minutes)) + " |")
    print("|---|---:|---:|---:|---:|" + "---:|" * len(args.eval_minutes))
    for row in rows:
        speed = f"{row['seconds_per_update']:.2f} ({base['seconds_per_update'] / row['seconds_per_update']:.2f}x)"
        texts = "-" if row["kb_texts_per_second"] is None else f"{row['kb_texts_per_second']:.0f}"
        dev = " | ".join(f"{r['recall@1']:.3f} / {r['recall@64']:.3f} ({r['updates']} upd.)" for r in row["dev"])
        reached, today = row["minutes_to_target"], base["minutes_to_target"]
        to_target = "-" if reached is None else f"{reached:g}" + (f" ({reached / today:.2f} of today)" if today else "")
        print(f"| {row['variant']} | {speed} | {row['mention_updates_per_second']:.1f} | {texts} | {to_target} | {dev} |")
    Path(args.output).write_text(json.dumps(rows, indent=2))
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()
