import shutil

import numpy as np
import pytest
import spacy
import torch
from spacy.training import Example
from thinc.api import Adam

from spacy_arbo.pipeline.common.gold_ents import strip_links
from spacy_arbo.kb.entities import NIL, Entity
from spacy_arbo.kb.store import EntityStore
from scipy.special import expit

from spacy_arbo.reranker.component import fuse_scores, with_gold
from spacy_arbo.reranker.planning import closest_alias
from spacy_arbo.reranker.model import get_module
from spacy_arbo.util import ArboError

from ..conftest import TOY_TEXTS, make_doc
from ..util import cross_encoder, make_reranker_nlp, make_two_stage_nlp

TWO_SENTENCES = (
    "Fever and coughing were reported. Patients with diabetes mellitus often develop heart failure.",
    [("Fever", "MESH:D005334"), ("coughing", "MESH:D003371"), ("diabetes mellitus", "MESH:D003920"),
     ("heart failure", "MESH:D006333")],
)


def rotating_candidates(nlp, kb, texts, n=6):
    """Docs whose mentions carry n KB ids in an order that moves the gold around."""
    docs, count = [], 0
    for text, mentions in texts:
        doc = make_doc(nlp, text, mentions, with_ids=False)
        for ent in doc.ents:
            ent._.kb_candidates = [(kb.ids[(count + k) % len(kb)], 1.0 - k / 10) for k in range(n)]
            count += 1
        docs.append(doc)
    return docs


def candidate_ids(docs):
    return [[[k for k, _ in e._.kb_candidates] for e in doc.ents] for doc in docs]


def links(docs):
    return [[(e.kb_id_, [k for k, _ in e._.kb_candidates]) for e in doc.ents] for doc in docs]


def scores(docs):
    return {(e.start_char, k): s for doc in docs for e in doc.ents for k, s in e._.kb_candidates}


@pytest.mark.parametrize("similarity_head", [False, True])
def test_isolated_pairs_score_the_same_in_every_mode(tiny_bert_dir, toy_kb, similarity_head):
    """With attention that cannot cross pairs, packing changes speed, never scores."""
    model = cross_encoder(tiny_bert_dir, 64, "isolated", similarity_head=similarity_head)
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, model, top_n=6, precision="fp32")
    reranker = nlp.get_pipe("multi_cross_reranker")
    texts = [TWO_SENTENCES, *TOY_TEXTS]
    by_mode = {}
    for mode in ["base", "parallel", "multi", "passage"]:
        reranker.configure(mode=mode)
        docs = rotating_candidates(nlp, toy_kb, texts)
        passes, _ = reranker.plan(docs, candidate_ids(docs))
        assert max(len(p) for p in passes) <= 64
        by_mode[mode] = (len(passes), scores(nlp.pipe(rotating_candidates(nlp, toy_kb, texts))))
    n_passes = [by_mode[m][0] for m in ["base", "parallel", "multi", "passage"]]
    assert n_passes == sorted(n_passes, reverse=True) and n_passes[0] == 12 * 6 > n_passes[-1]
    base = by_mode["base"][1]
    for mode, (_, result) in by_mode.items():
        assert result.keys() == base.keys()
        np.testing.assert_allclose([result[k] for k in base], list(base.values()), atol=2e-5, err_msg=mode)
    # With the paper's full attention, pairs in one pass see each other.
    full = make_reranker_nlp(tiny_bert_dir, toy_kb, cross_encoder(tiny_bert_dir, 64, "full"), top_n=6, mode="multi",
                             precision="fp32")
    full_scores = scores(full.pipe(rotating_candidates(nlp, toy_kb, texts)))
    assert not np.allclose([full_scores[k] for k in base], list(base.values()), atol=1e-3)


@pytest.mark.parametrize("precision", ["bf16", "int8"])
@pytest.mark.parametrize("mode,pair_attention", [("base", "full"), ("multi", "isolated")])
def test_reduced_precision_scores_are_close_to_fp32(tiny_bert_dir, toy_kb, precision, mode, pair_attention):
    """Isolated pairs pass a (batch, length, length) attention mask, exported as such in int8."""
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, cross_encoder(tiny_bert_dir, 128, pair_attention), top_n=6,
                            mode=mode, precision="fp32")
    full = scores(nlp.pipe(rotating_candidates(nlp, toy_kb, TOY_TEXTS)))
    nlp.get_pipe("multi_cross_reranker").configure(precision=precision)
    reduced = scores(nlp.pipe(rotating_candidates(nlp, toy_kb, TOY_TEXTS)))
    assert reduced.keys() == full.keys() and reduced != full
    np.testing.assert_allclose([reduced[k] for k in full], list(full.values()), atol=0.01)


