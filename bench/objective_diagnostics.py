"""What a retriever objective does in its first updates on real data: its loss terms, the
gradient each term sends into the encoder, the cosines of positive and negative edges, and,
for the arborescence, where each mention's positive comes from.

    python bench/objective_diagnostics.py --objective proxy [--updates 100] [--set KEY=VALUE ...]
        [--trees 5] [--output diag.json]

Trains `configs/retriever_plain.cfg` on NCBI Disease train + CTD (entity names) with the
objective swapped, as `spacy train` would, and records every update through thin wrappers
around the loss functions and `batch_positives`, so it sees exactly the edges training sees.
`--set` overrides further config values, e.g. `--set components.arbo_linker.objective.delta=0.2`.
"""
import argparse
import json
import os
import random
from pathlib import Path
from typing import Any, Callable, Dict, List

import numpy as np
import torch
from spacy.training.initialize import init_nlp
from spacy.util import fix_random_seed, load_config, registry

from spacy_arbo.torch_model import get_module
from spacy_arbo.training import losses, objectives

from train_cost import BF16, ROOT, prepare

OBJECTIVES = {
    "hard_negatives": {"@losses": "spacy_arbo.hard_negatives.v1"},
    "proxy": {"@losses": "spacy_arbo.proxy.v1"},
    "fgsm": {"@losses": "spacy_arbo.fgsm.v1"},
    "arborescence": {"@losses": "spacy_arbo.arborescence.v1"},
    "in_batch": {"@losses": "spacy_arbo.in_batch.v1"},
}


def summary(values: torch.Tensor) -> Dict[str, float]:
    values = values.detach().float().flatten().cpu().numpy()
    if not len(values):
        return {}
    return {"mean": float(values.mean()), "p10": float(np.quantile(values, 0.1)),
            "p50": float(np.quantile(values, 0.5)), "p90": float(np.quantile(values, 0.9))}


class Recorder:
    """Wraps the loss functions: each call adds its terms, their gradient norms over the
    trainable encoder weights and the edge cosines to the current update's record."""

    def __init__(self, params: List[torch.Tensor]) -> None:
        self.params = params
        self.update: Dict[str, Any] = {}

    def grad_norm(self, term: torch.Tensor) -> float:
        grads = torch.autograd.grad(term, self.params, retain_graph=True, allow_unused=True)
        return float(torch.sqrt(sum((g.float() ** 2).sum() for g in grads if g is not None)))

    def terms(self, name: str, **terms: torch.Tensor) -> None:
        calls = self.update.setdefault(name, [])
        calls.append({t: {"value": float(v.detach()), "grad_norm": self.grad_norm(v)} for t, v in terms.items()})

    def edges(self, name: str, positive: torch.Tensor, negative: torch.Tensor, mask: torch.Tensor) -> None:
        best = negative.masked_fill(~mask, -np.inf).max(dim=1).values
        self.update.setdefault(name + "_edges", []).append({
            "positive": summary(positive), "negative": summary(negative[mask]),
            "positive_above_best_negative": float((positive > best).float().mean())})

    def install(self) -> None:
        proxy, logistic, softmax, edge = (losses.proxy_loss, losses.logistic_hard_negatives,
                                          losses.in_batch_softmax, losses.edge_softmax)

        def proxy_loss(pos, neg, mask, alpha, delta):
            positive = proxy(pos, neg, torch.zeros_like(mask), alpha, delta)
            total = proxy(pos, neg, mask, alpha, delta)
            self.terms("proxy", positive=positive, negative=total - positive)
            self.edges("proxy", pos, neg, mask)
            return total

        def logistic_hard_negatives(pos, neg, mask, a_h, b_h):
            loss = logistic(pos, neg, mask, a_h, b_h)
            self.terms("logistic", logistic=loss)
            self.edges("hard_negatives", pos, neg, mask)
            return loss

        def in_batch_softmax(scores, targets):
            loss = softmax(scores, targets)
            self.terms("in_batch", in_batch=loss)
            return loss

        def edge_softmax(pos, pos_mask, neg, neg_mask):
            loss = edge(pos, pos_mask, neg, neg_mask)
            self.terms("edge_softmax", edge_softmax=loss)
            self.edges("arborescence", pos[:, 0], neg, neg_mask)
            return loss

        for name, wrapper in (("proxy_loss", proxy_loss), ("logistic_hard_negatives", logistic_hard_negatives),
                              ("in_batch_softmax", in_batch_softmax), ("edge_softmax", edge_softmax)):
            setattr(losses, name, wrapper)


