"""Helpers shared by the test modules (fixtures live in conftest.py)."""
import builtins
import shutil

import spacy
import torch

from spacy_arbo.pipeline.common.gold_ents import strip_links


CTD_HEADER = ("# Fields:\n# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\t"
              "ParentTreeNumbers\tSynonyms\tSlimMappings\n#\n")


def ctd_line(name, did, alt="", definition="", synonyms="", slims="", parents=""):
    return "\t".join([name, did, alt, definition, parents, "", "", synonyms, slims]) + "\n"


def mention_line(pmid, text, surface, label, ids, occurrence=0):
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(surface, start + 1)
    return f"{pmid}\t{start}\t{start + len(surface)}\t{surface}\t{label}\t{ids}"


def pubtator(pmid, title, abstract, mentions=(), extra=()):
    """One PubTator document; `mentions` are (surface, type, ids[, occurrence]), located in the text."""
    text = f"{title} {abstract}"
    lines = [f"{pmid}|t|{title}", f"{pmid}|a|{abstract}"]
    lines += [mention_line(pmid, text, *m) for m in mentions]
    return "\n".join([*lines, *extra]) + "\n\n"


def hashed_model(seed=0):
    return {
        "@architectures": "spacy_arbo.DualEncoder.v1",
        "mention_tower": {"@architectures": "spacy_arbo.HashedNgramTower.v1", "n_buckets": 4096,
                          "embed_dim": 16, "out_dim": 16, "seed": seed},
    }


# The plain dense linker most tests exercise (the factory's defaults add TF-IDF candidates,
# alias vectors and KB names first; tests/pipeline/test_defaults.py covers them).
DENSE_LINKER = {"candidate_source": "dense", "index_aliases": False, "sparse_weight": None, "kb_names_first": False}


def make_nlp(kb_dir, seed=0, **cfg):
    """A blank pipeline with an initialized hashed-n-gram dense arbo_linker over `kb_dir`."""
    nlp = spacy.blank("en")
    nlp.add_pipe("arbo_linker", config={"model": hashed_model(seed), "top_k": 4, **DENSE_LINKER, **cfg})
    nlp.config["initialize"]["components"]["arbo_linker"] = {
        "kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1", "path": str(kb_dir)}
    }
    nlp.initialize()
    return nlp


def unlinked(nlp, docs):
    """The docs' mentions without their ids, as a linker sees them."""
    return [strip_links(d) for d in docs]


def links(docs):
    return [[(e.text, e.kb_id_, e._.kb_candidates) for e in doc.ents] for doc in docs]


def cross_encoder(path, max_length=128, pair_attention="full", **settings):
    return {"@architectures": "spacy_arbo.CrossEncoder.v1", "name": str(path), "max_length": max_length,
            "pair_attention": pair_attention, **settings}


def make_reranker_nlp(tiny_bert_dir, kb, model=None, **cfg):
    """A pipeline with only the reranker; candidates are put on the docs by hand."""
    nlp = spacy.blank("en")
    reranker = nlp.add_pipe("multi_cross_reranker", config={"model": model or cross_encoder(tiny_bert_dir), **cfg})
    torch.manual_seed(0)
    reranker.initialize(lambda: [], nlp=nlp, kb_loader=lambda _vocab: kb)
    return nlp


def make_two_stage_nlp(tiny_bert_dir, kb_dir, model=None, **cfg):
    """The TF-IDF arbo_linker retrieves; the reranker takes its KB from it."""
    nlp = spacy.blank("en")
    nlp.add_pipe("arbo_linker", config={
        **DENSE_LINKER, "candidate_source": "tfidf", "top_k": 4,
        "model": {"@architectures": "spacy_arbo.DualEncoder.v1",
                  "mention_tower": {"@architectures": "spacy_arbo.HashedNgramTower.v1", "n_buckets": 256,
                                    "embed_dim": 8, "out_dim": 8}},
    })
    nlp.add_pipe("multi_cross_reranker", config={"model": model or cross_encoder(tiny_bert_dir), "top_n": 4, **cfg})
    nlp.config["initialize"]["components"]["arbo_linker"] = {
        "kb_loader": {"@misc": "spacy_arbo.KBFromDir.v1", "path": str(kb_dir)}
    }
    torch.manual_seed(0)
    nlp.initialize()
    return nlp


def hide_onnx_runtime(monkeypatch):
    """Imports of onnxruntime fail from here on, as where the `[onnx]` extra is not installed."""
    real_import = builtins.__import__

    def no_onnx(name, *args, **kwargs):
        if name.startswith("onnxruntime"):
            raise ImportError(f"No module named '{name}'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnx)


def headless_chromium():
    """playwright's sync API and Debian's chromium (both come with `.ci/install`), or the test
    skipped with what is missing said."""
    import pytest

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "playwright is not installed (pip install playwright)"
    else:
        path = shutil.which("chromium")
        if path is not None:
            return sync_playwright, path
        reason = "Debian's chromium is not installed (apt-get install chromium)"
    print(f"skipped: {reason}")
    pytest.skip(reason)


def launch(playwright, path):
    """A headless browser that reaches for nothing outside the page."""
    return playwright.chromium.launch(executable_path=path, args=[
        "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"])
