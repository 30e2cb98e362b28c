"""Commands that change a saved pipeline: add-ner, add-kb-finder, add-memory, configure."""
import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence, Tuple

from ..encoders.precision_names import PRECISIONS
from ..kb.entities import common_type
from ..pipeline.common.kb_finder_settings import DEFAULT_LABEL, MODES, SHORT_FORMS
from ..util import ArboError
from ._util import TypesAction, add_gpu_option
from .linker_options import add_setting_arguments, configured_pipeline

if TYPE_CHECKING:
    from spacy.language import Language

    from ..kb.store import BaseEntityStore


def add_commands(commands: "argparse._SubParsersAction") -> None:
    cmd = commands.add_parser("add-ner", help="put a trained recognizer ('ner' of another pipeline) first, for raw text")
    cmd.add_argument("pipeline", help="the linking pipeline")
    cmd.add_argument("ner", help="a pipeline with a 'ner' component (e.g. from configs/ner.cfg)")
    cmd.add_argument("output")
    cmd.add_argument("--consistency", action=argparse.BooleanOptionalAction, default=True,
                     help="put a mention_consistency after it: every occurrence of a text it labels often enough "
                     "in a doc, and the short forms of the long forms it labels, become mentions (default: on)")
    cmd.set_defaults(func=add_ner_command)

    cmd = commands.add_parser("add-kb-finder", help="propose the spans that read as KB names as mentions (beside a "
                              "recognizer's, or alone), and drop those the linker links to NIL")
    cmd.add_argument("pipeline", help="the linking pipeline (with or without a recognizer)")
    cmd.add_argument("output")
    cmd.add_argument("--kb", help="the KB directory whose names are matched (build-kb): the one the linker links "
                     "to, which is the default; another KB is an error")
    cmd.add_argument("--mode", choices=MODES, default=None,
                     help="add: beside the recognizer's mentions (the default when there is one); "
                     "replace: the KB's names are the only mentions (the default without one)")
    cmd.add_argument("--label", default=None, help="the label of the mentions it proposes (default: the one type "
                     f"every entity of the KB lists, else {DEFAULT_LABEL}, kb_mention_finder's own default)")
    cmd.add_argument("--short-forms", choices=SHORT_FORMS, default="all",
                     help="all: the KB's abbreviations wherever a text writes them, unless it defines them as something "
                     "else (the default); defined: only where it defines them as a KB name (docs/raw_text.md)")
    cmd.set_defaults(func=add_kb_finder_command)

    cmd = commands.add_parser("add-linker", help="link mentions of some labels to a KB of their own: a second "
                              "arbo_linker (e.g. Chemical mentions to MeSH beside Disease mentions to CTD)")
    cmd.add_argument("pipeline", help="a pipeline with an arbo_linker")
    cmd.add_argument("kb", help="the KB directory (build-kb) the new linker links to")
    cmd.add_argument("output")
    cmd.add_argument("--labels", nargs="+", required=True, action=TypesAction, metavar="LABEL",
                     help="the entity labels it links; the linkers already there stop linking them (their "
                     "labels_discard); comma- or space-separated")
    cmd.add_argument("--name", default=None, help="the new component's name (default: LABEL_linker)")
    cmd.set_defaults(func=add_linker_command)

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
    add_gpu_option(cmd)
    cmd.set_defaults(func=add_memory_command)

    cmd = commands.add_parser("configure", help="store a pipeline with changed arbo_linker settings")
    cmd.add_argument("pipeline")
    cmd.add_argument("output")
    add_setting_arguments(cmd)
    cmd.add_argument("--recognizer-precision", choices=PRECISIONS, default=None,
                     help="the transformer recognizer's arithmetic when it reads documents: auto (bf16 where the "
                     "CPU has it), fp32, bf16 or int8 (ONNX Runtime, on a CPU without bf16); a recognizer "
                     "trained under spacy-transformers' "
                     "Tok2VecTransformer.v3 moves onto spacy_arbo.Tok2VecTransformer.v1 with its weights")
    add_gpu_option(cmd)
    cmd.set_defaults(func=configure_command)


def add_linker(nlp: "Language", kb: "BaseEntityStore", labels: Sequence[str], name: Optional[str] = None) -> str:
    """Put an arbo_linker for `labels` over `kb` after the last linker, with the first linker's model
    architecture and settings (its encoder starts from the pretrained weights: zero-shot on the new
    KB), and make the linkers already there leave those labels to it. Returns its name."""
    from ..pipeline.arbo_linker import arbo_linkers
    from ..pipeline.common.kb_versions import check_kb_versions

    linkers = arbo_linkers(nlp)
    if not linkers or not labels:
        raise ArboError("add-linker needs a pipeline with an arbo_linker and the labels the new one links (--labels).")
    name = name or f"{labels[0].lower()}_linker"
    if name in nlp.pipe_names:
        raise ArboError(f"The pipeline already has a component named '{name}' (--name sets another).")
    first = linkers[0]
    config = {key: value for key, value in nlp.config.interpolate()["components"][first.name].items() if key != "factory"}
    new = nlp.add_pipe("arbo_linker", name=name, config={**config, "labels": list(labels)}, after=linkers[-1].name)
    for linker in linkers:
        if not linker.settings.labels:
            linker.configure(labels_discard=sorted({*linker.settings.labels_discard, *labels}))
    new.initialize(lambda: [], nlp=nlp, kb_loader=lambda _vocab: kb)
    check_kb_versions(nlp)
    return name


