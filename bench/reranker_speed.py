r"""Training and inference speed, and accuracy@1, of the four cross-encoder modes on NCBI Disease.

The multi cross-encoder paper's comparison (Tables 3-4), in one process: every mode gets
the same backbone and starting weights, the same candidates, the same training batches
and budget. Candidates come from a trained arbo_linker pipeline (`--retriever`, e.g.
training/ncbi/retriever/model-best) or else from TF-IDF over the CTD KB. Training speed is
mentions (the paper's annotations) per second of `update`; inference speed is mentions
per second of `pipe`, at each of `--precisions` after the same training; speedups are
against `base` at the same precision ("x base") and the same mode in the first precision
("x fp32"). `tokens` is the total length of the test passes: on a CPU, time follows it, so
`base tokens / mode tokens` bounds the speedup. `--test-docs 0` / `--train-docs 0` use the
whole split.

Why: the paper's speed-ups were measured on GPUs; `mode` is chosen by what each mode gains
on the hardware at hand, at the same accuracy budget.

    python bench/reranker_speed.py [--data DIR] [--retriever PIPELINE] [--train-docs 16] \
        [--test-docs 16] [--top-n 8] [--steps 8] [--threads 1]
"""
import argparse
import os
import sys
import time
from pathlib import Path
from typing import Dict, List

import spacy
import torch
from spacy.language import Language
from spacy.training import Example
from thinc.api import Adam

from spacy_arbo.cli import reporting_errors
from spacy_arbo.corpora import convert_corpus
from spacy_arbo.encoders.transformer import default_encoder_path
from spacy_arbo.pipeline.gold_ents import strip_links
from spacy_arbo.kb.readers import read_kb
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.pipeline.arbo_linker import arbo_linkers
from spacy_arbo.pipeline.earlier_defaults import EARLIER_DEFAULTS
from spacy_arbo.reranker.packing import MODES
from spacy_arbo.scoring import accuracy, mention_outcomes

HASHED_DUAL_ENCODER = {
    "@architectures": "spacy_arbo.DualEncoder.v1",
    "mention_tower": {"@architectures": "spacy_arbo.HashedNgramTower.v1"},
}


def tfidf_retriever(kb: EntityStore, top_n: int) -> Language:
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("arbo_linker", config={**EARLIER_DEFAULTS, "candidate_source": "tfidf", "top_k": top_n,
                                                 "model": HASHED_DUAL_ENCODER})
    linker.set_kb(kb)
    nlp.initialize()
    return nlp


def acc_at_1(predicted: List, gold: List) -> float:
    return accuracy(mention_outcomes(Example(p, g) for p, g in zip(predicted, gold)))


