"""The retriever's training losses (DEER, ArboEL, PEL) as plain torch functions.

Callers compute the scores; these functions only turn them into a scalar loss. Padded
candidates are given as boolean masks (True = real) and never reach the loss, so a row
with nothing real in it contributes no NaN, in the value or in the gradient.
"""
from typing import Tuple, Union

import torch
from torch import Tensor
from torch.nn import functional as F

from ..ranges import check_range
from ..util import ArboError

Scalar = Union[float, Tensor]


def _check(name: str, tensor: Tensor, ndim: int, rows: int = -1) -> None:
    if not isinstance(tensor, Tensor):
        raise ArboError(f"{name} must be a torch tensor, got {type(tensor).__name__}.")
    if tensor.dim() != ndim or (rows >= 0 and tensor.shape[0] != rows):
        want = f"{ndim}-d" + (f" with {rows} rows" if rows >= 0 else "")
        raise ArboError(f"{name} must be {want}, got shape {tuple(tensor.shape)}.")


def _check_mask(name: str, mask: Tensor, scores: Tensor) -> None:
    _check(name, mask, scores.dim())
    if mask.dtype != torch.bool or mask.shape != scores.shape:
        raise ArboError(
            f"{name} must be a bool tensor shaped like its scores {tuple(scores.shape)}, "
            f"got {mask.dtype} {tuple(mask.shape)}."
        )


def _masked(scores: Tensor, mask: Tensor) -> Tensor:
    """Masked entries get the dtype's lowest finite value: exp() of it is 0, and unlike
    -inf it never makes inf - inf = NaN in a row that is entirely masked."""
    return scores.masked_fill(~mask, torch.finfo(scores.dtype).min)


def _mean(values: Tensor, count: Union[int, Tensor]) -> Tensor:
    """values.sum() / count, or a zero that keeps the graph when there is nothing to average."""
    return values.sum() / count if int(count) > 0 else values.sum() * 0.0


def masked_log_softmax(scores: Tensor, mask: Tensor) -> Tuple[Tensor, Tensor]:
    """log p and log(1 - p) of the softmax over each row's real entries.

    log(1 - p_u) is computed as logsumexp over the row's other entries minus logsumexp
    over all of them, not as log1p(-p): it stays exact when one edge dominates, where
    p rounds to 1 in float32. Entries of masked positions are meaningless.
    """
    _check("scores", scores, 2)
    _check_mask("mask", mask, scores)
    logits = _masked(scores, mask)
    log_total = torch.logsumexp(logits, dim=1, keepdim=True)
    size = scores.shape[1]
    others = mask.unsqueeze(1) & ~torch.eye(size, dtype=torch.bool, device=scores.device)
    log_others = torch.logsumexp(_masked(scores.unsqueeze(1).expand(-1, size, -1), others), dim=2)
    return logits - log_total, log_others - log_total


def in_batch_softmax(scores: Tensor, targets: Tensor) -> Tensor:
    """DEER eq. 2, mean over the batch:

        L(m_i, e_i) = -f(m_i, e_i) + log sum_j exp(f(m_i, e_j)),   f = a * s   (eq. 3)

    `scores` (B, E) are the logits f, i.e. the learned scale a times the cosine (or a raw
    dot product); `targets` (B,) the column of each mention's gold entity. The caller
    must deduplicate the batch's entities: a gold entity appearing in two columns would
    be its own negative.
    """
    _check("scores", scores, 2)
    _check("targets", targets, 1, scores.shape[0])
    if targets.dtype != torch.long:
        raise ArboError(f"targets must be a long tensor, got {targets.dtype}.")
    if len(targets) and (int(targets.min()) < 0 or int(targets.max()) >= scores.shape[1]):
        raise ArboError(f"targets must be columns of scores, in [0, {scores.shape[1]}).")
    if not len(targets):
        return scores.sum() * 0.0
    return F.cross_entropy(scores, targets)


def positive_set_softmax(scores: Tensor, positive: Tensor) -> Tensor:
    """DEER eq. 2 when a mention's gold entity owns several columns (its name and each alias
    vector): the softmax probability of the whole set, mean over the batch,

        L(m_i) = -log sum_{j in P_i} exp(f(m_i, e_j)) + log sum_j exp(f(m_i, e_j)),

    which is `in_batch_softmax` when each P_i is one column. Rows with an empty P_i are left
    out: their gold entity has no vector to be scored against.
    """
    _check("scores", scores, 2)
    _check_mask("positive", positive, scores)
    rows = positive.any(dim=1)
    per_row = torch.logsumexp(scores, dim=1) - torch.logsumexp(_masked(scores, positive), dim=1)
    return _mean(per_row[rows], rows.sum())


