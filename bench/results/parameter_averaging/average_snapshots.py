"""Score a pipeline whose mention tower is the uniform mean of saved snapshots (snapshot_callback.py).

    python average_snapshots.py PIPELINE DATA.spacy TRAIN.spacy SNAPSHOT_DIR 500,550,600,650,700 600,650,700
"""
import json
import sys

import torch

from spacy_arbo.cli import load_pipeline
from spacy_arbo.corpora import read_docbin
from spacy_arbo.evaluation import evaluate_linking, gold_id_set
from spacy_arbo.torch_model import get_module

KEYS = ("accuracy", "accuracy_strict", "accuracy_belb", "accuracy_unseen_strict", "recall@1")

pipeline, data, seen_from, directory, *sets = sys.argv[1:]
nlp = load_pipeline(pipeline)
mention = get_module(nlp.get_pipe("arbo_linker").model).mention_tower.encoder
gold = read_docbin(data, nlp.vocab)
seen = gold_id_set(read_docbin(seen_from, nlp.vocab))
for steps in sets:
    snapshots = [torch.load(f"{directory}/step{step}.pt") for step in steps.split(",")]
    mean = {name: sum(s[name].float() for s in snapshots) / len(snapshots) if weight.is_floating_point() else weight
            for name, weight in snapshots[0].items()}
    with torch.no_grad():
        mention.load_state_dict(mean)
    metrics = evaluate_linking(nlp, gold, seen)
    print(json.dumps({"steps": steps, **{key: round(metrics[key], 4) for key in KEYS}}), flush=True)
