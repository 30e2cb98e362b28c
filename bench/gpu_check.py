"""The GPU path checked and timed by one command on a GPU machine: it installs the carried
wheels, runs the tests marked `gpu`, times the workflow's GPU work, and writes the figures as
JSON naming the device and the commit.

(a) every wheel in the `--wheels` folders (bench/gpu_wheels.txt lists them) and this checkout
are installed with `pip install --no-index --no-deps --target SITE`, and SITE goes first on
sys.path and on PYTHONPATH: the carried transformers 4.x (setup.cfg bounds it below 5) then
shadows a machine's 5.x. A SITE left by an earlier call is used too, so the wheels can come
in several calls. (b) `pytest -m gpu -rs tests/test_gpu.py`. (c) on `--device`: `--updates`
of configs/retriever_frozen.cfg under `spacy train --gpu-id`, as project.yml's
train-retriever runs it (on NCBI train; dev evaluations included), then encoding the CTD
KB's names and aliases with the trained model (`index_aliases`, as the workflow configures
it), and linking NCBI test (dense candidates from the index on the device where there is
one). (d) the figures to `--output`.

Why: the GPU code (bf16 autocast, the entity index on the device, thinc's torch hand-offs)
is tested on CPUs only, and a GPU machine is lent for minutes at a time with nothing to
download, so one prepared command checks and measures it in one go. `--device cpu` with small
limits runs every step on a CPU, so the command is tried before a GPU is lent.

    python bench/gpu_check.py [--device cuda] [--wheels .whl/1 .whl/2] [--site /tmp/spacy-arbo-site]
        [--install-only] [--skip-tests] [--updates 700] [--kb-limit 0] [--docs-limit 0]
        [--data DIR] [--encoder DIR] [--work bench_gpu_work] [--output bench_gpu_check.json]
        [--commit SHA]
    python bench/gpu_check.py --print-wheels 1    # one carry's pins, for pip download
    python bench/gpu_check.py --pack .whl/3       # MiniLM (fp16 weights) and the data, to carry

A CPU smoke run: python bench/gpu_check.py --device cpu --updates 4 --kb-limit 500 --docs-limit 12
"""
import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / "bench" / "gpu_wheels.txt"
CONFIG = "configs/retriever_frozen.cfg"
CTD = Path("ctd") / "CTD_diseases_2017-06-06.tsv.gz"
NCBI = {"train": "NCBItrainset_corpus.txt", "dev": "NCBIdevelopset_corpus.txt", "test": "NCBItestset_corpus.txt"}


def carry_pins(carry: int) -> List[str]:
    """The `name==version` lines under `# carry N` in bench/gpu_wheels.txt."""
    pins: Dict[int, List[str]] = {}
    current = 0
    for line in WHEELS.read_text(encoding="utf8").splitlines():
        line = line.strip()
        if line.startswith("# carry "):
            current = int(line.split()[2].rstrip(":"))
        elif line and not line.startswith("#"):
            pins.setdefault(current, []).append(line)
    if carry not in pins:
        raise SystemExit(f"{WHEELS} has no '# carry {carry}' section (it has {sorted(pins)}).")
    return pins[carry]


def pip_install(site: Path, *targets: str, build: bool = False) -> None:
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-cache-dir",
               "--upgrade", "--target", str(site), *(["--no-build-isolation"] if build else ["--no-compile"]),
               *targets]
    subprocess.run(command, check=True)


def install(wheel_dirs: List[Path], site: Path) -> None:
    """The carried wheels, then spacy-arbo (for its spaCy entry points), into `site`; it is
    built from a copy, so that no build output lands in the checkout."""
    wheels = sorted(str(path) for folder in wheel_dirs for path in folder.glob("*.whl"))
    if not wheels:
        raise SystemExit(f"No wheels in {', '.join(map(str, wheel_dirs))}.")
    started = time.perf_counter()
    pip_install(site, *wheels)
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("setup.cfg", "pyproject.toml", "README.md"):
            shutil.copy(ROOT / name, tmp)
        shutil.copytree(ROOT / "spacy_arbo", Path(tmp) / "spacy_arbo", ignore=shutil.ignore_patterns("__pycache__"))
        pip_install(site, tmp, build=True)
    print(f"Installed {len(wheels)} wheels and spacy-arbo into {site} in {time.perf_counter() - started:.0f} s",
          flush=True)


def use_site(site: Path) -> None:
    """This checkout, then `site` (where it exists), first on sys.path here and on PYTHONPATH
    for the commands run below: the checkout's package runs, the site's copy names its entry points."""
    first = [str(ROOT), *([str(site)] if site.is_dir() else [])]
    sys.path[:0] = first
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (*first, os.environ.get("PYTHONPATH")) if p)


