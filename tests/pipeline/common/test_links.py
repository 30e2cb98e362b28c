"""The span extensions the components write: installed by one `install_extensions()`, at import
of `pipeline/common/links.py` and by each factory of a component that writes them."""
import pytest
import spacy
from spacy.tokens import Span

from spacy_arbo.pipeline.common.links import SPAN_EXTENSIONS, install_extensions

from ...util import hashed_model


def test_every_extension_is_installed_on_import():
    assert all(Span.has_extension(name) for name in SPAN_EXTENSIONS)


@pytest.mark.parametrize("factory, config", [("arbo_linker", {"model": hashed_model()}), ("link_memory", {}),
                                             ("link_confidence", {})])
def test_a_factory_installs_an_extension_removed_since(factory, config):
    Span.remove_extension("kb_confidence")
    try:
        spacy.blank("en").add_pipe(factory, config=config)
        assert Span.has_extension("kb_confidence")
    finally:
        install_extensions()


def test_an_extension_installed_already_keeps_its_default():
    """scispacy's EntityLinker installs `kb_ents` with [] for none."""
    Span.remove_extension("kb_ents")
    Span.set_extension("kb_ents", default=[])
    try:
        install_extensions()
        assert Span.get_extension("kb_ents")[0] == []
    finally:
        Span.remove_extension("kb_ents")
        install_extensions()
