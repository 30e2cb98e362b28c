"""Commands that choose on a dev set (`spacy_arbo.tuning`'s rule): tune-reranker,
tune-threshold, select-pipeline."""
import argparse
import shutil

from ..tuning.rule import MIN_GAIN, check_min_gain
from ..tuning.selection_metrics import SELECTION_METRICS
from ..util import atomic_path
from ._util import add_gpu_option


def add_commands(commands: "argparse._SubParsersAction") -> None:
    cmd = commands.add_parser("tune-reranker",
                              help="choose the reranker's retrieval_weight (and top_n) on a dev set and store them")
    cmd.add_argument("pipeline", help="a pipeline with a retriever and a multi_cross_reranker")
    cmd.add_argument("dev", help=".spacy DocBin with gold kb ids")
    cmd.add_argument("--weights", nargs="+", type=float, help="weights to try (default: 0 to 8)")
    cmd.add_argument("--top-n", nargs="+", type=int,
                     help="numbers of candidates to try (default: the reranker's own); the smallest within "
                          "--max-loss of the best dev accuracy wins")
    cmd.add_argument("--max-loss", type=float, default=MIN_GAIN,
                     help="dev accuracy@1 a smaller --top-n may give up (default: half a point, 0.005)")
    cmd.add_argument("--output", help="where to write the tuned pipeline (default: in place)")
    add_gpu_option(cmd)
    cmd.set_defaults(func=tune_reranker_command)

    cmd = commands.add_parser("tune-threshold", help="choose the NIL threshold on a dev set (best link F) and store it")
    cmd.add_argument("pipeline", help="a pipeline whose last linking component gets the threshold")
    cmd.add_argument("dev", help=".spacy DocBin with gold kb ids")
    cmd.add_argument("--min-gain", type=float, default=MIN_GAIN,
                     help="link F on dev a threshold must add to no threshold's to be kept (default: half a point, 0.005)")
    cmd.add_argument("--end-to-end", action="store_true",
                     help="choose it by end-to-end link F on the mentions the pipeline's recognizer finds in the dev "
                          "texts (the pipeline needs NER), not on the gold mentions")
    cmd.add_argument("--output", help="where to write the tuned pipeline (default: in place)")
    add_gpu_option(cmd)
    cmd.set_defaults(func=tune_threshold_command)

    cmd = commands.add_parser("calibrate", help="calibrate the confidence of the pipeline's links on a dev set "
                                                "(span._.kb_confidence, from a link_confidence component at the end)")
    cmd.add_argument("pipeline")
    cmd.add_argument("dev", help=".spacy DocBin with gold kb ids")
    cmd.add_argument("--end-to-end", action="store_true",
                     help="calibrate on the mentions the pipeline's recognizer finds in the dev texts (a spurious "
                          "mention is a wrong link), not on the gold mentions")
    cmd.add_argument("--min-confidence", type=float,
                     help="links below this confidence become NIL (default: none do)")
    cmd.add_argument("--output", help="where to write the calibrated pipeline (default: in place)")
    add_gpu_option(cmd)
    cmd.set_defaults(func=calibrate_command)

    cmd = commands.add_parser("select-pipeline", help="copy the pipeline that scores best on a dev set")
    cmd.add_argument("pipelines", nargs="+", help="two or more pipelines, the cheapest first: a later one replaces "
                                                   "the choice only when it scores --min-gain more")
    cmd.add_argument("--dev", required=True, help=".spacy DocBin with gold kb ids")
    cmd.add_argument("--metric", default="nel_micro_f", choices=SELECTION_METRICS,
                     help="link F (default; rewards a NIL threshold), strict or any-id accuracy@1 on the gold mentions, "
                     "or e2e_f: end-to-end link F from raw text (for pipelines that find mentions differently)")
    cmd.add_argument("--min-gain", type=float, default=MIN_GAIN,
                     help="what a later pipeline must add to the metric on dev to be chosen (default: half a point, 0.005)")
    cmd.add_argument("--output", required=True, help="where to copy the chosen pipeline")
    add_gpu_option(cmd)
    cmd.set_defaults(func=select_pipeline_command)


def tune_reranker_command(args: argparse.Namespace) -> None:
    from ..gold_corpus import read_gold_links
    from ..tuning import reranker_settings as reranker_tuning
    from ._pipelines import load_pipeline, write_pipeline

    nlp = load_pipeline(args.pipeline)
    tuned = reranker_tuning.tune_reranker(nlp, read_gold_links(args.dev, nlp),
                                          args.weights or reranker_tuning.DEFAULT_WEIGHTS, args.top_n, args.max_loss)
    print(f"retriever accuracy@1: {tuned.retriever:.3f}\n| top_n | retrieval_weight | accuracy@1 | mentions/s |\n"
          f"|---:|---:|---:|---:|")
    for top_n, weight, acc in tuned.rows:
        print(f"| {top_n} | {weight:g} | {acc:.3f} | {tuned.speeds[top_n]:.1f} |")
    output = args.output or args.pipeline
    write_pipeline(nlp, output)
    print(f"Wrote {output} with top_n = {tuned.top_n}, retrieval_weight = {tuned.weight:g} "
          f"(accuracy@1 {tuned.accuracy:.3f} on {args.dev})")
    if tuned.accuracy < tuned.retriever:
        print(f"Warning: at every weight the reranker links worse than the retriever alone "
              f"({tuned.accuracy:.3f} < {tuned.retriever:.3f}): leave it out of the pipeline, or train it longer.")


