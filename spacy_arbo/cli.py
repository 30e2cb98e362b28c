"""`python -m spacy_arbo COMMAND`: build a KB, convert corpora, evaluate and discover."""
import argparse
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .util import ArboError, atomic_path


def load_pipeline(path: str):
    import spacy

    if not Path(path).is_dir():
        raise ArboError(f"Pipeline directory '{path}' does not exist.")
    return spacy.load(path)


# Inference-time settings of arbo_linker that `evaluate --set` may change; the linker's
# settings check each value.
LINKER_SETTINGS = ("linking", "graph", "knn_mentions", "min_similarity", "clustering_scope", "transductive",
                   "threshold", "top_k", "index_aliases", "candidate_source", "use_long_form", "context_chars",
                   "composites", "dictionary_offset", "sparse_weight", "precision", "batch_size")
# What `evaluate --protocol biosyn` changes for its second pass (BioSyn's query processing:
# Ab3P long forms, composite mentions split); the dictionary comes from --augment-from.
BIOSYN_SETTINGS = ["use_long_form=true", "composites=split"]


def configured_pipeline(args: argparse.Namespace):
    """The pipeline with `--set` applied; with `--anchors-from`, the gold mentions of that
    corpus as anchors for transductive clustering; with `--dictionary-from`, the gold
    mentions of those corpora as extra entity names; with `--long-forms-from`, the long forms
    those corpora define, for short forms that their own doc leaves undefined."""
    from .corpora import read_docbin
    from .pipeline.arbo_linker import arbo_linkers

    nlp = load_pipeline(args.pipeline)
    linkers = arbo_linkers(nlp)
    apply_settings(linkers, args.set or [])
    if args.anchors_from:
        docs = read_docbin(args.anchors_from, nlp.vocab)
        for linker in linkers:
            linker.set_training_mentions(docs)
            linker.configure(transductive=True)
    if args.dictionary_from:
        set_dictionaries(linkers, args.dictionary_from)
    if args.long_forms_from:
        docs = [doc for path in args.long_forms_from for doc in read_docbin(path, nlp.vocab)]
        for linker in linkers:
            n_forms = linker.set_corpus_long_forms(docs)
            print(f"{linker.name}: long forms of {n_forms:,} short forms from {', '.join(args.long_forms_from)}")
    return nlp


def set_dictionaries(linkers: List, paths: List[str], evaluated: Sequence = ()) -> None:
    """The gold mentions of `paths` as dictionary names; documents that are also being
    `evaluated` (same doc id, or same text) are left out, so that no test mention is its own
    dictionary entry (BC5CDR's evaluation split is its dev set)."""
    from .corpora import read_docbin

    if not linkers:
        return
    # The linkers of one pipeline share its vocab: the corpora are read once.
    docs = [doc for path in paths for doc in read_docbin(path, linkers[0].vocab)]
    kept = docs_not_in(docs, evaluated)
    note = f" (left out {len(docs) - len(kept):,} documents under evaluation)" if len(kept) < len(docs) else ""
    for linker in linkers:
        print(f"{linker.name}: {linker.set_dictionary(kept):,} dictionary names from {', '.join(paths)}{note}")


def docs_not_in(docs: List, evaluated: Sequence) -> List:
    """`docs` but those also in `evaluated` (same doc id, or the same text)."""
    held_out = {doc.user_data.get("doc_id") or doc.text for doc in evaluated}
    return [doc for doc in docs if (doc.user_data.get("doc_id") or doc.text) not in held_out]


def apply_settings(linkers: List, settings: List[str]) -> None:
    """Apply `KEY=VALUE` (VALUE parsed as JSON, else a string) to every arbo_linker; a bad
    value is a message naming it (`--set threshold=abc: threshold takes a number or null`)."""
    import srsly

    for setting in settings:
        key, sep, raw = setting.partition("=")
        if not sep or key not in LINKER_SETTINGS:
            raise ArboError(f"--set takes KEY=VALUE with KEY one of {LINKER_SETTINGS}; got '{setting}'.")
        try:
            value = srsly.json_loads(raw)
        except ValueError:
            value = raw
        for linker in linkers:
            try:
                linker.configure(**{key: value})
            except ArboError as err:
                raise ArboError(f"--set {setting}: {err}") from None


def build_kb_command(args: argparse.Namespace) -> None:
    from .kb.readers import build_kb

    stats = build_kb(args.source, args.out_dir, args.format, store=args.store).stats()
    print(f"Wrote {args.out_dir}: {stats['entities']:,} entities, {stats['aliases']:,} aliases, "
          f"{stats['with_definition']:,} entities with a definition, {stats['alt_ids']:,} alternative ids")


