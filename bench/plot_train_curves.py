"""Dev recall@1 against training minutes, one line per variant, from the JSON files that
`bench/train_cost.py` writes (several runs may share a plot; a variant in two files keeps
the later one).

Needs matplotlib (the `[plot]` extra).

Why: recipes are compared by what the same training time buys, which a curve shows at a glance.

    python bench/plot_train_curves.py RUN.json [RUN.json ...] --output curves.png [--labels a=b ...]
"""
import argparse
import json
from pathlib import Path
from typing import Dict, List

from spacy_arbo.plotting import pyplot


def read_runs(paths: List[Path]) -> Dict[str, List[dict]]:
    """variant -> its evaluations ({"minutes", "updates", "recall@1", "recall@64"}), by minutes."""
    curves: Dict[str, List[dict]] = {}
    for path in paths:
        rows = json.loads(path.read_text())
        if not isinstance(rows, list) or not all(isinstance(r, dict) and "variant" in r and "dev" in r for r in rows):
            raise SystemExit(f"{path}: not a bench/train_cost.py result (a list of variants with 'dev' scores).")
        for row in rows:
            curves[row["variant"]] = sorted(row["dev"], key=lambda r: r["minutes"])
    return curves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--labels", nargs="*", default=[], help="variant=label pairs for the legend")
    parser.add_argument("--title", default="NCBI Disease dev, entity names, 2 CPU cores (bf16)")
    args = parser.parse_args()
    labels = dict(pair.split("=", 1) for pair in args.labels)
    curves = read_runs(args.runs)

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for variant, points in curves.items():
        line, = ax.plot([p["minutes"] for p in points], [p["recall@1"] for p in points], marker="o",
                        label=labels.get(variant, variant))
        last = points[-1]
        ax.annotate(f"{last['updates']} upd.", (last["minutes"], last["recall@1"]), textcoords="offset points",
                    xytext=(4, -3), fontsize=7, color=line.get_color())
    ax.set_xlabel("training minutes (evaluations not counted)")
    ax.set_ylabel("dev recall@1")
    ax.set_title(args.title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.output, dpi=110)
    for variant, points in curves.items():
        print(f"{variant}: " + ", ".join(f"{p['minutes']:g} min {p['recall@1']:.3f} ({p['updates']} upd.)"
                                         for p in points))
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()