def pack(target: Path, data: Path) -> None:
    """The default encoder with fp16 weights (it loads as fp32; half the bytes to carry) and
    the data files this check reads, under `target`."""
    from safetensors.torch import load_file, save_file

    from spacy_arbo.encoders.transformer import default_encoder_path

    source = Path(default_encoder_path())
    encoder = target / "encoder"
    shutil.copytree(source, encoder, ignore=shutil.ignore_patterns("*.safetensors", "*.bin", "onnx", "openvino"),
                    dirs_exist_ok=True)
    weights = load_file(source / "model.safetensors")
    save_file({name: tensor.half() for name, tensor in weights.items()}, encoder / "model.safetensors",
              metadata={"format": "pt"})
    for relative in [CTD, *(Path("ncbi_disease") / name for name in NCBI.values())]:
        (target / "data" / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data / relative, target / "data" / relative)
    size = sum(path.stat().st_size for path in target.rglob("*") if path.is_file())
    print(f"Packed the encoder and the data into {target}: {size / 2 ** 20:.1f} MiB")


def run_tests(data: Path) -> Dict[str, Any]:
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-rs", "-q", "-p", "no:cacheprovider", "tests/test_gpu.py"]
    print("$ " + " ".join(command[1:]), flush=True)
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "SPACY_ARBO_DATA": str(data)})
    print(result.stdout[-6000:] + result.stderr[-2000:], flush=True)
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return {"returncode": result.returncode, "summary": lines[-1].strip("= ") if lines else ""}


def prepare(data: Path, work: Path, kb_limit: int, docs_limit: int) -> Dict[str, Path]:
    """The KB store (the first `kb_limit` CTD entities plus those the documents name; 0: all)
    and NCBI's DocBins (the first `docs_limit` documents of each; 0: all), in `work`."""
    from spacy_arbo.corpora import convert_corpus, split_ids, write_docbin
    from spacy_arbo.kb.readers import read_kb

    kb = read_kb(data / CTD, "ctd")
    paths = {"kb": work / "kb", **{split: work / f"{split}.spacy" for split in NCBI}}
    named = set()
    for split, name in NCBI.items():
        docs, _ = convert_corpus(data / "ncbi_disease" / name, kb=kb, limit=docs_limit)
        named.update(kb_id for doc in docs for ent in doc.ents for kb_id in split_ids(ent.kb_id_))
        write_docbin(docs, paths[split])
    if kb_limit:
        keep = set(kb.ids[:kb_limit]) | named
        kb = kb.subset(lambda entity: entity.id in keep)
    kb.to_disk(paths["kb"])
    print(f"KB: {len(kb):,} entities; NCBI documents per split: {docs_limit or 'all'}", flush=True)
    return paths


def train(paths: Dict[str, Path], work: Path, updates: int, gpu_id: int, encoder: Optional[str]) -> Dict[str, Any]:
    """configs/retriever_frozen.cfg as project.yml's train-retriever runs it (its
    retriever_steps is spaCy's max_steps: steps 0..N)."""
    out = work / "retriever"
    command = [sys.executable, "-m", "spacy", "train", CONFIG, "--output", str(out),
               "--paths.train", str(paths["train"]), "--paths.dev", str(paths["dev"]), "--paths.kb", str(paths["kb"]),
               "--paths.clock", str(work / "clock.json"), "--training.max_steps", str(updates), "--gpu-id", str(gpu_id)]
    if encoder:
        command += ["--paths.encoder", encoder]
    print("$ " + " ".join(command[1:]), flush=True)
    started = time.perf_counter()
    with open(work / "train.log", "w", encoding="utf8") as log:
        result = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - started
    if result.returncode:
        raise SystemExit(f"spacy train failed:\n{(work / 'train.log').read_text(encoding='utf8')[-4000:]}")
    clock = json.loads((work / "clock.json").read_text(encoding="utf8"))
    return {"config": CONFIG, "max_steps": updates, "updates": clock["updates"],
            "evaluations": clock["evaluations"], "loop_seconds": clock["seconds"],
            "seconds_per_update": clock["seconds"] / clock["updates"], "wall_seconds": round(wall, 2),
            "model": str(out / "model-best")}


