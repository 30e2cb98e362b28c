r"""The KB-only recipe's encoder pulled back toward the encoder it started from.

Per alpha, weights alpha * aligned + (1 - alpha) * start (WiSE-FT's interpolation, Wortsman
et al. 2022) are written to OUT/alpha_<a>, and the held-out KB names' recall@1 is printed (the
recipe's label-free selection, over the names self-align hid); assemble and score each as the
kb-only commands do (`--paths.encoder OUT/alpha_<a>`).

Why: self-alignment lifts the entities whose names the KB pairs up and costs others (the
unseen subsets of both corpora link better unaligned); a mix may keep both.

    python bench/interpolate_alignment.py training/kb_only/encoder kb scratch/interp --alphas 0.3 0.5 0.7
"""
import argparse
import json
import sys
from pathlib import Path

import torch

from interpolate_mention_tower import interpolated
from spacy_arbo.cli import reporting_errors
from spacy_arbo.encoders.transformer import TransformerTower, encoder_path
from spacy_arbo.kb.store import open_store
from spacy_arbo.training.alignment_holdout import held_out_score, hold_out_names
from spacy_arbo.training.self_alignment import AlignmentSettings
from spacy_arbo.util import ArboError


def name_encoder(path: str) -> TransformerTower:
    """As self-align reads names: mean-pooled, no mention markers."""
    return TransformerTower.from_pretrained(path, "mean", 25, use_markers=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("aligned", help="self-align's encoder directory")
    parser.add_argument("kb_dir", help="the entity store it was aligned on")
    parser.add_argument("out_dir", help="where to write OUT/alpha_<a> encoders")
    parser.add_argument("--start", help="the encoder self-align started from (default: the offline MiniLM)")
    parser.add_argument("--alphas", type=float, nargs="+", default=[0.3, 0.5, 0.7])
    parser.add_argument("--held-out", type=float, default=AlignmentSettings().held_out,
                        help="the held-out share self-align used (its --held-out)")
    parser.add_argument("--seed", type=int, default=AlignmentSettings().seed, help="self-align's --seed")
    parser.add_argument("--output", help="write the per-alpha figures as JSON here")
    args = parser.parse_args()
    kb = open_store(args.kb_dir)
    held_out = hold_out_names(kb, args.held_out, args.seed)
    aligned = name_encoder(args.aligned)
    start = name_encoder(encoder_path(args.start))
    trained = {name: weight.detach().clone() for name, weight in aligned.encoder.state_dict().items()}
    pretrained = start.encoder.state_dict()
    if set(trained) != set(pretrained):
        raise ArboError(f"{args.aligned}: not the architecture of the encoder it is said to start from.")
    rows = []
    for alpha in args.alphas:
        with torch.no_grad():
            aligned.encoder.load_state_dict(interpolated(trained, pretrained, alpha))
        score = held_out_score(aligned, kb, held_out)
        path = Path(args.out_dir) / f"alpha_{alpha:g}"
        aligned.save_pretrained(path)
        rows.append({"alpha": alpha, "held_out_recall@1": round(score.recall_at_1, 4),
                     "held_out_loss": round(score.loss, 4), "encoder": str(path)})
        print(json.dumps(rows[-1]), flush=True)
    if args.output:
        Path(args.output).write_text(json.dumps({"aligned": args.aligned, "held_out_names": len(held_out),
                                                 "alphas": rows}, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(reporting_errors(main))
