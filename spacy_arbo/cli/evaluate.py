"""`evaluate`: link a corpus with a saved pipeline and score it."""
import argparse
from typing import Any, Dict, Optional

from ..util import ArboError, atomic_path
from ._util import add_gpu_option
from .linker_options import add_setting_arguments, configured_pipeline, set_dictionaries


def add_commands(commands: "argparse._SubParsersAction") -> None:
    cmd = commands.add_parser("evaluate", help="link the gold mentions of a .spacy file and score them")
    cmd.add_argument("pipeline")
    cmd.add_argument("data", help=".spacy DocBin with gold kb ids")
    cmd.add_argument("--seen-from", help="training .spacy file: splits accuracy into seen / unseen entities")
    cmd.add_argument("--output", help="write the metrics as JSON here")
    cmd.add_argument("--html", help="write a page of the results here: figures, reliability diagram, and every "
                                    "document with its gold and predicted mentions, errors marked")
    cmd.add_argument("--end-to-end", action="store_true",
                     help="recognize the mentions too (the pipeline needs NER): NER, spaCy's nel_micro_* and end-to-end P/R/F")
    cmd.add_argument("--protocol", choices=["strict", "biosyn"], default="strict",
                     help="biosyn: also score a second pass under BioSyn's protocol (biosyn_* keys)")
    cmd.add_argument("--augment-from", nargs="+", metavar="TRAIN.spacy",
                     help="with --protocol biosyn: the corpora whose mentions augment the dictionary (train, dev)")
    add_setting_arguments(cmd)
    add_gpu_option(cmd)
    cmd.set_defaults(func=evaluate_command)


def evaluate_command(args: argparse.Namespace) -> None:
    from ..corpora import read_docbin
    from ..evaluation import (BIOSYN_KEYS, BIOSYN_SETTINGS, evaluate_linking, gold_id_set, linked_and_scored,
                              recognized_and_scored)
    from ..gold_corpus import read_gold_links
    from ..pipeline.arbo_linker import arbo_linkers
    from ._pipelines import require_recognizer

    nlp = configured_pipeline(args)
    docs = read_gold_links(args.data, nlp)
    seen = gold_id_set(read_docbin(args.seen_from, nlp.vocab)) if args.seen_from else None
    if args.end_to_end:
        require_recognizer(nlp, args.pipeline)
        metrics, predicted = recognized_and_scored(nlp, docs)
        _write_html(args, nlp, metrics, predicted, docs, seen)
        _report(metrics, args.output)
        return
    metrics, predicted = linked_and_scored(nlp, docs, seen_ids=seen)
    _write_html(args, nlp, metrics, predicted, docs, seen)
    if args.protocol == "biosyn":
        if not args.augment_from:
            raise ArboError("--protocol biosyn augments the dictionary with the training mentions: "
                            "give --augment-from TRAIN.spacy [DEV.spacy].")
        linkers = arbo_linkers(nlp)
        for linker in linkers:
            linker.configure(**BIOSYN_SETTINGS)
        set_dictionaries(linkers, args.augment_from, evaluated=docs)
        biosyn = evaluate_linking(nlp, docs, seen_ids=seen, skip_nil_gold=True)
        metrics.update({f"biosyn_{key}": biosyn.get(key) for key in BIOSYN_KEYS})
    _report(metrics, args.output)


def _write_html(args: argparse.Namespace, nlp, metrics: Dict[str, Any], predicted, gold, seen) -> None:
    if not args.html:
        return
    from ..error_report import error_report
    from ..pipeline.link_confidence import pipeline_linker

    kb = pipeline_linker(nlp, args.pipeline).require_retriever().kb
    page = error_report(f"{args.pipeline} on {args.data}", metrics, predicted, gold, kb, seen)
    with atomic_path(args.html) as tmp:
        tmp.write_text(page, encoding="utf8")
    print(f"Wrote {args.html}")


def _report(metrics: Dict[str, Any], output: Optional[str]) -> None:
    from ..evaluation import format_metrics
    from ._pipelines import write_json

    print(format_metrics(metrics))
    if output:
        write_json(metrics, output)
        print(f"Wrote {output}")
