"""Time a reranked pipeline over a corpus's gold mentions with and without its cross-encoder's
similarity term (the same weights), alternating three times.

    python head_cost.py training/ncbi/reranker/model-best corpus/ncbi/test.spacy
"""
import sys
import time

from spacy_arbo.cli import load_pipeline
from spacy_arbo.corpora import read_docbin
from spacy_arbo.evaluation import link_gold_mentions
from spacy_arbo.torch_model import get_module

pipeline, data = sys.argv[1:3]
nlp = load_pipeline(pipeline)
gold = read_docbin(data, nlp.vocab)
module = get_module(nlp.get_pipe("multi_cross_reranker").model)
scale = module.similarity_log_scale
if scale is None:
    sys.exit(f"{pipeline}: its cross-encoder has no similarity head")
print("learned scale", round(float(scale.detach().exp()), 3))
n_mentions = sum(len(doc.ents) for doc in gold)
link_gold_mentions(nlp, gold[:10])  # warm-up
for round_ in range(3):
    for name, value in (("with the head", scale), ("without", None)):
        module.similarity_log_scale = value
        start = time.perf_counter()
        link_gold_mentions(nlp, gold)
        seconds = time.perf_counter() - start
        print(round_, name, f"{seconds:.2f} s", f"{n_mentions / seconds:.1f} mentions/s", flush=True)
module.similarity_log_scale = scale
