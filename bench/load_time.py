"""How long a fresh process takes to load a saved pipeline and link its first document, beside a
bare `spacy.blank("en")` process in the same run; and how long `initialize()` of a pipeline
config takes, the first time (encoding the KB) and the second (reading the entity-vector cache).

Each measurement is its own Python process, as a service restart, a notebook, a Ray worker or a
CLI call pays it: wall time from the parent, the child's own split (imports, `spacy.load`, first
document) and its peak RSS. Loading takes turns with the bare process, REPEATS times, and the
fastest of each counts. With `--profile`, `spacy.load` of the last pipeline runs once more under
cProfile and the functions it spends most time in are written beside the JSON.

Why: load time is paid once per process by every user; only a figure beside the bare process of
the same run compares across machines (they differ up to 2x).

    python bench/load_time.py quickstart_before quickstart --repeats 3 --profile --output bench/results/load_time/ctd.json
    python bench/load_time.py default --initialize configs/zero_shot.cfg --kb kb --output load.json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

TEXT = "Cystic fibrosis and phenylketonuria are inherited; the patient had a fever."

BARE = """
import json, resource, time
t0 = time.perf_counter()
import spacy
nlp = spacy.blank("en")
doc = nlp({text!r})
print(json.dumps({{"total": time.perf_counter() - t0,
                   "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

LOAD = """
import json, resource, time
t0 = time.perf_counter()
import spacy, spacy_arbo
t1 = time.perf_counter()
nlp = spacy.load({pipeline!r})
t2 = time.perf_counter()
doc = nlp({text!r})
t3 = time.perf_counter()
print(json.dumps({{"imports": t1 - t0, "load": t2 - t1, "first_doc": t3 - t2, "total": t3 - t0,
                   "mentions": len(doc.ents), "links": [e.kb_id_ for e in doc.ents],
                   "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

PROFILE = """
import cProfile, pstats, io
import spacy, spacy_arbo
profile = cProfile.Profile()
profile.enable()
nlp = spacy.load({pipeline!r})
profile.disable()
out = io.StringIO()
pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(40)
print(out.getvalue())
"""

INITIALIZE = """
import json, resource, time
t0 = time.perf_counter()
import spacy, spacy_arbo
from spacy.util import load_config
config = load_config({config!r}, overrides={overrides!r}, interpolate=False)
nlp = spacy.util.load_model_from_config(config, auto_fill=True)
t1 = time.perf_counter()
nlp.initialize()
t2 = time.perf_counter()
print(json.dumps({{"build": t1 - t0, "initialize": t2 - t1, "total": t2 - t0,
                   "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def child(script: str, env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """Run `script` in a fresh interpreter: its JSON line, with the wall time seen from here."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**os.environ, **(env or {})})
    wall = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"child process failed:\n{result.stderr[-3000:]}")
    return {"wall": wall, **json.loads(result.stdout.strip().splitlines()[-1])}


def fastest(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    return min(runs, key=lambda run: run["wall"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipelines", nargs="+", metavar="PIPELINE",
                        help="saved pipelines (e.g. one saved before a change, then after), each timed beside the bare process")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="write spacy.load's cProfile beside --output")
    parser.add_argument("--initialize", metavar="CONFIG", help="also time initialize() of this config, twice")
    parser.add_argument("--kb", help="the KB folder the config's paths.kb takes (with --initialize)")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()

    bare: List[Dict[str, Any]] = []
    loaded: Dict[str, List[Dict[str, Any]]] = {str(p): [] for p in args.pipelines}
    for _ in range(args.repeats):
        bare.append(child(BARE.format(text=TEXT)))
        for pipeline in loaded:
            loaded[pipeline].append(child(LOAD.format(pipeline=pipeline, text=TEXT)))
    b = fastest(bare)
    result: Dict[str, Any] = {"repeats": args.repeats, "cpus": os.cpu_count(), "bare": b, "pipelines": {}}
    print(f"bare spacy.blank process          {b['wall']:6.2f} s   peak RSS {b['peak_rss_mb']:7.0f} MB")
    for pipeline, runs in loaded.items():
        l = fastest(runs)
        result["pipelines"][pipeline] = {**l, "beyond_bare_s": l["wall"] - b["wall"]}
        print(f"{pipeline[-24:]:<24} load + 1 doc {l['wall']:6.2f} s   peak RSS {l['peak_rss_mb']:7.0f} MB   "
              f"beyond bare {l['wall'] - b['wall']:5.2f} s (imports {l['imports']:.2f} s, spacy.load {l['load']:.2f} s, "
              f"first doc {l['first_doc']:.2f} s)   links {l['links']}")

    if args.initialize:
        with tempfile.TemporaryDirectory() as cache:
            env = {"SPACY_ARBO_CACHE": cache}
            script = INITIALIZE.format(config=str(args.initialize), overrides={"paths.kb": str(args.kb)} if args.kb else {})
            first, second = child(script, env), child(script, env)
        result["initialize"] = {"first": first, "second_from_cache": second}
        print(f"initialize, first             {first['initialize']:6.2f} s   peak RSS {first['peak_rss_mb']:7.0f} MB")
        print(f"initialize, second (cache)    {second['initialize']:6.2f} s   peak RSS {second['peak_rss_mb']:7.0f} MB")

    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        if args.profile:
            profile = subprocess.run([sys.executable, "-c", PROFILE.format(pipeline=str(args.pipelines[-1]))],
                                     capture_output=True, text=True, check=True).stdout
            args.output.with_suffix(".profile.txt").write_text(profile)
        args.output.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