def test_reranking_writes_links_and_rescored_candidates(tiny_bert_dir, toy_kb):
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, top_n=4)
    docs = list(nlp.pipe(rotating_candidates(nlp, toy_kb, TOY_TEXTS)))
    for doc in docs:
        for ent in doc.ents:
            ranked = ent._.kb_candidates
            assert len(ranked) == 4 and ent._.kb_ents == ranked
            assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
            assert all(0.0 < s < 1.0 for _, s in ranked)
            assert ent.kb_id_ == ranked[0][0]
    nlp.get_pipe("multi_cross_reranker").configure(threshold=1.0)
    for doc in nlp.pipe(rotating_candidates(nlp, toy_kb, TOY_TEXTS)):
        assert all(e.kb_id_ == NIL and len(e._.kb_candidates) == 4 for e in doc.ents)


def test_fuse_scores_against_hand_computed_values():
    margins, retrieval = [0.0, 1.0, -1.0], [0.9, 0.5, 0.1]
    assert fuse_scores(margins, retrieval, 0.0) == pytest.approx(expit(margins))
    z = (np.array(retrieval) - 0.5) / np.std(retrieval)  # [1.2247, 0, -1.2247]
    assert fuse_scores(margins, retrieval, 2.0) == pytest.approx(expit(np.array(margins) + 2.0 * z))
    assert fuse_scores(margins, retrieval, 2.0)[0] == pytest.approx(expit(2.4495), abs=1e-4)
    # Nothing to compare: one candidate, or tied retrieval scores.
    assert fuse_scores([0.3], [0.7], 5.0) == pytest.approx([expit(0.3)])
    assert fuse_scores([0.3, 0.1], [0.7, 0.7], 5.0) == pytest.approx(expit([0.3, 0.1]))


def test_a_large_retrieval_weight_keeps_the_retrievers_order(tiny_bert_dir, toy_kb):
    for weight, keeps_order in [(1000.0, True), (0.0, False)]:
        nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, top_n=4, retrieval_weight=weight)
        docs = rotating_candidates(nlp, toy_kb, TOY_TEXTS)
        retrieved = [[ids[:4] for ids in per_doc] for per_doc in candidate_ids(docs)]
        reranked = candidate_ids(nlp.pipe(docs))
        assert (reranked == retrieved) is keeps_order


@pytest.mark.parametrize("precision,atol", [("fp32", 1e-5), ("int8", 1e-3)])
def test_pipe_batches_across_docs_like_calls(tiny_bert_dir, toy_kb, precision, atol):
    """int8 quantizes activations per batch, so its scores move a little with the batch."""
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, precision=precision)
    piped = list(nlp.pipe(rotating_candidates(nlp, toy_kb, TOY_TEXTS), batch_size=4))
    called = [nlp(doc) for doc in rotating_candidates(nlp, toy_kb, TOY_TEXTS)]
    assert links(piped) == links(called)
    a, b = scores(piped), scores(called)
    np.testing.assert_allclose([a[k] for k in b], list(b.values()), atol=atol)


def test_mentions_without_candidates_and_odd_docs(tiny_bert_dir, toy_kb):
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb)
    doc = make_doc(nlp, "Fever and coughing and colorectal cancer.",
                   [("Fever", ""), ("coughing", ""), ("colorectal cancer", "")], with_ids=False)
    doc.ents[1]._.kb_candidates = []  # retrieval found nothing; ents[0] was never retrieved (None)
    doc.ents[2]._.kb_candidates = [("MESH:D015179", 0.9)]
    doc = nlp(doc)
    assert [e.kb_id_ for e in doc.ents] == [NIL, NIL, "MESH:D015179"]
    assert doc.ents[0]._.kb_candidates == [] and doc.ents[1]._.kb_candidates == []
    assert not nlp("").ents and not nlp("No mentions here.").ents
    docs = list(nlp.pipe([nlp.make_doc(""), *rotating_candidates(nlp, toy_kb, TOY_TEXTS[:1])]))
    assert len(docs[0]) == 0 and all(e.kb_id_ != NIL for e in docs[1].ents)
    bad = make_doc(nlp, "Fever.", [("Fever", "")], with_ids=False)
    bad.ents[0]._.kb_candidates = [("MESH:NOPE", 1.0)]
    with pytest.raises(ArboError, match=r"candidate ids \['MESH:NOPE'\] are not in the reranker's KB"):
        nlp(bad)


