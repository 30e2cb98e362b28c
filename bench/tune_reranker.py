"""Tune the reranker's `retrieval_weight` on a dev set.

Runs the pipeline's retriever and the cross-encoder over the dev mentions once, then
ranks with each weight (`fuse_scores`) and prints accuracy@1 per weight, next to the
retriever's own. Put the best weight in the reranker's config
(`[components.multi_cross_reranker] retrieval_weight`) or a saved pipeline's
`multi_cross_reranker/cfg`.

    python bench/tune_reranker.py training/reranker/model-best corpus/dev.spacy \
        --weights 0 0.5 1 2 4

Run from the repository root with the package installed (`pip install -e .`).
"""
import argparse

import spacy
from spacy.training import Example

from spacy_arbo.corpora import read_docbin
from spacy_arbo.evaluation import strip_links
from spacy_arbo.reranker.component import MultiCrossReranker
from spacy_arbo.scoring import accuracy, mention_outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pipeline", help="a pipeline with a retriever and a multi_cross_reranker")
    parser.add_argument("dev", help=".spacy DocBin with gold kb ids")
    parser.add_argument("--weights", nargs="+", type=float, default=[0.0, 0.25, 0.5, 1.0, 2.0, 4.0])
    args = parser.parse_args()

    nlp = spacy.load(args.pipeline)
    rerankers = [(name, proc) for name, proc in nlp.pipeline if isinstance(proc, MultiCrossReranker)]
    if not rerankers:
        parser.error(f"{args.pipeline} has no multi_cross_reranker")
    name, reranker = rerankers[-1]
    gold = read_docbin(args.dev, nlp.vocab)
    # The gold mentions stay: no component that would replace them runs (as in `evaluate`).
    recognizers = [n for n in nlp.pipe_names if "doc.ents" in nlp.get_pipe_meta(n).assigns]
    with nlp.select_pipes(disable=[name, *recognizers]):
        docs = list(nlp.pipe(strip_links(doc) for doc in gold))

    def acc() -> float:
        return accuracy(mention_outcomes(Example(p, g) for p, g in zip(docs, gold)))

    print(f"retriever accuracy@1: {acc():.3f} ({sum(len(d.ents) for d in gold)} mentions)")
    scored = reranker.margins(docs)
    print("| retrieval_weight | accuracy@1 |\n|---:|---:|")
    for weight in args.weights:
        reranker.cfg["retrieval_weight"] = weight
        reranker.set_annotations(docs, reranker.rank(*scored))
        print(f"| {weight:g} | {acc():.3f} |", flush=True)


if __name__ == "__main__":
    main()
