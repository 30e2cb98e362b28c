"""GER's graph tower against the plain tower on NCBI Disease + CTD.

`cost`: seconds per text to encode entities and mentions with the MiniLM tower alone and
with the graph on top (same weights, same batches), with and without extracting the
triplets, and the ratio. `ablation`: GER's Table 5 on our recipe: `configs/retriever_plain.cfg`
and `configs/retriever_graph.cfg` with the graph on mentions, entities or both, trained with the
same data, seed and number of updates, each evaluated on dev and test (dense candidates, so
that TF-IDF does not mask the towers' difference). Prints a table and writes JSON.

Why: the graph tower is worth its encoding cost only if it retrieves better at the same
training budget; both are measured on the same data.

    python bench/graph_tower.py cost --kb kb --corpus corpus/ncbi
    python bench/graph_tower.py ablation --kb kb --corpus corpus/ncbi --steps 100 --output graph_tower.json
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence

import spacy
import torch
from spacy.tokens import DocBin

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacy_arbo.encoders.graph import GraphTower  # noqa: E402
from spacy_arbo.encoders.templates import entity_inputs, mention_input  # noqa: E402
from spacy_arbo.encoders.transformer import TransformerTower, default_encoder_path  # noqa: E402
from spacy_arbo.kb.store import EntityStore  # noqa: E402
from spacy_arbo.pipeline.knowledge_units import make_context_triplets, make_kb_triplets  # noqa: E402

VARIANTS = {  # name: (config, sides)
    "plain": ("retriever_plain.cfg", None),
    "graph on mentions": ("retriever_graph.cfg", "mentions"),
    "graph on entities": ("retriever_graph.cfg", "entities"),
    "graph on both (GER)": ("retriever_graph.cfg", "both"),
}
KEYS = ("recall@1", "recall@64", "accuracy", "accuracy_strict", "accuracy_unseen")


def per_text(encode: Callable[[List[Any]], torch.Tensor], items: Sequence[Any], batch_size: int = 64) -> float:
    """Seconds per text, batches of similar length as the linker makes them."""
    ordered = sorted(items, key=lambda x: len(str(x)))
    started = time.perf_counter()
    with torch.inference_mode():
        for start in range(0, len(ordered), batch_size):
            encode(ordered[start: start + batch_size])
    return (time.perf_counter() - started) / len(items)


def paired(plain: Callable, graph: Callable, items: Sequence[Any], repeats: int) -> List[float]:
    """Median seconds per text of each, timed alternately after a warm-up, so that a slower
    moment of a shared machine falls on both."""
    per_text(plain, items[:64])
    per_text(graph, items[:64])
    times: List[List[float]] = [[], []]
    for _ in range(repeats):
        times[0].append(per_text(plain, items))
        times[1].append(per_text(graph, items))
    return [sorted(t)[len(t) // 2] for t in times]


def cost(args: argparse.Namespace) -> Dict[str, Any]:
    torch.set_num_threads(args.threads)
    kb = EntityStore.from_disk(args.kb)
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(Path(args.corpus) / "dev.spacy").get_docs(nlp.vocab))
    spans = [ent for doc in docs for ent in doc.ents][: args.texts]
    entities = list(kb)[: args.texts]
    tower = GraphTower(TransformerTower.from_pretrained(default_encoder_path(), "mean", 64, True)).eval()
    kb_units, context_units = make_kb_triplets(), make_context_triplets()

    started = time.perf_counter()
    entity_texts = entity_inputs(entities, [], triplets=lambda e: kb_units(e, kb))
    entity_extraction = (time.perf_counter() - started) / len(entities)
    started = time.perf_counter()
    mention_texts = [mention_input(s, 96, triplets=context_units(s)) for s in spans]
    mention_extraction = (time.perf_counter() - started) / len(spans)

    rows = {
        "entities": (*paired(tower.tower.encode_entities, tower.encode_entities, entity_texts, args.repeats),
                     entity_extraction),
        "mentions": (*paired(tower.tower.encode_mentions, tower.encode_mentions, mention_texts, args.repeats),
                     mention_extraction),
    }
    result = {}
    print(f"{'texts':<10} {'plain ms':>9} {'graph ms':>9} {'ratio':>6} {'+extract ms':>12} {'ratio':>6}")
    for name, (plain, graph, extraction) in rows.items():
        result[name] = {"plain_ms": plain * 1e3, "graph_ms": graph * 1e3, "ratio": graph / plain,
                        "extraction_ms": extraction * 1e3, "ratio_with_extraction": (graph + extraction) / plain,
                        "triplets_per_text": sum(len(t.triplets) for t in (entity_texts if name == "entities"
                                                                            else mention_texts)) / args.texts}
        print(f"{name:<10} {plain * 1e3:>9.2f} {graph * 1e3:>9.2f} {graph / plain:>6.2f} "
              f"{(graph + extraction) * 1e3:>12.2f} {(graph + extraction) / plain:>6.2f}")
    return {"texts": args.texts, "threads": args.threads, **result}


def ablation(args: argparse.Namespace) -> Dict[str, Any]:
    corpus, out = Path(args.corpus), Path(args.workdir)
    results: Dict[str, Any] = {}
    for name in args.variants:
        config, sides = VARIANTS[name]
        target = out / name.split(" (")[0].replace(" ", "_")
        command = [sys.executable, "-m", "spacy", "train", str(ROOT / "configs" / config), "--output", str(target),
                   "--paths.train", str(corpus / "train.spacy"), "--paths.dev", str(corpus / "dev.spacy"),
                   "--paths.kb", str(args.kb), "--training.max_steps", str(args.steps),
                   "--training.eval_frequency", str(args.steps), "--system.seed", str(args.seed)]
        if sides:
            command += ["--components.arbo_linker.model.mention_tower.sides", sides,
                        "--components.arbo_linker.model.mention_tower.learn_rate_scale", str(args.learn_rate_scale)]
        started = time.perf_counter()
        subprocess.run(command, check=True, cwd=ROOT)
        row: Dict[str, Any] = {"train_seconds": time.perf_counter() - started, "updates": args.steps}
        for split in ("dev", "test"):
            metrics = target / f"{split}.json"
            subprocess.run([sys.executable, "-m", "spacy_arbo", "evaluate", str(target / "model-best"),
                            str(corpus / f"{split}.spacy"), "--seen-from", str(corpus / "train.spacy"),
                            "--set", "candidate_source=dense", "--output", str(metrics)], check=True, cwd=ROOT)
            scores = json.loads(metrics.read_text())
            row[split] = {k: scores[k] for k in KEYS}
        results[name] = row
        print(json.dumps({name: row}), flush=True)
    print(f"\n{'variant':<22} {'dev R@1':>8} {'dev R@64':>8} {'test R@1':>8} {'test R@64':>9} "
          f"{'acc':>6} {'strict':>6} {'unseen':>6} {'train s':>8}")
    for name, row in results.items():
        dev, test = row["dev"], row["test"]
        print(f"{name:<22} {dev['recall@1']:>8.3f} {dev['recall@64']:>8.3f} {test['recall@1']:>8.3f} "
              f"{test['recall@64']:>9.3f} {test['accuracy']:>6.3f} {test['accuracy_strict']:>6.3f} "
              f"{test['accuracy_unseen']:>6.3f} {row['train_seconds']:>8.0f}")
    return {"steps": args.steps, "seed": args.seed, "variants": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=["cost", "ablation"])
    parser.add_argument("--kb", required=True, help="entity store directory (build-kb output)")
    parser.add_argument("--corpus", required=True, help="directory with train/dev/test.spacy")
    parser.add_argument("--texts", type=int, default=2000, help="cost: texts per side")
    parser.add_argument("--threads", type=int, default=2, help="cost: torch threads")
    parser.add_argument("--repeats", type=int, default=3, help="cost: timed passes of each tower")
    parser.add_argument("--steps", type=int, default=100, help="ablation: updates per variant")
    parser.add_argument("--learn-rate-scale", type=float, default=20.0,
                        help="ablation: the graph's learning rate over the tower's (the table in docs/results.md used 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--workdir", default="training/graph_ablation", help="ablation: where pipelines go")
    parser.add_argument("--output", help="write the figures as JSON here")
    args = parser.parse_args()
    result = cost(args) if args.part == "cost" else ablation(args)
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
