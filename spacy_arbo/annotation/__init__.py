"""Annotating a corpus (`python -m spacy_arbo link`): `readers` turn input files into records,
`linked` makes a linked document of each record and the doc the pipeline made of it, `shards`
keeps the output resumable, `writers` write the output formats, and `runner` (with `ray_runner`
for Ray workers) runs it all."""
from importlib import import_module
from typing import Any

# Read on first use, so that the command line reads `formats` without loading spaCy.
_EXPORTS = {"INPUT_FORMATS": ".formats", "OUTPUT_FORMATS": ".formats", "WRITERS": ".writers",
            "BadRecords": ".records", "LinkedDocuments": ".linked", "Record": ".records",
            "ShardedOutput": ".shards", "Summary": ".runner", "input_files": ".readers",
            "link_corpus": ".runner", "read_records": ".readers"}
__all__ = ["INPUT_FORMATS", "OUTPUT_FORMATS", "WRITERS", "BadRecords", "LinkedDocuments", "Record",
           "ShardedOutput", "Summary", "input_files", "link_corpus", "read_records"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'spacy_arbo.annotation' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name], __name__), name)


def __dir__() -> list:
    return sorted(__all__)