def add_linker_command(args: argparse.Namespace) -> None:
    from ..kb.store import open_store
    from ._pipelines import load_pipeline, write_pipeline

    nlp = load_pipeline(args.pipeline)
    name = add_linker(nlp, open_store(args.kb), args.labels, args.name)
    write_pipeline(nlp, Path(args.output))
    print(f"Wrote {args.output}: {name} links {', '.join(args.labels)} mentions to {args.kb}; "
          f"{' -> '.join(nlp.pipe_names)}")


def add_recognizer(nlp: "Language", recognizer: "Language", consistency: bool = True) -> None:
    """Put `recognizer`'s 'ner', and the components before it that it reads, first in `nlp`, and a `mention_consistency` after
    it unless `consistency` is off; the linking components then read the mentions found, in
    evaluation (spacy evaluate) too, instead of the gold ones."""
    from ..pipeline.common.kb_versions import check_kb_versions

    if "ner" not in recognizer.pipe_names:
        raise ArboError(f"The recognizer pipeline has no component named 'ner' (it has {', '.join(recognizer.pipe_names)}).")
    sourced = recognizer.pipe_names[:recognizer.pipe_names.index("ner") + 1]
    taken = [name for name in [*sourced, *(["mention_consistency"] if consistency else [])] if name in nlp.pipe_names]
    if taken:
        raise ArboError(f"The pipeline already has a component named '{taken[0]}'.")
    for name in reversed(sourced):
        nlp.add_pipe(name, source=recognizer, first=True)
    check_kb_versions(nlp)
    if consistency:
        nlp.add_pipe("mention_consistency", after="ner")
    use_found_mentions(nlp)


def add_kb_finder(nlp: "Language", kb: Optional["BaseEntityStore"] = None, mode: Optional[str] = None,
                  label: Optional[str] = None, short_forms: str = "all") -> str:
    """Put a `kb_mention_finder` over the names of the KB the pipeline links to (`label`'s) after the
    recognizer (first without one) and a `kb_mention_filter` last (before a `link_confidence`), so that the proposals the
    linker links to NIL are dropped; the linkers read the mentions found instead of gold ones.
    `kb`, when given, must be that KB: the linker would link another's names to its nearest entity.
    The mentions' label is `label`, else the KB's `common_type`, else `DEFAULT_LABEL`: a
    chemical KB's names are not diseases. Returns what the label is and why."""
    from ..pipeline.arbo_linker import arbo_linkers
    from ..pipeline.common.kb_versions import kb_version, label_kb
    from ..pipeline.common.mention_finders import mention_finders

    linking = label_kb(nlp, label) if arbo_linkers(nlp) else None  # with a KB per label, that of `label`
    if linking is None:
        raise ArboError("The pipeline has no arbo_linker: the kb_mention_filter drops every mention no linker links, "
                        "so it would find nothing; add the finder to a linking pipeline.")
    owner, linked_kb = linking
    if kb is not None and kb_version(kb) != kb_version(linked_kb):
        raise ArboError(f"--kb {kb.path or kb.source} is another KB (version {kb_version(kb)}, {len(kb):,} entities) "
                        f"than the one {owner} links to (version {kb_version(linked_kb)}, {len(linked_kb):,} "
                        "entities): its names would be linked to whatever entity is nearest; leave --kb out to "
                        f"match {owner}'s KB.")
    for name in ("kb_mention_finder", "kb_mention_filter"):
        if name in nlp.pipe_names:
            raise ArboError(f"The pipeline already has a component named '{name}'.")
    finders = mention_finders(nlp)
    mode = mode or ("add" if finders else "replace")
    if mode == "add" and not finders:
        raise ArboError("--mode add puts KB names beside a recognizer's mentions, but the pipeline has no recognizer; "
                        "add one first (add-ner) or use --mode replace.")
    placement = {"after": finders[-1]} if finders else {"first": True}
    label, why = finder_label(linked_kb, label)
    finder = nlp.add_pipe("kb_mention_finder", config={"mode": mode, "label": label, "short_forms": short_forms},
                          **placement)
    finder.set_kb(linked_kb)
    # Before a link_confidence, which must stay last to see every link.
    last = nlp.pipe_names[-1]
    placement = {"before": last} if nlp.get_pipe_meta(last).factory == "link_confidence" else {"last": True}
    nlp.add_pipe("kb_mention_filter", config={"spans_key": finder.cfg["spans_key"]}, **placement)
    use_found_mentions(nlp)
    return f"its mentions are labelled '{label}' ({why})"


