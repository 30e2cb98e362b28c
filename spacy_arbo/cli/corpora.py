"""Commands that bring data in: fetch-assets, convert, convert-corpus, join-corpora, hold-out-kb."""
import argparse
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

from ._util import add_types_option, non_negative_int

if TYPE_CHECKING:
    from ..corpora.conversion import KBs


def add_commands(commands: "argparse._SubParsersAction") -> None:
    cmd = commands.add_parser("fetch-assets", help="copy the project's data from a mirror, or download it")
    cmd.add_argument("project", help="project.yml listing the assets (dest, url, checksum)")
    cmd.add_argument("--mirror", help="local mirror directory (e.g. $SPACY_ARBO_DATA); empty: download")
    cmd.set_defaults(func=fetch_assets_command)

    cmd = commands.add_parser("convert", help="convert PubTator / BLINK JSONL into a .spacy DocBin")
    cmd.add_argument("source")
    cmd.add_argument("output", help="output .spacy file")
    cmd.add_argument("--kb", nargs="+", metavar="[TYPE=]KB",
                     help="entity store directory, to normalise ids (unknown ids become NIL); or one per mention "
                     "type, e.g. Disease=ctd_kb Chemical=mesh_kb (only those types are kept unless --types says); "
                     "put it after the files, since it takes every word that follows")
    add_types_option(cmd, "mention types to keep, e.g. SpecificDisease,DiseaseClass (NCBI Disease) or Disease "
                     "(BC5CDR); a type no mention has is an error listing those it has")
    cmd.add_argument("--format", default="auto", choices=["auto", "pubtator", "blink"])
    cmd.add_argument("--limit", type=non_negative_int, default=0, help="keep only the first N documents")
    cmd.set_defaults(func=convert_command)

    cmd = commands.add_parser("convert-corpus", help="convert a named corpus's train/dev/test into OUT_DIR/{train,dev,test}.spacy")
    cmd.add_argument("name", help="ncbi or bc5cdr (bc5cdr keeps Disease mentions; its test.spacy is its dev set)")
    cmd.add_argument("assets_dir", help="directory laid out like the data mirror, e.g. assets or $SPACY_ARBO_DATA")
    cmd.add_argument("out_dir")
    cmd.add_argument("--kb", help="entity store directory, to normalise ids (unknown ids become NIL)")
    cmd.add_argument("--train-limit", type=non_negative_int, default=0, help="keep only the first N training documents")
    cmd.add_argument("--eval-limit", type=non_negative_int, default=0, help="keep only the first N dev and test documents")
    cmd.set_defaults(func=convert_corpus_command)

    cmd = commands.add_parser("join-corpora", help="write the documents of several .spacy files as one (a training set "
                                                   "from two corpora; a document in two inputs is an error)")
    cmd.add_argument("output", help="output .spacy file")
    cmd.add_argument("inputs", nargs="+", metavar="INPUT.spacy")
    cmd.set_defaults(func=join_corpora_command)

    cmd = commands.add_parser("hold-out-kb", help="an out-of-KB benchmark: take a seeded share of the entities an "
                              "evaluation set mentions out of the KB; their mentions become NIL gold")
    cmd.add_argument("kb_dir", help="KB directory (build-kb's output) the corpora were converted against")
    cmd.add_argument("eval", help="evaluation .spacy file with gold ids")
    cmd.add_argument("out_dir", help="written whole or not at all: kb/, eval.spacy, [train.spacy], held_out.json")
    cmd.add_argument("--train", help="training .spacy file: its mentions of held-out entities get the same ids "
                     "(NIL, or a composite's other parts), their spans kept")
    cmd.add_argument("--share", type=float, default=0.2, help="share of the mentioned entities held out, in (0, 1)")
    cmd.add_argument("--seed", type=int, default=0, help="the draw: one seed is one draw")
    cmd.set_defaults(func=hold_out_kb_command)


def fetch_assets_command(args: argparse.Namespace) -> None:
    from ..assets import fetch_assets

    for line in fetch_assets(args.project, args.mirror or None):
        print(line)


def convert_command(args: argparse.Namespace) -> None:
    from ..corpora import convert_corpus, write_docbin

    docs, report = convert_corpus(Path(args.source), kb=_kbs(args.kb), types=args.types, fmt=args.format,
                                  limit=args.limit)
    write_docbin(docs, args.output)
    print(report.as_table())
    print(f"Wrote {args.output}")


def _kbs(values: Optional[List[str]]) -> "KBs":
    """`--kb DIR` or `--kb TYPE=DIR ...`: one store, or one per mention type."""
    from ..kb.store import open_store
    from ..util import ArboError

    if not values:
        return None
    if len(values) == 1 and ("=" not in values[0] or Path(values[0]).is_dir()):
        return open_store(values[0])
    stores = {}
    for value in values:
        label, _, path = value.partition("=")
        if not label or not path:
            raise ArboError(f"--kb {value}: with several KBs, give each as TYPE=DIR (Disease=ctd_kb Chemical=mesh_kb).")
        if label in stores:
            raise ArboError(f"--kb: two KBs for type {label}.")
        stores[label] = open_store(path)
    return stores


def convert_corpus_command(args: argparse.Namespace) -> None:
    from ..corpora import convert_named_corpus, named_corpus
    from ..kb.store import open_store

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

    from ..corpora import join_docbins

    counts = join_docbins(args.inputs, args.output, spacy.blank("en").vocab)
    parts = ", ".join(f"{path} ({n:,})" for path, n in counts)
    print(f"Wrote {args.output}: {sum(n for _, n in counts):,} documents from {parts}")


def hold_out_kb_command(args: argparse.Namespace) -> None:
    from ..corpora.out_of_kb import hold_out_kb

    record = hold_out_kb(args.kb_dir, args.eval, args.out_dir, train_path=args.train, share=args.share, seed=args.seed)
    counts = record["eval_counts"]
    print(f"Held out {len(record['held_out']):,} of the {record['entities_mentioned']:,} entities {args.eval} mentions "
          f"(share {args.share:g}, seed {args.seed}); the KB keeps {record['kb_entities']:,}.")
    print(f"{args.eval}: {counts['turned_nil']:,} of {counts['mentions']:,} mentions now NIL "
          f"({counts['already_nil']:,} were NIL before); composites: {counts['composites_nil']:,} NIL, "
          f"{counts['composites_reduced']:,} keep their other parts, of {counts['composites']:,}")
    if "train_counts" in record:
        train = record["train_counts"]
        print(f"{args.train}: {train['turned_nil']:,} of {train['mentions']:,} mentions now NIL, "
              f"{train['composites_reduced']:,} composites keep their other parts")
    print(f"Wrote {args.out_dir}")
