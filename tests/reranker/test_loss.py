import math

import pytest
import torch

from spacy_arbo.reranker.loss import reranker_loss


def pairs(margins):
    """Logits [0, m]: the margin right - wrong is m."""
    return torch.tensor([[0.0, m] for m in margins], requires_grad=True)


def test_without_listwise_weight_it_is_the_per_pair_cross_entropy():
    logits = pairs([2.0, -1.0, 0.5])
    labels = torch.tensor([1, 0, 0])
    expected = torch.nn.functional.cross_entropy(logits, labels)
    loss = reranker_loss(logits, labels, torch.tensor([0, 0, 0]), torch.tensor([0, 1, 2]), 0.0)
    assert float(loss) == pytest.approx(float(expected))


def test_listwise_term_against_hand_computed_values():
    # Mention 0: margins 2, -1, 0.5 with the first right. Mention 1: margins 0, 1, the second right.
    logits = pairs([2.0, -1.0, 0.5, 0.0, 1.0])
    labels = torch.tensor([1, 0, 0, 0, 1])
    mentions, slots = torch.tensor([0, 0, 0, 1, 1]), torch.tensor([0, 1, 2, 0, 1])
    pointwise = float(reranker_loss(logits, labels, mentions, slots, 0.0))
    first = -(2.0 - math.log(math.exp(2.0) + math.exp(-1.0) + math.exp(0.5)))
    second = -(1.0 - math.log(math.exp(0.0) + math.exp(1.0)))
    loss = reranker_loss(logits, labels, mentions, slots, 0.5)
    assert float(loss) == pytest.approx(pointwise + 0.5 * (first + second) / 2, rel=1e-6)
    # The pairs' order does not matter, only whose and which candidate each is.
    order = torch.tensor([4, 2, 0, 3, 1])
    shuffled = reranker_loss(logits.detach()[order], labels[order], mentions[order], slots[order], 0.5)
    assert float(shuffled) == pytest.approx(float(loss), rel=1e-6)


def test_two_right_candidates_share_the_mass():
    logits = pairs([1.0, 1.0, 1.0])
    loss = reranker_loss(logits, torch.tensor([1, 1, 0]), torch.tensor([0, 0, 0]), torch.tensor([0, 1, 2]), 1.0)
    pointwise = float(reranker_loss(logits, torch.tensor([1, 1, 0]), torch.tensor([0, 0, 0]),
                                    torch.tensor([0, 1, 2]), 0.0))
    assert float(loss) - pointwise == pytest.approx(-math.log(2 / 3), rel=1e-6)


def test_mentions_with_nothing_to_rank_add_nothing_and_keep_gradients_finite():
    # Mention 0 has no right candidate, mention 1 a single one, mention 2 a ranking to learn.
    logits = pairs([0.3, -0.2, 0.7, 0.1, 0.4])
    labels = torch.tensor([0, 0, 1, 1, 0])
    mentions, slots = torch.tensor([0, 0, 1, 2, 2]), torch.tensor([0, 1, 0, 0, 1])
    loss = reranker_loss(logits, labels, mentions, slots, 1.0)
    pointwise = float(reranker_loss(logits, labels, mentions, slots, 0.0))
    assert float(loss) - pointwise == pytest.approx(-(0.1 - math.log(math.exp(0.1) + math.exp(0.4))), rel=1e-6)
    loss.backward()
    assert torch.isfinite(logits.grad).all()
    # Nothing to rank anywhere: the per-pair term alone.
    only = reranker_loss(logits[:3], labels[:3], mentions[:3], slots[:3], 1.0)
    assert float(only) == pytest.approx(float(reranker_loss(logits[:3], labels[:3], mentions[:3], slots[:3], 0.0)))
