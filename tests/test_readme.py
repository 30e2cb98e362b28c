"""The README's Python example runs as written."""
import re
from pathlib import Path

import spacy

README = Path(__file__).resolve().parents[1] / "README.md"


def usage_example() -> str:
    usage = README.read_text(encoding="utf8").split("## Usage", 1)[1]
    return re.search(r"```python\n(.*?)```", usage, re.S).group(1)


def test_usage_example_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # it writes kb/ and linker/ in the working directory
    namespace = {"__name__": "readme"}
    exec(compile(usage_example(), str(README), "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2
    assert printed[0].startswith("Wilson disease MESH:D006527 [('MESH:D006527', ")
    assert (tmp_path / "linker" / "arbo_linker" / "kb").is_dir()
    # What the example's comments promise: both mentions linked, and the saved pipeline links the same.
    doc = namespace["doc"]
    assert [ent.kb_id_ for ent in doc.ents] == ["MESH:D006527", "MESH:D006527"]
    assert [ent.kb_id_ for ent in spacy.load(tmp_path / "linker")(doc).ents] == ["MESH:D006527", "MESH:D006527"]