def convert_command(args: argparse.Namespace) -> None:
    from .corpora import convert_corpus, write_docbin
    from .kb.store import open_store

    kb = open_store(args.kb) if args.kb else None
    types = [t.strip() for t in args.types.split(",") if t.strip()] if args.types else None
    docs, report = convert_corpus(Path(args.source), kb=kb, types=types, fmt=args.format, limit=args.limit)
    write_docbin(docs, args.output)
    print(report.as_table())
    print(f"Wrote {args.output}")


def convert_corpus_command(args: argparse.Namespace) -> None:
    from .corpora import convert_named_corpus, named_corpus
    from .kb.store import open_store

    corpus = named_corpus(args.name)
    kb = open_store(args.kb) if args.kb else None
    limits = {"train": args.train_limit, "dev": args.eval_limit, "test": args.eval_limit}
    kept = ", ".join(corpus.types) if corpus.types else "all"
    print(f"Corpus '{corpus.name}': {corpus.title}; mention types kept: {kept}")
    if corpus.note:
        print(f"Note: {corpus.note}")
    for result in convert_named_corpus(args.name, args.assets_dir, args.out_dir, kb=kb, limits=limits):
        print(f"\n{result.split}: {result.source} -> {result.output}")
        if result.same_as:
            print(f"The same documents as {result.same_as} ({result.report.docs:,} documents, "
                  f"{result.report.entities:,} entities); see its conversion above.")
        else:
            print(result.report.as_table())
        print(f"Wrote {result.output}")


def join_corpora_command(args: argparse.Namespace) -> None:
    import spacy

    from .corpora import join_docbins

    counts = join_docbins(args.inputs, args.output, spacy.blank("en").vocab)
    parts = ", ".join(f"{path} ({n:,})" for path, n in counts)
    print(f"Wrote {args.output}: {sum(n for _, n in counts):,} documents from {parts}")


def index_kb_command(args: argparse.Namespace) -> None:
    from .kb.store import open_store

    nlp = load_pipeline(args.pipeline)
    linker = nlp.get_pipe(args.component)
    linker.set_kb(open_store(args.kb_dir))
    if args.workers != 1 or args.ray_address:
        from .retrieval.sharded_encoding import encode_entities_on_ray

        linker.refresh_index(vectors=encode_entities_on_ray(
            linker, args.pipeline, kb_dir=args.kb_dir, workers=args.workers, address=args.ray_address,
            shard_dir=args.shard_dir))
    else:
        linker.refresh_index()
    linker.retriever.save_prebuilt(args.kb_dir)
    print(f"Wrote the entity index of {args.pipeline} to {args.kb_dir}")


def kb_update_command(args: argparse.Namespace) -> None:
    """`kb add` / `kb remove`: change a trained pipeline's KB, encoding only what changed; the
    pipeline is written anew (temp path, then rename), so an interrupted update leaves the old one."""
    import tempfile

    from .kb.readers import read_kb

    nlp = load_pipeline(args.pipeline)
    linker = nlp.get_pipe(args.component)
    add = list(read_kb(args.source, args.format)) if args.action == "add" else []
    with tempfile.TemporaryDirectory(prefix="spacy_arbo_kb_") as tmp:
        update = linker.update_kb(add, args.ids if args.action == "remove" else (), store_dir=Path(tmp) / "kb")
        output = Path(args.output or args.pipeline)
        with atomic_path(output) as staged:
            nlp.to_disk(staged)  # copies an on-disk KB out of `tmp`
    print(f"{args.component}: {update.added:,} added, {update.replaced:,} replaced, {update.removed:,} removed; "
          f"{len(update.encoded):,} entities encoded of {update.size:,}. Wrote {output}")


def export_spacy_kb_command(args: argparse.Namespace) -> None:
    from .kb.spacy_kb import ArboKnowledgeBase

    linker = load_pipeline(args.pipeline).get_pipe(args.component)
    kb = ArboKnowledgeBase.from_linker(linker, top_k=args.top_k)
    kb.to_disk(args.out_dir)
    print(f"Wrote {args.out_dir}: {len(kb):,} entities, vectors of width {kb.entity_vector_length}, "
          f"for spaCy's entity_linker (entity_vector_length = {kb.entity_vector_length})")


