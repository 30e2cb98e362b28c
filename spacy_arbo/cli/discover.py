"""`discover`: propose the entities a KB lacks, from the NIL mentions `link` wrote or from the gold
mentions of a .spacy corpus (docs/discovery.md)."""
import argparse
import json
from typing import Optional, Sequence

from ..annotation.formats import INPUT_FORMATS
from ..util import ArboError, atomic_path
from ._util import add_gpu_option
from .linker_options import add_setting_arguments, configured_pipeline

DEFAULT_MIN_SIZE = 2


def add_commands(commands: "argparse._SubParsersAction") -> None:
    cmd = commands.add_parser(
        "discover", help="cluster the NIL mentions of a corpus and propose new KB entries",
        description="INPUTs are what `link` wrote (JSONL, PubTator, BioC) or any file `link` reads whose mentions "
        "carry ids: their NIL mentions are clustered across all documents with the KB's entities (ArboEL), and each "
        "cluster of --min-size mentions or more that reaches no KB entity is proposed, with its mentions in "
        "context, nearest KB entities and a suggested parent, as JSONL that `kb add --new-only` reads. A .spacy "
        "corpus instead has all its gold mentions linked and clustered as one batch, scored against their ids (ARI).")
    cmd.add_argument("pipeline")
    cmd.add_argument("inputs", nargs="+", metavar="INPUT", help="files or folders link reads or wrote, or one .spacy")
    cmd.add_argument("--output", default="new_entities.jsonl", help="the proposals (default new_entities.jsonl)")
    cmd.add_argument("--html", help="also write a page of the proposals here, to read and tick them")
    cmd.add_argument("--input-format", choices=INPUT_FORMATS, default="auto", help="how to read every input")
    add_discovery_options(cmd)
    add_setting_arguments(cmd)
    add_gpu_option(cmd)
    cmd.set_defaults(func=discover_command)


def add_discovery_options(cmd: argparse.ArgumentParser, prefix: str = "") -> None:
    """The clustering options, `--min-size` ... (`link` prefixes them: `--discover-min-size` ...)."""
    cmd.add_argument(f"--{prefix}min-size", dest="min_size", type=int, default=DEFAULT_MIN_SIZE,
                     help=f"the smallest cluster to propose (default {DEFAULT_MIN_SIZE})")
    cmd.add_argument(f"--{prefix}min-similarity", dest="min_similarity", type=float, default=None,
                     help="join mentions at least this similar (default 0.83" + ("" if prefix else "; with a .spacy "
                     "corpus: the linker's min_similarity, else 0.9") + ")")
    cmd.add_argument(f"--{prefix}min-entity-similarity", dest="min_entity_similarity", type=float, default=None,
                     help="a cluster joins a KB entity (and is not proposed) over a mention at least this similar to "
                     "it, and to --min-similarity (default 0.95; inf: never)")


def discover_command(args: argparse.Namespace) -> None:
    if len(args.inputs) == 1 and args.inputs[0].endswith(".spacy"):
        gold_discovery(args)
        return
    if any(path.endswith(".spacy") for path in args.inputs):
        raise ArboError("discover reads one .spacy corpus alone, or files that link reads or wrote; not both.")
    nlp = configured_pipeline(args)
    discover_files(nlp, args.inputs, args.input_format, args.output, args.html, args)


def discover_files(nlp, inputs: Sequence[str], input_format: str, output: str, html: Optional[str],
                   options: argparse.Namespace, after_link: bool = False) -> None:
    """The proposals from the NIL mentions of `inputs`, clustered as `options` say (`add_discovery_options`).
    With nothing NIL, `discover` is an error; after `link` (`after_link`) it writes no proposal, and says so,
    for the links are written already."""
    from ..annotation.readers import input_files, read_records
    from ..annotation.records import BadRecords, within_max_length
    from ..discovery import discover_corpus, write_proposal_page, write_proposals

    bad = BadRecords(print)
    records = within_max_length(read_records(input_files(inputs, input_format), bad), nlp.max_length, bad)
    given = {key: getattr(options, key) for key in ("min_similarity", "min_entity_similarity")
             if getattr(options, key) is not None}
    found = discover_corpus(nlp, records, min_size=options.min_size, **given)
    skipped = f" ({bad.count:,} bad records skipped)" if bad.count else ""
    if not found.n_mentions and not after_link:
        unlinked = "".join(f"; {n:,} NIL mentions labelled {label}, which no linker of the pipeline links"
                           for label, n in sorted(found.unlinked_labels.items()))
        raise ArboError(f"No NIL mention to cluster in {', '.join(inputs)}{skipped}{unlinked}"
                        f"{found.foreign_ids.line()}: nothing to discover "
                        "(link with --min-confidence, or a pipeline with a NIL threshold, leaves some NIL).")
    write_proposals(found, output)
    print(found.line() + skipped)
    print(f"Wrote {len(found.proposals):,} proposals to {output}")
    if html:
        write_proposal_page(f"Proposed entities: {', '.join(inputs)}", found, html)
        print(f"Wrote {html}")


def gold_discovery(args: argparse.Namespace) -> None:
    from ..corpora import read_docbin
    from ..discovery import check_clustered, check_corpus, discover_entities, discovery_notes
    from ..pipeline.arbo_linker import arbo_linkers

    if args.html or args.min_entity_similarity is not None:
        raise ArboError("--html and --min-entity-similarity are for files link wrote; a .spacy corpus is linked and "
                        "clustered as one batch at the linker's min_similarity.")
    nlp = configured_pipeline(args)
    if args.min_similarity is not None:
        for linker in arbo_linkers(nlp):
            linker.configure(min_similarity=args.min_similarity)
    docs = read_docbin(args.inputs[0], nlp.vocab)
    check_corpus(nlp, docs, args.inputs[0])
    result = discover_entities(nlp, docs, min_size=args.min_size)
    check_clustered(result)
    with atomic_path(args.output) as tmp:
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in result["records"]), encoding="utf8")
    print(f"{result['n_mentions']:,} mentions, {result['n_nil_mentions']:,} in NIL clusters; "
          f"{len(result['records']):,} proposed entities (min size {args.min_size}) written to {args.output}")
    for line in discovery_notes(result, args.min_size):
        print(line)
    for key in ("ari", "nil_ari", "outside_kb_ari"):
        if result[key] is not None:
            print(f"{key}: {result[key]:.4f}")
