"""Dump every gold mention of a corpus through the final pipeline: candidates, memory hit, seen."""
import pickle
import sys
from collections import Counter
from spacy_arbo.cli import load_pipeline
from spacy_arbo.corpora import read_docbin
from spacy_arbo.evaluation import link_gold_mentions
from spacy_arbo.kb.entities import split_ids

pipe, data, train, out = sys.argv[1:5]
nlp = load_pipeline(pipe)
mem = nlp.get_pipe("link_memory")
linker = nlp.get_pipe("arbo_linker")
kb = linker._require_kb() if hasattr(linker, "_require_kb") else linker.kb
gold = read_docbin(data, nlp.vocab)
train_counts = Counter()
for doc in read_docbin(train, nlp.vocab):
    for e in doc.ents:
        for p in split_ids(e.kb_id_):
            train_counts[p] += 1
pred = link_gold_mentions(nlp, gold)
rows = []
from spacy_arbo.pipeline.link_memory import memory_key
for pd, gd in zip(pred, gold):
    for p, g in zip(pd.ents, gd.ents):
        cands = p._.kb_candidates or []
        rows.append(dict(doc=gd.user_data.get("doc_id", None), text=g.text, sent=g.sent.text if gd.has_annotation("SENT_START") else "",
                         gold=g.kb_id_, pred=p.kb_id_, mem=mem.links.get(mem._lookup_key(memory_key(g.text))) is not None,
                         cands=[(c, float(s)) for c, s in cands[:10]],
                         seen=any(train_counts[x] for x in split_ids(g.kb_id_))))
pickle.dump(dict(rows=rows, train_counts=train_counts), open(out, "wb"))
ok = sum(r["gold"] == r["pred"] for r in rows)
print(len(rows), ok / len(rows))
