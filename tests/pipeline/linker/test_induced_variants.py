"""A disease the doc says a substance induced links to the KB's drug-induced entity of it, with
the doc's other mentions of it; nothing changes where the KB has no such entity, has two, the
doc names no inducer, or the setting is off (as in pipelines saved before it)."""
from types import SimpleNamespace

import spacy

from spacy_arbo.kb.entities import NIL, Entity
from spacy_arbo.kb.store import EntityStore
from spacy_arbo.pipeline.linker.earlier_defaults import settings_saved_without
from spacy_arbo.pipeline.linker.induced_variants import InducedVariants
from spacy_arbo.pipeline.linker.link_decisions import Link
from spacy_arbo.pipeline.linker.linker_settings import LinkerSettings

from ...conftest import make_doc
from ...util import make_nlp, unlinked

DYSKINESIAS, INDUCED_DYSKINESIA = "MESH:D020820", "MESH:D004409"
PSYCHOSES, INDUCED_PSYCHOSES = "MESH:D011618", "MESH:D011605"
HEPATITIS = "MESH:D006505"
ENTITIES = [
    Entity(DYSKINESIAS, "Dyskinesias", ("Dyskinesia",)),
    Entity(INDUCED_DYSKINESIA, "Dyskinesia, Drug-Induced", ("Drug-Induced Dyskinesias",)),
    Entity(PSYCHOSES, "Psychotic Disorders", ("Psychosis", "Psychoses")),
    Entity(INDUCED_PSYCHOSES, "Psychoses, Substance-Induced"),
    Entity(HEPATITIS, "Hepatitis"),
]
TEXT = "Levodopa-induced dyskinesias are common. Dyskinesias improved, but hepatitis and psychosis persisted."
MENTIONS = [("dyskinesias", ""), ("Dyskinesias", ""), ("hepatitis", ""), ("psychosis", "")]


def linked(nlp, text=TEXT, mentions=MENTIONS):
    doc = nlp(unlinked(nlp, [make_doc(nlp, text, mentions)])[0])
    return [(e.kb_id_, e._.kb_candidates[:1]) for e in doc.ents]


def test_every_mention_of_a_disease_the_doc_says_a_drug_induced_links_to_its_induced_entity(tmp_path):
    EntityStore(ENTITIES, source="toy").to_disk(tmp_path / "kb")
    nlp = make_nlp(tmp_path / "kb", kb_names_first=True)
    assert linked(nlp) == [(INDUCED_DYSKINESIA, [(INDUCED_DYSKINESIA, 1.0)])] * 2 + [
        (HEPATITIS, [(HEPATITIS, 1.0)]), (PSYCHOSES, [(PSYCHOSES, 1.0)])]
    # No inducer in this doc: the general entity.
    assert linked(nlp, "Dyskinesias improved.", [("Dyskinesias", "")]) == [(DYSKINESIAS, [(DYSKINESIAS, 1.0)])]
    # Off, as in a pipeline saved before the setting: the general entity, whatever the doc says.
    off = make_nlp(tmp_path / "kb", kb_names_first=True, induced_variants=False)
    assert [kb_id for kb_id, _ in linked(off)] == [DYSKINESIAS, DYSKINESIAS, HEPATITIS, PSYCHOSES]
    assert settings_saved_without({"top_k"}, LinkerSettings())["induced_variants"] is False


def relinked(entities, text, mentions, decided):
    """The links `InducedVariants.relink` leaves of `decided` ids (each its one candidate, 0.8)."""
    kb = EntityStore(entities, source="toy")
    pairs = kb.alias_pairs()
    variants = InducedVariants(lambda: SimpleNamespace(alias_pairs=lambda: pairs, kb=kb))
    doc = make_doc(spacy.blank("en"), text, [(m, "") for m in mentions])
    links = [Link([] if kb_id == NIL else [(kb_id, 0.8), ("MESH:OTHER", 0.5)], kb_id) for kb_id in decided]
    variants.relink(list(doc.ents), links)
    return [(link.kb_id, link.candidates) for link in links]


def test_the_inducer_is_read_before_the_mention_or_at_its_start_and_the_variant_takes_the_entitys_place():
    assert relinked(ENTITIES, "Haloperidol-induced psychosis resolved.", ["Haloperidol-induced psychosis"],
                    [PSYCHOSES]) == [(INDUCED_PSYCHOSES, [(INDUCED_PSYCHOSES, 0.8), ("MESH:OTHER", 0.5)])]
    assert relinked(ENTITIES, "psychosis induced by cocaine", ["psychosis"], [PSYCHOSES]) == [
        (PSYCHOSES, [(PSYCHOSES, 0.8), ("MESH:OTHER", 0.5)])]


def test_no_variant_two_variants_nil_and_composite_links_are_left_as_they_are():
    text = "Cocaine-induced hepatitis and dyskinesias."
    assert relinked(ENTITIES, text, ["hepatitis"], [HEPATITIS])[0][0] == HEPATITIS
    two = [*ENTITIES, Entity("MESH:D999999", "Drug-Induced Dyskinesia, Tardive", ("Dyskinesias, Substance-Induced",))]
    assert relinked(two, "Cocaine-induced dyskinesias.", ["dyskinesias"], [DYSKINESIAS])[0][0] == DYSKINESIAS
    assert relinked(ENTITIES, text, ["hepatitis"], [NIL]) == [(NIL, [])]
    composite = f"{DYSKINESIAS}|{HEPATITIS}"
    assert relinked(ENTITIES, text, ["hepatitis and dyskinesias"], [composite])[0][0] == composite


def test_a_variant_added_to_the_kb_is_read(tmp_path):
    kb = EntityStore([e for e in ENTITIES if e.id != INDUCED_DYSKINESIA], source="toy")
    kb.to_disk(tmp_path / "kb")
    nlp = make_nlp(tmp_path / "kb", kb_names_first=True)
    assert linked(nlp)[0][0] == DYSKINESIAS
    nlp.get_pipe("arbo_linker").update_kb([e for e in ENTITIES if e.id == INDUCED_DYSKINESIA])
    assert linked(nlp)[0][0] == INDUCED_DYSKINESIA
