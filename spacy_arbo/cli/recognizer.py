"""`learn-recognizer`: from a KB (or a linking pipeline) and unannotated texts to a raw-text
pipeline (docs/raw_text.md)."""
import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Callable, List, Sequence

from ..annotation.formats import INPUT_FORMATS
from ..util import ArboError, PathLike
from ._util import add_gpu_option, non_negative_int, positive_int, probability

if TYPE_CHECKING:
    from spacy.language import Language

DEFAULT_CONFIG = "configs/ner_trf.cfg"
# spaCy's default nlp.max_length: a longer text is a bad record, named, not spaCy's E088.
SPACY_MAX_LENGTH = 1_000_000


def add_commands(commands: "argparse._SubParsersAction") -> None:
    cmd = commands.add_parser(
        "learn-recognizer", help="learn a recognizer from a KB and your unannotated texts: out comes a raw-text "
        "pipeline (recognizer, KB name finder, arbo_linker)",
        description="The linker reads the texts through the KB's names; the mentions it links become silver "
        "annotation (the rest of the text as --unmatched says); spacy train fits a recognizer to them, and each "
        "self-training round learns again from the recognizer's own linked mentions. Any annotation the texts "
        "carry is ignored (docs/raw_text.md).")
    cmd.add_argument("source", help="a KB (any file build-kb reads, or a KB directory): the default linker "
                     "links to it; or a saved linking pipeline (its recognizer or KB name finder is replaced)")
    cmd.add_argument("texts", nargs="+", metavar="TEXTS", help="files or folders of texts, as link reads them "
                     "(.txt, JSONL, PubTator, BioC)")
    cmd.add_argument("--output", "-o", required=True, help="the pipeline directory to write")
    cmd.add_argument("--config", default=DEFAULT_CONFIG, help="the recognizer's spacy train config (default "
                     f"{DEFAULT_CONFIG}, the offline MiniLM; configs/ner.cfg: the faster CNN)")
    cmd.add_argument("--max-steps", type=positive_int, default=None,
                     help="training updates per round (default: the config's)")
    cmd.add_argument("--rounds", type=non_negative_int, default=0,
                     help="self-training rounds after the first training (default 0)")
    cmd.add_argument("--min-confidence", type=probability, default=0.0,
                     help="linked mentions below this confidence are left missing, not taught (default 0)")
    cmd.add_argument("--unmatched", choices=("outside", "kb_words", "missing"), default="outside",
                     help="what a token no silver mention covers is taught as: outside a mention (the default), "
                     "missing when a KB name uses its word (kb_words), or always missing")
    cmd.add_argument("--kb-finder", action=argparse.BooleanOptionalAction, default=True,
                     help="keep the KB name finder beside the recognizer (default: on)")
    cmd.add_argument("--label", default=None, help="the mentions' label (default: the one type every entity of "
                     "the KB lists, else Disease, as add-kb-finder chooses)")
    cmd.add_argument("--input-format", choices=INPUT_FORMATS, default="auto")
    cmd.add_argument("--workdir", default=None, help="keep the silver corpora and training runs here "
                     "(default: a temporary folder, removed after)")
    cmd.add_argument("--seed", type=int, default=0, help="of the train/dev split and of spacy train (default 0)")
    add_gpu_option(cmd)
    cmd.set_defaults(func=learn_recognizer_command)


def read_texts(paths: Sequence[PathLike], fmt: str, report: Callable[[str], None]) -> List[str]:
    """The texts of the inputs, in order; their annotations are not read."""
    from ..annotation.readers import input_files, read_records
    from ..annotation.records import BadRecords, within_max_length

    bad = BadRecords(report)
    records = within_max_length(read_records(input_files(paths, fmt), bad), SPACY_MAX_LENGTH, bad)
    texts = [record.text for record in records if record.text.strip()]
    if not texts:
        raise ArboError(f"{', '.join(map(str, paths))}: no text to learn from.")
    return texts


def linker_loader(source: PathLike, workdir: Path) -> Callable[[], "Language"]:
    """What loads the linking pipeline: `source` itself when it is a saved pipeline, else the
    default `arbo_linker` over the KB that `source` is (a KB directory, or a file build-kb reads,
    built into `workdir`), initialized once and saved in `workdir`."""
    from ..pipeline_loading import load_pipeline

    source = Path(source)
    if (source / "config.cfg").is_file():
        return lambda: load_pipeline(source)
    saved = workdir / "linker"
    write_default_linker(source, workdir, saved)
    return lambda: load_pipeline(saved)


def write_default_linker(source: Path, workdir: Path, output: Path) -> None:
    import spacy

    from ..kb.readers import build_kb

    kb_dir = source
    if not source.is_dir():  # a KB file: a directory is one build-kb wrote, opened as such
        kb_dir = workdir / "kb"
        build_kb(source, kb_dir)
    nlp = spacy.blank("en")
    nlp.add_pipe("arbo_linker")
    nlp.config["initialize"]["components"]["arbo_linker"] = {
        "kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1", "path": str(kb_dir)}}
    nlp.initialize()
    nlp.to_disk(output)


def learn_recognizer_command(args: argparse.Namespace) -> None:
    import tempfile

    from ..corpora.silver_mentions import SilverSettings
    from ..training.recognizer_training import RecognizerSettings, learn_recognizer
    from ._pipelines import write_pipeline

    overrides = {"training.max_steps": args.max_steps} if args.max_steps is not None else {}
    settings = RecognizerSettings(Path(args.config), overrides, rounds=args.rounds, seed=args.seed,
                                  keep_finder=args.kb_finder, label=args.label, gpu_id=args.gpu_id,
                                  silver=SilverSettings(args.min_confidence, args.unmatched))
    texts = read_texts(args.texts, args.input_format, print)
    with tempfile.TemporaryDirectory(prefix="spacy_arbo_recognizer_") as temporary:
        workdir = Path(args.workdir or temporary)
        workdir.mkdir(parents=True, exist_ok=True)
        nlp = learn_recognizer(linker_loader(args.source, workdir), texts, settings, workdir)
        write_pipeline(nlp, args.output)
    print(f"Wrote {args.output}: {' -> '.join(nlp.pipe_names)}; learned from {len(texts):,} texts")
