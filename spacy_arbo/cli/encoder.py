"""Commands that write an encoder as a Hugging Face model directory, to start a retriever
from (--paths.encoder): export-encoder, self-align."""
import argparse
from typing import TYPE_CHECKING, Dict, Optional

from ..training.alignment_settings import BATCHINGS, LOSSES, AlignmentSettings
from ..util import ArboError
from ._util import add_gpu_option

if TYPE_CHECKING:
    from ..encoders.transformer import TransformerTower

# The dense + w x TF-IDF weights whose held-out recall `self-align` reports.
SPARSE_WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)


def add_commands(commands: "argparse._SubParsersAction") -> None:
    cmd = commands.add_parser("export-encoder", help="write a trained arbo_linker's transformer as a Hugging Face "
                              "model directory, to warm-start another recipe (--paths.encoder)")
    cmd.add_argument("pipeline")
    cmd.add_argument("out_dir")
    cmd.add_argument("--component", default="arbo_linker")
    cmd.set_defaults(func=export_encoder_command)

    defaults = AlignmentSettings()
    cmd = commands.add_parser("self-align", help="align the names of each KB entity in an encoder "
                              "(SapBERT's recipe, one pass by default), keeping the pass that links held-out KB names best: "
                              "the KB-only recipe's encoder, trained without any labelled mention")
    cmd.add_argument("kb_dir", help="entity store directory")
    cmd.add_argument("out_dir", help="where to write the encoder (a Hugging Face model directory)")
    cmd.add_argument("--encoder", help="encoder to start from (default: the offline MiniLM)")
    cmd.add_argument("--curve", help="write the per-pass curve (pass, seconds, loss, held-out recall@1) as JSON here")
    cmd.add_argument("--epochs", type=int, default=defaults.epochs, help="passes over the KB's names")
    cmd.add_argument("--batch-size", type=int, default=defaults.batch_size, help="name pairs per step")
    cmd.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    cmd.add_argument("--loss", default=defaults.loss, choices=LOSSES,
                     help="multi_similarity: SapBERT's loss over the batch's hard pairs")
    cmd.add_argument("--batching", default=defaults.batching, choices=BATCHINGS,
                     help="neighbours: each batch holds entities whose names the encoder puts near each other")
    cmd.add_argument("--held-out", type=float, default=defaults.held_out,
                     help="share of the entities with two names or more that lend one name to model selection")
    cmd.add_argument("--max-pairs", type=int, default=defaults.max_pairs,
                     help="name pairs per pass (0: one per name of every entity with two names or more)")
    cmd.add_argument("--max-length", type=int, default=25, help="word pieces per name")
    cmd.add_argument("--seed", type=int, default=defaults.seed)
    cmd.add_argument("--precision", default="auto", choices=("auto", "fp32", "bf16"),
                     help="auto: bf16 (autocast) where the hardware computes it natively")
    add_gpu_option(cmd)
    cmd.set_defaults(func=self_align_command)


def export_encoder_command(args: argparse.Namespace) -> None:
    from ..encoders.transformer import TransformerTower
    from ..torch_model import get_module
    from ._pipelines import linker_component, load_pipeline

    module = get_module(linker_component(load_pipeline(args.pipeline), args.component, args.pipeline).model)
    tower = module.mention_tower
    if not isinstance(tower, TransformerTower):
        raise ArboError(f"{args.pipeline}: the {args.component} mention tower is a {type(tower).__name__}, "
                        "not a transformer; only a TransformerTower.v1 exports as a Hugging Face model.")
    tower.save_pretrained(args.out_dir)
    side = "the shared towers" if module.shared else "the mention tower (the entity tower is separate)"
    print(f"Wrote {args.out_dir}: {side}; start a retriever from it with --paths.encoder {args.out_dir}")


def name_tower(args: argparse.Namespace) -> "TransformerTower":
    """The encoder that self-align trains on KB names (mean-pooled, no
    mention markers), on `--gpu-id`'s device at `--precision`."""
    from ..encoders.precision import resolve_precision
    from ..encoders.transformer import TransformerTower, encoder_path
    from ._pipelines import torch_device

    tower = TransformerTower.from_pretrained(encoder_path(args.encoder), "mean", args.max_length, use_markers=False)
    tower.to(torch_device(args.gpu_id))
    tower.set_precision(resolve_precision(args.precision, tower.encoder.device))
    return tower


def self_align_command(args: argparse.Namespace) -> None:
    from ..encoders.transformer import encoder_path
    from ..kb.store import open_store
    from ..training.alignment_holdout import KBNames, hybrid_recall
    from ..training.self_alignment import self_align
    from ._pipelines import write_json

    settings = AlignmentSettings(epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.learning_rate,
                                 loss=args.loss, batching=args.batching, held_out=args.held_out,
                                 max_pairs=args.max_pairs, seed=args.seed)
    kb = open_store(args.kb_dir)
    tower = name_tower(args)
    result = self_align(tower, kb, settings)
    tower.save_pretrained(args.out_dir)
    summary = {"kb": str(args.kb_dir), "encoder": encoder_path(args.encoder), **result.to_json(),
               "held_out": [{"name": text, "id": kb.ids[row]} for text, row in result.held_out.names]}
    if result.vectors is not None:
        summary["held_out_recall@1_hybrid"] = hybrid_recall(result.vectors, KBNames(kb), result.held_out, kb,
                                                            SPARSE_WEIGHTS)
    for point in result.to_json()["passes"]:
        print(f"pass {point['pass']}: {point['pairs']:,} pairs, {point['seconds']:.0f} s, "
              f"loss {_number(point['loss'])}, held-out recall@1 {_number(point['held_out_recall@1'])}")
    print(result.note or f"Kept pass {result.best_pass} ({len(result.held_out):,} held-out names).")
    if "held_out_recall@1_hybrid" in summary:
        print("Held-out recall@1 of the kept encoder, TF-IDF and dense + w x TF-IDF: "
              + _weights(summary["held_out_recall@1_hybrid"]))
    if args.curve:
        write_json(summary, args.curve)
        print(f"Wrote {args.curve}")
    print(f"Wrote {args.out_dir}: assemble a linker from it with --paths.encoder {args.out_dir}")


def _number(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.4f}"


def _weights(recalls: Dict[str, Optional[float]]) -> str:
    return ", ".join(f"{key if key == 'tfidf' else 'w=' + key} {_number(value)}" for key, value in recalls.items())
