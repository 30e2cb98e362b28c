"""score_pubtator counts as evaluate --end-to-end does; on BC5CDR dev, link's PubTator output
scored against the gold file gives evaluate's end-to-end figures (the acceptance check of #75)."""
import subprocess
import sys
from pathlib import Path

import pytest

from spacy_arbo.annotation import link_corpus
from spacy_arbo.annotation.scoring import pubtator_links, score_pubtator
from spacy_arbo.util import ArboError

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


def test_predictions_of_the_gold_mentions_give_the_linking_accuracy(tmp_path, toy_kb):
    """`link --mentions input` writes the gold file's own spans: the share of gold mentions whose id
    set is right (NIL gold right when none is predicted) is the linking-only figure."""
    (tmp_path / "gold.pubtator").write_text(GOLD)
    linked = PREDICTED + "1\t23\t25\tWD\tChemical\tMESH:D006527\n"
    (tmp_path / "pred.pubtator").write_text(linked)
    scores = score_pubtator(tmp_path / "pred.pubtator", tmp_path / "gold.pubtator", toy_kb, ["Disease"])
    assert scores["accuracy"] == 2 / 3  # Diabetes right, fever's id set wrong, WD's NIL right
    assert score_pubtator(tmp_path / "pred.pubtator", tmp_path / "gold.pubtator", toy_kb)["accuracy"] == 3 / 4
    # Predictions of other spans (a recognizer's: here the Chemical one is missing) have no linking-only figure.
    (tmp_path / "pred2.pubtator").write_text(PREDICTED)
    assert "accuracy" not in score_pubtator(tmp_path / "pred2.pubtator", tmp_path / "gold.pubtator", toy_kb)


@pytest.mark.slow
def test_linking_the_gold_mentions_scores_as_evaluate(data_dir, tmp_path):
    """link --mentions input over NCBI test's PubTator file, then score-pubtator: the linking-only
    accuracy is evaluate's strict accuracy on the same gold mentions (TF-IDF linker, CTD KB)."""
    from spacy_arbo.cli import main
    from spacy_arbo.corpora import read_docbin
    from spacy_arbo.evaluation import evaluate_linking
    from spacy_arbo.kb.store import open_store
    from spacy_arbo.pipeline_loading import load_pipeline

    assert main(["build-kb", str(data_dir / "ctd" / "CTD_diseases_2017-06-06.tsv.gz"), str(tmp_path / "kb"),
                 "--format", "ctd"]) == 0
    assert main(["workflow", "convert-corpus", "ncbi", str(data_dir), str(tmp_path / "corpus"), "--kb",
                 str(tmp_path / "kb")]) == 0
    config = str(Path(__file__).resolve().parents[2] / "configs" / "tfidf.cfg")
    subprocess.run([sys.executable, "-m", "spacy", "assemble", config, str(tmp_path / "tfidf"), "--paths.kb",
                    str(tmp_path / "kb")], check=True, capture_output=True)
    gold = data_dir / "ncbi_disease" / "NCBItestset_corpus.txt"
    link_corpus(tmp_path / "tfidf", [gold], tmp_path / "test.pubtator", fmt="pubtator", mentions="input",
                progress=False)
    scores = score_pubtator(tmp_path / "test.pubtator", gold, open_store(tmp_path / "kb"))
    nlp = load_pipeline(tmp_path / "tfidf")
    expected = evaluate_linking(nlp, read_docbin(tmp_path / "corpus" / "test.spacy", nlp.vocab))
    assert scores["accuracy"] == pytest.approx(expected["accuracy_strict"], abs=5e-4)
    assert 0.6 < scores["accuracy"] < 0.9


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
    (tmp_path / "gold.pubtator").write_text(GOLD)
    (tmp_path / "pred.pubtator").write_text(PREDICTED)
    (tmp_path / "other.pubtator").write_text(PREDICTED.replace("1|", "2|").replace("1\t", "2\t"))
    with pytest.raises(ArboError, match="share no document"):
        score_pubtator(tmp_path / "other.pubtator", tmp_path / "gold.pubtator", toy_kb)
    with pytest.raises(ArboError, match=r"no mention has type Diseases \(--types\); its mention types: Disease \(3\), "
                       r"Chemical \(1\)\.$"):
        score_pubtator(tmp_path / "pred.pubtator", tmp_path / "gold.pubtator", toy_kb, ["Diseases"])
    (tmp_path / "unknown.pubtator").write_text(GOLD.replace("D0", "X0"))
    with pytest.raises(ArboError, match="none of its mentions has an id the KB knows"):
        score_pubtator(tmp_path / "pred.pubtator", tmp_path / "unknown.pubtator", toy_kb)


def one_doc(text, pmid):
    """`text` (a document of PMID 1) as the document `pmid`."""
    return text.replace("1|", f"{pmid}|").replace("\n1\t", f"\n{pmid}\t")


def test_ids_with_and_without_a_prefix_score_alike_without_a_kb(tmp_path):
    """NCBI's gold writes D003920, link's output MESH:D003920: that scored 0, exit 0, unless --kb."""
    (tmp_path / "gold.pubtator").write_text(GOLD)
    for spelling in ("MESH:", "mesh:"):
        (tmp_path / "pred.pubtator").write_text(PREDICTED.replace("MESH:", spelling))
        assert score_pubtator(tmp_path / "pred.pubtator", tmp_path / "gold.pubtator", None, ["Disease"]) == {
            "e2e_p": 0.5, "e2e_r": 0.5, "e2e_f": 0.5}