def run_mode(mode: str, kb: EntityStore, train: List[Example], test: List, test_gold: List,
             args: argparse.Namespace) -> Dict[str, float]:
    nlp = spacy.blank("en")
    reranker = nlp.add_pipe("multi_cross_reranker", config={
        "mode": mode, "top_n": args.top_n, "use_gold_ents": False, "batch_tokens": args.batch_tokens,
        "model": {"@architectures": "spacy_arbo.CrossEncoder.v1", "name": args.encoder,
                  "max_length": args.max_length},
    })
    torch.manual_seed(args.seed)
    reranker.initialize(lambda: [], nlp=nlp, kb_loader=lambda _vocab: kb)
    optimizer = Adam(args.learn_rate, grad_clip=1.0)
    trained, seconds = 0, 0.0
    for step in range(args.steps):
        first = (step * args.batch_docs) % len(train)
        batch = (train + train)[first: first + args.batch_docs]
        started = time.perf_counter()
        reranker.update(batch, sgd=optimizer)
        seconds += time.perf_counter() - started
        trained += sum(bool(ids) for eg in batch for ids, _ in reranker.training_candidates(eg))
    docs = [d.copy() for d in test]
    passes, _ = reranker.plan(docs, [[[k for k, _ in e._.kb_candidates[: args.top_n]] for e in d.ents]
                                     for d in docs])
    row = {"train_per_s": trained / seconds, "passes": len(passes), "tokens": sum(len(p) for p in passes)}
    for precision in args.precisions:
        reranker.configure(precision=precision)
        list(reranker.pipe([d.copy() for d in test[:1]]))  # warm-up; int8 exports its graph here
        docs = [d.copy() for d in test]
        started = time.perf_counter()
        predicted = list(reranker.pipe(docs, batch_size=args.batch_docs * 4))
        inference = time.perf_counter() - started
        row[f"infer_per_s_{precision}"] = sum(len(d.ents) for d in test) / inference
        row[f"acc_{precision}"] = acc_at_1(predicted, test_gold)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = os.environ.get("SPACY_ARBO_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--data", default=default_data)
    parser.add_argument("--retriever", default=None,
                        help="a pipeline with a trained arbo_linker whose candidates to rerank (default: TF-IDF)")
    parser.add_argument("--train-docs", type=int, default=16)
    parser.add_argument("--test-docs", type=int, default=16)
    parser.add_argument("--top-n", type=int, default=8)
    parser.add_argument("--steps", type=int, default=8, help="updates per mode")
    parser.add_argument("--batch-docs", type=int, default=2, help="documents per update")
    parser.add_argument("--learn-rate", type=float, default=5e-5)
    parser.add_argument("--max-length", type=int, default=512, help="context window")
    parser.add_argument("--batch-tokens", type=int, default=4096)
    parser.add_argument("--encoder", default=None, help="a local Hugging Face encoder (default: MiniLM)")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16", "int8"],
                        help="inference precisions, each timed after the same training (which runs at 'auto')")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if "base" not in args.modes:
        parser.error("--modes must include base: speedups are measured against it")
    args.encoder = args.encoder or default_encoder_path()
    if args.threads:
        torch.set_num_threads(args.threads)
    data = Path(args.data)

    if args.retriever:
        retriever = spacy.load(args.retriever)
        linkers = arbo_linkers(retriever)
        if not linkers:
            parser.error(f"{args.retriever} has no arbo_linker")
        kb = linkers[0].kb
    else:
        kb = read_kb(data / "ctd" / "CTD_diseases_2017-06-06.tsv.gz", "ctd")
        retriever = tfidf_retriever(kb, args.top_n)
    train_gold = convert_corpus(data / "ncbi_disease" / "NCBItrainset_corpus.txt", kb=kb)[0][: args.train_docs or None]
    test_gold = convert_corpus(data / "ncbi_disease" / "NCBItestset_corpus.txt", kb=kb)[0][: args.test_docs or None]
    # The gold mentions, unlinked, with their candidates.
    train = [Example(p, g) for p, g in zip(retriever.pipe(strip_links(d) for d in train_gold), train_gold)]
    test = list(retriever.pipe(strip_links(d) for d in test_gold))
    print(f"KB: {len(kb):,} entities; train: {len(train_gold)} docs, "
          f"{sum(len(d.ents) for d in train_gold)} mentions; test: {len(test_gold)} docs, "
          f"{sum(len(d.ents) for d in test_gold)} mentions; top-{args.top_n} candidates from "
          f"{args.retriever or 'TF-IDF'}; "
          f"{args.steps} updates of {args.batch_docs} docs; torch threads: {torch.get_num_threads()}")
    print(f"first stage acc@1: {acc_at_1(test, test_gold):.3f}")

    rows = {mode: run_mode(mode, kb, train, test, test_gold, args) for mode in args.modes}
    base = rows["base"]
    print(f"\n{'mode':<10}{'precision':>10}{'train ment/s':>13}{'x base':>8}{'infer ment/s':>14}{'x base':>8}"
          f"{'x fp32':>8}{'acc@1':>8}{'passes':>8}{'tokens':>9}{'base/tok':>9}")
    for mode, r in rows.items():
        for precision in args.precisions:
            speed = r[f"infer_per_s_{precision}"]
            print(f"{mode:<10}{precision:>10}{r['train_per_s']:>13.2f}{r['train_per_s'] / base['train_per_s']:>8.2f}"
                  f"{speed:>14.2f}{speed / base[f'infer_per_s_{precision}']:>8.2f}"
                  f"{speed / r[f'infer_per_s_{args.precisions[0]}']:>8.2f}{r[f'acc_{precision}']:>8.3f}"
                  f"{r['passes']:>8}{r['tokens']:>9}{base['tokens'] / r['tokens']:>9.2f}")


if __name__ == "__main__":
    sys.exit(reporting_errors(main))
