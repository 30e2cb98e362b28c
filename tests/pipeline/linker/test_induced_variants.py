"""A disease the doc says a drug induced links to the KB's drug-induced entity of it, with the
doc's other mentions of it; nothing changes where the KB has no such entity, has two, the doc
names no inducer or one that is no substance, a link memory remembers the mention, or the
setting is off (as in pipelines saved before it)."""
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
HEPATITIS, PARKINSON, OTHER = "MESH:D006505", "MESH:D010300", "MESH:OTHER"
ENTITIES = [
    Entity(DYSKINESIAS, "Dyskinesias", ("Dyskinesia",)),
    Entity(INDUCED_DYSKINESIA, "Dyskinesia, Drug-Induced", ("Drug-Induced Dyskinesias",)),
    Entity(PSYCHOSES, "Psychotic Disorders", ("Psychosis", "Psychoses")),
    Entity(INDUCED_PSYCHOSES, "Psychoses, Substance-Induced"),
    Entity(HEPATITIS, "Hepatitis"),
    Entity(PARKINSON, "Parkinson Disease"),
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


def test_a_link_memory_after_the_linker_keeps_what_it_remembers(tmp_path):
    EntityStore(ENTITIES, source="toy").to_disk(tmp_path / "kb")
    nlp = make_nlp(tmp_path / "kb", kb_names_first=True)
    nlp.add_pipe("link_memory", config={"min_count": 1, "min_share": 0.6}).add(
        [make_doc(nlp, "Dyskinesias", [("Dyskinesias", DYSKINESIAS)])])
    # The memory's texts are case-blind: both mentions are its, and keep its link and candidates.
    assert linked(nlp)[:2] == [(DYSKINESIAS, [(DYSKINESIAS, 1.0)])] * 2


def relinked(text, mentions, decided, entities=ENTITIES, memories=()):
    """The (id, candidates) that `InducedVariants.relink` leaves of links to `decided` ids, each
    ranked first (0.8) before the drug-induced dyskinesia (0.6) and another entity (0.5)."""
    kb = EntityStore(entities, source="toy")
    pairs = kb.alias_pairs()
    variants = InducedVariants(lambda: SimpleNamespace(alias_pairs=lambda: pairs, kb=kb))
    doc = make_doc(spacy.blank("en"), text, [(m, "") for m in mentions])
    links = [Link([] if kb_id == NIL else [(kb_id, 0.8), (INDUCED_DYSKINESIA, 0.6), (OTHER, 0.5)], kb_id,
                  path=None if kb_id == NIL else [kb_id, (0, 0, 1, "x")]) for kb_id in decided]
    variants.relink(list(doc.ents), links, memories)
    return [(link.kb_id, link.candidates, link.path) for link in links]


def test_the_variant_swaps_places_with_the_entity_and_roots_its_cluster_path():
    (found,) = relinked("Levodopa-induced dyskinesias.", ["dyskinesias"], [DYSKINESIAS])
    assert found == (INDUCED_DYSKINESIA, [(INDUCED_DYSKINESIA, 0.8), (DYSKINESIAS, 0.6), (OTHER, 0.5)],
                     [INDUCED_DYSKINESIA, (0, 0, 1, "x")])


def test_the_inducer_is_read_before_the_mention_or_at_its_start_but_not_after_it_nor_as_a_verb():
    assert relinked("Haloperidol-induced psychosis resolved.", ["Haloperidol-induced psychosis"],
                    [PSYCHOSES])[0][0] == INDUCED_PSYCHOSES
    assert relinked("Cisplatin (CDDP)\u2013induced psychosis.", ["psychosis"], [PSYCHOSES])[0][0] == INDUCED_PSYCHOSES
    assert relinked("S-ketamine induced psychosis.", ["psychosis"], [PSYCHOSES])[0][0] == INDUCED_PSYCHOSES
    for text in ("psychosis induced by cocaine", "an experimentally induced psychosis", "it was induced psychosis",
                 "stress-induced psychosis", "Exercise-induced psychosis"):
        assert relinked(text, ["psychosis"], [PSYCHOSES])[0][0] == PSYCHOSES, text


def test_a_mention_linked_whole_to_the_variant_takes_the_docs_other_mentions_with_it():
    text = "Levodopa-induced dyskinesias were seen; dyskinesias resolved."
    found = relinked(text, ["Levodopa-induced dyskinesias", "dyskinesias"], [INDUCED_DYSKINESIA, DYSKINESIAS])
    assert [kb_id for kb_id, _, _ in found] == [INDUCED_DYSKINESIA, INDUCED_DYSKINESIA]


def test_a_variant_found_by_the_mentions_text_alone_relinks_that_mention_only():
    # Linked to Parkinson disease, whose names name no variant: the text's "dyskinesias" does.
    text = "Levodopa-induced dyskinesias in Parkinson disease."
    found = relinked(text, ["dyskinesias", "Parkinson disease"], [PARKINSON, PARKINSON])
    assert [kb_id for kb_id, _, _ in found] == [INDUCED_DYSKINESIA, PARKINSON]


def test_no_variant_two_variants_nil_composites_and_remembered_mentions_are_left_as_they_are():
    text = "Cocaine-induced hepatitis and dyskinesias."
    assert relinked(text, ["hepatitis"], [HEPATITIS])[0][0] == HEPATITIS
    two = [*ENTITIES, Entity("MESH:D999999", "Drug-Induced Dyskinesia, Tardive", ("Dyskinesias, Substance-Induced",))]
    assert relinked("Cocaine-induced dyskinesias.", ["dyskinesias"], [DYSKINESIAS], two)[0][0] == DYSKINESIAS
    assert relinked("Cocaine-induced dyskinesias.", ["dyskinesias"], [NIL]) == [(NIL, [], None)]
    composite = f"{DYSKINESIAS}|{HEPATITIS}"
    assert relinked("Cocaine-induced dyskinesias and hepatitis.", ["dyskinesias and hepatitis"],
                    [composite])[0][0] == composite
    remembering = SimpleNamespace(lookup=lambda span: (DYSKINESIAS, 1.0))
    assert relinked("Cocaine-induced dyskinesias.", ["dyskinesias"], [DYSKINESIAS],
                    memories=[remembering])[0][0] == DYSKINESIAS


def test_a_variant_added_to_the_kb_is_read(tmp_path):
    EntityStore([e for e in ENTITIES if e.id != INDUCED_DYSKINESIA], source="toy").to_disk(tmp_path / "kb")
    nlp = make_nlp(tmp_path / "kb", kb_names_first=True)
    assert linked(nlp)[0][0] == DYSKINESIAS
    nlp.get_pipe("arbo_linker").update_kb([e for e in ENTITIES if e.id == INDUCED_DYSKINESIA])
    assert linked(nlp)[0][0] == INDUCED_DYSKINESIA