def test_ids_no_normalisation_reconciles_are_an_error_naming_one_of_each(tmp_path):
    gold = GOLD.replace("D003920", "UMLS:C0011849").replace("D005334|D003371", "UMLS:C0015967")
    (tmp_path / "gold.pubtator").write_text(gold)
    (tmp_path / "pred.pubtator").write_text(PREDICTED)
    with pytest.raises(ArboError) as error:
        score_pubtator(tmp_path / "pred.pubtator", tmp_path / "gold.pubtator", None, ["Disease"])
    assert str(error.value) == (
        f"{tmp_path / 'pred.pubtator'} and {tmp_path / 'gold.pubtator'} spell ids differently: 'MESH:D003920' "
        "(PMID 1, 0-8) in the one, 'UMLS:C0011849' (PMID 1, 0-8) in the other, and no normalisation makes them one "
        "id (docs/kb.md); read both through a KB that has both spellings as ids or alternative ids (--kb).")


def test_documents_in_one_file_only_are_an_error_naming_them(tmp_path):
    """5 predicted documents against a 1-document gold file scored the 4 others' mentions as false."""
    (tmp_path / "gold.pubtator").write_text(GOLD)
    (tmp_path / "pred.pubtator").write_text("".join(one_doc(PREDICTED, pmid) for pmid in range(1, 6)))
    with pytest.raises(ArboError) as error:
        score_pubtator(tmp_path / "pred.pubtator", tmp_path / "gold.pubtator")
    assert str(error.value) == (
        f"{tmp_path / 'pred.pubtator'} and {tmp_path / 'gold.pubtator'} hold different documents: 4 only in "
        f"{tmp_path / 'pred.pubtator'} (PMID 2, 3, 4, ...); score the predictions of the gold file's own texts "
        "(link GOLD), or cut both files to the same PMIDs.")
    (tmp_path / "gold2.pubtator").write_text(GOLD + one_doc(GOLD, 7))
    with pytest.raises(ArboError, match=r"4 only in .*pred.pubtator \(PMID 2, 3, 4, \.\.\.\); 1 only in "
                                        r".*gold2.pubtator \(PMID 7\); score"):
        score_pubtator(tmp_path / "pred.pubtator", tmp_path / "gold2.pubtator")
    (tmp_path / "empty.pubtator").write_text("\n")
    with pytest.raises(ArboError, match="empty.pubtator: no document"):
        score_pubtator(tmp_path / "empty.pubtator", tmp_path / "gold.pubtator")


def test_types_the_gold_file_lacks_are_an_error_listing_those_it_has(tmp_path):
    """One type of two that matches nothing was scored as if it had not been given."""
    (tmp_path / "gold.pubtator").write_text(GOLD)
    (tmp_path / "pred.pubtator").write_text(PREDICTED)
    with pytest.raises(ArboError) as error:
        score_pubtator(tmp_path / "pred.pubtator", tmp_path / "gold.pubtator", None, ["Disease", "Chemicals"])
    assert str(error.value) == (f"{tmp_path / 'gold.pubtator'}: no mention has type Chemicals (--types); its "
                                "mention types: Disease (3), Chemical (1).")


def test_predictions_of_another_kb_are_an_error(tmp_path, toy_kb):
    (tmp_path / "gold.pubtator").write_text(GOLD)
    (tmp_path / "pred.pubtator").write_text(PREDICTED.replace("MESH:D00", "X:"))
    with pytest.raises(ArboError) as error:
        score_pubtator(tmp_path / "pred.pubtator", tmp_path / "gold.pubtator", toy_kb)
    assert str(error.value) == (f"{tmp_path / 'pred.pubtator'}: none of its 2 ids is in --kb toy (e.g. 'X:3920' "
                                "(PMID 1, 0-8), 'X:5334' (PMID 1, 13-18)): it was linked against another KB.")


@pytest.mark.parametrize("types", [["Disease,Chemical"], ["Disease", "Chemical"], ["Disease,", "Chemical"],
                                   ["Disease", "--types", "Chemical"]])
def test_score_pubtator_types_comma_or_space_separated(tmp_path, types, capsys):
    from spacy_arbo.cli import main

    (tmp_path / "gold.pubtator").write_text(GOLD)
    (tmp_path / "pred.pubtator").write_text(PREDICTED)
    assert main(["score-pubtator", str(tmp_path / "pred.pubtator"), str(tmp_path / "gold.pubtator"), "--types",
                 *types]) == 0
    # WD's Chemical id D006527 is not predicted: 1 of 3 gold links found, 1 of 2 predicted right.
    assert capsys.readouterr().out == "e2e_p 0.5000  e2e_r 0.3333  e2e_f 0.4000\n"
    assert main(["score-pubtator", str(tmp_path / "pred.pubtator"), str(tmp_path / "gold.pubtator"), "--types",
                 "Disease,Nope"]) == 1
    assert capsys.readouterr().err == (f"error: {tmp_path / 'gold.pubtator'}: no mention has type Nope (--types); "
                                       "its mention types: Disease (3), Chemical (1).\n")
