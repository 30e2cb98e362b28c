"""The reranker's training loss: the paper's per-pair cross-entropy on [MASK] (eq. 4),
optionally plus a listwise term that compares a mention's candidates with each other."""
from typing import Optional

import torch


def ranked_mentions(labels: torch.Tensor, mentions: torch.Tensor) -> torch.Tensor:
    """The mentions (numbers in `mentions`) with a ranking to learn: a right candidate
    and at least one other."""
    numbers, counts = torch.unique(mentions, return_counts=True)
    right = torch.unique(mentions[labels.bool()])
    return numbers[(counts > 1) & torch.isin(numbers, right)]


def reranker_loss(logits: torch.Tensor, labels: torch.Tensor, mentions: torch.Tensor, slots: torch.Tensor,
                  listwise_weight: float, pair_total: Optional[int] = None,
                  ranked_total: Optional[int] = None) -> torch.Tensor:
    """Per-pair cross-entropy of `logits` (pairs x [wrong, right]) against `labels`, summed
    and divided by `pair_total`, plus `listwise_weight` times -log(softmax mass of the right
    candidates) summed over the ranked mentions (`ranked_mentions`) and divided by
    `ranked_total`; each pair's margin (right - wrong logit) is its candidate's score, and
    `mentions[i]` / `slots[i]` say whose candidate pair i is and where in its list. The
    totals default to these pairs' own counts (means); an update split into batches passes
    the whole update's, each batch holding all pairs of its mentions.

    Not in the paper: the per-pair term scores each pair alone, so it spends its gradient on
    pairs that are already clearly wrong; ranking needs the right candidate above its
    mention's other candidates, which is what the listwise term (BLINK's cross-encoder
    loss) asks for."""
    pair_total = len(labels) if pair_total is None else pair_total
    loss = torch.nn.functional.cross_entropy(logits, labels, reduction="sum") / max(pair_total, 1)
    ranked = ranked_mentions(labels, mentions) if listwise_weight and len(labels) else mentions[:0]
    if len(ranked) == 0:
        return loss
    ranked_total = len(ranked) if ranked_total is None else ranked_total
    keep = torch.isin(mentions, ranked)
    rows = torch.unique(mentions[keep], return_inverse=True)[1]
    margins = logits[keep, 1] - logits[keep, 0]
    # -inf where a mention has no such candidate; each row has a right one, so no row is
    # all -inf (which would give NaN gradients).
    table = margins.new_full((len(ranked), int(slots.max()) + 1), float("-inf"))
    table = table.index_put((rows, slots[keep]), margins)
    right = torch.zeros(table.shape, dtype=torch.bool, device=logits.device)
    right[rows, slots[keep]] = labels[keep].bool()
    listwise = torch.logsumexp(table, dim=1) - torch.logsumexp(table.masked_fill(~right, float("-inf")), dim=1)
    return loss + listwise_weight * listwise.sum() / ranked_total
