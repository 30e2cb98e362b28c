import numpy as np

from spacy_arbo.encoders.templates import MentionInput
from spacy_arbo.encoders import linker_encoder as encoding

from ..util import make_nlp


def _counting(monkeypatch):
    """The number of mentions each encoder call encodes, appended as they come."""
    counted = []
    original = encoding.encode_by_length
    monkeypatch.setattr(encoding, "encode_by_length", lambda items, *a, **k: counted.append(len(items)) or
                        original(items, *a, **k))
    return counted


def test_a_mention_read_twice_in_one_call_is_encoded_once(toy_kb_dir, monkeypatch):
    encoder = make_nlp(toy_kb_dir).get_pipe("arbo_linker").encoder
    counted = _counting(monkeypatch)
    fever, cough = MentionInput("", "fever", ""), MentionInput("", "cough", "")
    vectors = encoder.encode_mentions([fever, cough, fever, fever])
    assert counted == [2] and vectors.shape == (4, encoder.dim)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_allclose(vectors[:2], encoder.encode_mentions([fever, cough]), atol=1e-6)


def test_a_block_inside_another_keeps_the_outer_ones_vectors(toy_kb_dir, monkeypatch):
    encoder = make_nlp(toy_kb_dir).get_pipe("arbo_linker").encoder
    counted = _counting(monkeypatch)
    fever = MentionInput("", "fever", "")
    with encoder.reusing_mention_vectors():
        encoder.encode_mentions([fever])
        with encoder.reusing_mention_vectors():
            encoder.encode_mentions([fever])
        encoder.encode_mentions([fever])
    encoder.encode_mentions([fever])
    assert counted == [1, 0, 0, 1]


def test_the_fingerprint_is_hashed_again_only_when_the_weights_version_moves(toy_kb_dir, monkeypatch):
    linker = make_nlp(toy_kb_dir).get_pipe("arbo_linker")
    module = linker.encoder.module()
    hashed = []
    original = type(module).fingerprint
    monkeypatch.setattr(type(module), "fingerprint", lambda self, e=False: hashed.append(e) or original(self, e))
    linker.encoder.weights_changed()
    first = linker.encoder.fingerprint(True)
    assert linker.encoder.fingerprint(True) == first and hashed == [True]
    linker.encoder.weights_changed()
    assert linker.encoder.fingerprint(True) == first and hashed == [True, True]
