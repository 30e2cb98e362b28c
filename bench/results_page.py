"""Write docs/results.md from the JSON files under bench/results/ that it quotes.

Each table row is one `evaluate --output` (or `evaluate --end-to-end --output`) file, named in its
last cell; each column one of the file's metrics, printed as the README prints them. The page has no
figure typed by hand, so it cannot drift from its data; `--check` fails when the committed page is not
what this script writes (tests/test_docs.py runs it).

Why: a results page copied by hand went stale run after run; generated, a new run is one line in
SECTIONS and one command.

    python bench/results_page.py [--output docs/results.md] [--check]
"""
import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
RESULTS = "bench/results"
PAGE = ROOT / "docs" / "results.md"

LINK_COLUMNS = [("acc", "accuracy"), ("strict", "accuracy_strict"), ("BELB", "accuracy_belb"),
                ("seen strict", "accuracy_seen_strict"), ("unseen strict", "accuracy_unseen_strict"),
                ("R@64", "recall@64"), ("link F", "nel_micro_f"), ("mentions/s", "mentions_per_second")]
E2E_COLUMNS = [("NER P", "ner_p"), ("NER R", "ner_r"), ("NER F", "ner_f"), ("end-to-end P", "e2e_p"),
               ("R", "e2e_r"), ("F (strict)", "e2e_f"), ("F (any-id)", "e2e_any_id_f"), ("docs/s", "docs_per_second")]

NCBI, BC5CDR = "workflow/ncbi_8570678_xeon_bf16", "workflow/bc5cdr_8570678_xeon_bf16"
NCBI_EPYC, BC5CDR_EPYC, NCBI_FP32 = "workflow/ncbi_39d063e", "workflow/bc5cdr_39d063e", "workflow/ncbi_a1bdf40_xeon"
CONFIDENCE_COLUMNS = [("strict", "accuracy_strict"), ("ECE", "confidence_ece"),
                      ("coverage at 95%", "coverage_at_precision_95"), ("at 99%", "coverage_at_precision_99")]
E2E_CONFIDENCE_COLUMNS = [("F (strict)", "e2e_f"), ("ECE", "e2e_confidence_ece"),
                          ("share at >= 0.9", "e2e_share_at_confidence_90"),
                          ("precision there", "e2e_precision_at_confidence_90")]