def test_sentences_come_from_the_doc_else_from_punctuation(tiny_bert_dir, toy_kb):
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, mode="multi")
    reranker = nlp.get_pipe("multi_cross_reranker")
    doc = rotating_candidates(nlp, toy_kb, [TWO_SENTENCES], n=1)[0]
    assert len(reranker.plan([doc], candidate_ids([doc]))[0]) == 2  # split at the full stop
    assert doc[8:10].text == "diabetes mellitus"
    doc[9].is_sent_start = True  # the doc's own boundaries: one, inside a mention, so merged away
    assert len(reranker.plan([doc], candidate_ids([doc]))[0]) == 1


def pair_mentions(reranker, packed):
    """The text between each pair's [SEP] and its [MASK]."""
    tokenizer = get_module(reranker.model).tokenizer
    ids = packed.input_ids
    starts = [max(i for i in range(mask) if ids[i] == tokenizer.sep_token_id) + 1 for mask in packed.mask_positions]
    return [tokenizer.decode(ids[start:mask]) for start, mask in zip(starts, packed.mask_positions)]


def test_long_form_replaces_a_defined_abbreviation_in_its_pairs(tiny_bert_dir, toy_kb):
    """ "Wilson disease (WD) is rare; WD causes copper build-up.": with use_long_form the
    pairs of both "WD" read "wilson disease"; the sentence keeps its own text."""
    seen = {}
    for use_long_form in (False, True):
        nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, use_long_form=use_long_form, top_n=1)
        reranker = nlp.get_pipe("multi_cross_reranker")
        docs = rotating_candidates(nlp, toy_kb, TOY_TEXTS[1:2], n=1)
        (packed,), _ = reranker.plan(docs, candidate_ids(docs))
        first_pair = packed.input_ids.index(get_module(reranker.model).tokenizer.sep_token_id)
        seen[use_long_form] = (pair_mentions(reranker, packed), packed.input_ids[:first_pair])
        assert len(nlp(docs[0]).ents[1]._.kb_candidates) == 1
    assert seen[False][0] == ["wilson disease", "wd", "wd"]
    assert seen[True][0] == ["wilson disease"] * 3
    assert seen[True][1] == seen[False][1]


def test_a_sentence_longer_than_the_window(tiny_bert_dir, toy_kb):
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, cross_encoder(tiny_bert_dir, max_length=48), top_n=6,
                            max_mention_tokens=8, max_name_tokens=8)
    text = "the cough of the patients " * 40 + "with fever"
    docs = rotating_candidates(nlp, toy_kb, [(text, [("cough", ""), ("fever", "")])])
    reranker = nlp.get_pipe("multi_cross_reranker")
    passes, owners = reranker.plan(docs, candidate_ids(docs))
    assert len(owners) == 12 and sorted(i for p in passes for i in p.pair_index) == list(range(12))
    assert max(len(p) for p in passes) <= 48 and len(docs[0]) > 200
    doc = nlp(docs[0])
    assert all(e.kb_id_ != NIL and len(e._.kb_candidates) == 6 for e in doc.ents)


def test_gold_insertion(tiny_bert_dir, toy_kb):
    assert with_gold(["A", "B", "C"], ("MESH:D005334",), 3, toy_kb) == ["A", "B", "MESH:D005334"]
    assert with_gold(["A"], ("MESH:D005334",), 3, toy_kb) == ["A", "MESH:D005334"]
    assert with_gold(["MESH:D005334", "B"], ("MESH:D005334",), 3, toy_kb) == ["MESH:D005334", "B"]
    assert with_gold(["A", "B"], (NIL,), 2, toy_kb) == ["A", "B"]
    assert with_gold(["A", "B"], ("NOT:IN_KB", "MESH:D003371"), 2, toy_kb) == ["A", "MESH:D003371"]
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, top_n=2)
    gold = make_doc(nlp, "Fever and coughing.", [("Fever", "MESH:D005334"), ("coughing", "MESH:D003371")])
    predicted = make_doc(nlp, gold.text, [("Fever", ""), ("coughing", "")], with_ids=False)
    predicted.ents[0]._.kb_candidates = [("MESH:D003920", 0.5), ("MESH:D006527", 0.4), ("MESH:D005334", 0.3)]
    reranker = nlp.get_pipe("multi_cross_reranker")
    assert reranker.training_candidates(Example(predicted, gold)) == [
        (["MESH:D003920", "MESH:D005334"], [False, True]), ([], [])]
    reranker.configure(insert_gold=False)
    assert reranker.training_candidates(Example(predicted, gold))[0] == (
        ["MESH:D003920", "MESH:D006527"], [False, False])