def record_positives(recorder: Recorder, linker: Any, trees: int) -> Callable:
    """Wraps `batch_positives`: the share of positives from the entity vs another mention,
    and the first `trees` mentions with coreferent training mentions, with their parent."""
    original = objectives.batch_positives
    shown = [0]

    def batch_positives(mentions, gold, clusters, mention_vectors, entity_vectors, **kwargs):
        positives = original(mentions, gold, clusters, mention_vectors, entity_vectors, **kwargs)
        in_corpus = np.asarray(mentions) >= 0
        from_mention = np.array([p.kind == "mention" for p in positives])
        recorder.update["positives"] = {
            "corpus_mentions": int(in_corpus.sum()), "alias_pairs": int((~in_corpus).sum()),
            "corpus_from_mention": float(from_mention[in_corpus].mean()) if in_corpus.any() else None}
        corpus, entities = linker.corpus, linker.retriever.entity_inputs()
        for i, (query, node) in enumerate(zip(mentions, positives)):
            if shown[0] >= trees or query < 0 or len(clusters.get(gold[i], ())) < 3:
                continue
            shown[0] += 1
            # `gold` and entity nodes are columns of the update's entities; the KB row is the query's.
            parent = (f"entity '{entities[corpus.gold_rows[query]].title}'" if node.kind == "entity"
                      else f"mention '{corpus.mentions[node.index].mention}'")
            vector = mention_vectors[query]
            cosine = (entity_vectors if node.kind == "entity" else mention_vectors)[node.index] @ vector
            print(f"  tree: '{corpus.mentions[query].mention}' <- {parent} (cosine {cosine:.3f}); "
                  f"{len(clusters[gold[i]])} coreferent mentions", flush=True)
        return positives

    return batch_positives


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objective", choices=list(OBJECTIVES), required=True)
    parser.add_argument("--set", nargs="*", default=[],
                        help="KEY=VALUE config overrides (VALUE as JSON); objective.KEY sets the objective's")
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--trees", type=int, default=5, help="arborescence positives to print")
    parser.add_argument("--data", default=os.environ.get("SPACY_ARBO_DATA", str(ROOT.parent / "shared" / "data")))
    parser.add_argument("--work", default="bench_work")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="objective_diagnostics.json")
    args = parser.parse_args()
    paths = prepare(Path(args.data), Path(args.work))
    overrides = {"paths.train": str(paths["train"]), "paths.dev": str(paths["dev"]), "paths.kb": str(paths["kb"]),
                 "system.seed": args.seed, "training.seed": args.seed, **BF16}
    objective = dict(OBJECTIVES[args.objective])
    for item in args.set:
        key, value = item.split("=", 1)
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            pass
        if key.startswith("objective."):
            objective[key[len("objective."):]] = value
        else:
            overrides[key] = value
    config = load_config(ROOT / "configs" / "retriever_plain.cfg", overrides=overrides)
    config["components"]["arbo_linker"]["objective"] = objective
    fix_random_seed(args.seed)
    nlp = init_nlp(config)
    linker = nlp.get_pipe("arbo_linker")
    objective_config = dict(nlp.config["components"]["arbo_linker"]["objective"])
    print(f"objective: {objective_config}", flush=True)
    filled = nlp.config.interpolate()
    resolved = registry.resolve(filled["training"])
    optimizer, batcher = resolved["optimizer"], resolved["batcher"]
    examples = list(registry.resolve(filled["corpora"])["train"](nlp))
    module = get_module(linker.model)
    recorder = Recorder([p for p in module.parameters() if p.requires_grad])
    recorder.install()
    objectives.batch_positives = record_positives(recorder, linker, args.trees)
    records: List[Dict[str, Any]] = []
    while len(records) < args.updates:
        random.shuffle(examples)
        for batch in batcher(examples):
            recorder.update = {"update": len(records)}
            step: Dict[str, float] = {}
            nlp.update(batch, sgd=optimizer, drop=float(filled["training"]["dropout"]), losses=step)
            recorder.update["loss"] = step["arbo_linker"]
            records.append(recorder.update)
            print(json.dumps(recorder.update), flush=True)
            if len(records) >= args.updates:
                break
    Path(args.output).write_text(json.dumps({"objective": objective_config, "overrides": args.set,
                                             "updates": records}, indent=1))
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()
