"""Rewrite British spellings token by token (same tokens, same ents) and score a pipeline on the rewritten
corpus. A word is rewritten only when the KB's names and aliases lack it and have the rewritten form.
Usage: python american_spelling.py FINAL_PIPELINE CORPUS.spacy"""
import re, sys
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy_arbo.cli import load_pipeline
from spacy_arbo.evaluation import link_gold_mentions
from spacy_arbo.scoring import accuracy, mention_outcomes

RULES = [(r"haem", "hem"), (r"aem", "em"), (r"oedem", "edem"), (r"oesoph", "esoph"), (r"oestr", "estr"),
         (r"aetiol", "etiol"), (r"paed", "ped"), (r"foet", "fet"), (r"coeliac", "celiac"), (r"rrhoea", "rrhea"),
         (r"noea\b", "nea"), (r"tumour", "tumor"), (r"haemorrh", "hemorrh"), (r"ischaem", "ischem"),
         (r"leukaem", "leukem"), (r"anaes", "anes"), (r"\bfibre", "fiber"), (r"oura\b", "ora"), (r"behaviour", "behavior"),
         (r"\boesinophil", "eosinophil"), (r"orthopaed", "orthoped"), (r"\bapnoea", "apnea"), (r"oea\b", "ea")]
VOCAB = set()
def american(word):
    if word.lower() in VOCAB: return word
    w = word
    for a, b in RULES:
        w = re.sub(a, b, w, flags=re.I) if re.search(a, w, flags=re.I) else w
    if word[:1].isupper() and w: w = w[0].upper() + w[1:]
    return w if w.lower() in VOCAB else word
def rewrite(doc):
    words = [american(t.text) for t in doc]
    new = Doc(doc.vocab, words=words, spaces=[bool(t.whitespace_) for t in doc],
              sent_starts=[t.is_sent_start for t in doc] if doc.has_annotation("SENT_START") else None)
    new.ents = [spacy.tokens.Span(new, e.start, e.end, label=e.label_, kb_id=e.kb_id_) for e in doc.ents]
    new.user_data.update(doc.user_data)
    return new
pipe, data = sys.argv[1:3]
nlp = load_pipeline(pipe)
kb = nlp.get_pipe("arbo_linker").kb
for text, _ in kb.alias_pairs():
    VOCAB.update(re.findall(r"[a-z]+", text.lower()))
print("vocab", len(VOCAB))
gold = list(DocBin().from_disk(data).get_docs(nlp.vocab))
changed = [(t.text, american(t.text)) for d in gold for e in d.ents for t in e if american(t.text) != t.text]
print("changed mention tokens", len(changed), sorted(set(changed))[:40])
for name, docs in [("as written", gold), ("american", [rewrite(d) for d in gold])]:
    pred = link_gold_mentions(nlp, docs)
    outs = list(mention_outcomes(Example(p, g) for p, g in zip(pred, docs)))
    print(name, round(accuracy(outs, "any_id"), 4), round(accuracy(outs, "exact"), 4))