def export_encoder_command(args: argparse.Namespace) -> None:
    from .encoders.transformer import TransformerTower
    from .torch_model import get_module

    module = get_module(load_pipeline(args.pipeline).get_pipe(args.component).model)
    tower = module.mention_tower
    if not isinstance(tower, TransformerTower):
        raise ArboError(f"{args.pipeline}: the {args.component} mention tower is a {type(tower).__name__}, "
                        "not a transformer; only a TransformerTower.v1 exports as a Hugging Face model.")
    tower.save_pretrained(args.out_dir)
    side = "the shared towers" if module.shared else "the mention tower (the entity tower is separate)"
    print(f"Wrote {args.out_dir}: {side}; start a retriever from it with --paths.encoder {args.out_dir}")


def add_ner_command(args: argparse.Namespace) -> None:
    from .pipeline.configured_pipe import ConfiguredPipe

    nlp = load_pipeline(args.pipeline)
    if "ner" in nlp.pipe_names:
        raise ArboError(f"{args.pipeline} already has a component named 'ner'.")
    nlp.add_pipe("ner", source=load_pipeline(args.ner), first=True)
    for _, proc in nlp.components:
        # Their mentions now come from the recognizer, in evaluation (spacy evaluate) too.
        if isinstance(proc, ConfiguredPipe) and "use_gold_ents" in proc.cfg:
            proc.configure(use_gold_ents=False)
    with atomic_path(args.output) as tmp:
        nlp.to_disk(tmp)
    print(f"Wrote {args.output}: {' -> '.join(nlp.pipe_names)}")


def add_memory_command(args: argparse.Namespace) -> None:
    from .corpora import read_docbin
    from .pipeline.arbo_linker import arbo_linkers
    from .pipeline.link_memory import LinkMemory, unknown_ids
    from .tuning import tune_link_memory

    nlp = load_pipeline(args.pipeline)
    if "link_memory" in nlp.pipe_names:
        nlp.remove_pipe("link_memory")
    memory = LinkMemory(nlp.vocab, min_count=args.min_count, min_share=args.min_share, fold_plurals=args.fold_plurals)
    dev = read_docbin(args.dev, nlp.vocab) if args.dev else None
    docs = [doc for path in args.from_corpora for doc in read_docbin(path, nlp.vocab)]
    n_mentions = memory.add(docs_not_in(docs, dev or []))
    for linker in [linker for linker in arbo_linkers(nlp) if linker.kb is not None][:1]:
        unknown = unknown_ids(memory, lambda kb_id: kb_id in linker.kb)
        if unknown:
            raise ArboError(f"{', '.join(args.from_corpora)}: {len(unknown):,} gold ids are not in {linker.name}'s KB "
                            f"(e.g. {', '.join(unknown[:3])}); convert the corpus against the KB "
                            "(convert-corpus --kb) so that they read NIL.")
    chosen: Optional[Tuple[int, float, bool]] = (memory.min_count, memory.min_share, memory.fold_plurals)
    if dev is not None:
        without, rows, chosen = tune_link_memory(nlp, memory, dev)
        print(f"strict accuracy@1 on {args.dev} without the memory: {without:.4f}\n"
              "| min_count | min_share | fold_plurals | strict accuracy@1 |\n|---:|---:|---|---:|")
        for count, share, fold, acc in rows:
            print(f"| {count} | {share:g} | {str(fold).lower()} | {acc:.4f} |")
    if chosen is None:
        print(f"No setting beats the pipeline without the memory on {args.dev}: none added.")
    else:
        count, share, fold = chosen
        added = nlp.add_pipe("link_memory", last=True,
                             config={"min_count": count, "min_share": share, "fold_plurals": fold})
        added.counts = memory.counts
        print(f"link_memory (min_count {added.min_count}, min_share {added.min_share:g}, "
              f"fold_plurals {str(added.fold_plurals).lower()}) links "
              f"{len(added.links):,} texts of {n_mentions:,} mentions from {', '.join(args.from_corpora)}")
    with atomic_path(args.output) as tmp:
        nlp.to_disk(tmp)
    print(f"Wrote {args.output}: {' -> '.join(nlp.pipe_names)}")


def configure_command(args: argparse.Namespace) -> None:
    from .pipeline.arbo_linker import arbo_linkers

    nlp = configured_pipeline(args)
    for linker in arbo_linkers(nlp):
        linker.ensure_fresh()  # changed entity texts (index_aliases) are encoded now, not on load
    with atomic_path(args.output) as tmp:
        nlp.to_disk(tmp)
    print(f"Wrote {args.output} with {', '.join(args.set or [])}"
          + (f" and the anchors of {args.anchors_from}" if args.anchors_from else ""))


def pretrain_synonyms_command(args: argparse.Namespace) -> None:
    import numpy as np

    from .encoders.precision import resolve_precision
    from .encoders.transformer import TransformerTower, encoder_path
    from .kb.store import open_store
    from .training.synonyms import name_alignment, pretrain_synonyms, synonym_pairs

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


