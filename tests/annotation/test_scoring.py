"""score_pubtator counts as evaluate --end-to-end does; on BC5CDR dev, link's PubTator output
scored against the gold file gives evaluate's end-to-end figures (the acceptance check of #75)."""
import subprocess
import sys
from pathlib import Path

import pytest

from spacy_arbo.annotation import link_corpus
from spacy_arbo.annotation.scoring import pubtator_links, score_pubtator

GOLD = ("1|t|Diabetes and fever\n1|a|and WD.\n"
        "1\t0\t8\tDiabetes\tDisease\tD003920\n1\t13\t18\tfever\tDisease\tD005334|D003371\n"
        "1\t23\t25\tWD\tDisease\t-1\n1\t23\t25\tWD\tChemical\tD006527\n")
PREDICTED = ("1|t|Diabetes and fever\n1|a|and WD.\n"
             "1\t0\t8\tDiabetes\tDisease\tMESH:D003920\n1\t13\t18\tfever\tDisease\tMESH:D005334\n"
             "1\t23\t25\tWD\tDisease\t-1\n")


def test_ids_read_through_the_kb_exact_id_sets_gold_types_only(tmp_path, toy_kb):
    (tmp_path / "gold.pubtator").write_text(GOLD)
    (tmp_path / "pred.pubtator").write_text(PREDICTED)
    assert pubtator_links(tmp_path / "gold.pubtator", toy_kb, ["Disease"]) == {
        ("1", 0, 8, frozenset({"MESH:D003920"})), ("1", 13, 18, frozenset({"MESH:D005334", "MESH:D003371"}))}
    # fever's id set is not the gold one; WD (-1) counts on neither side; the Chemical is left out.
    assert score_pubtator(tmp_path / "pred.pubtator", tmp_path / "gold.pubtator", toy_kb, ["Disease"]) == {
        "e2e_p": 0.5, "e2e_r": 0.5, "e2e_f": 0.5}
    assert score_pubtator(tmp_path / "pred.pubtator", tmp_path / "gold.pubtator", toy_kb)["e2e_r"] == 1 / 3


@pytest.mark.slow
def test_link_on_bc5cdr_dev_scores_as_evaluate_end_to_end(data_dir, tmp_path):
    """The TF-IDF linker behind add-kb-finder (raw text in), CTD KB: about a minute."""
    from spacy_arbo.cli import main
    from spacy_arbo.corpora import read_docbin
    from spacy_arbo.evaluation import evaluate_end_to_end
    from spacy_arbo.pipeline_loading import load_pipeline
    from spacy_arbo.kb.store import open_store

    root = tmp_path
    assert main(["build-kb", str(data_dir / "ctd" / "CTD_diseases_2017-06-06.tsv.gz"), str(root / "kb"),
                 "--format", "ctd"]) == 0
    assert main(["workflow", "convert-corpus", "bc5cdr", str(data_dir), str(root / "corpus"), "--kb", str(root / "kb")]) == 0
    config = str(Path(__file__).resolve().parents[2] / "configs" / "tfidf.cfg")
    subprocess.run([sys.executable, "-m", "spacy", "assemble", config, str(root / "tfidf"), "--paths.kb",
                    str(root / "kb")], check=True, capture_output=True)
    assert main(["add-kb-finder", str(root / "tfidf"), str(root / "e2e"), "--kb", str(root / "kb")]) == 0
    gold = data_dir / "bc5cdr" / "CDR_dev.PubTator.txt"
    link_corpus(root / "e2e", [gold], root / "dev.pubtator", fmt="pubtator", progress=False)
    scores = score_pubtator(root / "dev.pubtator", gold, open_store(root / "kb"), ["Disease"])
    nlp = load_pipeline(root / "e2e")
    expected = evaluate_end_to_end(nlp, read_docbin(root / "corpus" / "dev.spacy", nlp.vocab))
    assert scores == pytest.approx({key: expected[key] for key in scores}, abs=1e-12)
    assert 0.6 < scores["e2e_f"] < 0.75


def test_inputs_that_disagree_are_an_error_not_a_zero(tmp_path, toy_kb):
    from spacy_arbo.util import ArboError

    (tmp_path / "gold.pubtator").write_text(GOLD)
    (tmp_path / "pred.pubtator").write_text(PREDICTED)
    (tmp_path / "other.pubtator").write_text(PREDICTED.replace("1|", "2|").replace("1\t", "2\t"))
    with pytest.raises(ArboError, match="share no document"):
        score_pubtator(tmp_path / "other.pubtator", tmp_path / "gold.pubtator", toy_kb)
    with pytest.raises(ArboError, match="no mention of type Diseases .it has Chemical, Disease"):
        score_pubtator(tmp_path / "pred.pubtator", tmp_path / "gold.pubtator", toy_kb, ["Diseases"])
    (tmp_path / "unknown.pubtator").write_text(GOLD.replace("D0", "X0"))
    with pytest.raises(ArboError, match="none of its mentions has an id the KB knows"):
        score_pubtator(tmp_path / "pred.pubtator", tmp_path / "unknown.pubtator", toy_kb)
