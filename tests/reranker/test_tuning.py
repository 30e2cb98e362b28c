import pytest
import spacy

from spacy_arbo.cli import main
from spacy_arbo.corpora import write_docbin
from spacy_arbo.tuning.reranker_settings import RerankerTuning, tune_reranker
from spacy_arbo.util import ArboError

from ..util import make_two_stage_nlp


def test_tuning_picks_the_best_weight_and_the_cli_stores_it(tmp_path, tiny_bert_dir, toy_kb_dir, toy_docs, capsys):
    nlp = make_two_stage_nlp(tiny_bert_dir, toy_kb_dir)
    tuned = tune_reranker(nlp, toy_docs, [1000.0, 0.0])
    assert [(n, w) for n, w, _ in tuned.rows] == [(4, 0.0), (4, 1000.0)]
    assert tuned.rows[1][2] == pytest.approx(tuned.retriever)  # a huge weight keeps the retriever's order
    assert tuned.weight == max(tuned.rows, key=lambda row: row[2])[1]
    assert nlp.get_pipe("multi_cross_reranker").cfg["retrieval_weight"] == tuned.weight

    nlp.get_pipe("multi_cross_reranker").configure(retrieval_weight=0.5)
    nlp.to_disk(tmp_path / "pipeline")
    write_docbin(toy_docs, tmp_path / "dev.spacy")
    assert main(["tune-reranker", str(tmp_path / "pipeline"), str(tmp_path / "dev.spacy"),
                 "--weights", "0", "1000"]) == 0
    assert f"top_n = 4, retrieval_weight = {tuned.weight:g}" in capsys.readouterr().out
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("multi_cross_reranker").cfg["retrieval_weight"] == tuned.weight


def test_fewer_candidates_win_within_max_loss_of_the_best(tiny_bert_dir, toy_kb_dir, toy_docs):
    # A huge weight makes every top_n link as the retriever does: equal accuracy, so the
    # smallest top_n wins; with 1 candidate the reranker can only keep the retriever's first.
    nlp = make_two_stage_nlp(tiny_bert_dir, toy_kb_dir)
    tuned = tune_reranker(nlp, toy_docs, [1000.0], top_ns=[4, 1, 2])
    assert [n for n, _, _ in tuned.rows] == [1, 2, 4]
    assert [acc for _, _, acc in tuned.rows] == pytest.approx([tuned.retriever] * 3)
    assert tuned.top_n == 1 and set(tuned.speeds) == {1, 2, 4}
    assert nlp.get_pipe("multi_cross_reranker").cfg["top_n"] == 1


def test_every_top_n_reranks_the_retrievers_candidates(tiny_bert_dir, toy_kb_dir, toy_docs):
    # Reranking rewrites the spans' candidates: top_n 4 after top_n 1 must still read 4.
    alone = tune_reranker(make_two_stage_nlp(tiny_bert_dir, toy_kb_dir), toy_docs, [0.0], top_ns=[4])
    assert alone.rows[0][2] != pytest.approx(alone.retriever)  # the untrained cross-encoder decides
    after_one = tune_reranker(make_two_stage_nlp(tiny_bert_dir, toy_kb_dir), toy_docs, [0.0], top_ns=[1, 4])
    assert after_one.rows[1] == pytest.approx(alone.rows[0])


def test_a_smaller_top_n_loses_to_a_better_one_beyond_max_loss(tiny_bert_dir, toy_kb_dir, toy_docs, monkeypatch):
    nlp = make_two_stage_nlp(tiny_bert_dir, toy_kb_dir)
    reranker = nlp.get_pipe("multi_cross_reranker")
    accuracies = iter([0.85, 0.80, 0.90])  # the retriever, then top_n 1 and 4 at the one weight

    monkeypatch.setattr("spacy_arbo.tuning.reranker_settings.accuracy", lambda outcomes: next(accuracies, 0.5))
    tuned = tune_reranker(nlp, toy_docs, [0.0], top_ns=[1, 4], max_loss=0.05)
    assert (tuned.top_n, tuned.accuracy) == (4, 0.90)
    assert reranker.cfg["top_n"] == 4


@pytest.mark.parametrize("best_accuracy,warned", [(0.7, True), (0.8, False)])
def test_the_cli_warns_when_the_reranker_never_beats_the_retriever(
    tmp_path, tiny_bert_dir, toy_kb_dir, toy_docs, capsys, monkeypatch, best_accuracy, warned
):
    make_two_stage_nlp(tiny_bert_dir, toy_kb_dir).to_disk(tmp_path / "pipeline")
    write_docbin(toy_docs, tmp_path / "dev.spacy")
    monkeypatch.setattr("spacy_arbo.tuning.reranker_settings.tune_reranker",
                        lambda nlp, docs, weights, top_ns, max_loss: RerankerTuning(
                            0.8, [(4, 0.0, 0.6), (4, 1.0, best_accuracy)], {4: 10.0}, 4, 1.0))
    assert main(["tune-reranker", str(tmp_path / "pipeline"), str(tmp_path / "dev.spacy")]) == 0
    out = capsys.readouterr().out
    assert ("links worse than the retriever alone (0.700 < 0.800)" in out) == warned
    assert "retrieval_weight = 1 (accuracy@1 %.3f on " % best_accuracy in out


def test_tuning_needs_a_reranker_weights_and_sensible_limits(tiny_bert_dir, toy_kb_dir, toy_docs):
    with pytest.raises(ArboError, match="no multi_cross_reranker"):
        tune_reranker(spacy.blank("en"), toy_docs)
    nlp = make_two_stage_nlp(tiny_bert_dir, toy_kb_dir)
    with pytest.raises(ArboError, match="No retrieval weights"):
        tune_reranker(nlp, toy_docs, [])
    with pytest.raises(ArboError, match="top_n must be at least 1"):
        tune_reranker(nlp, toy_docs, top_ns=[0, 2])
    with pytest.raises(ArboError, match="max_loss"):
        tune_reranker(nlp, toy_docs, max_loss=1.5)
