"""A recognizer learned from a KB and unannotated texts: the linking pipeline, reading the texts
through its KB name finder, annotates silver mentions (`corpora.silver_mentions`); `spacy train`
fits a recognizer to them from a config (`configs/ner_trf.cfg`, `configs/ner.cfg`); in each
self-training round the recognizer, beside the name finder, reads the texts again and its
linked mentions become the next silver annotation. No labelled mention is read at any step.
"""
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import spacy
from spacy.language import Language
from spacy.tokens import DocBin

from ..corpora.silver_mentions import FILTER, FINDER, SilverCounts, SilverSettings, silver_docs
from ..pipeline.arbo_linker import arbo_linkers
from ..pipeline.common.kb_versions import several_kbs
from ..pipeline.common.mention_finders import mention_finders
from ..util import ArboError, PathLike

# Components that find mentions for a linker, replaced by the recognizer learned.
MENTION_COMPONENTS = (FINDER, FILTER, "ner", "mention_consistency")


@dataclass
class RecognizerSettings:
    """config: a `spacy train` config with one `ner` component (configs/ner_trf.cfg).
    overrides: its settings, in spaCy's dot notation (e.g. {"training.max_steps": 300}).
    rounds: self-training rounds after the first training on the name finder's mentions.
    dev_share: of the texts, kept out of training for `spacy train`'s dev scores (silver too).
    seed: of the train/dev split and of `spacy train`.
    keep_finder: keep the KB name finder beside the recognizer in the pipeline made.
    label: the mentions' label (default: as `add-kb-finder` chooses it from the KB).
    gpu_id: `spacy train`'s (-1: CPU)."""

    config: Path
    overrides: Dict[str, object] = field(default_factory=dict)
    rounds: int = 0
    dev_share: float = 0.1
    seed: int = 0
    keep_finder: bool = True
    label: Optional[str] = None
    gpu_id: int = -1
    silver: SilverSettings = field(default_factory=SilverSettings)

    def __post_init__(self) -> None:
        self.config = Path(self.config)
        if not self.config.is_file():
            raise ArboError(f"{self.config}: no such recognizer config (configs/ner_trf.cfg or configs/ner.cfg of "
                            "the project, or a spacy train config of your own with a 'ner' component).")
        check_recognizer_config(self.config)
        if self.rounds < 0:
            raise ArboError(f"rounds must be 0 or more, not {self.rounds}")
        if not 0.0 < self.dev_share < 1.0:
            raise ArboError(f"dev_share must be between 0 and 1, not {self.dev_share}")


def check_recognizer_config(path: Path) -> None:
    """A `spacy train` config with a `ner` component, or an error that says what it lacks."""
    from spacy.util import load_config

    try:
        config = load_config(path)
        pipeline = config["nlp"]["pipeline"]
    except Exception as err:  # configparser's and confection's errors, a missing [nlp]
        raise ArboError(f"{path}: not a spacy train config ({type(err).__name__}: {err}).") from None
    if "corpora" not in config:
        raise ArboError(f"{path}: not a spacy train config (no [corpora] section).")
    if "ner" not in pipeline:
        raise ArboError(f"{path}: its pipeline ({', '.join(pipeline) or 'empty'}) has no 'ner' component to train.")


def linking_only(nlp: Language) -> Language:
    """`nlp` without its mention finders: a linking pipeline whose recognizer is to be learned."""
    if not arbo_linkers(nlp):
        raise ArboError("The pipeline has no arbo_linker: a recognizer is learned from what a linker links; give "
                        "a linking pipeline (or a KB, for the default linker).")
    for name in [n for n in nlp.pipe_names if n in MENTION_COMPONENTS]:
        nlp.remove_pipe(name)
    others = mention_finders(nlp)
    if others:
        raise ArboError(f"The pipeline already finds mentions with {', '.join(others)}: give the linking pipeline "
                        "without a recognizer.")
    if several_kbs(nlp):
        raise ArboError("The pipeline links to several KBs: learn a recognizer for each KB's linking pipeline.")
    for linker in arbo_linkers(nlp):
        if linker.kb is not None and len(linker.kb) < 2:
            raise ArboError(f"{linker.name}'s KB has fewer than two entities ({len(linker.kb)}): a recognizer learned "
                            "from one name finds that name and nothing else; it needs a KB of two entities or more.")
    return nlp


