"""matplotlib is an extra: without it a plot is one error naming the extra, and no report is half-written."""
import json
import sys

import pytest

from spacy_arbo.metrics_tables import write_report
from spacy_arbo.plotting import pyplot
from spacy_arbo.util import ArboError


def test_without_matplotlib_a_plot_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    with pytest.raises(ArboError, match=r'the \[plot\] extra installs: pip install "spacy-arbo\[plot\]"'):
        pyplot()
    (tmp_path / "tfidf_test.json").write_text(json.dumps({"recall@1": 0.5, "accuracy": 0.5}))
    with pytest.raises(ArboError, match=r"\[plot\]"):
        write_report(tmp_path, tmp_path / "report.md")
    assert not (tmp_path / "report.md").exists()
