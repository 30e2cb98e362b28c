"""A bad value in a component's config is one line naming the component, the setting, the value
and what it takes, wherever the config is read: `add_pipe`, `spacy.load`, spaCy's commands."""
import subprocess
import sys

import pytest
import spacy
from confection import ConfigValidationError
from spacy.cli._util import show_validation_error

from spacy_arbo.component_settings import ConfigSettingError
from spacy_arbo.util import ArboError

from .test_cli import HASHED_CONFIG


@pytest.mark.parametrize("factory,config,message", [
    ("arbo_linker", {"threshold": "abc"}, "arbo_linker: threshold takes a number or null; got 'abc'."),
    ("arbo_linker", {"top_k": 0}, "arbo_linker: top_k takes a positive integer; got 0."),
    ("multi_cross_reranker", {"top_n": 0}, "multi_cross_reranker: top_n takes a positive integer; got 0."),
    ("link_memory", {"min_share": "abc"}, "link_memory: min_share takes a number in (0.5, 1]; got 'abc'."),
    ("kb_mention_finder", {"mode": "x"}, "kb_mention_finder: Unknown mode 'x'; expected one of ('add', 'replace')."),
    ("kb_mention_finder", {"min_chars": 0}, "kb_mention_finder: min_chars takes a positive integer; got 0."),
    ("mention_consistency", {"min_share": 2},
     "mention_consistency: min_share takes a number in (0, 1]; got 2."),
])
def test_add_pipe_names_the_component_setting_and_value(factory, config, message):
    """confection's own check printed the whole config dict, 1,600 characters on one line."""
    with pytest.raises(ConfigSettingError) as error:
        spacy.blank("en").add_pipe(factory, config=config)
    assert str(error.value) == message
    assert isinstance(error.value, ArboError) and isinstance(error.value, ConfigValidationError)


def test_spacys_commands_print_it_as_their_own_validation_error(capsys):
    """`spacy train` reads the config under show_validation_error: one line, exit 1."""
    with pytest.raises(SystemExit) as exit_:
        with show_validation_error("config.cfg", hint_fill=False):
            spacy.blank("en").add_pipe("arbo_linker", config={"top_k": 0})
    assert exit_.value.code == 1
    printed = capsys.readouterr().out.strip()
    assert "✘ arbo_linker: top_k takes a positive integer; got 0." in printed and "\n" not in printed


def test_spacy_assemble_prints_a_bad_setting_in_one_line(tmp_path, toy_kb_dir):
    """A 60-line traceback through spaCy and confection before; spaCy's commands load
    spacy_arbo.spacy_cli (the `spacy_cli` entry point) before they run."""
    (tmp_path / "bad.cfg").write_text(HASHED_CONFIG.replace("top_k = 4", "top_k = 0"))
    run = subprocess.run([sys.executable, "-c", "import sys, spacy_arbo.spacy_cli; from spacy.cli import setup_cli; "
                          "sys.argv = ['spacy', *sys.argv[1:]]; setup_cli()", "assemble", str(tmp_path / "bad.cfg"),
                          str(tmp_path / "out"), "--paths.kb", str(toy_kb_dir)], capture_output=True, text=True)
    assert run.returncode == 1
    assert run.stderr == "error: arbo_linker: top_k takes a positive integer; got 0.\n"
    assert not (tmp_path / "out").exists()


def test_spacy_load_of_a_bad_saved_config_names_the_setting(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("link_memory")
    nlp.to_disk(tmp_path / "p")
    config = tmp_path / "p" / "config.cfg"
    config.write_text(config.read_text().replace("min_share = 0.8", "min_share = 2"))
    with pytest.raises(ConfigSettingError, match=r"^link_memory: min_share takes a number in \(0.5, 1\]; got 2.$"):
        spacy.load(tmp_path / "p")