@pytest.mark.parametrize("listwise_weight,similarity_head", [(0.0, False), (1.0, False), (1.0, True)])
def test_overfits_the_toy_corpus(tiny_bert_dir, toy_kb, listwise_weight, similarity_head):
    model = cross_encoder(tiny_bert_dir, similarity_head=similarity_head)
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, model, top_n=6, mode="multi", listwise_weight=listwise_weight)
    gold = [make_doc(nlp, text, mentions) for text, mentions in TOY_TEXTS]
    examples = [Example(doc, g) for doc, g in zip(rotating_candidates(nlp, toy_kb, TOY_TEXTS), gold)]

    def accuracy():
        docs = nlp.pipe(rotating_candidates(nlp, toy_kb, TOY_TEXTS))
        pairs = [(p.kb_id_, g.kb_id_) for d, gd in zip(docs, gold) for p, g in zip(d.ents, gd.ents)]
        return sum(p == g for p, g in pairs) / len(pairs)

    # Untrained, a similarity head already matches a mention to the candidate sharing its words.
    assert accuracy() < (0.7 if similarity_head else 0.5)
    optimizer = Adam(0.003)
    losses = [nlp.update(examples, sgd=optimizer)["multi_cross_reranker"] for _ in range(20)]
    assert losses[-1] < losses[0] / 2
    assert accuracy() == 1.0


@pytest.mark.parametrize("listwise_weight", [0.0, 1.0])
def test_update_loss_does_not_depend_on_how_passes_are_batched(tiny_bert_dir, toy_kb, listwise_weight):
    """In base mode a mention's pairs are separate passes, which a small `batch_tokens`
    would put in different batches; the update keeps them together, so the loss is the same."""
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, top_n=6, mode="base", listwise_weight=listwise_weight)
    gold = [make_doc(nlp, text, mentions) for text, mentions in TOY_TEXTS]
    reranker = nlp.get_pipe("multi_cross_reranker")
    for module in get_module(reranker.model).modules():  # the same loss needs no dropout
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if hasattr(module, "dropout_prob"):
            module.dropout_prob = 0.0
    found = []
    for batch_tokens in [4096, 32]:
        reranker.configure(batch_tokens=batch_tokens)
        examples = [Example(doc, g) for doc, g in zip(rotating_candidates(nlp, toy_kb, TOY_TEXTS), gold)]
        found.append(reranker.update(examples, drop=0.0)["multi_cross_reranker"])
    assert found[0] > 0 and found[1] == pytest.approx(found[0], rel=1e-5)


def test_trains_and_scores_behind_a_retriever(tiny_bert_dir, toy_kb_dir):
    """As in `spacy train`: predicted docs arrive without entities; the gold mentions are
    copied over and the arbo_linker before the reranker gives them candidates."""
    nlp = make_two_stage_nlp(tiny_bert_dir, toy_kb_dir)
    toy_docs = [make_doc(nlp, text, mentions) for text, mentions in TOY_TEXTS]
    reranker = nlp.get_pipe("multi_cross_reranker")
    assert len(reranker.kb) == 6  # taken from the arbo_linker
    examples = [Example(nlp.make_doc(doc.text), doc) for doc in toy_docs]
    losses = nlp.update(examples, sgd=Adam(0.001), exclude=["arbo_linker"], annotates=["arbo_linker"])
    assert losses["multi_cross_reranker"] > 0
    scores = nlp.evaluate(examples)
    predicted = [e for doc in nlp.pipe(strip_links(d) for d in toy_docs) for e in doc.ents]
    correct = sum(p.kb_id_ == g.kb_id_ for p, g in zip(predicted, (e for d in toy_docs for e in d.ents)))
    assert scores["rerank_accuracy"] == pytest.approx(correct / len(predicted))
    assert scores["nel_micro_r"] == pytest.approx(correct / len(predicted))


