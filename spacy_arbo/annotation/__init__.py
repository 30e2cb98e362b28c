"""Annotating a corpus (`python -m spacy_arbo link`): `readers` turn input files into records,
`linked` makes a linked document of each record and the doc the pipeline made of it, `shards`
keeps the output resumable, `writers` write the output formats, and `runner` (with `ray_runner`
for Ray workers) runs it all."""
from ..lazy import lazy_exports

# Read on first use, so that the command line reads `formats` without loading spaCy.
_EXPORTS = {"INPUT_FORMATS": ".formats", "OUTPUT_FORMATS": ".formats", "WRITERS": ".writers",
            "BadRecords": ".records", "LinkedDocuments": ".linked", "Record": ".records",
            "ShardedOutput": ".shards", "Summary": ".runner", "input_files": ".readers",
            "link_corpus": ".runner", "read_records": ".readers"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