def tune_threshold_command(args: argparse.Namespace) -> None:
    from ..gold_corpus import read_gold_links
    from ..tuning.threshold import decides, deciding_components, tune_threshold
    from ._pipelines import load_pipeline, require_recognizer, write_pipeline

    nlp = load_pipeline(args.pipeline)
    if args.end_to_end:
        require_recognizer(nlp, args.pipeline)
    gold = read_gold_links(args.dev, nlp)
    columns = "e2e_f | e2e_r" if args.end_to_end else "nel_micro_f | accuracy@1"
    chosen = []
    labels = {ent.label_ for doc in gold for ent in doc.ents}
    components = deciding_components(nlp)
    for component in components:
        if len(components) > 1 and not any(map(decides(component), labels)):
            chosen.append(f"{component.name} threshold left as it was (no mention of its labels in {args.dev})")
            continue
        rows, best = tune_threshold(nlp, gold, min_gain=args.min_gain, end_to_end=args.end_to_end, component=component)
        print(f"{component.name} on {args.dev}\n| threshold | {columns} |\n|---:|---:|---:|")
        for threshold, f, acc in rows:
            print(f"| {'none' if threshold is None else f'{threshold:.6g}'} | {f:.4f} | {acc:.4f} |")
        chosen.append(f"{component.name} threshold = {best}")
    output = args.output or args.pipeline
    write_pipeline(nlp, output)
    print(f"Wrote {output} with {', '.join(chosen)}")


def calibrate_command(args: argparse.Namespace) -> None:
    from ..gold_corpus import read_gold_links
    from ..tuning.confidence_calibration import calibrate_pipeline
    from ._pipelines import load_pipeline, require_recognizer, write_pipeline

    nlp = load_pipeline(args.pipeline)
    if args.end_to_end:
        require_recognizer(nlp, args.pipeline)
    fitted = calibrate_pipeline(nlp, read_gold_links(args.dev, nlp), args.end_to_end, args.min_confidence)
    print(f"{fitted['n_links']:,} links on {args.dev}, {fitted['accuracy']:.3f} right; calibrated there: "
          f"ECE {fitted['confidence_ece']:.3f}, {fitted['coverage_at_precision_95']:.3f} of the mentions linked at "
          f"95% precision, {fitted['coverage_at_precision_99']:.3f} at 99%")
    output = args.output or args.pipeline
    write_pipeline(nlp, output)
    minimum = "no minimum confidence" if args.min_confidence is None else f"min confidence {args.min_confidence:g}"
    print(f"Wrote {output} with {minimum}")


def select_pipeline_command(args: argparse.Namespace) -> None:
    """Copy whichever of several pipelines scores best on dev: a reranker earns its place in
    the final pipeline only by beating the retriever there, by `--min-gain` (a mention or two of
    dev is noise, and the pipeline listed first is the cheaper one)."""
    from ..tuning.pipeline_choice import select_pipeline

    check_min_gain(args.min_gain, "select-pipeline: --min-gain", args.metric)
    choice = select_pipeline(args.pipelines, args.dev, args.metric, args.min_gain)
    if args.metric.startswith("e2e_"):
        columns, speed = ("ner_f", "e2e_f", "e2e_any_id_f"), "docs_per_second"
    else:
        columns, speed = ("nel_micro_f", "accuracy_strict", "accuracy"), "mentions_per_second"
    print(f"| pipeline | {' | '.join(columns)} | {speed.replace('_per_second', '/s')} |\n|---|{'---:|' * (len(columns) + 1)}")
    for path, metrics in choice.metrics.items():
        print(f"| {path} | {' | '.join(f'{metrics[c]:.4f}' for c in columns)} | {metrics[speed] or 0:.1f} |")
    for path, gain in choice.passed_over():
        print(f"{path} scores {gain:+.4f} over {choice.chosen}, less than --min-gain {args.min_gain}: "
              f"{choice.chosen} is kept")
    with atomic_path(args.output) as tmp:
        shutil.copytree(choice.chosen, tmp)
    print(f"Wrote {args.output}: {choice.chosen} ({args.metric} {choice.metrics[choice.chosen][args.metric]:.4f} "
          f"on {args.dev})")
