import math

import pytest
import torch
from torch.testing import assert_close

from spacy_arbo.training.losses import (
    combine_adversarial,
    edge_softmax,
    fgsm_perturbation,
    in_batch_softmax,
    logistic_hard_negatives,
    masked_log_softmax,
    positive_set_softmax,
    proxy_loss,
)
from spacy_arbo.util import ArboError

T, F = True, False
log, exp = math.log, math.exp


def softplus(x):
    return log(1 + exp(x))


def tensor(values, grad=False):
    return torch.tensor(values, dtype=torch.float32, requires_grad=grad)


def mask(values):
    return torch.tensor(values, dtype=torch.bool)


def test_in_batch_softmax_by_hand():
    scores = tensor([[2.0, 0.0, 1.0], [0.5, 1.5, -1.0]])
    row0 = -2.0 + log(exp(2.0) + exp(0.0) + exp(1.0))
    row1 = -1.5 + log(exp(0.5) + exp(1.5) + exp(-1.0))
    loss = in_batch_softmax(scores, torch.tensor([0, 1]))
    assert_close(loss, torch.tensor((row0 + row1) / 2))


def test_in_batch_softmax_scale_is_the_callers():
    cosines = tensor([[0.5, 0.1], [0.2, 0.4]])
    a = 10.0  # DEER eq. 3: f = a * s
    row0 = -5.0 + log(exp(5.0) + exp(1.0))
    row1 = -4.0 + log(exp(2.0) + exp(4.0))
    assert_close(in_batch_softmax(a * cosines, torch.tensor([0, 1])), torch.tensor((row0 + row1) / 2))


def test_positive_set_softmax_by_hand():
    """A row's positives share one probability; a row without positives is left out."""
    scores = tensor([[2.0, 0.0, 1.0], [0.5, 1.5, -1.0], [3.0, 1.0, 0.0]])
    positive = mask([[T, F, T], [F, T, F], [F, F, F]])
    row0 = -log(exp(2.0) + exp(1.0)) + log(exp(2.0) + exp(0.0) + exp(1.0))
    row1 = -1.5 + log(exp(0.5) + exp(1.5) + exp(-1.0))
    assert_close(positive_set_softmax(scores, positive), torch.tensor((row0 + row1) / 2))
    assert_close(positive_set_softmax(scores[1:2], positive[1:2]), in_batch_softmax(scores[1:2], torch.tensor([1])))


def test_logistic_hard_negatives_by_hand():
    pos = tensor([0.5, -0.5])
    neg = tensor([[0.2, 0.9], [0.1, 0.0]])
    a_h, b_h = tensor(2.0, grad=True), tensor(-0.5, grad=True)
    # logits a_h * s + b_h: positives 0.5, -1.5; real negatives -0.1, 1.3, -0.3 (0.0 is padding)
    # -log g(x) = softplus(-x) for y = 1, -log(1 - g(x)) = softplus(x) for y = 0
    expected = (softplus(-0.5) + softplus(1.5) + softplus(-0.1) + softplus(1.3) + softplus(-0.3)) / 5
    loss = logistic_hard_negatives(pos, neg, mask([[T, T], [T, F]]), a_h, b_h)
    assert_close(loss, torch.tensor(expected))
    loss.backward()
    assert a_h.grad is not None and b_h.grad is not None


def test_edge_softmax_by_hand():
    pos = tensor([[1.0, 9.0], [0.5, 0.3]])
    neg = tensor([[0.0, 2.0], [-1.0, 7.0]])
    pos_mask, neg_mask = mask([[T, F], [T, T]]), mask([[T, T], [T, F]])
    z0 = exp(1.0) + exp(0.0) + exp(2.0)
    row0 = -(log(exp(1.0) / z0) + log(1 - exp(0.0) / z0) + log(1 - exp(2.0) / z0))
    # two positives share ONE softmax with the negative (eq. 6), each pushed towards 1
    z1 = exp(0.5) + exp(0.3) + exp(-1.0)
    row1 = -(log(exp(0.5) / z1) + log(exp(0.3) / z1) + log(1 - exp(-1.0) / z1))
    assert_close(edge_softmax(pos, pos_mask, neg, neg_mask), torch.tensor((row0 + row1) / 2))


