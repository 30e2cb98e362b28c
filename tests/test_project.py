"""The Weasel `quick` workflow runs end to end on the real data, so the main job cannot rot."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_quick_workflow(tmp_path, data_dir):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "project.yml", project / "project.yml")
    shutil.copytree(ROOT / "configs", project / "configs")
    env = {**os.environ, "SPACY_ARBO_DATA": str(data_dir)}
    result = subprocess.run([sys.executable, "-m", "weasel", "run", "quick"], cwd=project, env=env,
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    metrics = {name: json.loads((project / "metrics" / f"quick_{name}_test.json").read_text())
               for name in ("tfidf", "retriever", "clustering")}
    assert all(m["n_mentions"] > 200 for m in metrics.values())
    # The trained hashed retriever retrieves most gold entities; TF-IDF stays the baseline.
    assert metrics["retriever"]["recall@64"] > 0.6 and metrics["tfidf"]["recall@1"] > 0.6
    assert -1.0 <= metrics["clustering"]["ari"] <= 1.0
    # A second run skips every finished step.
    again = subprocess.run([sys.executable, "-m", "weasel", "run", "quick"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "Skipping 'train-retriever-quick'" in again.stdout
