"""Train mentions that share most words with a mention (token Jaccard) overriding the retriever among
its top k. Usage: python shared_words.py TRAIN.spacy ROWS.pkl [ROWS.pkl ...], the rows from dump_rows.py."""
import pickle
import re
import sys
from collections import Counter, defaultdict

import spacy
from spacy.tokens import DocBin
nlp=spacy.blank("en")
load=lambda p: list(DocBin().from_disk(p).get_docs(nlp.vocab))
train=load(sys.argv[1])
tok=lambda t: set(w for w in re.sub(r"\W+"," ",t.lower()).split())
by_id=defaultdict(Counter)
for d in train:
    for e in d.ents:
        if e.kb_id_: by_id[e.kb_id_][frozenset(tok(e.text))]+=1
def best(text, cid):
    q=tok(text); b=0
    for s,n in by_id.get(cid,{}).items():
        j=len(q&s)/len(q|s) if q|s else 0
        b=max(b,j)
    return b
for f in sys.argv[2:]:
    R=pickle.load(open(f,"rb"))["rows"]
    base=sum(r["gold"]==r["pred"] for r in R)/len(R)
    print(f, "base", round(base,4))
    for k in (2,3,5):
      for thr in (0.5,0.67,0.8,1.0):
        for margin in (0.0,0.2):
          ok=0; fixed=lost=0
          for r in R:
            pred=r["pred"]
            if not r["mem"] and "|" not in pred and r["cands"] and pred==r["cands"][0][0]:
                cs=[c for c,s in r["cands"][:k]]
                js=[best(r["text"],c) for c in cs]
                i=max(range(len(cs)),key=lambda i:(js[i],-i))
                if js[i]>=thr and js[i]>=js[0]+margin and i>0: pred=cs[i]
            ok+= pred==r["gold"]
            if pred!=r["pred"]:
                fixed+= pred==r["gold"]; lost+= r["pred"]==r["gold"]
          print(f"  k{k} thr {thr} margin {margin}: {ok/len(R):.4f} fixed {fixed} lost {lost}")
