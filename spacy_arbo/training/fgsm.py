"""PEL's FGSM adversarial entities (eq. 5-8), around any objective over (mention, entity) edges."""
from dataclasses import dataclass
from typing import Optional

import torch

from . import losses
from .entity_edges import EntityEdges
from .mentions import TrainingBatch
from .objective_base import Objective, TrainingState
from .proxy import Proxy


@dataclass
class Adversarial(Objective):
    """PEL eq. 5-8: FGSM adversarial examples on the entity tower's input embeddings.

    The base loss's gradient with respect to those inputs gives the step epsilon *
    sign(grad) that most increases the loss: it pushes the gold entity away and the
    negatives closer at once (eq. 6-7). The same edges are scored again with the
    perturbed entities, and the two losses are combined with weight `lam` (eq. 8).
    """

    base: EntityEdges
    epsilon: float = 0.01
    lam: float = 1.0

    @property
    def uses_index(self) -> bool:
        return self.base.uses_index

    def measured_limits(self) -> Optional[str]:
        cost = ("FGSM scores every edge twice: an update costs about 1.7x its base objective's (around hard "
                "negatives, 4.0 against 2.3 s in bf16 on 2 CPU cores)")
        if isinstance(self.base, Proxy):
            return (f"{cost}; around the proxy loss with 16 negatives it took 36 s per update and ran out of 23 GB "
                    f"within 6 minutes. Base it on hard_negatives.v1 (configs/retriever_fgsm.cfg).")
        return (f"{cost}; around hard negatives it stayed 4 points of dev recall@1 below them at equal CPU time "
                f"on NCBI Disease (see docs/results.md, Training objectives).")

    def __call__(self, state: TrainingState, batch: TrainingBatch) -> torch.Tensor:
        mentions, rows, gold, negatives = self.base.edges(state, batch)
        tower, module = state.module.entity_tower, state.module
        inputs, extra = tower.entity_input_embeddings([state.entity_inputs[r] for r in rows])
        if not inputs.requires_grad:  # frozen input embeddings: FGSM still needs d loss / d inputs
            inputs.requires_grad_()
        loss = self.base.edge_loss(state, mentions, module.finish(tower.encode_input_embeddings(inputs, extra)),
                                   gold, negatives)
        (grad,) = torch.autograd.grad(loss, inputs, retain_graph=True)
        attacked = module.finish(tower.encode_input_embeddings(inputs + losses.fgsm_perturbation(grad, self.epsilon), extra))
        adversarial = self.base.edge_loss(state, mentions, attacked, gold, negatives)
        return losses.combine_adversarial(loss, adversarial, self.lam)

