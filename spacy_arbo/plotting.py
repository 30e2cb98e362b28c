"""Plots, through matplotlib: an extra (`pip install "spacy-arbo[plot]"`), imported on the first
plot so that linking never needs it."""
from pathlib import Path
from typing import Any, Dict

from .scoring import RECALL_KS
from .util import ArboError, atomic_path

PLOT_EXTRA = 'pip install "spacy-arbo[plot]"'


def pyplot() -> Any:
    """matplotlib.pyplot on its file-only backend, or an error naming the extra that installs it."""
    try:
        import matplotlib
    except ImportError:
        raise ArboError(f"Plots need matplotlib, which the [plot] extra installs: {PLOT_EXTRA}.") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_recall(systems: Dict[str, Dict[str, Any]], path: Path) -> None:
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6, 4))
    for name, metrics in systems.items():
        ks = [k for k in RECALL_KS if metrics.get(f"recall@{k}") is not None]
        axis.plot(ks, [metrics[f"recall@{k}"] for k in ks], marker="o", label=name)
    axis.set_xscale("log", base=2)
    axis.set_xlabel("k")
    axis.set_ylabel("recall@k")
    axis.set_title("Candidate recall on the test set")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=120)
    plt.close(figure)
