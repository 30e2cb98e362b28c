r"""How many tokens base and multi passes hold, for several numbers of candidates per mention.

Only the packing runs (no model pass): the pipeline's retriever supplies the candidates of
the gold mentions, the reranker plans the passes.

Why: on a CPU a transformer's time follows the tokens it reads, so base tokens / multi
tokens bounds how much faster multi can be, for any `top_n` and `alias_tokens`.

    python bench/reranker_tokens.py training/ncbi/reranker/model-best corpus/ncbi/test.spacy \
        [--top-n 5 10 16 32 64] [--alias-tokens 0 16]
"""
import argparse
import sys

from spacy_arbo.cli import load_pipeline, reporting_errors
from spacy_arbo.corpora import read_docbin
from spacy_arbo.evaluation import link_gold_mentions
from spacy_arbo.reranker.component import last_reranker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline", help="a pipeline with an arbo_linker and a multi_cross_reranker")
    parser.add_argument("data", help=".spacy DocBin with the mentions")
    parser.add_argument("--top-n", type=int, nargs="+", default=[5, 10, 16, 32, 64])
    parser.add_argument("--alias-tokens", type=int, nargs="+", default=[0, 16])
    args = parser.parse_args()
    nlp = load_pipeline(args.pipeline)
    reranker = last_reranker(nlp, args.pipeline)
    docs = link_gold_mentions(nlp, read_docbin(args.data, nlp.vocab), exclude=[reranker.name])
    available = min((len(e._.kb_candidates or []) for d in docs for e in d.ents), default=0)
    print(f"{sum(len(d.ents) for d in docs)} mentions; the retriever gives at least {available} candidates each")
    print(f"{'alias_tokens':>12}{'top_n':>7}{'pairs':>8}{'base tokens':>13}{'multi tokens':>14}{'ratio':>7}")
    for alias_tokens in args.alias_tokens:
        reranker.configure(alias_tokens=alias_tokens)
        for top_n in args.top_n:
            candidates = [[[k for k, _ in (e._.kb_candidates or [])[:top_n]] for e in d.ents] for d in docs]
            tokens = {}
            for mode in ("base", "multi"):
                reranker.configure(mode=mode)
                passes, owners = reranker.plan(docs, candidates)
                tokens[mode] = sum(len(p) for p in passes)
            print(f"{alias_tokens:>12}{top_n:>7}{len(owners):>8}{tokens['base']:>13,}{tokens['multi']:>14,}"
                  f"{tokens['base'] / tokens['multi']:>7.2f}")


if __name__ == "__main__":
    sys.exit(reporting_errors(main))
