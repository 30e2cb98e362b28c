r"""How close each reranker mode comes to its token bound at inference, per precision, and
what the attention kernel takes of the time.

`bench/reranker_tokens.py` counts the tokens of the passes: on a CPU the linear layers'
work follows them, so base tokens / mode tokens bounds a mode's speedup. Attention does not
follow them: its work per token grows with the length of the pass, and packing makes passes
longer. Here the trained reranker scores the retriever's candidates of the gold mentions in
each mode (the same weights, candidates and batch_tokens); `seconds` is `margins` (planning
and the model), profiled once more for the share of scaled-dot-product attention.

`--attention matmul` replaces `scaled_dot_product_attention`, in bf16 passes without gradient,
with bf16 matmuls and a softmax, to see what a whole mode would gain: on a CPU with bf16 matmuls
they run many times faster than fp32 ones while the attention kernel does not
(`bench/attention_kernel.py`).

Why: packing pairs (multi, passage modes) pays only as far as the hardware turns fewer tokens
into less time; the ratio to the bound says where the rest goes.

    python bench/reranker_bound.py training/ncbi/reranker/model-best corpus/ncbi/test.spacy \
        [--modes base parallel multi passage] [--precisions fp32 bf16] [--threads 2] [--attention matmul]
"""
import argparse
import sys
import time
from typing import Dict

import torch
from torch.profiler import ProfilerActivity, profile

from attention_kernel import by_matmuls

from spacy_arbo.cli import load_pipeline, reporting_errors
from spacy_arbo.corpora import read_docbin
from spacy_arbo.evaluation import link_gold_mentions
from spacy_arbo.reranker.component import last_reranker
from spacy_arbo.reranker.packing import MODES


def matmul_attention(kernel):
    """`kernel` (scaled_dot_product_attention) for everything but bf16 passes without gradient
    with an additive mask (BERT's), which get `attention_kernel.by_matmuls`."""
    def attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kwargs):
        if (q.dtype != torch.bfloat16 or torch.is_grad_enabled() or is_causal or dropout_p or kwargs
                or scale is not None or attn_mask is None or attn_mask.dtype != q.dtype):
            return kernel(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, **kwargs)
        return by_matmuls(q, k, v, attn_mask)
    return attention


def attention_share(run) -> float:
    """Share of `run`'s CPU time in the attention kernels (self time, every thread)."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    attention = sum(e.self_cpu_time_total for e in events if "scaled_dot_product" in e.key or "bmm" in e.key
                    or e.key == "aten::_softmax")
    return attention / total if total else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline", help="a pipeline with an arbo_linker and a multi_cross_reranker")
    parser.add_argument("data", help=".spacy DocBin with the mentions")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--attention", choices=["sdpa", "matmul"], default="sdpa",
                        help="matmul: bf16 attention as two matmuls and a softmax (see above)")
    args = parser.parse_args()
    if "base" not in args.modes:
        parser.error("--modes must include base: the bound is against it")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.attention == "matmul":
        torch.nn.functional.scaled_dot_product_attention = matmul_attention(
            torch.nn.functional.scaled_dot_product_attention)
    nlp = load_pipeline(args.pipeline)
    reranker = last_reranker(nlp, args.pipeline)
    docs = link_gold_mentions(nlp, read_docbin(args.data, nlp.vocab), exclude=[reranker.name])
    n_mentions = sum(len(d.ents) for d in docs)
    print(f"{n_mentions} mentions, top {reranker.settings.top_n} candidates, "
          f"batch_tokens {reranker.settings.batch_tokens}, torch threads {torch.get_num_threads()}")
    print(f"{'precision':>9}{'mode':>10}{'passes':>8}{'tokens':>9}{'bound':>7}{'seconds':>9}"
          f"{'mentions/s':>12}{'x base':>8}{'of bound':>10}{'attention':>11}")
    top_n = reranker.settings.top_n
    candidates = [[[kb_id for kb_id, _ in (e._.kb_candidates or [])[:top_n]] for e in d.ents] for d in docs]
    for precision in args.precisions:
        reranker.configure(precision=precision)
        rows: Dict[str, Dict[str, float]] = {}
        for mode in args.modes:
            reranker.configure(mode=mode)
            passes, _ = reranker.plan(docs, candidates)
            reranker.margins(docs[:2])  # warm-up; a low-precision copy is made here
            started = time.perf_counter()
            reranker.margins(docs)
            seconds = time.perf_counter() - started
            rows[mode] = {"passes": len(passes), "tokens": sum(len(p) for p in passes), "seconds": seconds,
                          "attention": attention_share(lambda: reranker.margins(docs))}
            base, row = rows["base"], rows[mode]
            bound = base["tokens"] / row["tokens"]
            speedup = base["seconds"] / row["seconds"]
            print(f"{precision:>9}{mode:>10}{row['passes']:>8}{row['tokens']:>9}{bound:>7.2f}{seconds:>9.2f}"
                  f"{n_mentions / seconds:>12.1f}{speedup:>8.2f}{speedup / bound:>10.2f}{row['attention']:>11.2f}",
                  flush=True)


if __name__ == "__main__":
    sys.exit(reporting_errors(main))