def finder_label(kb: "BaseEntityStore", label: Optional[str]) -> Tuple[str, str]:
    """The label of the mentions a KB's names propose, and where it comes from."""
    if label:
        return label, "--label"
    shared = common_type(kb)
    if shared is not None:
        return shared, "the type every entity of the KB lists"
    return DEFAULT_LABEL, "the default: the KB's entities list no one type; --label sets another"


def use_found_mentions(nlp: "Language") -> None:
    from ..pipeline.common.configured_pipe import ConfiguredPipe

    for _, proc in nlp.components:
        if isinstance(proc, ConfiguredPipe) and "use_gold_ents" in proc.cfg:
            proc.configure(use_gold_ents=False)


def add_kb_finder_command(args: argparse.Namespace) -> None:
    from ..kb.store import open_store
    from ._pipelines import load_pipeline, write_pipeline

    nlp = load_pipeline(args.pipeline)
    try:
        label = add_kb_finder(nlp, open_store(args.kb) if args.kb else None, args.mode, args.label, args.short_forms)
    except ArboError as err:
        raise ArboError(f"{args.pipeline}: {err}") from None
    write_pipeline(nlp, args.output)
    print(f"Wrote {args.output}: {' -> '.join(nlp.pipe_names)}; {label}")


def add_ner_command(args: argparse.Namespace) -> None:
    from ._pipelines import load_pipeline, write_pipeline

    nlp = load_pipeline(args.pipeline)
    add_recognizer(nlp, load_pipeline(args.ner), args.consistency)
    write_pipeline(nlp, args.output)
    print(f"Wrote {args.output}: {' -> '.join(nlp.pipe_names)}")


def add_memory_command(args: argparse.Namespace) -> None:
    from ..corpora import read_docbin
    from ..evaluation import docs_not_in
    from ..pipeline.arbo_linker import arbo_linkers
    from ..pipeline.link_memory import LinkMemory, unknown_ids
    from ..tuning.memory_settings import tune_link_memory
    from ._pipelines import load_pipeline, read_corpora, write_pipeline

    nlp = load_pipeline(args.pipeline)
    if "link_memory" in nlp.pipe_names:
        nlp.remove_pipe("link_memory")
    memory = LinkMemory(nlp.vocab, min_count=args.min_count, min_share=args.min_share, fold_plurals=args.fold_plurals)
    dev = read_docbin(args.dev, nlp.vocab) if args.dev else None
    n_mentions = memory.add(docs_not_in(read_corpora(args.from_corpora, nlp.vocab), dev or []))
    for linker in [linker for linker in arbo_linkers(nlp) if linker.kb is not None][:1]:
        unknown = unknown_ids(memory, lambda kb_id: kb_id in linker.kb)
        if unknown:
            raise ArboError(f"{', '.join(args.from_corpora)}: {len(unknown):,} gold ids are not in {linker.name}'s KB "
                            f"(e.g. {', '.join(unknown[:3])}); convert the corpus against the KB "
                            "(convert-corpus --kb) so that they read NIL.")
    chosen = (memory.min_count, memory.min_share, memory.fold_plurals)
    if dev is not None:
        without, rows, chosen = tune_link_memory(nlp, memory, dev)
        print(f"strict accuracy@1 on {args.dev} without the memory: {without:.4f}\n"
              "| min_count | min_share | fold_plurals | strict accuracy@1 |\n|---:|---:|---|---:|")
        for count, share, fold, acc in rows:
            print(f"| {count} | {share:g} | {str(fold).lower()} | {acc:.4f} |")
    if chosen is None:
        print(f"No setting beats the pipeline without the memory on {args.dev}: none added.")
    else:
        added = memory.with_settings(*chosen).add_to(nlp)
        print(f"link_memory (min_count {added.min_count}, min_share {added.min_share:g}, "
              f"fold_plurals {str(added.fold_plurals).lower()}) links "
              f"{len(added.links):,} texts of {n_mentions:,} mentions from {', '.join(args.from_corpora)}")
    write_pipeline(nlp, args.output)
    print(f"Wrote {args.output}: {' -> '.join(nlp.pipe_names)}")


def configure_command(args: argparse.Namespace) -> None:
    from spacy.util import load_config

    from ..encoders.recognizer_transformer import precision_overrides
    from ..pipeline.arbo_linker import arbo_linkers
    from ._pipelines import write_pipeline

    overrides = None
    if args.recognizer_precision:
        overrides = precision_overrides(load_config(Path(args.pipeline) / "config.cfg"), args.recognizer_precision)
    nlp = configured_pipeline(args, overrides)
    for linker in arbo_linkers(nlp):
        linker.ensure_fresh()  # changed entity texts (index_aliases) are encoded now, not on load
    write_pipeline(nlp, args.output)
    changes = (args.set or []) + ([f"recognizer_precision={args.recognizer_precision}"] if overrides else [])
    print(f"Wrote {args.output} with {', '.join(changes)}"
          + (f" and the anchors of {args.anchors_from}" if args.anchors_from else ""))
