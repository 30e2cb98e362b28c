"""A results table (markdown, with its recall@k plot) from `evaluate` JSON files; trained
runs scored beside their training clocks (`compare-runs`)."""
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

from spacy.language import Language

from .component_settings import is_number
from .evaluation import evaluate_linking
from .gold_corpus import read_gold_links
from .plotting import plot_recall
from .scoring import RECALL_KS
from .util import ArboError, PathLike, atomic_path, read_json

COLUMNS = [("recall@1", "R@1"), ("recall@8", "R@8"), ("recall@64", "R@64"), ("accuracy", "acc"), ("accuracy_strict", "acc strict"),
           ("accuracy_seen", "acc seen"), ("accuracy_unseen", "acc unseen"), ("nel_micro_f", "link F"), ("ari", "ARI"),
           ("mentions_per_second", "mentions/s")]
# Systems scored on raw text (`evaluate --end-to-end`): recognition, then linking.
END_TO_END_COLUMNS = [("ner_p", "NER P"), ("ner_r", "NER R"), ("ner_f", "NER F"), ("nel_micro_f", "link F (found mentions)"),
                      ("e2e_p", "e2e P"), ("e2e_r", "e2e R"), ("e2e_f", "e2e F"), ("e2e_any_id_f", "e2e F any-id"),
                      ("docs_per_second", "docs/s")]


# `compare-runs`: each trained run's clock, then its scores on dev and test.
RUN_KEYS = ("recall@1", "recall@64", "accuracy", "accuracy_strict", "accuracy_unseen")
RUN_COLUMNS = [("updates", "updates"), ("seconds", "seconds")] + [
    (f"{split}_{key}", f"{split} {label}") for split in ("dev", "test")
    for key, label in COLUMNS if key in RUN_KEYS]
# The keys of a system's metrics that the tables and the plot read.
REPORTED_KEYS = {key for key, _ in COLUMNS + END_TO_END_COLUMNS} | {f"recall@{k}" for k in RECALL_KS}


def read_metrics(metrics_dir: PathLike) -> Dict[str, Dict[str, Any]]:
    """System name (file stem, minus a `_test` suffix) -> its metrics, for every flat JSON
    object (`evaluate` output; `compare-runs` output nests one object per run)."""
    files = sorted(Path(metrics_dir).glob("*.json"))
    systems = {}
    for path in files:
        metrics = read_json(path)
        if isinstance(metrics, dict) and not any(isinstance(v, dict) for v in metrics.values()):
            for key in sorted(REPORTED_KEYS.intersection(metrics)):
                if metrics[key] is not None and not is_number(metrics[key]):
                    raise ArboError(f"{path}: '{key}' takes a number or null; got {metrics[key]!r}.")
            systems[path.stem.removesuffix("_test")] = metrics
    if not systems:
        raise ArboError(f"No metrics JSON files in '{metrics_dir}'.")
    return systems


def read_run_clock(stages: List[PathLike]) -> Dict[str, Any]:
    """Updates and seconds of a run trained in `stages` (each a `spacy train` output directory
    whose config set `paths.clock` to STAGE/clock.json), summed over the stages."""
    total = {"updates": 0, "seconds": 0.0}
    for stage in stages:
        path = Path(stage) / "clock.json"
        if not path.is_file():
            raise ArboError(f"{path}: no training clock; train with --paths.clock {path}.")
        clock = read_json(path)
        if not isinstance(clock, dict) or any(not is_number(clock.get(key)) for key in total):
            raise ArboError(f"{path}: expected a JSON object with 'updates' and 'seconds'.")
        total = {key: total[key] + clock[key] for key in total}
    total["seconds"] = round(total["seconds"], 1)
    return total


def score_run(nlp: Language, splits: Dict[str, PathLike], seen_ids: Optional[Set[str]] = None) -> Dict[str, Any]:
    """`RUN_KEYS` of `nlp` on the gold docs of each split, prefixed with the split's name
    (`dev_accuracy`); `seen_ids` gives `accuracy_unseen`."""
    scores: Dict[str, Any] = {}
    for split, path in splits.items():
        metrics = evaluate_linking(nlp, read_gold_links(path, nlp), seen_ids=seen_ids)
        scores.update({f"{split}_{key}": metrics.get(key) for key in RUN_KEYS})
    return scores


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.1f}" if value > 1.0 else f"{value:.3f}"


def markdown_table(systems: Dict[str, Dict[str, Any]], columns: List[Tuple[str, str]] = COLUMNS) -> str:
    lines = ["| system | " + " | ".join(label for _, label in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for name, metrics in systems.items():
        lines.append(f"| {name} | " + " | ".join(_cell(metrics.get(key)) for key, _ in columns) + " |")
    return "\n".join(lines)


def write_report(metrics_dir: PathLike, output: PathLike) -> List[str]:
    """Write the markdown table, and the plot next to it; return the table's lines."""
    systems = read_metrics(metrics_dir)
    end_to_end = {name: m for name, m in systems.items() if "e2e_f" in m}
    linking = {name: m for name, m in systems.items() if name not in end_to_end}
    output = Path(output)
    plot = output.with_suffix(".png")
    table = markdown_table(linking)
    if end_to_end:
        table += "\n\nRaw text (mentions found by the recognizer):\n\n" + markdown_table(end_to_end, END_TO_END_COLUMNS)
    plot_recall(linking, plot)  # first: without matplotlib, nothing is written
    with atomic_path(output) as tmp:
        tmp.write_text(f"# Results\n\n{table}\n\n![recall@k]({plot.name})\n", encoding="utf8")
    return table.splitlines()