# (heading, what the rows are, columns, [(row label, file under bench/results/)])
SECTIONS: List[Tuple[str, str, List[Tuple[str, str]], List[Tuple[str, str]]]] = [
    ("NCBI Disease test: linking gold mentions",
     "960 mentions against CTD's 11,865 diseases; one `weasel run all` at 8570678 on 2 cores of an Intel Xeon "
     "(AMX, bf16), two earlier runs' final pipelines below it, the KB-only rows from `weasel run kb-only`.",
     LINK_COLUMNS,
     [("TF-IDF char 3-grams", f"{NCBI}/tfidf_test.json"), ("dense retriever", f"{NCBI}/retriever_test.json"),
      ("retriever + link_memory", f"{NCBI}/retriever_memory_test.json"), ("clustering", f"{NCBI}/clustering_test.json"),
      ("reranker", f"{NCBI}/reranker_test.json"),
      ("final (the workflow's choice)", f"{NCBI}/final_test.json"),
      ("final, AMD EPYC Zen 5 bf16 (39d063e)", f"{NCBI_EPYC}/final_test.json"),
      ("final, Intel Xeon fp32 (a1bdf40)", f"{NCBI_FP32}/final_test.json"),
      ("final, torch exact search, KB names first", "faster_final/ncbi_final_test.json"),
      ("final over MEDIC 2012", "unseen_kb_release/medic_final_test.json"),
      ("default linker, no training", "default_linker/ncbi_test.json"),
      ("KB-only (no labelled mention)", "kb_only/ncbi_kb_only_test.json"),
      ("KB-only + train annotations, no training", "kb_only/ncbi_annotations_no_training_test.json")]),
    ("BC5CDR dev: linking gold mentions",
     "BC5CDR's disease mentions (its dev set is the workflow's evaluation split) against CTD; same runs.",
     LINK_COLUMNS,
     [("TF-IDF char 3-grams", f"{BC5CDR}/tfidf_test.json"), ("dense retriever", f"{BC5CDR}/retriever_test.json"),
      ("retriever + link_memory", f"{BC5CDR}/retriever_memory_test.json"),
      ("clustering", f"{BC5CDR}/clustering_test.json"),
      ("reranker", f"{BC5CDR}/reranker_test.json"),
      ("final (the workflow's choice)", f"{BC5CDR}/final_test.json"),
      ("final, AMD EPYC Zen 5 bf16 (39d063e)", f"{BC5CDR_EPYC}/final_test.json"),
      ("default linker, no training", "default_linker/bc5cdr_dev.json"),
      ("KB-only (no labelled mention)", "kb_only/bc5cdr_kb_only_test.json"),
      ("KB-only + train annotations, no training", "kb_only/bc5cdr_annotations_no_training_test.json")]),
    ("Raw text end to end",
     "Mentions found by each recognizer, then linked by the corpus's final pipeline (`evaluate --end-to-end`); "
     "the workflow's e2e is the one dev chose.",
     E2E_COLUMNS,
     [("NCBI test: CNN", f"{NCBI}/e2e_cnn_test.json"), ("NCBI test: KB names", f"{NCBI}/e2e_kb_test.json"),
      ("NCBI test: transformer", f"{NCBI}/e2e_trf_test.json"),
      ("NCBI test: transformer + KB names", f"{NCBI}/e2e_trf_kb_test.json"),
      ("NCBI test: the workflow's e2e", f"{NCBI}/e2e_test.json"),
      ("BC5CDR dev: CNN", f"{BC5CDR}/e2e_cnn_test.json"), ("BC5CDR dev: KB names", f"{BC5CDR}/e2e_kb_test.json"),
      ("BC5CDR dev: transformer", f"{BC5CDR}/e2e_trf_test.json"),
      ("BC5CDR dev: transformer + KB names", f"{BC5CDR}/e2e_trf_kb_test.json"),
      ("BC5CDR dev: the workflow's e2e", f"{BC5CDR}/e2e_test.json"),
      ("NCBI's package on BC5CDR dev", "raw_text/across/e2e_on_bc5cdr.json"),
      ("BC5CDR's package on NCBI test", "raw_text/across/e2e_on_ncbi.json")]),
    ("Confidence on gold mentions",
     "`span._.kb_confidence`: ECE is the expected calibration error over 15 bins; coverage at 95% / 99% the share "
     "of all mentions linked at or above the confidence where the links kept are that precise. The trained "
     "pipelines are calibrated on their corpus's dev set (BC5CDR's: its evaluation set, so in-sample; cross-fitted "
     "in [confidence/](../bench/results/confidence/README.md)), the default and KB-only linkers on the KB's names "
     "(label-free).",
     CONFIDENCE_COLUMNS,
     [("NCBI test: trained final", f"{NCBI}/final_test.json"),
      ("NCBI test: default linker, label-free", "confidence/lf_ncbi_test.json"),
      ("NCBI test: default linker, calibrated on NCBI dev", "confidence/dev_ncbi_test.json"),
      ("NCBI test: KB-only, label-free", "confidence/kb_only_ncbi_test.json"),
      ("BC5CDR dev: trained final (in-sample)", f"{BC5CDR}/final_test.json"),
      ("BC5CDR dev: trained retriever + memory, label-free (no calibrate)", "confidence/label_free_memory_bc5cdr_dev.json"),
      ("BC5CDR dev: default linker, label-free", "confidence/lf_bc5cdr_dev.json"),
      ("BC5CDR dev: default linker, calibrated on BC5CDR train", "confidence/dev_bc5cdr_dev.json"),
      ("BC5CDR dev: KB-only, label-free", "confidence/kb_only_bc5cdr_dev.json")]),
    ("Confidence end to end",
     "A spurious mention from the recognizer counts as a wrong link; the workflow's e2e is calibrated end to end "
     "on dev (BC5CDR's: in-sample).",
     E2E_CONFIDENCE_COLUMNS,
     [("NCBI test: the workflow's e2e", f"{NCBI}/e2e_test.json"),
      ("BC5CDR dev: the workflow's e2e (in-sample)", f"{BC5CDR}/e2e_test.json"),
      ("NCBI test: KB names + default linker, label-free", "confidence/lf_e2e_ncbi_test.json"),
      ("NCBI test: KB names + default linker, calibrated end to end on NCBI dev", "confidence/dev_e2e_ncbi_test.json")]),
]

INTRO = """# Results

Generated by `python bench/results_page.py` from the files each row names (do not edit by hand).
Columns: `acc` credits any gold id, `strict` the exact id set, `BELB` BELB's strict mode; seen / unseen split
the mentions by whether NCBI train (BC5CDR train) links their entity; `link F` is spaCy's `nel_micro_f`.
Speeds are one `evaluate` pass each on 2 CPU cores and vary between runs (ratios taken side by side in one
process: [performance.md](performance.md)); [limits.md](limits.md) says what is not reached and why.
"""


def figure(value, metric: str) -> str:
    if value is None:
        return ""
    if metric.endswith("per_second"):
        return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"
    return f"{value:.3f}"


def table(columns: List[Tuple[str, str]], rows: List[Tuple[str, str]], results: Path) -> List[str]:
    lines = ["| pipeline | " + " | ".join(name for name, _ in columns) + " | source |",
             "|---|" + "---:|" * len(columns) + "---|"]
    for label, file in rows:
        metrics: Dict[str, float] = json.loads((results / file).read_text(encoding="utf8"))
        cells = [figure(metrics.get(metric), metric) for _, metric in columns]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | [{file}](../{RESULTS}/{file}) |")
    return lines


def page(results: Path = ROOT / RESULTS) -> str:
    lines = [INTRO]
    for heading, caption, columns, rows in SECTIONS:
        lines += [f"## {heading}", "", caption, "", *table(columns, rows, results), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=PAGE)
    parser.add_argument("--check", action="store_true", help="fail if --output differs from what would be written")
    args = parser.parse_args(argv)
    text = page()
    if args.check:
        if not args.output.exists() or args.output.read_text(encoding="utf8") != text:
            print(f"error: {args.output} is not what bench/results_page.py writes; rerun it", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf8")
    print(f"Wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