def tune_reranker_command(args: argparse.Namespace) -> None:
    from .corpora import read_docbin
    from .reranker.tuning import DEFAULT_WEIGHTS, tune_reranker
    from .tuning import MIN_GAIN

    nlp = load_pipeline(args.pipeline)
    tuned = tune_reranker(nlp, read_docbin(args.dev, nlp.vocab), args.weights or DEFAULT_WEIGHTS, args.top_n,
                          MIN_GAIN if args.max_loss is None else args.max_loss)
    print(f"retriever accuracy@1: {tuned.retriever:.3f}\n| top_n | retrieval_weight | accuracy@1 | mentions/s |\n"
          f"|---:|---:|---:|---:|")
    for top_n, weight, acc in tuned.rows:
        print(f"| {top_n} | {weight:g} | {acc:.3f} | {tuned.speeds[top_n]:.1f} |")
    output = args.output or args.pipeline
    with atomic_path(output) as tmp:
        nlp.to_disk(tmp)
    print(f"Wrote {output} with top_n = {tuned.top_n}, retrieval_weight = {tuned.weight:g} "
          f"(accuracy@1 {tuned.accuracy:.3f} on {args.dev})")
    if tuned.accuracy < tuned.retriever:
        print(f"Warning: at every weight the reranker links worse than the retriever alone "
              f"({tuned.accuracy:.3f} < {tuned.retriever:.3f}): leave it out of the pipeline, or train it longer.")


def require_recognizer(nlp, path: str) -> None:
    """--end-to-end needs a component that finds mentions; the error names the pipeline."""
    from .evaluation import recognizer_position

    try:
        recognizer_position(nlp)
    except ArboError as err:
        raise ArboError(f"--end-to-end: {path}: {err}") from None


def tune_threshold_command(args: argparse.Namespace) -> None:
    from .corpora import read_docbin
    from .threshold import deciding_component, tune_threshold

    nlp = load_pipeline(args.pipeline)
    if args.end_to_end:
        require_recognizer(nlp, args.pipeline)
    gain = {} if args.min_gain is None else {"min_gain": args.min_gain}
    rows, best = tune_threshold(nlp, read_docbin(args.dev, nlp.vocab), end_to_end=args.end_to_end, **gain)
    columns = "e2e_f | e2e_r" if args.end_to_end else "nel_micro_f | accuracy@1"
    print(f"{deciding_component(nlp).name} on {args.dev}\n| threshold | {columns} |\n|---:|---:|---:|")
    for threshold, f, acc in rows:
        print(f"| {'none' if threshold is None else f'{threshold:.6g}'} | {f:.4f} | {acc:.4f} |")
    output = args.output or args.pipeline
    with atomic_path(output) as tmp:
        nlp.to_disk(tmp)
    print(f"Wrote {output} with threshold = {best}")


# What `select-pipeline` may choose by: link F (what a NIL threshold is tuned for) or accuracy@1.
SELECTION_METRICS = ("nel_micro_f", "accuracy_strict", "accuracy")


def select_pipeline_command(args: argparse.Namespace) -> None:
    """Copy whichever of several pipelines scores best on dev: a reranker earns its place in
    the final pipeline only by beating the retriever there, by `--min-gain` (a mention or two of
    dev is noise, and the pipeline listed first is the cheaper one)."""
    import shutil

    from .corpora import read_docbin
    from .evaluation import evaluate_linking
    from .tuning import MIN_GAIN

    min_gain = MIN_GAIN if args.min_gain is None else args.min_gain
    if not 0.0 <= min_gain < 1.0:
        raise ArboError(f"select-pipeline: --min-gain is a difference of {args.metric} in [0, 1), got {min_gain}.")
    if len(set(args.pipelines)) < 2:
        raise ArboError(f"select-pipeline compares two or more distinct pipelines; got {', '.join(args.pipelines)}.")
    scores: Dict[str, float] = {}
    print("| pipeline | nel_micro_f | accuracy_strict | accuracy | mentions/s |\n|---|---:|---:|---:|---:|")
    for path in args.pipelines:
        nlp = load_pipeline(path)
        metrics = evaluate_linking(nlp, read_docbin(args.dev, nlp.vocab))
        if not metrics["n_mentions"]:  # accuracy is None then, and link F a meaningless 0
            raise ArboError(f"{args.dev} has no gold mentions to choose a pipeline on.")
        scores[path] = metrics[args.metric]
        print(f"| {path} | {metrics['nel_micro_f']:.4f} | {metrics['accuracy_strict']:.4f} | "
              f"{metrics['accuracy']:.4f} | {metrics['mentions_per_second'] or 0:.0f} |")
    best = args.pipelines[0]
    for path in args.pipelines[1:]:
        gain = scores[path] - scores[best]
        if gain > 0 and gain >= min_gain:
            best = path
        elif gain > 0:
            print(f"{path} scores {gain:+.4f} over {best}, less than --min-gain {min_gain}: {best} is kept")
    with atomic_path(args.output) as tmp:
        shutil.copytree(best, tmp)
    print(f"Wrote {args.output}: {best} ({args.metric} {scores[best]:.4f} on {args.dev})")


