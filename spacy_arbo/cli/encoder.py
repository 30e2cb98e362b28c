"""Commands that write an encoder as a Hugging Face model directory, to start a retriever
from (--paths.encoder): export-encoder, pretrain-synonyms."""
import argparse

import numpy as np

from ..encoders.precision import resolve_precision
from ..encoders.transformer import TransformerTower, encoder_path
from ..kb.store import open_store
from ..torch_model import get_module
from ..training.synonyms import name_alignment, pretrain_synonyms, synonym_pairs
from ..util import ArboError
from ._util import load_pipeline


def add_commands(commands: "argparse._SubParsersAction") -> None:
    cmd = commands.add_parser("export-encoder", help="write a trained arbo_linker's transformer as a Hugging Face "
                              "model directory, to warm-start another recipe (--paths.encoder)")
    cmd.add_argument("pipeline")
    cmd.add_argument("out_dir")
    cmd.add_argument("--component", default="arbo_linker")
    cmd.set_defaults(func=export_encoder_command)

    cmd = commands.add_parser("pretrain-synonyms", help="align the names of each KB entity in an encoder (SapBERT's recipe)")
    cmd.add_argument("kb_dir", help="entity store directory")
    cmd.add_argument("out_dir", help="where to write the encoder (a Hugging Face model directory)")
    cmd.add_argument("--encoder", help="encoder to start from (default: the offline MiniLM)")
    cmd.add_argument("--epochs", type=int, default=1)
    cmd.add_argument("--batch-size", type=int, default=128, help="name pairs per step")
    cmd.add_argument("--learning-rate", type=float, default=2e-5)
    cmd.add_argument("--max-length", type=int, default=25, help="word pieces per name")
    cmd.add_argument("--max-steps", type=int, default=0, help="stop after N steps (0: every pair once per epoch)")
    cmd.add_argument("--seed", type=int, default=0)
    cmd.add_argument("--precision", default="auto", choices=("auto", "fp32", "bf16"),
                     help="auto: bf16 (autocast) where the hardware computes it natively")
    cmd.set_defaults(func=pretrain_synonyms_command)


def export_encoder_command(args: argparse.Namespace) -> None:
    module = get_module(load_pipeline(args.pipeline).get_pipe(args.component).model)
    tower = module.mention_tower
    if not isinstance(tower, TransformerTower):
        raise ArboError(f"{args.pipeline}: the {args.component} mention tower is a {type(tower).__name__}, "
                        "not a transformer; only a TransformerTower.v1 exports as a Hugging Face model.")
    tower.save_pretrained(args.out_dir)
    side = "the shared towers" if module.shared else "the mention tower (the entity tower is separate)"
    print(f"Wrote {args.out_dir}: {side}; start a retriever from it with --paths.encoder {args.out_dir}")


def pretrain_synonyms_command(args: argparse.Namespace) -> None:
    kb = open_store(args.kb_dir)
    tower = TransformerTower.from_pretrained(encoder_path(args.encoder), "mean", args.max_length, use_markers=False)
    tower.set_precision(resolve_precision(args.precision, tower.encoder.device))
    sample = synonym_pairs(kb, np.random.default_rng(args.seed + 1))[:2000]
    before = name_alignment(tower, sample)
    losses = pretrain_synonyms(tower, kb, epochs=args.epochs, batch_size=args.batch_size,
                               learning_rate=args.learning_rate, seed=args.seed, max_steps=args.max_steps)
    after = name_alignment(tower, sample)
    tower.save_pretrained(args.out_dir)
    print(f"{len(losses):,} steps, loss {np.mean(losses[:20]):.3f} -> {np.mean(losses[-20:]):.3f}; mean cosine of "
          f"synonyms {before[0]:.3f} -> {after[0]:.3f}, of other names {before[1]:.3f} -> {after[1]:.3f} "
          f"({len(sample):,} pairs)")
    print(f"Wrote {args.out_dir}: train the retriever from it with --paths.encoder {args.out_dir}")
