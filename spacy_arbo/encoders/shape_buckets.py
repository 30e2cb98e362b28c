"""Batches padded to a few shapes before a bf16 pass on a CPU.

oneDNN, which runs torch's bf16 matrix products on CPUs, keeps a compiled kernel (with its
own copy of the packed weights) for every input shape it meets, up to a cache of 1,024. A
stream of texts meets a new (rows x word pieces) shape at almost every batch, so a linking
service's memory climbs until that cache is full. Rows padded to a power of two and word
pieces to a multiple of `WIDTH_STEP` bound the shapes to a few dozen; the padding is masked
(extra rows repeat the first one), and the caller gets back its own rows and positions.
"""
from typing import Tuple

import torch

WIDTH_STEP = 16


def bucket_shape(rows: int, width: int) -> Tuple[int, int]:
    """The padded (rows, width): the next power of two, the next multiple of WIDTH_STEP."""
    return 1 << max(0, rows - 1).bit_length(), -(-width // WIDTH_STEP) * WIDTH_STEP


def pad_to_bucket(embeddings: torch.Tensor, mask: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(rows, width, dim) input embeddings and their (rows, width) mask, padded to
    `bucket_shape`: new positions masked out, new rows copies of the first."""
    rows, width = mask.shape
    padded_rows, padded_width = bucket_shape(rows, width)
    if (padded_rows, padded_width) == (rows, width):
        return embeddings, mask
    embeddings = torch.nn.functional.pad(embeddings, (0, 0, 0, padded_width - width))
    mask = torch.nn.functional.pad(mask, (0, padded_width - width))
    extra = padded_rows - rows
    if extra:
        embeddings = torch.cat([embeddings, embeddings[:1].expand(extra, -1, -1)])
        mask = torch.cat([mask, mask[:1].expand(extra, -1)])
    return embeddings, mask
