"""Which label a linker's label-free confidence gives the KB names it links."""
import pytest

from spacy_arbo.pipeline.linker.linker_settings import LinkerSettings


@pytest.mark.parametrize("labels,discard,expected", [
    ([], [], "ENTITY"),
    (["Chemical", "Drug"], [], "Chemical"),
    ([], ["Chemical"], "ENTITY"),
    ([], ["ENTITY", "Chemical"], "ENTITY_ENTITY_Chemical"),
])
def test_name_label_is_a_label_the_linker_links(labels, discard, expected):
    settings = LinkerSettings(labels=labels, labels_discard=discard)
    assert settings.name_label == expected and settings.links_label(settings.name_label)