def logistic_hard_negatives(
    pos_scores: Tensor, neg_scores: Tensor, neg_mask: Tensor, a_h: Scalar, b_h: Scalar
) -> Tensor:
    """DEER eq. 4-5, the hard-negative classification task:

        L_h(m, e; y) = -y log f(m, e) - (1 - y) log(1 - f(m, e)),   f = g(a_h s(m, e) + b_h)

    `pos_scores` (B,) are the cosines of the gold pairs (y = 1), `neg_scores` (B, K) those
    of the mined negatives (y = 0); a_h, b_h are the learned calibration scalars. The
    paper merges all pairs into one classification set, so the mean is over the real
    pairs (B plus the unmasked negatives), not over mentions.
    """
    _check("pos_scores", pos_scores, 1)
    _check("neg_scores", neg_scores, 2, len(pos_scores))
    _check_mask("neg_mask", neg_mask, neg_scores)
    positive = F.softplus(-(a_h * pos_scores + b_h))  # -log g(x) = softplus(-x)
    negative = F.softplus(a_h * neg_scores + b_h)  # -log(1 - g(x)) = softplus(x)
    total = positive.sum() + negative.masked_fill(~neg_mask, 0.0).sum()
    return _mean(total, len(pos_scores) + neg_mask.sum())


def edge_softmax(pos_scores: Tensor, pos_mask: Tensor, neg_scores: Tensor, neg_mask: Tensor) -> Tensor:
    """ArboEL eq. 6, with the paper's log-likelihood negated into a loss:

        L(m_i) = -sum_{u in Gamma(m_i)} I_{u,m_i} log sigma_u + (1 - I_{u,m_i}) log(1 - sigma_u)

    where sigma is ONE softmax over all of m_i's incoming edges, positives and negatives
    together: every positive edge sits in the same softmax and pushes its probability
    towards 1, every negative towards 0 (a binary cross-entropy on softmax probabilities,
    not one softmax per positive). The scores are affinities (phi, psi: higher = closer),
    i.e. minus the paper's edge weights w. Under the arborescence each mention has one
    incoming positive edge, but any number is accepted. The batch loss is the mean over
    mentions; rows with no real positive carry no target and are left out of it.
    """
    _check("pos_scores", pos_scores, 2)
    _check("neg_scores", neg_scores, 2, pos_scores.shape[0])
    _check_mask("pos_mask", pos_mask, pos_scores)
    _check_mask("neg_mask", neg_mask, neg_scores)
    scores = torch.cat([pos_scores, neg_scores], dim=1)
    mask = torch.cat([pos_mask, neg_mask], dim=1)
    log_p, log_not_p = masked_log_softmax(scores, mask)
    positive = torch.cat([pos_mask, torch.zeros_like(neg_mask)], dim=1)
    negative = torch.cat([torch.zeros_like(pos_mask), neg_mask], dim=1)
    per_edge = torch.where(positive, log_p, 0.0) + torch.where(negative, log_not_p, 0.0)
    rows = pos_mask.any(dim=1)
    return _mean(-per_edge.sum(dim=1)[rows], rows.sum())


def proxy_loss(pos_sim: Tensor, neg_sim: Tensor, neg_mask: Tensor, alpha: float, delta: float) -> Tensor:
    """PEL eq. 3, mean over mentions:

        L_Pb = log(1 + exp(-alpha (s(m, e+) - delta))) + log(1 + sum_{e-} exp(alpha (s(m, e-) + delta)))

    The positive and negative terms are decoupled, so easy random negatives no longer
    silence the positive's gradient (eq. 4). A mention without real negatives keeps only
    its positive term. The paper uses alpha = 32, delta = 0 on cosines.
    """
    _check("pos_sim", pos_sim, 1)
    _check("neg_sim", neg_sim, 2, len(pos_sim))
    _check_mask("neg_mask", neg_mask, neg_sim)
    positive = F.softplus(-alpha * (pos_sim - delta))
    logits = _masked(alpha * (neg_sim + delta), neg_mask)
    one = torch.zeros_like(pos_sim).unsqueeze(1)  # log(1 + sum exp x) = logsumexp([0, x])
    negative = torch.logsumexp(torch.cat([one, logits], dim=1), dim=1)
    return _mean(positive + negative, len(pos_sim))


def fgsm_perturbation(grad: Tensor, epsilon: float) -> Tensor:
    """PEL eq. 5: the FGSM step epsilon * sign(grad), detached (a constant, not a path
    for gradients).

    Pass the gradient of the loss being minimised with respect to the entity encoder's
    input embeddings z, and ADD the result to z: that moves z the way that INCREASES the
    loss. With the proxy loss, dL/ds(m, e-) > 0 and dL/ds(m, e+) < 0 (eq. 4), so this
    one step is eq. 6 for negatives (raise s(m, e-), a harder negative) and eq. 7 for
    the positive (lower s(m, e+), a harder positive). A zero gradient gives no step.
    """
    if not isinstance(grad, Tensor):
        raise ArboError(f"grad must be a torch tensor, got {type(grad).__name__}.")
    check_range("FGSM epsilon", epsilon, 0)
    return epsilon * grad.detach().sign()


def combine_adversarial(loss: Tensor, adv_loss: Tensor, lam: float) -> Tensor:
    """PEL eq. 8: L_Pb(m, P) + lambda L_Pb(m, P_adv), P_adv being the perturbed entities."""
    _check("loss", loss, 0)
    _check("adv_loss", adv_loss, 0)
    check_range("FGSM lambda", lam, 0)
    return loss + lam * adv_loss
