"""The KBs the KB-only recipe is shown on besides CTD: MEDIC 2012 and MeSH names (an
`ID<TAB>name` list, the `names` reader). A KB without synonyms leaves self-alignment nothing
to align: the recipe falls back to the untrained encoder, and says so."""
import json

import pytest
import spacy
import torch

from spacy_arbo.cli import main
from spacy_arbo.corpora import convert_corpus
from spacy_arbo.encoders.transformer import TransformerTower
from spacy_arbo.kb.readers import build_kb, guess_format, read_kb
from spacy_arbo.kb.store import open_store
from spacy_arbo.training.self_alignment import AlignmentSettings, self_align
from spacy_arbo.util import ArboError

from ..util import CTD_HEADER, ctd_line

NAMES = "D004961\tEstramustine\n\n# a comment\nD019305\tEpilepsy, Rolandic\nC538288\t Some Chemical \n"


@pytest.fixture
def names_file(tmp_path):
    path = tmp_path / "mesh_entities_id_name.tsv"
    path.write_text(NAMES, encoding="utf8")
    return path


def test_names_list_is_read_and_guessed(names_file, tmp_path):
    assert guess_format(names_file) == "names"
    kb = read_kb(names_file)
    assert kb.ids == ["MESH:D004961", "MESH:D019305", "MESH:C538288"]
    assert [(e.name, e.aliases) for e in kb] == [("Estramustine", ()), ("Epilepsy, Rolandic", ()),
                                                 ("Some Chemical", ())]
    # A CTD file is still a CTD file.
    ctd = tmp_path / "diseases.tsv"
    ctd.write_text(CTD_HEADER + ctd_line("Fever", "MESH:D005334", synonyms="pyrexia"), encoding="utf8")
    assert guess_format(ctd) == "ctd" and read_kb(ctd)["MESH:D005334"].aliases == ("pyrexia",)


@pytest.mark.parametrize("content, message", [
    ("D1\tOne\nD2\tTwo\textra\n", ":2: expected 'ID<TAB>name', found 3 tab-separated fields."),
    ("D1\tOne\nD2\n", ":2: expected 'ID<TAB>name', found 1 tab-separated field."),
    ("D1\tOne\n\t Two\n", ":2: empty ID."),
    ("D1\tOne\nD2\t \n", ":2: empty name."),
    ("D1\tOne\nD1\tUno\n", ":2: duplicate id 'D1' (first defined on line 1)"),
])
def test_names_list_errors_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "names.tsv"
    path.write_text(content, encoding="utf8")
    with pytest.raises(ArboError) as err:
        read_kb(path, "names")
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_a_kb_without_synonyms_leaves_the_encoder_untrained(names_file, tmp_path, tiny_bert_dir, capsys):
    kb = build_kb(names_file, tmp_path / "kb")
    tower = TransformerTower.from_pretrained(str(tiny_bert_dir), "mean", 16, use_markers=False)
    before = {k: v.clone() for k, v in tower.state_dict().items()}
    result = self_align(tower, kb, AlignmentSettings(epochs=2, batch_size=4), progress=False)
    assert "nothing to align" in result.note and result.best_pass == 0 and len(result.curve) == 1
    assert all(torch.equal(before[k], v) for k, v in tower.state_dict().items())
    # The command writes the untrained encoder, so that the recipe's next steps run unchanged.
    assert main(["self-align", str(tmp_path / "kb"), str(tmp_path / "encoder"), "--encoder", str(tiny_bert_dir),
                 "--max-length", "16", "--curve", str(tmp_path / "curve.json")]) == 0
    assert "nothing to align" in capsys.readouterr().out
    assert json.loads((tmp_path / "curve.json").read_text())["passes"][0]["held_out_recall@1"] is None
    saved = TransformerTower.from_pretrained(str(tmp_path / "encoder"), "mean", 16, use_markers=False)
    assert all(torch.equal(before[k], v) for k, v in saved.state_dict().items())


def test_the_second_kbs_and_bc5cdr_chemicals(data_dir, tmp_path):
    build_kb(data_dir / "ctd" / "medic_06Jul2012.txt.gz", tmp_path / "medic")  # the format guessed from the name
    medic = open_store(tmp_path / "medic")
    assert len(medic) > 11000 and sum(len(e.aliases) > 0 for e in medic) > 9000
    mesh = read_kb(data_dir / "bc5cdr" / "mesh_entities_id_name.tsv")
    assert len(mesh) > 29000 and not any(e.aliases for e in mesh)
    # BC5CDR keeps its chemical mentions when asked; the names cover most of their ids.
    docs, _ = convert_corpus(data_dir / "bc5cdr" / "CDR_dev.PubTator.txt", kb=mesh, nlp=spacy.blank("en"),
                             types=["Chemical"])
    mentions = [e for doc in docs for e in doc.ents]
    assert len(mentions) > 4000 and {e.label_ for e in mentions} == {"Chemical"}
    covered = sum(e.kb_id_ in mesh for e in mentions)
    assert 0.6 < covered / len(mentions) < 1.0
