"""The KB source formats `readers` reads, apart from the readers: the command line offers them
as choices without importing the stores."""

KB_FORMATS = ("jsonl", "ctd", "medic", "names", "obo")

# The scopes of OBO synonyms, closest to the term's meaning first.
SYNONYM_SCOPES = ("EXACT", "RELATED", "NARROW", "BROAD")
# All four: on HPO, each scope indexed raised recall@10 of held-out synonyms and cost held-out
# EXACT synonyms nothing measurable (bench/ontology_kb.py, docs/kb.md).
DEFAULT_SYNONYM_SCOPES = SYNONYM_SCOPES
