import pytest
import spacy

from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.pipeline.common.composites import composite_parts

from ...conftest import make_doc
from ...util import make_nlp, unlinked

# The coordinated composite mentions of NCBI Disease test (and three of dev), as written.
NCBI_COMPOSITES = [
    ("sporadic breast, brain, prostate and kidney cancer",
     ["sporadic breast cancer", "sporadic brain cancer", "sporadic prostate cancer", "sporadic kidney cancer"]),
    ("spinocerebellar ataxias 1 and 2", ["spinocerebellar ataxias 1", "spinocerebellar ataxias 2"]),
    ("pineal and retinal tumours", ["pineal tumours", "retinal tumours"]),
    ("retinal and the pineal tumours", ["retinal tumours", "pineal tumours"]),
    ("Saethre-Chotzen, Crouzon, and Pfeiffer syndromes",
     ["Saethre-Chotzen syndromes", "Crouzon syndromes", "Pfeiffer syndromes"]),
    ("colorectal adenomas and carcinoma", ["colorectal adenomas", "colorectal carcinoma"]),
    ("colorectal adenomas and/or carcinoma", ["colorectal adenomas", "colorectal carcinoma"]),
    ("colorectal, breast and other cancers", ["colorectal cancers", "breast cancers", "other cancers"]),
    ("ovarian or other cancers", ["ovarian cancers", "other cancers"]),
    ("male and female breast cancer", ["male breast cancer", "female breast cancer"]),
    ("non-familial breast and ovarian cancers", ["non-familial breast cancers", "non-familial ovarian cancers"]),
    ("breast/ovarian cancer", ["breast cancer", "ovarian cancer"]),
    ("C6 or C7 deficiency", ["C6 deficiency", "C7 deficiency"]),
    ("combined subtotal deficiencies of C6 and C7",
     ["combined subtotal deficiencies of C6", "combined subtotal deficiencies of C7"]),
    ("deafness and blindness", ["deafness", "blindness"]),
]
# Composite by their ids, not by coordination; or a list that is not one coordination.
NOT_SPLIT = ["ACTH deficiency", "renal hamartomas", "HPRT-APRT-deficient", "colorectal, or other, cancers",
             "and breast cancer", "breast cancer and", "Wilson disease"]


@pytest.fixture(scope="module")
def nlp():
    return spacy.blank("en")


@pytest.mark.parametrize("text,parts", NCBI_COMPOSITES)
def test_coordinated_mentions_split_into_parts(nlp, text, parts):
    assert composite_parts(nlp(text)[:]) == parts


@pytest.mark.parametrize("text", NOT_SPLIT)
def test_other_mentions_are_not_split(nlp, text):
    assert composite_parts(nlp(text)[:]) == []


def test_parts_of_a_mention_inside_a_sentence(nlp):
    doc = nlp("Carriers of BRCA1 develop breast and ovarian cancers early.")
    assert composite_parts(doc[4:8]) == ["breast cancers", "ovarian cancers"]


COMPOSITE_KB = [
    ("MESH:D001943", "Breast Neoplasms", ("breast cancer", "breast tumor")),
    ("MESH:D010051", "Ovarian Neoplasms", ("ovarian cancer", "ovarian tumor")),
    ("MESH:D061325", "Hereditary Breast and Ovarian Cancer Syndrome", ("HBOC", "breast and ovarian cancers")),
    ("MESH:D001932", "Brain Neoplasms", ("brain cancer",)),
    ("MESH:D011471", "Prostatic Neoplasms", ("prostate cancer",)),
    ("MESH:D007680", "Kidney Neoplasms", ("kidney cancer",)),
    ("MESH:D003638", "Deafness", ("hearing loss",)),
]
TEXT = ("Sporadic breast, brain, prostate and kidney cancer were seen. Breast and ovarian cancer recur. "
        "Deafness was common.")
MENTIONS = [("Sporadic breast, brain, prostate and kidney cancer",
             "MESH:D001943|MESH:D001932|MESH:D011471|MESH:D007680"),
            ("Breast and ovarian cancer", "MESH:D001943|MESH:D010051"), ("Deafness", "MESH:D003638")]


@pytest.fixture
def composite_kb_dir(tmp_path):
    EntityStore([Entity(i, n, a) for i, n, a in COMPOSITE_KB], source="toy").to_disk(tmp_path / "kb")
    return tmp_path / "kb"


@pytest.mark.parametrize("composites,expected", [
    ("split", [kb_id for _, kb_id in MENTIONS]),
    ("best", [kb_id for _, kb_id in MENTIONS]),
    # Read whole, a composite mention gets one of its parts' ids.
    ("whole", ["MESH:D011471", "MESH:D061325", "MESH:D003638"]),
])
def test_composite_mentions_get_an_id_per_part(composite_kb_dir, composites, expected):
    nlp = make_nlp(composite_kb_dir, candidate_source="tfidf", composites=composites)
    doc = nlp(unlinked(nlp, [make_doc(nlp, TEXT, MENTIONS)])[0])
    assert [e.kb_id_ for e in doc.ents] == expected
    first = doc.ents[0]
    if composites == "whole":
        assert first._.arbo_parts is None
    else:
        assert [(text, kb_id) for text, kb_id, _ in first._.arbo_parts] == [
            ("Sporadic breast cancer", "MESH:D001943"), ("Sporadic brain cancer", "MESH:D001932"),
            ("Sporadic prostate cancer", "MESH:D011471"), ("Sporadic kidney cancer", "MESH:D007680")]
        assert [kb_id for kb_id, _ in first._.kb_ents[:4]] == expected[0].split("|")
        assert doc.ents[2]._.arbo_parts is None


def test_best_keeps_the_whole_mention_when_it_scores_higher(composite_kb_dir):
    text = "Carriers develop breast and ovarian cancers."
    mention = [("breast and ovarian cancers", "MESH:D061325")]
    results = {}
    for composites in ("split", "best"):
        nlp = make_nlp(composite_kb_dir, candidate_source="tfidf", composites=composites)
        results[composites] = nlp(unlinked(nlp, [make_doc(nlp, text, mention)])[0]).ents[0].kb_id_
    assert results == {"split": "MESH:D001943|MESH:D010051", "best": "MESH:D061325"}
