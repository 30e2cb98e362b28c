"""A KB abbreviation stays a mention where the doc defines it or names its entity in words."""
import spacy
from spacy.tokens import Span

from spacy_arbo.pipeline.common.backed_short_forms import unbacked_short_forms

from ...conftest import TOY_ENTITIES


def linked(doc, start, end, kb_id):
    return Span(doc, start, end, label="Disease", kb_id=kb_id)


def test_a_short_form_is_backed_by_a_definition_or_a_mention_written_out_of_its_entity():
    doc = spacy.blank("en")("DM and BW rose; RT helped; myotonic dystrophy and fever.")
    dm, bw, rt = linked(doc, 0, 1, "D1"), linked(doc, 2, 3, "D2"), linked(doc, 5, 6, "D3|D4")
    written = [linked(doc, 8, 10, "D1"), linked(doc, 11, 12, "D4")]
    assert unbacked_short_forms([dm, bw, rt], written, set()) == {(2, 3)}
    assert unbacked_short_forms([dm, bw, rt], written, {(bw.start_char, bw.end_char)}) == set()
    assert unbacked_short_forms([dm, bw, rt], [], set()) == {(0, 1), (2, 3), (5, 6)}


def test_the_kb_filter_drops_the_finders_unbacked_short_forms_unless_told_not_to(toy_kb):
    """"DM" is an alias of the toy KB's diabetes: a proposal where the doc writes no diabetes."""
    from spacy.language import Language

    ids = {name.lower(): kb_id for kb_id, name, aliases, _ in TOY_ENTITIES for name in (name, *aliases)}

    @Language.component("toy_names_linker")
    def toy_names_linker(doc):
        doc.ents = [linked(doc, e.start, e.end, ids[e.text.lower()]) for e in doc.ents]
        return doc

    def pipeline(**config):
        nlp = spacy.blank("en")
        nlp.add_pipe("kb_mention_finder").initialize(nlp=nlp, kb_loader=lambda _vocab: toy_kb)
        nlp.add_pipe("toy_names_linker")
        nlp.add_pipe("kb_mention_filter", config=config)
        return nlp

    nlp = pipeline()
    assert [e.text for e in nlp("The DM cohort had fever.").ents] == ["fever"]
    assert [e.text for e in nlp("The DM cohort had diabetes mellitus.").ents] == ["DM", "diabetes mellitus"]
    assert [e.text for e in nlp("Diabetes mellitus (DM) is common; DM rises.").ents] == ["Diabetes mellitus", "DM", "DM"]
    doc = nlp("The DM cohort had fever.")
    assert [s.text for s in doc.spans["kb_mentions"]] == ["fever"]
    assert [e.text for e in pipeline(backed_short_forms=False)("The DM cohort had fever.").ents] == ["DM", "fever"]
