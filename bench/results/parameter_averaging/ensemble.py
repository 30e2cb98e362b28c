"""Score a pipeline whose mention vectors are the mean of its own mention tower's and other
pipelines' (towers trained from the same start against the same frozen entity tower: an ensemble).

    python ensemble.py PIPELINE DATA.spacy TRAIN.spacy OTHER_PIPELINE...
"""
import json
import sys

from torch import nn

from spacy_arbo.cli import load_pipeline
from spacy_arbo.corpora import read_docbin
from spacy_arbo.evaluation import evaluate_linking, gold_id_set
from spacy_arbo.torch_model import get_module

KEYS = ("accuracy", "accuracy_strict", "accuracy_belb", "accuracy_unseen_strict", "recall@1", "mentions_per_second")

pipeline, data, seen_from, *others = sys.argv[1:]
nlp = load_pipeline(pipeline)
module = get_module(nlp.get_pipe("arbo_linker").model)
towers = [module.mention_tower] + [get_module(load_pipeline(o).get_pipe("arbo_linker").model).mention_tower for o in others]


def embed_mentions(mentions):
    return module.finish(sum(nn.functional.normalize(t.encode_mentions(mentions), dim=-1) for t in towers))


module.embed_mentions = embed_mentions
gold = read_docbin(data, nlp.vocab)
metrics = evaluate_linking(nlp, gold, gold_id_set(read_docbin(seen_from, nlp.vocab)))
print(json.dumps({key: round(metrics[key], 4) for key in KEYS}))
