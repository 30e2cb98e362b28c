r"""Accuracy of a trained retriever whose mention tower is pulled back toward its starting weights.

With `configs/retriever_frozen.cfg` the entity tower is the frozen MiniLM the mention tower
started from, so mention weights alpha * trained + (1 - alpha) * pretrained (WiSE-FT's
interpolation, Wortsman et al. 2022) stay in the entity tower's space: no KB vector changes,
and the index is reused. `--toward OTHER` mixes with OTHER's trained mention tower instead (a
model soup of two runs from the same start, e.g. two seeds, or averaged weights at alpha 0).
Prints any-id, exact-id-set (strict), BELB and unseen-entity accuracy per alpha.

Why: interpolation is meant to keep what pretraining knew about inputs that fine-tuning did
not see, here the entities absent from train; this checks whether it does, without training.

    python bench/interpolate_mention_tower.py training/ncbi/retriever/model-best corpus/ncbi/dev.spacy \
        --seen-from corpus/ncbi/train.spacy [--alphas 1.0 0.9 0.8]
    python bench/interpolate_mention_tower.py training/ncbi/retriever_memory corpus/ncbi/dev.spacy \
        --seen-from corpus/ncbi/train.spacy --toward seed1/model-best --alphas 1.0 0.5
"""
import argparse
import json
import sys

import torch

from spacy_arbo.cli import load_pipeline, reporting_errors
from spacy_arbo.corpora import read_docbin
from spacy_arbo.encoders.transformer import TransformerTower
from spacy_arbo.evaluation import evaluate_linking, gold_id_set
from spacy_arbo.torch_model import get_module
from spacy_arbo.util import ArboError

KEYS = ("accuracy", "accuracy_strict", "accuracy_belb", "accuracy_unseen_strict", "recall@1", "recall@64")


def interpolated(trained: dict, pretrained: dict, alpha: float) -> dict:
    """alpha * trained + (1 - alpha) * pretrained per weight; rows only the trained tower has
    (its marker tokens' embeddings) stay trained."""
    mixed = {}
    for name, weight in trained.items():
        start = pretrained[name]
        mixed[name] = weight.clone()
        rows = tuple(slice(0, n) for n in start.shape)
        mixed[name][rows] = alpha * weight[rows] + (1 - alpha) * start
    return mixed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline", help="a pipeline whose arbo_linker has a separate, frozen entity tower")
    parser.add_argument("data", help=".spacy DocBin with gold kb ids")
    parser.add_argument("--seen-from", required=True, help="training .spacy file: which entities are unseen")
    parser.add_argument("--alphas", type=float, nargs="+", default=[1.0, 0.9, 0.8, 0.7])
    parser.add_argument("--toward", help="a pipeline whose trained mention tower started from the same weights: "
                        "mix toward it instead of the pretrained weights (a model soup)")
    args = parser.parse_args()
    nlp = load_pipeline(args.pipeline)
    linker = nlp.get_pipe("arbo_linker")
    module = get_module(linker.model)
    if module.shared or not all(isinstance(t, TransformerTower) for t in (module.mention_tower, module.entity_tower)):
        raise ArboError(f"{args.pipeline}: interpolation needs separate transformer towers (configs/retriever_frozen.cfg).")
    mention, entity = module.mention_tower.encoder, module.entity_tower.encoder
    trained = {name: weight.detach().clone() for name, weight in mention.state_dict().items()}
    if args.toward:
        other = get_module(load_pipeline(args.toward).get_pipe("arbo_linker").model)
        pretrained = other.mention_tower.encoder.state_dict()
    else:
        pretrained = entity.state_dict()
    if set(trained) != set(pretrained):
        raise ArboError(f"{args.pipeline}: the two towers have different architectures.")
    gold = read_docbin(args.data, nlp.vocab)
    seen = gold_id_set(read_docbin(args.seen_from, nlp.vocab))
    for alpha in args.alphas:
        with torch.no_grad():
            mention.load_state_dict(interpolated(trained, pretrained, alpha))
        linker.encoder.weights_changed()  # vectors made before are checked against the new weights
        metrics = evaluate_linking(nlp, gold, seen)
        print(json.dumps({"alpha": alpha, **{key: round(metrics[key], 4) for key in KEYS}}), flush=True)


if __name__ == "__main__":
    sys.exit(reporting_errors(main))
