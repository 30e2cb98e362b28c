"""An id-namespace prior: the log ratio of MeSH descriptor / supplementary concept / OMIM shares in
train links against the KB, times w, added to each candidate's score. Usage: python namespace_prior.py KB_DIR
ROWS.pkl [ROWS.pkl ...] (rows from dump_rows.py)."""
import collections
import math
import pickle
import sys

from spacy_arbo.kb.entities import split_ids
from spacy_arbo.kb.store import EntityStore
kb = EntityStore().from_disk(sys.argv[1])
def cls(i): return 'OMIM' if i.startswith('OMIM') else i[:6]
kbc = collections.Counter(cls(i) for i in kb.ids)
def prior(train_counts):
    tc = collections.Counter()
    for i, c in train_counts.items():
        if i != 'NIL': tc[cls(i)] += c
    T, K = sum(tc.values()), sum(kbc.values())
    return {k: math.log((tc[k] + 1) / (T + 3)) - math.log(kbc[k] / K) for k in kbc}
def run(f, w):
    d = pickle.load(open(f, 'rb')); rows = d['rows']; p = prior(d['train_counts'])
    ok = 0; fixed = lost = 0
    for r in rows:
        pred = r['pred']
        if not r['mem'] and '|' not in pred and pred != 'NIL' and r['cands']:
            pred = max(r['cands'], key=lambda c: c[1] + w * p[cls(c[0])])[0]
        g = set(split_ids(r['gold'])); a = set(split_ids(pred)) == g; b = set(split_ids(r['pred'])) == g
        ok += a; fixed += a and not b; lost += b and not a
    return ok / len(rows), fixed, lost, p
for f in sys.argv[2:]:
    print(f, {k: round(v, 2) for k, v in run(f, 0)[3].items()})
    for w in (0, 0.005, 0.01, 0.02, 0.03, 0.05):
        a, fx, ls, _ = run(f, w); print(f"  w={w}: {a:.4f} +{fx} -{ls}")
