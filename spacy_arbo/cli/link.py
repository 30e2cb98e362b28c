"""`link`: annotate a corpus, from input files to mentions with ids (docs/annotate.md)."""
import argparse
from pathlib import Path

from ..annotation.formats import INPUT_FORMATS, MENTION_SOURCES, OUTPUT_FORMATS
from ..util import ArboError
from ._util import add_gpu_option, add_types_option, non_negative_int, probability
from .discover import add_discovery_options, discover_files

# The output format an output's suffix stands for, when --format is not given.
SUFFIX_FORMATS = {".jsonl": "jsonl", ".pubtator": "pubtator", ".xml": "bioc", ".json": "bioc-json", ".spacy": "spacy"}


def add_commands(commands: "argparse._SubParsersAction") -> None:
    cmd = commands.add_parser(
        "link", help="annotate a corpus: read documents (.txt, JSONL, PubTator, BioC), write their mentions with ids",
        description="Run a pipeline over documents and write each mention's span, label, id, KB name, score and "
        "top candidates. Output goes to shards beside OUTPUT (OUTPUT.parts/) first: a killed run started again "
        "with the same command continues where it stopped and writes the same output. The input's own mentions "
        "(PubTator annotation lines, BioC annotations, a JSONL 'mentions' list) are linked with --mentions input "
        "or both; by default the pipeline sees the text only and the JSONL output keeps them as 'gold'.")
    cmd.add_argument("pipeline", help="a saved pipeline: with a component that finds mentions (add-ner, add-kb-finder), "
                     "or any linker with --mentions input")
    cmd.add_argument("inputs", nargs="+", metavar="INPUT",
                     help="files or folders: .txt (one document, or PubTator when its first line is 'PMID|t|...'), "
                     ".jsonl (a 'text' field; 'id', 'mentions' and other fields kept), .pubtator, BioC .xml / .json")
    cmd.add_argument("--output", "-o", required=True, help="the output file")
    cmd.add_argument("--format", choices=OUTPUT_FORMATS, default=None,
                     help="jsonl (one document a line), pubtator, bioc (XML), bioc-json or spacy (a DocBin); default: "
                     "from OUTPUT's suffix (.pubtator, .xml, .json, .spacy), else jsonl")
    cmd.add_argument("--input-format", choices=INPUT_FORMATS, default="auto", help="how to read every input "
                     "(default auto: by suffix)")
    cmd.add_argument("--n-process", type=int, default=1, help="processes (spaCy's n_process), or Ray workers "
                     "with --ray (default 1); the links are the same whatever the number")
    cmd.add_argument("--batch-size", type=int, default=64, help="documents per nlp.pipe batch (default 64)")
    cmd.add_argument("--shard-size", type=int, default=1024, help="documents per output shard, rounded up to whole "
                     "batches: what a rerun after a kill links again at most (default 1024)")
    cmd.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                     help="link on Ray: a local runtime of --n-process workers, or the cluster at ADDRESS "
                     "(e.g. 'auto' or HEAD:6379 from `ray start --head`); needs spacy-arbo[ray]. Put a bare --ray after the "
                     "inputs (or write --ray=ADDRESS): before them it would take the first input as its address")
    cmd.add_argument("--strict", action="store_true", help="the first bad record is an error (default: each is "
                     "named, skipped and counted); warnings (an input annotation not kept as gold) never stop a run")
    cmd.add_argument("--min-confidence", type=probability, default=None,
                     help="mentions whose span._.kb_confidence (a probability) is below this, in [0, 1], are written "
                     "NIL with \"review\": true")
    cmd.add_argument("--mentions", choices=MENTION_SOURCES, default="pipeline",
                     help="which mentions to link: the pipeline's recognizers' (default), the input's own (input: "
                     "a pipeline without a recognizer will do), or both (the input's win where they overlap); "
                     "input mentions off token boundaries and overlapping ones are all linked (docs/annotate.md)")
    cmd.add_argument("--candidates", type=non_negative_int, default=5, help="top candidates written per mention (default 5)")
    cmd.add_argument("--discover", metavar="PROPOSALS.jsonl", help="then cluster the output's NIL mentions across "
                     "all documents and write the entities the KB lacks here, as `discover` does (for `kb add "
                     "--new-only`); the output must be jsonl, pubtator or bioc")
    cmd.add_argument("--discover-html", metavar="PAGE.html", help="with --discover: a page of the proposals too")
    add_discovery_options(cmd, prefix="discover-")
    add_gpu_option(cmd)
    cmd.set_defaults(func=link_command)

    cmd = commands.add_parser("score-pubtator", help="end-to-end P/R/F of a PubTator file `link` wrote against a gold "
                              "PubTator file (exact span and id set, as evaluate --end-to-end)",
                              description="Files of different documents, ids no normalisation reconciles, and "
                              "--types the gold file lacks are an error naming them, not a score. When the predictions "
                              "are of the gold file's own mentions (link --mentions input), the linking-only accuracy "
                              "is printed too.")
    cmd.add_argument("predicted")
    cmd.add_argument("gold", help="a PubTator file of the same documents")
    cmd.add_argument("--kb", help="read both files' ids through this KB (build-kb), as convert-corpus --kb does; "
                     "without it ids are compared normalised (D001 is MESH:D001, prefixes case-blind)")
    add_types_option(cmd, "score only gold mentions of these types (e.g. Disease for BC5CDR)")
    cmd.set_defaults(func=score_pubtator_command)


def link_command(args: argparse.Namespace) -> None:
    from ..annotation.runner import link_corpus

    if args.ray is not None and args.gpu_id >= 0:
        raise ArboError("link: --gpu-id runs this process on a GPU, not Ray's workers; link on the GPU without --ray, "
                        "or on Ray's CPUs without --gpu-id.")
    fmt = args.format or SUFFIX_FORMATS.get(Path(args.output).suffix.lower(), "jsonl")
    if args.discover_html and not args.discover:
        raise ArboError("--discover-html pages the proposals of --discover: give --discover PROPOSALS.jsonl too.")
    if args.discover and fmt == "spacy":
        raise ArboError("--discover reads the output back for its NIL mentions, which a .spacy output does not "
                        "keep apart: write jsonl, pubtator or bioc (or run discover on the corpus later).")
    summary = link_corpus(args.pipeline, args.inputs, args.output, fmt=fmt, input_format=args.input_format,
                          n_process=args.n_process, batch_size=args.batch_size, shard_size=args.shard_size,
                          ray=args.ray is not None, ray_address=args.ray or None, strict=args.strict,
                          min_confidence=args.min_confidence, candidates=args.candidates,
                          mentions=args.mentions)
    print(summary.line(args.output))
    if args.discover:
        from ..pipeline_loading import load_pipeline

        reading = {"bioc": "bioc-xml"}.get(fmt, fmt)  # how `link` reads what it wrote
        discover_files(load_pipeline(args.pipeline), [args.output], reading, args.discover, args.discover_html, args,
                       after_link=True)


def score_pubtator_command(args: argparse.Namespace) -> None:
    from ..annotation.scoring import score_pubtator
    from ..kb.store import open_store

    scores = score_pubtator(args.predicted, args.gold, open_store(args.kb) if args.kb else None, args.types)
    print("  ".join(f"{key} {value:.4f}" for key, value in scores.items()))