def split_texts(texts: Sequence[str], dev_share: float, seed: int) -> Tuple[List[str], List[str]]:
    """Train and dev texts, seeded, each with one text at least; one text is both."""
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    n_dev = min(len(texts) - 1, max(1, round(len(texts) * dev_share)))
    dev = [texts[i] for i in sorted(order[:n_dev])]
    train = [texts[i] for i in sorted(order[n_dev:])]
    return train, (dev or train)


def learn_recognizer(load_linker: Callable[[], Language], texts: Sequence[str], settings: RecognizerSettings,
                     workdir: PathLike, report: Callable[[str], None] = print) -> Language:
    """The raw-text pipeline: the linker that `load_linker` gives, after a recognizer learned from
    `texts` (and the KB name finder, with `keep_finder`). `workdir` keeps each round's silver
    corpora and training output."""
    texts = [text for text in texts if text.strip()]
    if not texts:
        raise ArboError("No text to learn from: every input is empty.")
    train, dev = split_texts(texts, settings.dev_share, settings.seed)
    teacher = raw_text_pipeline(load_linker, None, True, settings.label)
    for round_ in range(settings.rounds + 1):
        out = Path(workdir) / f"round_{round_}"
        counts = write_silver(teacher, train, dev, settings.silver, out)
        if counts.mentions == 0:
            raise ArboError(f"None of the texts ({len(texts):,}) mentions a name of the KB: there is nothing to learn "
                            "a recognizer from (are the texts and the KB of one domain and language?).")
        report(f"round {round_}: {counts}")
        recognizer = train_recognizer(settings, out, teacher.get_pipe(FINDER).label)
        if round_ < settings.rounds:
            teacher = raw_text_pipeline(load_linker, recognizer, True, settings.label)
    return raw_text_pipeline(load_linker, recognizer, settings.keep_finder, settings.label)


def raw_text_pipeline(load_linker: Callable[[], Language], recognizer: Optional[Language], kb_finder: bool,
                      label: Optional[str]) -> Language:
    """The linker after `recognizer` and, with `kb_finder`, the KB name finder (beside the
    recognizer, or alone in replace mode)."""
    from ..cli.pipeline import add_kb_finder, add_recognizer

    nlp = linking_only(load_linker())
    if recognizer is not None:
        add_recognizer(nlp, recognizer, consistency=False)
    if kb_finder:
        add_kb_finder(nlp, mode="add" if recognizer is not None else "replace", label=label)
    return nlp


def write_silver(teacher: Language, train: Sequence[str], dev: Sequence[str], settings: SilverSettings,
                 out: Path) -> SilverCounts:
    """`out`/train.spacy and dev.spacy, the silver mentions of the texts; the counts of train's."""
    out.mkdir(parents=True, exist_ok=True)
    label = teacher.get_pipe(FINDER).label
    counts = SilverCounts()
    for name, texts in (("train", train), ("dev", dev)):
        docs = silver_docs(teacher, _progress(texts, f"silver mentions ({name})"), settings, label,
                           counts if name == "train" else None)
        DocBin(docs=docs).to_disk(out / f"{name}.spacy")
    return counts


def train_recognizer(settings: RecognizerSettings, out: Path, label: str) -> Language:
    """`spacy train` on the silver corpora of `out`; its best model (by silver dev F). A config's
    one-label augmenters give the mentions the finder's `label`."""
    from spacy.cli.train import train
    from spacy.util import load_config

    corpora = load_config(settings.config)["corpora"]
    overrides: Dict[str, object] = {"paths.train": str(out / "train.spacy"), "paths.dev": str(out / "dev.spacy"),
                                    "system.seed": settings.seed}
    for split in ("train", "dev"):
        if corpora.get(split, {}).get("augmenter", {}).get("@augmenters") == "spacy_arbo.one_label.v1":
            overrides[f"corpora.{split}.augmenter.label"] = label
    overrides.update(settings.overrides)
    train(settings.config, out / "recognizer", overrides=overrides, use_gpu=settings.gpu_id)
    return spacy.load(out / "recognizer" / "model-best")


def _progress(texts: Sequence[str], what: str) -> Iterable[str]:
    from tqdm import tqdm

    return tqdm(texts, desc=what, unit="text", leave=False)
