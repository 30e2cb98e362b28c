"""The README's Python example runs as written."""
import re
from pathlib import Path

import spacy

README = Path(__file__).resolve().parents[1] / "README.md"


def usage_example() -> str:
    usage = README.read_text(encoding="utf8").split("## Usage", 1)[1]
    return re.search(r"```python\n(.*?)```", usage, re.S).group(1)


def test_usage_example_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # it writes my_kb.jsonl, kb/ and my_linker/ in the working directory
    namespace = {"__name__": "readme"}
    exec(compile(usage_example(), str(README), "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    # Raw text in, every mention found by the KB's names and linked by the defaults alone.
    assert [line.split(" [")[0] for line in printed] == [
        "Wilson's disease MESH:D006527", "phenylketonuria MESH:D010661", "PKU MESH:D010661", "PKU MESH:D010661"]
    assert printed[0].startswith("Wilson's disease MESH:D006527 [('MESH:D006527', ")
    assert (tmp_path / "my_linker" / "arbo_linker" / "kb").is_dir()
    # What the example's comments promise: the saved pipeline links the same.
    doc = namespace["doc"]
    reloaded = spacy.load(tmp_path / "my_linker")(doc.text)
    assert [(ent.text, ent.kb_id_) for ent in reloaded.ents] == [(ent.text, ent.kb_id_) for ent in doc.ents]
    assert [ent._.kb_candidates for ent in reloaded.ents] == [ent._.kb_candidates for ent in doc.ents]
