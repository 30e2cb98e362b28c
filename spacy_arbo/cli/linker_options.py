"""The options of the commands that link with a saved pipeline (configure, evaluate, discover):
arbo_linker settings as `--set KEY=VALUE`, and corpora whose mentions, names or long forms the
linkers read first."""
import argparse
import dataclasses
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

import srsly

from ..pipeline.linker.linker_settings import LinkerSettings
from ..util import ArboError, PathLike

if TYPE_CHECKING:  # spaCy and the linker are imported by the functions that use them, not by the parser
    from spacy.language import Language
    from spacy.tokens import Doc

    from ..pipeline.arbo_linker import ArboLinker

# The keys `--set` takes: every arbo_linker setting; the linker's settings check each value.
LINKER_SETTINGS = tuple(f.name for f in dataclasses.fields(LinkerSettings))


def add_setting_arguments(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help=f"change an arbo_linker setting first, e.g. linking=clustering ({', '.join(LINKER_SETTINGS)})")
    cmd.add_argument("--anchors-from", metavar="TRAIN.spacy",
                     help="add this corpus's gold mentions as anchors for transductive clustering")
    cmd.add_argument("--dictionary-from", nargs="+", metavar="TRAIN.spacy",
                     help="add these corpora's gold mentions as extra names of their entities")
    cmd.add_argument("--long-forms-from", nargs="+", metavar="DOCS.spacy",
                     help="read a short form that its doc does not define as the long form these corpora "
                          "define most often (text only; no annotations needed)")


def apply_settings(linkers: List, settings: List[str]) -> None:
    """Apply `KEY=VALUE` (VALUE parsed as JSON, else a string) to every arbo_linker; a bad
    value is a message naming it (`--set threshold=abc: threshold takes a number or null`)."""
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


def linkers_to_change(nlp: "Language", path: PathLike, options: Sequence[str]) -> List["ArboLinker"]:
    """The pipeline's arbo_linkers, which `options` (given on the command line) change: on a
    pipeline without one they would change nothing, silently, so that is an error."""
    from ..pipeline.arbo_linker import arbo_linkers

    linkers = arbo_linkers(nlp)
    if options and not linkers:
        raise ArboError(f"{path} has no arbo_linker for {', '.join(options)} to change "
                        f"(its components: {', '.join(nlp.pipe_names) or 'none'}).")
    return linkers


def configured_pipeline(args: argparse.Namespace, overrides: Optional[Dict[str, Any]] = None) -> "Language":
    """The pipeline (loaded with config `overrides`) with `--set` applied; with `--anchors-from`,
    the gold mentions of that corpus as anchors for transductive clustering; with
    `--dictionary-from`, the gold mentions of those corpora as extra entity names; with
    `--long-forms-from`, the long forms those corpora define, for short forms that their own
    doc leaves undefined."""
    from ._pipelines import load_pipeline, read_corpora

    nlp = load_pipeline(args.pipeline, overrides)
    given = [option for option, value in (("--set", args.set), ("--anchors-from", args.anchors_from),
                                          ("--dictionary-from", args.dictionary_from),
                                          ("--long-forms-from", args.long_forms_from)) if value]
    linkers = linkers_to_change(nlp, args.pipeline, given)
    apply_settings(linkers, args.set or [])
    if args.anchors_from:
        docs = read_corpora([args.anchors_from], nlp.vocab)
        for linker in linkers:
            linker.set_training_mentions(docs)
            linker.configure(transductive=True)
    if args.dictionary_from:
        set_dictionaries(linkers, args.dictionary_from)
    if args.long_forms_from:
        docs = read_corpora(args.long_forms_from, nlp.vocab)
        for linker in linkers:
            n_forms = linker.set_corpus_long_forms(docs)
            print(f"{linker.name}: long forms of {n_forms:,} short forms from {', '.join(args.long_forms_from)}")
    return nlp


def set_dictionaries(linkers: List, paths: List[str], evaluated: Sequence["Doc"] = ()) -> None:
    """The gold mentions of `paths` as dictionary names; documents that are also being
    `evaluated` (same doc id, or same text) are left out, so that no test mention is its own
    dictionary entry (BC5CDR's evaluation split is its dev set)."""
    if not linkers:
        return
    from ..evaluation import docs_not_in
    from ._pipelines import read_corpora

    # The linkers of one pipeline share its vocab: the corpora are read once.
    docs = read_corpora(paths, linkers[0].vocab)
    kept = docs_not_in(docs, evaluated)
    note = f" (left out {len(docs) - len(kept):,} documents under evaluation)" if len(kept) < len(docs) else ""
    for linker in linkers:
        print(f"{linker.name}: {linker.set_dictionary(kept):,} dictionary names from {', '.join(paths)}{note}")