def evaluate_command(args: argparse.Namespace) -> None:
    from .corpora import read_docbin
    from .evaluation import BIOSYN_KEYS, evaluate_end_to_end, evaluate_linking, gold_id_set
    from .pipeline.arbo_linker import arbo_linkers

    nlp = configured_pipeline(args)
    docs = read_docbin(args.data, nlp.vocab)
    if args.end_to_end:
        require_recognizer(nlp, args.pipeline)
        metrics = evaluate_end_to_end(nlp, docs)
        _report(metrics, args.output)
        return
    seen = gold_id_set(read_docbin(args.seen_from, nlp.vocab)) if args.seen_from else None
    metrics = evaluate_linking(nlp, docs, seen_ids=seen)
    if args.protocol == "biosyn":
        if not args.augment_from:
            raise ArboError("--protocol biosyn augments the dictionary with the training mentions: "
                            "give --augment-from TRAIN.spacy [DEV.spacy].")
        linkers = arbo_linkers(nlp)
        apply_settings(linkers, BIOSYN_SETTINGS)
        set_dictionaries(linkers, args.augment_from, evaluated=docs)
        biosyn = evaluate_linking(nlp, docs, seen_ids=seen, skip_nil_gold=True)
        metrics.update({f"biosyn_{key}": biosyn.get(key) for key in BIOSYN_KEYS})
    _report(metrics, args.output)


def _report(metrics: Dict[str, Any], output: Optional[str]) -> None:
    import srsly

    from .evaluation import format_metrics

    print(format_metrics(metrics))
    if output:
        with atomic_path(output) as tmp:
            srsly.write_json(tmp, metrics)
        print(f"Wrote {output}")


def discover_command(args: argparse.Namespace) -> None:
    import json

    from .corpora import read_docbin
    from .discovery import discover_entities

    nlp = configured_pipeline(args)
    result = discover_entities(nlp, read_docbin(args.data, nlp.vocab), min_size=args.min_size)
    with atomic_path(args.output) as tmp:
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in result["records"]), encoding="utf8")
    print(f"{result['n_mentions']:,} mentions, {result['n_nil_mentions']:,} in NIL clusters; "
          f"{len(result['records']):,} proposed entities (min size {args.min_size}) written to {args.output}")
    for key in ("ari", "nil_ari"):
        if result[key] is not None:
            print(f"{key}: {result[key]:.4f}")


def report_command(args: argparse.Namespace) -> None:
    from .report import write_report

    print("\n".join(write_report(args.metrics_dir, args.output)))
    print(f"Wrote {args.output} and {Path(args.output).with_suffix('.png')}")


def compare_runs_command(args: argparse.Namespace) -> None:
    import srsly

    from .corpora import read_docbin
    from .evaluation import evaluate_linking, gold_id_set
    from .pipeline.arbo_linker import arbo_linkers
    from .report import RUN_COLUMNS, RUN_KEYS, markdown_table, read_run_clock

    runs: Dict[str, List[Path]] = {}
    for spec in args.runs:
        name, sep, stages = spec.partition("=")
        if not sep or not name or not stages or name in runs:
            raise ArboError(f"compare-runs takes distinct NAME=DIR[+DIR...] runs; got '{spec}'.")
        runs[name] = [Path(stage) for stage in stages.split("+")]
    seen = None
    rows: Dict[str, Dict[str, Any]] = {}
    for name, stages in runs.items():
        row = read_run_clock(stages)  # before the slow part, so a missing clock fails at once
        nlp = load_pipeline(str(stages[-1] / "model-best"))
        apply_settings(arbo_linkers(nlp), args.set or [])
        if args.seen_from and seen is None:
            seen = gold_id_set(read_docbin(args.seen_from, nlp.vocab))
        for split, path in (("dev", args.dev), ("test", args.test)):
            metrics = evaluate_linking(nlp, read_docbin(path, nlp.vocab), seen_ids=seen)
            row.update({f"{split}_{key}": metrics.get(key) for key in RUN_KEYS})
        rows[name] = row
        print(f"{name}: {row}", flush=True)
    print(markdown_table(rows, RUN_COLUMNS))
    with atomic_path(args.output) as tmp:
        srsly.write_json(tmp, rows)
    print(f"Wrote {args.output}")


