"""How self-alignment trains (`AlignmentSettings`), apart from the training (torch): the
command line offers its choices and defaults without importing it."""
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from ..component_settings import check_at_least, check_choice
from ..ranges import check_range

if TYPE_CHECKING:
    from .synonyms import PairLoss

BATCHINGS = ("neighbours", "random")
LOSSES = ("multi_similarity", "infonce")


@dataclass(frozen=True)
class AlignmentSettings:
    """How self-alignment trains. The loss, its settings, the learning rate, random batches
    and the single pass are SapBERT's. `max_pairs` caps the pairs of a pass (0: one pair
    per name of every entity with two names or more)."""

    epochs: int = 1
    batch_size: int = 128
    learning_rate: float = 2e-5
    loss: str = "multi_similarity"
    batching: str = "random"
    neighbours: int = 8
    held_out: float = 0.05
    max_pairs: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        check_at_least(1, epochs=self.epochs, neighbours=self.neighbours)
        check_at_least(2, batch_size=self.batch_size)
        check_at_least(0, max_pairs=self.max_pairs, seed=self.seed)
        check_choice("loss", self.loss, LOSSES)
        check_choice("batching", self.batching, BATCHINGS)
        check_range("learning_rate", self.learning_rate, 0, low_open=True)
        check_range("held_out", self.held_out, 0, 1, high_open=True)

    def pair_loss(self) -> "PairLoss":
        from .synonyms import multi_positive_infonce, multi_similarity_loss  # torch: only when training

        if self.loss == "infonce":
            return partial(multi_positive_infonce, scale=20.0)
        return multi_similarity_loss