def test_edge_softmax_skips_rows_without_positives():
    pos = tensor([[1.0], [4.0], [3.0]], grad=True)
    neg = tensor([[0.0, 2.0], [5.0, 6.0], [0.0, 0.0]], grad=True)
    pos_mask, neg_mask = mask([[T], [F], [T]]), mask([[T, T], [T, T], [F, F]])
    z0 = exp(1.0) + exp(0.0) + exp(2.0)
    row0 = -(log(exp(1.0) / z0) + log(1 - exp(0.0) / z0) + log(1 - exp(2.0) / z0))
    row2 = 0.0  # a lone positive edge has probability 1
    loss = edge_softmax(pos, pos_mask, neg, neg_mask)
    assert_close(loss, torch.tensor((row0 + row2) / 2))
    loss.backward()
    assert torch.isfinite(pos.grad).all() and torch.isfinite(neg.grad).all()
    assert pos.grad[1].item() == 0.0 and neg.grad[1].abs().sum().item() == 0.0


def test_edge_softmax_stays_exact_when_a_negative_dominates():
    # p(negative) rounds to 1 in float32; log(1 - p) must still be -30 - log(1 + e^-30)
    loss = edge_softmax(tensor([[0.0]]), mask([[T]]), tensor([[30.0]]), mask([[T]]))
    assert_close(loss, torch.tensor(2 * (30.0 + log(1 + exp(-30.0)))))


def test_all_masked_gives_zero_not_nan():
    empty = mask([[F, F]])
    pos, neg = tensor([[1.0, 2.0]], grad=True), tensor([[3.0, 4.0]], grad=True)
    loss = edge_softmax(pos, empty, neg, empty)
    loss.backward()
    assert loss.item() == 0.0 and pos.grad.abs().sum().item() == 0.0
    log_p, log_not_p = masked_log_softmax(tensor([[1.0, 2.0]]), empty)
    assert torch.isfinite(log_p).all() and torch.isfinite(log_not_p).all()


def test_masked_log_softmax_matches_softmax_on_real_entries():
    scores = tensor([[0.3, -1.0, 2.0], [1.0, 5.0, 0.0]])
    valid = mask([[T, T, T], [T, F, T]])
    log_p, log_not_p = masked_log_softmax(scores, valid)
    p0 = torch.softmax(scores[0], 0)
    p1 = torch.softmax(scores[1, [0, 2]], 0)
    assert_close(log_p[0].exp(), p0)
    assert_close(log_not_p[0].exp(), 1 - p0)
    assert_close(log_p[1, [0, 2]].exp(), p1)
    assert_close(log_not_p[1, [0, 2]].exp(), 1 - p1)


def test_proxy_loss_by_hand():
    pos = tensor([0.8, 0.1])
    neg = tensor([[0.3, -0.2], [0.5, 0.0]])
    alpha, delta = 2.0, 0.1
    row0 = softplus(-2 * (0.8 - 0.1)) + log(1 + exp(2 * (0.3 + 0.1)) + exp(2 * (-0.2 + 0.1)))
    row1 = softplus(-2 * (0.1 - 0.1)) + log(1 + exp(2 * (0.5 + 0.1)))
    loss = proxy_loss(pos, neg, mask([[T, T], [T, F]]), alpha, delta)
    assert_close(loss, torch.tensor((row0 + row1) / 2))


def test_proxy_loss_without_negatives_keeps_the_positive_term():
    loss = proxy_loss(tensor([0.4]), tensor([[9.0, 9.0]]), mask([[F, F]]), alpha=32.0, delta=0.0)
    assert_close(loss, torch.tensor(softplus(-32 * 0.4)))


@pytest.mark.parametrize("objective", ["logistic", "edge", "proxy"])
def test_gradient_raises_positives_and_lowers_negatives(objective):
    pos = tensor([0.3, -0.1], grad=True)
    neg = tensor([[0.2, 0.5], [0.4, 0.0]], grad=True)
    neg_mask = mask([[T, T], [T, F]])

    def loss_of(p, n):
        if objective == "logistic":
            return logistic_hard_negatives(p, n, neg_mask, tensor(5.0), tensor(0.0))
        if objective == "edge":
            return edge_softmax(p.unsqueeze(1), mask([[T], [T]]), n, neg_mask)
        return proxy_loss(p, n, neg_mask, alpha=4.0, delta=0.1)

    loss = loss_of(pos, neg)
    loss.backward()
    assert (pos.grad < 0).all()
    assert (neg.grad[neg_mask] > 0).all() and neg.grad[~neg_mask].item() == 0.0
    with torch.no_grad():
        assert loss_of(pos + 0.1, neg) < loss
        assert loss_of(pos, neg - 0.1 * neg_mask) < loss


