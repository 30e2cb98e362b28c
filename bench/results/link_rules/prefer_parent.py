"""Prefer the parent: when the first candidate is a MeSH supplementary concept or an OMIM entry and one
of its KB parents is among the candidates within `gap` of it, link the parent."""
import pickle, sys
from spacy_arbo.cli import load_pipeline
nlp = load_pipeline(sys.argv[1])
kb = nlp.get_pipe("arbo_linker").kb
parents = {kb.ids[r]: set(kb.entity_at(r).parents) for r in range(len(kb.ids))}
for f in sys.argv[2:]:
    R = pickle.load(open(f, "rb"))["rows"]
    base = sum(r["gold"] == r["pred"] for r in R)
    print(f, len(R), "base", round(base / len(R), 4))
    for kinds in (("MESH:C", "OMIM:"), ("MESH:C", "OMIM:", "MESH:D")):
        for gap in (0.02, 0.05, 0.1, 0.2):
            fixed = lost = 0
            for r in R:
                if r["mem"] or not r["cands"] or r["pred"] != r["cands"][0][0]:
                    continue
                top, s0 = r["cands"][0]
                if not top.startswith(kinds):
                    continue
                alt = [c for c, s in r["cands"][1:] if c in parents.get(top, ()) and s0 - s <= gap]
                if alt:
                    fixed += alt[0] == r["gold"]; lost += top == r["gold"]
            print(f"  {kinds} gap {gap}: {(base + fixed - lost) / len(R):.4f} fixed {fixed} lost {lost}")
