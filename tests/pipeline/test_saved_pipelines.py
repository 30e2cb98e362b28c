"""Pipelines saved by an earlier commit (tests/fixtures/saved_pipelines, written by
tests/fixtures/make_saved_pipelines.py) load and link as they did when saved."""
from pathlib import Path

import pytest
import spacy
import srsly

from spacy_arbo.component_settings import CFG
from spacy_arbo.pipeline.common.gold_ents import strip_links
from tests.conftest import TOY_TEXTS, make_doc
from tests.fixtures.make_saved_pipelines import MODEL, VARIANTS, describe

SAVED = Path(__file__).parents[1] / "fixtures" / "saved_pipelines"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_saved_pipeline_links_as_when_it_was_saved(variant, tmp_path):
    expected = srsly.read_json(SAVED / "expected_links.json")["links"][variant]
    nlp = spacy.load(SAVED / variant)
    docs = [strip_links(make_doc(nlp, text, mentions)) for text, mentions in TOY_TEXTS]
    got = describe(nlp.pipe(docs))
    for doc_got, doc_expected in zip(got, expected):
        for ent, want in zip(doc_got, doc_expected):
            assert (ent["text"], ent["kb_id"], ent["cluster"], ent["parts"]) == \
                (want["text"], want["kb_id"], want["cluster"], want["parts"])
            assert [i for i, _ in ent["candidates"]] == [i for i, _ in want["candidates"]]
            assert [s for _, s in ent["candidates"]] == pytest.approx([s for _, s in want["candidates"]], abs=1e-4)
    # Saved again by this commit, with its settings in its cfg, it still links the same.
    assert not (SAVED / variant / "arbo_linker" / CFG).exists()
    nlp.to_disk(tmp_path / variant)
    assert srsly.read_json(tmp_path / variant / "arbo_linker" / CFG) == nlp.get_pipe("arbo_linker").cfg
    assert describe(spacy.load(tmp_path / variant).pipe(docs)) == got
    # Through bytes into a pipeline made with today's defaults, it links the same too.
    other = spacy.blank("en")
    other.add_pipe("arbo_linker", config={"model": MODEL})
    assert describe(other.from_bytes(nlp.to_bytes()).pipe(docs)) == got