def test_in_batch_gradient_direction():
    scores = tensor([[1.0, 0.5], [0.0, 2.0]], grad=True)
    targets = torch.tensor([0, 1])
    loss = in_batch_softmax(scores, targets)
    loss.backward()
    gold = torch.eye(2, dtype=torch.bool)
    assert (scores.grad[gold] < 0).all() and (scores.grad[~gold] > 0).all()
    with torch.no_grad():
        assert in_batch_softmax(scores + 0.1 * gold, targets) < loss


def test_fgsm_steps_up_the_loss():
    x = tensor([1.0, -2.0, 0.5], grad=True)
    centre = tensor([0.0, 0.0, 0.5])
    loss = ((x - centre) ** 2).sum()  # grad 2 (x - c) = [2, -4, 0]
    (grad,) = torch.autograd.grad(loss, x)
    step = fgsm_perturbation(grad, 0.1)
    assert_close(step, tensor([0.1, -0.1, 0.0]))
    assert not step.requires_grad
    assert ((x + step - centre) ** 2).sum() > loss
    assert_close(fgsm_perturbation(torch.zeros(3), 0.1), torch.zeros(3))


def test_fgsm_on_the_proxy_loss_is_eq_6_and_7():
    pos, neg = tensor([0.6], grad=True), tensor([[0.2, 0.1]], grad=True)
    neg_mask = mask([[T, T]])
    loss = proxy_loss(pos, neg, neg_mask, alpha=8.0, delta=0.0)
    pos_grad, neg_grad = torch.autograd.grad(loss, [pos, neg])
    # eq. 7 lowers the positive's similarity, eq. 6 raises the negatives'
    assert_close(fgsm_perturbation(pos_grad, 0.01), tensor([-0.01]))
    assert_close(fgsm_perturbation(neg_grad, 0.01), tensor([[0.01, 0.01]]))
    with torch.no_grad():
        harder = proxy_loss(pos + fgsm_perturbation(pos_grad, 0.01), neg + fgsm_perturbation(neg_grad, 0.01),
                            neg_mask, alpha=8.0, delta=0.0)
    assert harder > loss


def test_combine_adversarial():
    assert_close(combine_adversarial(tensor(1.5), tensor(0.5), 2.0), tensor(2.5))
    with pytest.raises(ArboError, match=r"^FGSM lambda takes a number >= 0; got -1.0\.$"):
        combine_adversarial(tensor(1.5), tensor(0.5), -1.0)
    with pytest.raises(ArboError, match=r"^FGSM epsilon takes a number >= 0; got -0.1\.$"):
        fgsm_perturbation(torch.ones(2), -0.1)


def test_shape_errors_name_the_argument():
    scores = tensor([[1.0, 2.0]])
    with pytest.raises(ArboError, match="targets"):
        in_batch_softmax(scores, torch.tensor([0, 1]))
    with pytest.raises(ArboError, match="long"):
        in_batch_softmax(scores, torch.tensor([0.0]))
    with pytest.raises(ArboError, match="columns"):
        in_batch_softmax(scores, torch.tensor([2]))
    with pytest.raises(ArboError, match="neg_mask"):
        proxy_loss(tensor([1.0]), scores, torch.ones(1, 2), 1.0, 0.0)
    with pytest.raises(ArboError, match="neg_mask"):
        logistic_hard_negatives(tensor([1.0]), scores, mask([[T]]), 1.0, 0.0)
    with pytest.raises(ArboError, match="neg_scores"):
        edge_softmax(scores, mask([[T, T]]), tensor([[1.0], [2.0]]), mask([[T], [T]]))
    with pytest.raises(ArboError, match="pos_sim"):
        proxy_loss(scores, scores, mask([[T, T]]), 1.0, 0.0)