@pytest.mark.parametrize("similarity_head", [False, True])
def test_round_trip_gives_identical_scores(tmp_path, tiny_bert_dir, toy_kb_dir, toy_docs, similarity_head):
    model = cross_encoder(tiny_bert_dir, similarity_head=similarity_head)
    nlp = make_two_stage_nlp(tiny_bert_dir, toy_kb_dir, model, mode="parallel")
    before = list(nlp.pipe(strip_links(d) for d in toy_docs))
    nlp.to_disk(tmp_path / "pipeline")
    shutil.rmtree(toy_kb_dir)  # the pipeline brings its own KB and weights
    loaded = spacy.load(tmp_path / "pipeline")
    after = list(loaded.pipe(strip_links(d) for d in toy_docs))
    assert links(after) == links(before) and scores(after) == scores(before)
    reranker = loaded.get_pipe("multi_cross_reranker")
    assert reranker.cfg["mode"] == "parallel" and len(reranker.kb) == 6
    # One copy of the KB: the reranker reads the linker's.
    assert reranker.kb is loaded.get_pipe("arbo_linker").kb
    assert sorted(p.parent.name for p in (tmp_path / "pipeline").rglob("entities.msgpack")) == ["kb"]
    assert [p.parent.parent.name for p in (tmp_path / "pipeline").rglob("entities.msgpack")] == ["arbo_linker"]
    # The whole pipeline through bytes, as nlp.pipe(n_process > 1) and pickling need.
    copy = spacy.blank("en").from_config(loaded.config).from_bytes(loaded.to_bytes())
    assert links(copy.pipe(strip_links(d) for d in toy_docs)) == links(before)
    assert scores(copy.pipe(strip_links(d) for d in toy_docs)) == scores(before)
    module = get_module(copy.get_pipe("multi_cross_reranker").model)
    assert module.max_length == 128 and module.similarity_head == similarity_head


def test_attention_dropout_reaches_the_cross_encoder(tiny_bert_dir, toy_kb):
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, cross_encoder(tiny_bert_dir, attention_dropout=0.0))
    encoder = get_module(nlp.get_pipe("multi_cross_reranker").model).backbone.encoder
    assert {layer.attention.self.dropout_prob for layer in encoder.encoder.layer} == {0.0}
    with pytest.raises(ArboError, match=r"attention_dropout takes a number in \[0, 1\) or null; got -0.1"):
        make_reranker_nlp(tiny_bert_dir, toy_kb, cross_encoder(tiny_bert_dir, attention_dropout=-0.1))


def test_a_reranker_with_its_own_kb_saves_it(tmp_path, tiny_bert_dir, toy_kb):
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb)
    reranker = nlp.get_pipe("multi_cross_reranker")
    copy = spacy.blank("en").add_pipe("multi_cross_reranker", config={"model": cross_encoder(tmp_path / "nowhere")})
    copy.from_bytes(reranker.to_bytes())
    assert len(copy.kb) == 6 and copy.kb.fingerprint() == toy_kb.fingerprint()


def test_closest_alias(toy_kb):
    wilson = toy_kb["MESH:D006527"]  # Hepatolenticular Degeneration; Wilson disease, WD
    assert closest_alias("Wilson's disease", wilson) == "Wilson disease"
    assert closest_alias("WD", wilson) == "WD"
    assert closest_alias("hepatolenticular degenerations", wilson) is None  # the name is closer
    assert closest_alias("anything", Entity("MESH:X", "Cough")) is None


