"""With a link memory after it, the linker neither encodes nor searches the mentions the
memory remembers, and every `kb_id_` is what it was when it did."""
from ..conftest import make_doc
from ..util import make_nlp, unlinked
from .test_link_memory import DIABETES, MENTIONS, TEXT, train_docs


def recorded_mentions(nlp):
    """The mention texts the pipeline's linker encodes from now on."""
    encoded = []
    encoder = nlp.get_pipe("arbo_linker").encoder
    encode = encoder.encode_mentions
    encoder.encode_mentions = lambda mentions, progress=False: encoded.extend(m.mention for m in mentions) or \
        encode(mentions, progress)
    return encoded


def linked_with_memory(toy_kb_dir, memory_first):
    nlp = make_nlp(toy_kb_dir, memory_first=memory_first)
    nlp.add_pipe("link_memory", config={"min_count": 1, "min_share": 0.6})
    nlp.get_pipe("link_memory").add(train_docs(nlp))
    encoded = recorded_mentions(nlp)
    docs = list(nlp.pipe(unlinked(nlp, [make_doc(nlp, TEXT, MENTIONS)] * 2)))
    return [[(e.text, e.kb_id_) for e in doc.ents] for doc in docs], encoded, docs


def test_remembered_mentions_are_not_encoded_and_links_stay_the_same(toy_kb_dir):
    first, encoded_first, docs = linked_with_memory(toy_kb_dir, True)
    everything, encoded_all, _ = linked_with_memory(toy_kb_dir, False)
    assert first == everything
    # "SUGAR SICKNESS" (remembered as diabetes) and "odd turn" (remembered as NIL) are not
    # read; "spells" (fever once, cough once) is below min_share and is linked as usual.
    assert "SUGAR SICKNESS" in encoded_all and "odd turn" in encoded_all
    assert "SUGAR SICKNESS" not in encoded_first and "odd turn" not in encoded_first
    assert "spells" in encoded_first
    sugar = docs[0].ents[0]
    assert sugar.kb_id_ == DIABETES and sugar._.kb_candidates == [(DIABETES, 1.0)]


def test_without_a_memory_after_it_every_mention_is_encoded(toy_kb_dir):
    nlp = make_nlp(toy_kb_dir)
    nlp.add_pipe("link_memory", first=True).add(train_docs(nlp))
    encoded = recorded_mentions(nlp)
    nlp(unlinked(nlp, [make_doc(nlp, TEXT, MENTIONS)])[0])
    assert "SUGAR SICKNESS" in encoded


def test_tuning_the_memory_scores_the_pipeline_without_it_as_without_it(toy_kb_dir):
    from spacy_arbo.tuning.memory_settings import tune_link_memory

    from .test_link_memory import train_docs as memory_docs
    dev = [make_doc(make_nlp(toy_kb_dir), TEXT, [(text, DIABETES if text == "SUGAR SICKNESS" else "MESH:D005334")
                                                 for text, _ in MENTIONS])]
    bare = make_nlp(toy_kb_dir)
    memory = bare.add_pipe("link_memory")
    memory.add(memory_docs(bare))
    with_memory_in_pipeline = tune_link_memory(bare, memory, dev)[0]
    bare.remove_pipe("link_memory")
    assert tune_link_memory(bare, memory, dev)[0] == with_memory_in_pipeline
