"""spaCy components: `arbo_linker` (retrieval and linking)."""