def test_candidate_text_is_the_name_the_closest_alias_and_the_definition(tiny_bert_dir, toy_kb):
    def candidate_text(mention, **cfg):
        nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, top_n=1, **cfg)
        reranker = nlp.get_pipe("multi_cross_reranker")
        doc = make_doc(nlp, f"The {mention} came back.", [(mention, "")], with_ids=False)
        doc.ents[0]._.kb_candidates = [("MESH:D005334", 1.0)]  # Fever; pyrexia, high temperature
        (packed,), _ = reranker.plan([doc], candidate_ids([doc]))
        tokenizer = get_module(reranker.model).tokenizer
        mask = packed.mask_positions[0]
        return tokenizer.decode(packed.input_ids[mask + 1: packed.input_ids.index(tokenizer.sep_token_id, mask)])

    assert candidate_text("pyrexia") == "fever"
    assert candidate_text("pyrexia", alias_tokens=16) == "fever ; pyrexia"
    assert candidate_text("high temperature", alias_tokens=16) == "fever ; high temperature"
    assert candidate_text("fever", alias_tokens=16) == "fever"
    # ":" is not in the toy vocabulary.
    assert candidate_text("pyrexia", alias_tokens=2, definition_tokens=2) == "fever ; p [UNK] b"
    assert candidate_text("pyrexia", definition_tokens=64) == "fever [UNK] body temperature above normal."


def test_candidate_text_can_name_the_parents(tiny_bert_dir, toy_kb):
    kb = EntityStore([toy_kb[i] for i in toy_kb.ids if i != "MESH:D005334"]
                     + [Entity("MESH:D005334", "Fever", ("pyrexia",), parents=("MESH:D003371", "MESH:D006333", "MESH:X"))],
                     source="toy")
    nlp = make_reranker_nlp(tiny_bert_dir, kb, top_n=2, parent_tokens=5)
    reranker = nlp.get_pipe("multi_cross_reranker")
    tokenizer = get_module(reranker.model).tokenizer
    doc = make_doc(nlp, "The pyrexia came back.", [("pyrexia", "")], with_ids=False)
    doc.ents[0]._.kb_candidates = [("MESH:D005334", 1.0), ("MESH:D003371", 0.5)]

    def candidate_texts():
        (packed,), _ = reranker.plan([doc], candidate_ids([doc]))
        ids = packed.input_ids
        return [tokenizer.decode(ids[m + 1: ids.index(tokenizer.sep_token_id, m)]) for m in packed.mask_positions]

    # "<" is not in the toy vocabulary; the parent the KB lacks is left out, and Cough has none.
    assert candidate_texts() == ["fever [UNK] cough ; heart failure", "cough"]
    assert reranker.settings.longest_pair == 16 + 24 + 0 + 5 + 0 + 2
    reranker.configure(parent_tokens=2)
    assert candidate_texts() == ["fever [UNK] cough", "cough"]


def test_alias_tokens_can_change_after_the_aliases_are_cached(tiny_bert_dir, toy_kb):
    nlp = make_reranker_nlp(tiny_bert_dir, toy_kb, top_n=1, alias_tokens=16)
    reranker = nlp.get_pipe("multi_cross_reranker")
    doc = make_doc(nlp, "The pyrexia came back.", [("pyrexia", "")], with_ids=False)
    doc.ents[0]._.kb_candidates = [("MESH:D005334", 1.0)]
    lengths = []
    for alias_tokens in (16, 1, 16):
        reranker.configure(alias_tokens=alias_tokens)
        (packed,), _ = reranker.plan([doc], candidate_ids([doc]))
        lengths.append(len(packed.input_ids))
    assert lengths[0] == lengths[2] > lengths[1]


def test_bad_configuration(tiny_bert_dir, toy_kb):
    with pytest.raises(ArboError, match="Unknown mode 'document'"):
        spacy.blank("en").add_pipe("multi_cross_reranker", config={"mode": "document"})
    with pytest.raises(ArboError, match="listwise_weight takes a number >= 0; got -1"):
        spacy.blank("en").add_pipe("multi_cross_reranker", config={"listwise_weight": -1.0})
    with pytest.raises(ArboError, match="Unknown pair_attention 'sparse'"):
        spacy.blank("en").add_pipe("multi_cross_reranker",
                                   config={"model": cross_encoder(tiny_bert_dir, pair_attention="sparse")})
    with pytest.raises(ArboError, match="more than the context window of 32"):
        make_reranker_nlp(tiny_bert_dir, toy_kb, cross_encoder(tiny_bert_dir, max_length=32))
    nlp = spacy.blank("en")
    nlp.add_pipe("multi_cross_reranker", config={"model": cross_encoder(tiny_bert_dir)})
    with pytest.raises(ArboError, match="has no KB"):
        nlp.initialize()
    with pytest.raises(ArboError, match="Cannot load a transformer from '/no/such/dir'"):
        make_reranker_nlp(tiny_bert_dir, toy_kb, cross_encoder("/no/such/dir"))
