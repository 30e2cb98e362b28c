"""What dropout on the attention probabilities costs a training update on a CPU: the default
MiniLM's forward and backward pass with the checkpoint's 0.1 against 0 (`attention_dropout`),
side by side in one process, at the shapes the recipes train on.

Why: with dropout p > 0, PyTorch's attention leaves its fused CPU kernel for the plain one that
draws a mask over every (head, query, key), whose cost grows with L^2, not L; a recipe chooses
`attention_dropout` knowing what the checkpoint's value costs it.

    python bench/attention_dropout.py [--shapes 64x64 8x512] [--repeats 3] [--output attention_dropout.json]

A shape RxL is R rows of L word pieces: 64x64 is a retriever batch of mentions in context
(`max_length = 64`), 8x512 a batch of the reranker's multi passes (`max_length = 512`).
"""
import argparse
import json
import time
from typing import Dict, List

import torch

from spacy_arbo.encoders.transformer import TransformerTower, default_encoder_path
from spacy_arbo.util import atomic_path


def seconds_per_update(tower: TransformerTower, rows: int, length: int, repeats: int) -> float:
    ids = torch.randint(1000, 20000, (rows, length), generator=torch.Generator().manual_seed(0))
    tower.train()

    def update() -> None:
        tower.encoder.zero_grad(set_to_none=True)
        tower.last_hidden_state(input_ids=ids, attention_mask=torch.ones_like(ids)).mean().backward()

    update()  # warm-up: allocations and kernel choice
    start = time.perf_counter()
    for _ in range(repeats):
        update()
    return (time.perf_counter() - start) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", nargs="+", default=["64x64", "8x512"], help="ROWSxLENGTH")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default="attention_dropout.json")
    args = parser.parse_args()
    torch.manual_seed(0)
    name = default_encoder_path()
    towers = {p: TransformerTower.from_pretrained(name, "mean", 512, False, attention_dropout=p) for p in (0.1, 0.0)}
    rows: List[Dict[str, float]] = []
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads\n"
          "| shape | seconds / update, attention dropout 0.1 | at 0 | ratio |\n|---|---:|---:|---:|")
    for shape in args.shapes:
        n_rows, length = (int(x) for x in shape.split("x"))
        with_dropout, without = (seconds_per_update(towers[p], n_rows, length, args.repeats) for p in (0.1, 0.0))
        rows.append({"rows": n_rows, "length": length, "seconds_dropout_0.1": round(with_dropout, 3),
                     "seconds_dropout_0": round(without, 3), "ratio": round(with_dropout / without, 2)})
        print(f"| {shape} | {with_dropout:.3f} | {without:.3f} | {with_dropout / without:.2f} |")
    with atomic_path(args.output) as tmp:
        tmp.write_text(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "shapes": rows},
                                  indent=2))


if __name__ == "__main__":
    main()
