import numpy
import pytest
import spacy
from spacy.tokens import Span
from spacy.training import Example
from thinc.api import Adam, Config, fix_random_seed

from spacy_arbo.cli.pipeline import add_recognizer
from spacy_arbo.encoders.span_marks import BEGIN, INSIDE, LAST, OUTSIDE, UNIT, build_span_marks, mark_ids
from spacy_arbo.kb.entities import Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.util import ArboError

from ..conftest import TOY_ENTITIES
from ..util import make_nlp


def marked_doc(nlp, text, spans, key="marks"):
    doc = nlp.make_doc(text)
    doc.spans[key] = [Span(doc, start, end) for start, end in spans]
    return doc


def test_mark_ids_say_where_each_span_begins_and_ends():
    nlp = spacy.blank("en")
    doc = marked_doc(nlp, "Colon cancer and congestive heart failure with fever", [(0, 2), (3, 6), (4, 6), (7, 8)])
    assert mark_ids(doc, "marks").tolist() == [BEGIN, LAST, OUTSIDE, BEGIN, INSIDE, LAST, OUTSIDE, UNIT]
    with pytest.raises(ArboError, match=r"doc.spans\['kb_names'\].*kb_name_marker"):
        mark_ids(doc, "kb_names")


def test_tokens_with_the_same_mark_read_the_same_vector():
    nlp = spacy.blank("en")
    model = build_span_marks("marks", 8)
    model.initialize()
    docs = [marked_doc(nlp, "a b c d", [(1, 3)]), marked_doc(nlp, "e f", [])]
    vectors = model.predict(docs)
    assert [v.shape for v in vectors] == [(4, 8), (2, 8)]
    assert numpy.array_equal(vectors[0][0], vectors[1][1])
    assert not numpy.array_equal(vectors[0][0], vectors[0][1])
    assert not numpy.array_equal(vectors[0][1], vectors[0][2])
    # Only the recognizer's sizing pass on unmarked corpus docs right after initialization passes.
    with pytest.raises(ArboError, match="marks"):
        model.predict([nlp.make_doc("unmarked")])
    model.initialize(X=[nlp.make_doc("unmarked")])
    sized = model.predict([nlp.make_doc("unmarked")])[0]
    assert numpy.array_equal(sized[0], model.predict([marked_doc(nlp, "outside", [])])[0][0])
    with pytest.raises(ArboError, match="marks"):
        model.predict([nlp.make_doc("unmarked")])


RECOGNIZER = """
[model]
@architectures = "spacy.TransitionBasedParser.v2"
state_type = "ner"
extra_state_tokens = false
hidden_width = 32
maxout_pieces = 2
use_upper = false

[model.tok2vec]
@architectures = "spacy_arbo.SpanMarks.v1"
spans_key = "kb_names"
width = 16
"""


@pytest.fixture(scope="module")
def marks_recognizer():
    """A recognizer that reads nothing but the marks of the toy KB's names, trained on some."""
    fix_random_seed(0)
    nlp = spacy.blank("en")
    finder = nlp.add_pipe("kb_name_marker", name="kb_names")
    kb = EntityStore([Entity(*entity) for entity in TOY_ENTITIES], source="toy")
    finder.initialize(nlp=nlp, kb_loader=lambda _vocab: kb)
    nlp.add_pipe("ner", config=Config().from_str(RECOGNIZER))
    sentences = [("The patient had {} today.", "diabetes"), ("Signs of {} were seen.", "coughing"),
                 ("The patient had a visitor today.", None), ("Signs of {} were seen.", "Wilson disease"),
                 ("A history of {} was noted.", "colon cancer"), ("Signs of recovery were seen.", None),
                 ("The patient had {} today.", "cardiac failure")]
    examples = []
    for template, name in sentences:
        text = template.format(name)
        ents = [] if name is None else [(text.index(name), text.index(name) + len(name), "Disease")]
        examples.append(Example.from_dict(nlp.make_doc(text), {"entities": ents}))
    nlp.get_pipe("ner").initialize(lambda: examples, nlp=nlp)
    optimizer = Adam(0.01)
    for _ in range(60):
        nlp.update(examples, sgd=optimizer, annotates=["kb_names"], drop=0.0)
    return nlp


UNSEEN = "Reports of heart decompensation came in."


def test_a_recognizer_finds_kb_names_it_never_saw_through_the_marks(marks_recognizer):
    """Nothing but the mark tells the name apart from the words around it."""
    assert [(e.text, e.label_) for e in marks_recognizer(UNSEEN).ents] == [("heart decompensation", "Disease")]
    assert not marks_recognizer("Reports of rain came in.").ents


def test_sources_with_its_marks_into_a_linking_pipeline(marks_recognizer, toy_kb_dir, tmp_path):
    linker = make_nlp(toy_kb_dir)
    add_recognizer(linker, marks_recognizer)
    assert linker.pipe_names == ["kb_names", "ner", "mention_consistency", "arbo_linker"]
    texts = [UNSEEN, "The patient had diabetes today."]
    linked = [[(e.text, e.kb_id_) for e in doc.ents] for doc in linker.pipe(texts)]
    assert [[text for text, _ in doc] for doc in linked] == [["heart decompensation"], ["diabetes"]]
    assert all(kb_id.startswith("MESH:") for doc in linked for _, kb_id in doc)
    linker.to_disk(tmp_path / "linked")
    assert [[(e.text, e.kb_id_) for e in doc.ents] for doc in spacy.load(tmp_path / "linked").pipe(texts)] == linked
    with pytest.raises(ArboError, match="already has a component named 'kb_names'"):
        add_recognizer(linker, marks_recognizer, consistency=False)
