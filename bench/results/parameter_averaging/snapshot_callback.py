"""A `before_update` callback that saves the mention tower's weights every `every` updates from
`start` on, for averaging checkpoints afterwards (average_snapshots.py). Used with `--code`:

    python -m spacy train snapshots.cfg --code bench/results/parameter_averaging/snapshot_callback.py ...

where snapshots.cfg is configs/retriever_frozen.cfg with use_averages = false and

    [training.before_update]
    @callbacks = "snapshot_mention_tower"
    directory = "snaps"
    start = 300
    every = 50
"""
import os

import spacy
import torch

from spacy_arbo.torch_model import get_module


@spacy.registry.callbacks("snapshot_mention_tower")
def snapshot_mention_tower(directory: str, start: int, every: int):
    os.makedirs(directory, exist_ok=True)

    def before_update(nlp, args):
        step = args["step"]  # the weights after `step` updates
        if step >= start and step % every == 0:
            tower = get_module(nlp.get_pipe("arbo_linker").model).mention_tower.encoder
            torch.save({k: v.detach().clone() for k, v in tower.state_dict().items()}, f"{directory}/step{step}.pt")

    return before_update
