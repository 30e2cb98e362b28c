import pytest
import spacy

from spacy_arbo.cli import main
from spacy_arbo.corpora import write_docbin
from spacy_arbo.reranker.tuning import tune_retrieval_weight
from spacy_arbo.util import ArboError

from ..util import make_two_stage_nlp


def test_tuning_picks_the_best_weight_and_the_cli_stores_it(tmp_path, tiny_bert_dir, toy_kb_dir, toy_docs, capsys):
    nlp = make_two_stage_nlp(tiny_bert_dir, toy_kb_dir)
    retriever, rows, best = tune_retrieval_weight(nlp, toy_docs, [1000.0, 0.0])
    assert [w for w, _ in rows] == [0.0, 1000.0]
    assert rows[1][1] == pytest.approx(retriever)  # a huge weight keeps the retriever's order
    assert best == max(rows, key=lambda row: row[1])[0]
    assert nlp.get_pipe("multi_cross_reranker").cfg["retrieval_weight"] == best

    nlp.get_pipe("multi_cross_reranker").configure(retrieval_weight=0.5)
    nlp.to_disk(tmp_path / "pipeline")
    write_docbin(toy_docs, tmp_path / "dev.spacy")
    assert main(["tune-reranker", str(tmp_path / "pipeline"), str(tmp_path / "dev.spacy"),
                 "--weights", "0", "1000"]) == 0
    assert f"retrieval_weight = {best:g}" in capsys.readouterr().out
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("multi_cross_reranker").cfg["retrieval_weight"] == best


@pytest.mark.parametrize("best_accuracy,warned", [(0.7, True), (0.8, False)])
def test_the_cli_warns_when_the_reranker_never_beats_the_retriever(
    tmp_path, tiny_bert_dir, toy_kb_dir, toy_docs, capsys, monkeypatch, best_accuracy, warned
):
    make_two_stage_nlp(tiny_bert_dir, toy_kb_dir).to_disk(tmp_path / "pipeline")
    write_docbin(toy_docs, tmp_path / "dev.spacy")
    monkeypatch.setattr("spacy_arbo.reranker.tuning.tune_retrieval_weight",
                        lambda nlp, docs, weights: (0.8, [(0.0, 0.6), (1.0, best_accuracy)], 1.0))
    assert main(["tune-reranker", str(tmp_path / "pipeline"), str(tmp_path / "dev.spacy")]) == 0
    out = capsys.readouterr().out
    assert ("links worse than the retriever alone (0.700 < 0.800)" in out) == warned
    assert "retrieval_weight = 1 (accuracy@1 %.3f on " % best_accuracy in out


def test_tuning_needs_a_reranker_and_weights(tiny_bert_dir, toy_kb_dir, toy_docs):
    with pytest.raises(ArboError, match="no multi_cross_reranker"):
        tune_retrieval_weight(spacy.blank("en"), toy_docs)
    with pytest.raises(ArboError, match="No retrieval weights"):
        tune_retrieval_weight(make_two_stage_nlp(tiny_bert_dir, toy_kb_dir), toy_docs, [])