def fetch_assets_command(args: argparse.Namespace) -> None:
    from .assets import fetch_assets

    for line in fetch_assets(args.project, args.mirror or None):
        print(line)


def _add_setting_arguments(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help=f"change an arbo_linker setting first, e.g. linking=clustering ({', '.join(LINKER_SETTINGS)})")
    cmd.add_argument("--anchors-from", metavar="TRAIN.spacy",
                     help="add this corpus's gold mentions as anchors for transductive clustering")
    cmd.add_argument("--dictionary-from", nargs="+", metavar="TRAIN.spacy",
                     help="add these corpora's gold mentions as extra names of their entities")
    cmd.add_argument("--long-forms-from", nargs="+", metavar="DOCS.spacy",
                     help="read a short form that its doc does not define as the long form these corpora "
                          "define most often (text only; no annotations needed)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spacy_arbo", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    cmd = commands.add_parser("fetch-assets", help="copy the project's data from a mirror, or download it")
    cmd.add_argument("project", help="project.yml listing the assets (dest, url, checksum)")
    cmd.add_argument("--mirror", help="local mirror directory (e.g. $SPACY_ARBO_DATA); empty: download")
    cmd.set_defaults(func=fetch_assets_command)

    cmd = commands.add_parser("build-kb", help="read a KB source file and write an entity store")
    cmd.add_argument("source", help="scispacy JSONL, CTD diseases TSV(.gz) or MEDIC file")
    cmd.add_argument("out_dir")
    cmd.add_argument("--format", default="auto", choices=["auto", "jsonl", "ctd", "medic"])
    cmd.add_argument("--store", default="memory", choices=["memory", "disk"],
                     help="memory: loaded whole, fastest lookups; disk: SQLite read on demand, for KBs of "
                     "millions of entities (built without holding them all)")
    cmd.set_defaults(func=build_kb_command)

    cmd = commands.add_parser("convert", help="convert PubTator / BLINK JSONL into a .spacy DocBin")
    cmd.add_argument("source")
    cmd.add_argument("output", help="output .spacy file")
    cmd.add_argument("--kb", help="entity store directory, to normalise ids (unknown ids become NIL)")
    cmd.add_argument("--types", help="comma-separated mention types to keep, e.g. Disease")
    cmd.add_argument("--format", default="auto", choices=["auto", "pubtator", "blink"])
    cmd.add_argument("--limit", type=int, default=0, help="keep only the first N documents")
    cmd.set_defaults(func=convert_command)

    cmd = commands.add_parser("convert-corpus", help="convert a named corpus's train/dev/test into OUT_DIR/{train,dev,test}.spacy")
    cmd.add_argument("name", help="ncbi or bc5cdr (bc5cdr keeps Disease mentions; its test.spacy is its dev set)")
    cmd.add_argument("assets_dir", help="directory laid out like the data mirror, e.g. assets or $SPACY_ARBO_DATA")
    cmd.add_argument("out_dir")
    cmd.add_argument("--kb", help="entity store directory, to normalise ids (unknown ids become NIL)")
    cmd.add_argument("--train-limit", type=int, default=0, help="keep only the first N training documents")
    cmd.add_argument("--eval-limit", type=int, default=0, help="keep only the first N dev and test documents")
    cmd.set_defaults(func=convert_corpus_command)

    cmd = commands.add_parser("join-corpora", help="write the documents of several .spacy files as one (a training set "
                                                   "from two corpora; a document in two inputs is an error)")
    cmd.add_argument("output", help="output .spacy file")
    cmd.add_argument("inputs", nargs="+", metavar="INPUT.spacy")
    cmd.set_defaults(func=join_corpora_command)

    cmd = commands.add_parser("index-kb", help="encode a KB with a pipeline's encoder and store the index beside it")
    cmd.add_argument("pipeline")
    cmd.add_argument("kb_dir")
    cmd.add_argument("--component", default="arbo_linker")
    cmd.add_argument("--workers", type=int, default=1,
                     help="encode on this many Ray workers (pip install 'spacy-arbo[ray]'); 1: in this process")
    cmd.add_argument("--ray-address", help="a Ray cluster to encode on (e.g. ray://head:10001); default: a local one")
    cmd.add_argument("--shard-dir", help="where Ray workers write vector shards; on a cluster, a folder all nodes "
                     "share (default: the system's temporary folder)")
    cmd.set_defaults(func=index_kb_command)

    kb_commands = commands.add_parser("kb", help="change a trained pipeline's KB without retraining").add_subparsers(
        dest="action", required=True)
    cmd = kb_commands.add_parser("add", help="add entities (those whose id the KB has replace it); only they are encoded")
    cmd.add_argument("pipeline")
    cmd.add_argument("source", help="the entities, as build-kb reads them (scispacy JSONL, CTD TSV, MEDIC)")
    cmd.add_argument("--format", default="auto", choices=["auto", "jsonl", "ctd", "medic"])
    cmd = kb_commands.add_parser("remove", help="remove entities by id")
    cmd.add_argument("pipeline")
    cmd.add_argument("ids", nargs="+", metavar="ID")
    for cmd in kb_commands.choices.values():
        cmd.add_argument("--output", help="where to write the updated pipeline (default: over PIPELINE, atomically)")
        cmd.add_argument("--component", default="arbo_linker")
        cmd.set_defaults(func=kb_update_command)

    cmd = commands.add_parser("export-spacy-kb", help="write a pipeline's KB and entity vectors for spaCy's entity_linker")
    cmd.add_argument("pipeline")
    cmd.add_argument("out_dir")
    cmd.add_argument("--component", default="arbo_linker")
    cmd.add_argument("--top-k", type=int, default=10, help="candidates per mention")
    cmd.set_defaults(func=export_spacy_kb_command)

    cmd = commands.add_parser("add-ner", help="put a trained recognizer ('ner' of another pipeline) first, for raw text")
    cmd.add_argument("pipeline", help="the linking pipeline")
    cmd.add_argument("ner", help="a pipeline with a 'ner' component (e.g. from configs/ner.cfg)")
    cmd.add_argument("output")
    cmd.set_defaults(func=add_ner_command)

    cmd = commands.add_parser("add-memory", help="put a link_memory last: mentions whose text the gold corpora "
                              "link (nearly) always to one id get that id")
    cmd.add_argument("pipeline")
    cmd.add_argument("output")
    cmd.add_argument("--from", dest="from_corpora", nargs="+", required=True, metavar="TRAIN.spacy",
                     help="gold corpora to remember (train; never the corpus you evaluate on)")
    cmd.add_argument("--min-count", type=int, default=1, help="times a text must be annotated (default 1)")
    cmd.add_argument("--min-share", type=float, default=0.8,
                     help="share of its annotations its majority id must have, in (0.5, 1] (default 0.8)")
    cmd.add_argument("--fold-plurals", action="store_true",
                     help="compare mention texts with plural endings dropped ('cancers' as 'cancer')")
    cmd.add_argument("--dev", help="choose --min-count, --min-share and --fold-plurals on this corpus (strict accuracy@1); "
                     "its docs are left out of the memory")
    cmd.set_defaults(func=add_memory_command)

    cmd = commands.add_parser("configure", help="store a pipeline with changed arbo_linker settings")
    cmd.add_argument("pipeline")
    cmd.add_argument("output")
    _add_setting_arguments(cmd)
    cmd.set_defaults(func=configure_command)

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

    cmd = commands.add_parser("tune-reranker",
                              help="choose the reranker's retrieval_weight (and top_n) on a dev set and store them")
    cmd.add_argument("pipeline", help="a pipeline with a retriever and a multi_cross_reranker")
    cmd.add_argument("dev", help=".spacy DocBin with gold kb ids")
    cmd.add_argument("--weights", nargs="+", type=float, help="weights to try (default: 0 to 8)")
    cmd.add_argument("--top-n", nargs="+", type=int,
                     help="numbers of candidates to try (default: the reranker's own); the smallest within "
                          "--max-loss of the best dev accuracy wins")
    cmd.add_argument("--max-loss", type=float, default=None,
                     help="dev accuracy@1 a smaller --top-n may give up (default: half a point, 0.005)")
    cmd.add_argument("--output", help="where to write the tuned pipeline (default: in place)")
    cmd.set_defaults(func=tune_reranker_command)

    cmd = commands.add_parser("tune-threshold", help="choose the NIL threshold on a dev set (best link F) and store it")
    cmd.add_argument("pipeline", help="a pipeline whose last linking component gets the threshold")
    cmd.add_argument("dev", help=".spacy DocBin with gold kb ids")
    cmd.add_argument("--min-gain", type=float, default=None,
                     help="link F on dev a threshold must add to no threshold's to be kept (default: half a point, 0.005)")
    cmd.add_argument("--end-to-end", action="store_true",
                     help="choose it by end-to-end link F on the mentions the pipeline's recognizer finds in the dev "
                          "texts (the pipeline needs NER), not on the gold mentions")
    cmd.add_argument("--output", help="where to write the tuned pipeline (default: in place)")
    cmd.set_defaults(func=tune_threshold_command)

    cmd = commands.add_parser("select-pipeline", help="copy the pipeline that scores best on a dev set")
    cmd.add_argument("pipelines", nargs="+", help="two or more pipelines, the cheapest first: a later one replaces "
                                                   "the choice only when it scores --min-gain more")
    cmd.add_argument("--dev", required=True, help=".spacy DocBin with gold kb ids")
    cmd.add_argument("--metric", default="nel_micro_f", choices=SELECTION_METRICS,
                     help="link F (default; rewards a NIL threshold), strict or any-id accuracy@1")
    cmd.add_argument("--min-gain", type=float, default=None,
                     help="what a later pipeline must add to the metric on dev to be chosen (default: half a point, 0.005)")
    cmd.add_argument("--output", required=True, help="where to copy the chosen pipeline")
    cmd.set_defaults(func=select_pipeline_command)

    cmd = commands.add_parser("evaluate", help="link the gold mentions of a .spacy file and score them")
    cmd.add_argument("pipeline")
    cmd.add_argument("data", help=".spacy DocBin with gold kb ids")
    cmd.add_argument("--seen-from", help="training .spacy file: splits accuracy into seen / unseen entities")
    cmd.add_argument("--output", help="write the metrics as JSON here")
    cmd.add_argument("--end-to-end", action="store_true",
                     help="recognize the mentions too (the pipeline needs NER): NER, spaCy's nel_micro_* and end-to-end P/R/F")
    cmd.add_argument("--protocol", choices=["strict", "biosyn"], default="strict",
                     help="biosyn: also score a second pass under BioSyn's protocol (biosyn_* keys)")
    cmd.add_argument("--augment-from", nargs="+", metavar="TRAIN.spacy",
                     help="with --protocol biosyn: the corpora whose mentions augment the dictionary (train, dev)")
    _add_setting_arguments(cmd)
    cmd.set_defaults(func=evaluate_command)

    cmd = commands.add_parser("discover", help="cluster a corpus and propose its NIL clusters as new KB entries")
    cmd.add_argument("pipeline")
    cmd.add_argument("data", help=".spacy DocBin")
    cmd.add_argument("--output", default="new_entities.jsonl")
    cmd.add_argument("--min-size", type=int, default=1, help="smallest NIL cluster to propose")
    _add_setting_arguments(cmd)
    cmd.set_defaults(func=discover_command)

    cmd = commands.add_parser("compare-runs", help="score trained runs on dev and test beside their training clocks (JSON)")
    cmd.add_argument("runs", nargs="+", metavar="NAME=DIR[+DIR...]",
                     help="a run: `spacy train` output directories of its stages, in order (the last one's "
                          "model-best is scored; the clocks, DIR/clock.json, are summed)")
    cmd.add_argument("--dev", required=True, help="dev .spacy DocBin with gold kb ids")
    cmd.add_argument("--test", required=True, help="test .spacy DocBin with gold kb ids")
    cmd.add_argument("--seen-from", help="training .spacy file: accuracy of unseen entities")
    cmd.add_argument("--output", required=True, help="the JSON to write: run name -> clock and scores")
    cmd.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="inference setting applied to every run before scoring (repeatable)")
    cmd.set_defaults(func=compare_runs_command)

    cmd = commands.add_parser("report", help="results table (markdown) and recall@k plot from evaluate JSON files")
    cmd.add_argument("metrics_dir")
    cmd.add_argument("--output", default="report.md")
    cmd.set_defaults(func=report_command)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Run a command (see `reporting_errors`)."""
    args = _parser().parse_args(argv)
    return reporting_errors(lambda: args.func(args))


def reporting_errors(run: Callable[[], Any]) -> int:
    """Call `run`; a bad input (ArboError) or a file that cannot be read or written (OSError)
    is one line on stderr and exit code 1, not a traceback. Also for the scripts in bench/."""
    try:
        run()
    except ArboError as err:
        return _fail(str(err))
    except OSError as err:
        where = " -> ".join(str(f) for f in (err.filename, err.filename2) if f is not None)
        return _fail(f"{where}: {err.strerror or err}" if where else str(err))
    return 0


def _fail(message: str) -> int:
    print("error: " + message.replace("\n", " "), file=sys.stderr)
    return 1
