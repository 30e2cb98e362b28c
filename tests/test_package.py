"""`spacy package` of a raw-text pipeline (transformer recognizer, KB-name finder, linker) gives a
package that installs in a fresh virtual environment with no network and links raw text there
as it did where it was built: what `weasel run package` does with the workflow's pipeline."""
import json
import site
import subprocess
import sys
import venv
from pathlib import Path

import spacy

from spacy_arbo.cli.pipeline import add_kb_finder, add_recognizer

from .conftest import TOY_TEXTS
from .util import make_nlp

TEXT = "Wilson disease (WD) and fever; WD again, and heart failure."


def fresh_venv_seeing_this_environment(path: Path) -> str:
    """A new virtualenv whose interpreter also imports what this one's site directories hold. Not
    `system_site_packages`: that is the base interpreter's, which lacks every dependency when the
    tests run inside a virtualenv."""
    venv.create(path, with_pip=False)
    python = str(path / "bin" / "python")
    own = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True).stdout.strip()
    # `site.addsitedir`, not bare paths: the .pth files there (an editable install's) must run too.
    Path(own, "_this_environment.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in site_directories()), encoding="utf8")
    return python


def site_directories() -> list:
    return [p for p in site.getsitepackages() + [site.getusersitepackages()] if Path(p).is_dir()]


def test_fresh_venv_imports_this_environment(tmp_path):
    python = fresh_venv_seeing_this_environment(tmp_path / "venv")
    done = subprocess.run([python, "-c", "import sys, spacy_arbo, spacy; print(sys.prefix)"], check=True,
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout.strip() == str(tmp_path / "venv")


def test_package_installs_offline_in_a_fresh_venv_and_links(trained_ner, toy_kb, toy_kb_dir, tmp_path):
    recognizer, _ = trained_ner
    nlp = make_nlp(toy_kb_dir)
    add_recognizer(nlp, recognizer)
    add_kb_finder(nlp, toy_kb)
    nlp.meta.update({"name": "toy_linker", "version": "0.0.1"})
    nlp.to_disk(tmp_path / "pipeline")
    expected = [(e.text, e.kb_id_) for e in nlp(TEXT).ents]
    assert expected and any(e.kb_id_ for e in nlp(TOY_TEXTS[1][0]).ents)

    (tmp_path / "packages").mkdir()
    subprocess.run([sys.executable, "-m", "spacy", "package", str(tmp_path / "pipeline"), str(tmp_path / "packages"),
                    "--build", "none", "--force"], check=True, capture_output=True)
    # The package is installed from its folder, with no index to reach; the project's own
    # dependencies come from the environment running the tests (a virtualenv or not).
    python = fresh_venv_seeing_this_environment(tmp_path / "venv")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--no-build-isolation",
                    str(tmp_path / "packages" / "en_toy_linker-0.0.1")], check=True, capture_output=True)
    script = ("import json, spacy; nlp = spacy.load('en_toy_linker'); "
              f"print(json.dumps([[e.text, e.kb_id_] for e in nlp({TEXT!r}).ents]))")
    done = subprocess.run([python, "-c", script], check=True, capture_output=True, text=True, cwd=tmp_path,
                          env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin",
                               "HOME": str(tmp_path)})
    assert [tuple(pair) for pair in json.loads(done.stdout.strip().splitlines()[-1])] == expected
    assert spacy.load(tmp_path / "pipeline").pipe_names == ["ner", "kb_mention_finder", "mention_consistency",
                                                            "arbo_linker", "kb_mention_filter"]
