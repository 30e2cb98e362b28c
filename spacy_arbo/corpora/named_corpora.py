"""Corpora known by name (`ncbi`, `bc5cdr`): where their splits lie, and their conversion
to `train.spacy`, `dev.spacy` and `test.spacy`."""
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

from ..kb.store import BaseEntityStore
from ..util import ArboError, PathLike, atomic_path
from .conversion import convert_corpus
from .conversion_report import ConversionReport
from .docbin import write_docbin


@dataclass(frozen=True)
class NamedCorpus:
    """A corpus known by name: its splits as paths below an assets directory (laid out like
    the data mirror, `$SPACY_ARBO_DATA`) and the mention types kept (None: all)."""

    name: str
    title: str
    train: str
    dev: str
    test: str
    types: Optional[Tuple[str, ...]] = None
    # How the splits differ from the corpus's own, printed with every conversion.
    note: str = ""

    @property
    def splits(self) -> Dict[str, str]:
        return {"train": self.train, "dev": self.dev, "test": self.test}


NAMED_CORPORA: Dict[str, NamedCorpus] = {
    corpus.name: corpus for corpus in (
        NamedCorpus(
            "ncbi", "NCBI Disease",
            train="ncbi_disease/NCBItrainset_corpus.txt",
            dev="ncbi_disease/NCBIdevelopset_corpus.txt",
            test="ncbi_disease/NCBItestset_corpus.txt",
        ),
        NamedCorpus(
            "bc5cdr", "BC5CDR disease mentions",
            train="bc5cdr/CDR_train.PubTator.txt",
            dev="bc5cdr/CDR_dev.PubTator.txt",
            # BC5CDR's public test set is not in the data mirror: evaluate on its dev set.
            test="bc5cdr/CDR_dev.PubTator.txt",
            types=("Disease",),
            note="BC5CDR's test set is not in the data mirror, so the evaluation split (test.spacy) "
                 "is its dev set CDR_dev, the same documents as dev.spacy: model selection and "
                 "tuning on dev see the evaluation documents.",
        ),
    )
}


def named_corpus(name: str) -> NamedCorpus:
    if name not in NAMED_CORPORA:
        raise ArboError(f"Unknown corpus '{name}'; known corpora: {', '.join(NAMED_CORPORA)}.")
    return NAMED_CORPORA[name]


class SplitConversion(NamedTuple):
    split: str
    source: Path
    output: Path
    report: ConversionReport
    # The split this one is a copy of (test of dev when the corpus has no test set), or "".
    same_as: str = ""


def convert_named_corpus(
    name: str,
    assets_dir: PathLike,
    out_dir: PathLike,
    kb: Optional[BaseEntityStore] = None,
    limits: Optional[Dict[str, int]] = None,
) -> List[SplitConversion]:
    """Write `out_dir/{train,dev,test}.spacy` for a named corpus; `limits` maps a split to
    the number of documents kept (0 or missing: all). Every source is checked first, so a
    missing file writes nothing."""
    corpus = named_corpus(name)
    assets_dir, out_dir = Path(assets_dir), Path(out_dir)
    sources = {split: assets_dir / path for split, path in corpus.splits.items()}
    for split, source in sources.items():
        if not source.is_file():
            raise ArboError(f"Corpus '{name}': {split} file '{source}' does not exist.")
    limits = limits or {}
    done: Dict[Tuple[Path, int], SplitConversion] = {}
    results = []
    for split, source in sources.items():
        output = out_dir / f"{split}.spacy"
        limit = limits.get(split, 0)
        earlier = done.get((source, limit))
        if earlier is not None:
            with atomic_path(output) as tmp:
                shutil.copyfile(earlier.output, tmp)
            result = SplitConversion(split, source, output, earlier.report, earlier.split)
        else:
            docs, report = convert_corpus(source, kb=kb, types=corpus.types, fmt="pubtator", limit=limit)
            write_docbin(docs, output)
            result = done[source, limit] = SplitConversion(split, source, output, report)
        results.append(result)
    return results
