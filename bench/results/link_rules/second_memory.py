"""A second link memory from another corpus's train, read only for texts the pipeline's own memory
does not link. Usage: python second_memory.py FINAL_PIPELINE OWN_TRAIN OTHER_TRAIN EVAL.spacy [EVAL.spacy ...]
Prints strict and any-id accuracy without a memory, with the own memory, and with both (OTHER at
min_count 1-3, min_share 1.0 / 0.8)."""
import copy
import sys

import spacy
from spacy.tokens import DocBin
from spacy.training import Example
from spacy_arbo.evaluation import link_gold_mentions
from spacy_arbo.scoring import accuracy, mention_outcomes
from spacy_arbo.pipeline.link_memory import LinkMemory
pipe, own_train, other_train, *evals = sys.argv[1:]
nlp = spacy.load(pipe)
mem = nlp.get_pipe("link_memory")
load = lambda p: list(DocBin().from_disk(p).get_docs(nlp.vocab))
other = LinkMemory(nlp.vocab)
other.add(load(other_train))
for ev in evals:
    gold = load(ev)
    linked = link_gold_mentions(nlp, gold, exclude=["link_memory"])
    def strict(docs):
        outs = list(mention_outcomes(Example(p, g) for p, g in zip(docs, gold)))
        return accuracy(outs, "exact"), accuracy(outs, "any_id")
    base = [copy.deepcopy(d) for d in linked]
    for d in base:
        for e in d.ents: mem.link(e)
    print(ev, "no memory", strict(linked), "own", strict(base))
    for count in (1, 2, 3):
        for share in (1.0, 0.8):
            o = other.with_settings(count, share, False)
            docs = [copy.deepcopy(d) for d in linked]
            n = 0
            for d in docs:
                for e in d.ents:
                    if not mem.link(e):
                        n += o.link(e)
            print(f"  tier other count {count} share {share}: {strict(docs)} fallback links {n}")