def encode_and_link(model: str, test: Path, device: str) -> Dict[str, Any]:
    """The KB's names and aliases encoded by the trained model, then NCBI test linked."""
    import spacy
    import torch

    from spacy_arbo.corpora import read_docbin
    from spacy_arbo.encoders.precision import resolve_precision
    from spacy_arbo.evaluation import evaluate_linking

    if device == "cuda":
        spacy.require_gpu(0)
    nlp = spacy.load(model)
    linker = nlp.get_pipe("arbo_linker")
    linker.configure(index_aliases=True)
    texts = len(linker.retriever.entity_texts()[0])

    def timed(step) -> float:
        started = time.perf_counter()
        step()
        if device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - started

    encode_seconds = timed(lambda: linker.refresh_index(progress=False))
    gold = read_docbin(test, nlp.vocab)
    evaluate_linking(nlp, gold[:2])  # warm-up: tokenizer, kernels, thread pools
    metrics = evaluate_linking(nlp, gold)
    index = linker.retriever.dense
    return {
        "precision": resolve_precision(linker.settings.precision, torch.device(device)),
        "encode_kb": {"texts": texts, "seconds": round(encode_seconds, 2), "texts_per_second": texts / encode_seconds},
        "link_test": {"docs": len(gold), "mentions": sum(len(doc.ents) for doc in gold),
                      "mentions_per_second": metrics["mentions_per_second"], "recall@1": metrics["recall@1"],
                      "accuracy": metrics["accuracy"], "index_kind": index.kind, "index_on_gpu": index.on_gpu},
    }


def environment(device: str, commit: Optional[str]) -> Dict[str, Any]:
    import faiss
    import numpy
    import spacy
    import thinc
    import torch
    import transformers

    from spacy_arbo.retrieval.faiss_index import gpu_available

    if commit is None:
        found = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        commit = found.stdout.strip() if found.returncode == 0 else "unknown"
    return {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu", "commit": commit,
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
                     "spacy": spacy.__version__, "thinc": thinc.__version__, "transformers": transformers.__version__,
                     "faiss": faiss.__version__, "numpy": numpy.__version__},
        "faiss_gpu": gpu_available(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = os.environ.get("SPACY_ARBO_DATA", str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--wheels", nargs="+", type=Path, default=[], help="folders of wheels to install first")
    parser.add_argument("--site", type=Path, default=Path("/tmp/spacy-arbo-site"), help="where the wheels go")
    parser.add_argument("--install-only", action="store_true", help="stop after installing (a carry of wheels only)")
    parser.add_argument("--skip-tests", action="store_true")
    parser.add_argument("--updates", type=int, default=700, help="spacy train's max_steps (project.yml: 700)")
    parser.add_argument("--kb-limit", type=int, default=0, help="the first N CTD entities and those NCBI names (0: all)")
    parser.add_argument("--docs-limit", type=int, default=0, help="the first N documents of each NCBI split (0: all)")
    parser.add_argument("--data", type=Path, default=Path(default_data))
    parser.add_argument("--encoder", default=None, help="the encoder to train from (default: MiniLM, as the config)")
    parser.add_argument("--work", type=Path, default=Path("bench_gpu_work"))
    parser.add_argument("--output", type=Path, default=Path("bench_gpu_check.json"))
    parser.add_argument("--commit", default=None, help="the commit to name (default: git rev-parse HEAD)")
    parser.add_argument("--print-wheels", type=int, metavar="CARRY", help="print one carry's pins and stop")
    parser.add_argument("--pack", type=Path, metavar="DIR", help="write the encoder and data to carry, and stop")
    args = parser.parse_args()
    if args.print_wheels is not None:
        print(" ".join(carry_pins(args.print_wheels)))
        return
    if args.wheels:
        install(args.wheels, args.site)
    use_site(args.site)
    if args.pack is not None:
        pack(args.pack, args.data)
        return
    if args.install_only:
        return
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda, but torch sees no CUDA device; use --device cpu.")
    figures: Dict[str, Any] = environment(args.device, args.commit)
    print(json.dumps(figures), flush=True)
    figures["tests"] = None if args.skip_tests else run_tests(args.data)
    args.work.mkdir(parents=True, exist_ok=True)
    paths = prepare(args.data, args.work, args.kb_limit, args.docs_limit)
    figures["limits"] = {"updates": args.updates, "kb_limit": args.kb_limit, "docs_limit": args.docs_limit,
                         "encoder": args.encoder or "MiniLM (the config's default)"}
    figures["train"] = train(paths, args.work, args.updates, 0 if args.device == "cuda" else -1, args.encoder)
    print(json.dumps(figures["train"]), flush=True)
    figures.update(encode_and_link(figures["train"]["model"], paths["test"], args.device))
    args.output.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf8")
    print(json.dumps(figures, indent=2))
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()
