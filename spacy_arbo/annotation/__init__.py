"""Annotating a corpus (`python -m spacy_arbo link`): `readers` turn input files into records,
`linked` makes a linked document of each record and the doc the pipeline made of it, `shards`
keeps the output resumable, `writers` write the output formats, and `runner` (with `ray_runner`
for Ray workers) runs it all."""
from .linked import LinkedDocuments
from .readers import INPUT_FORMATS, input_files, read_records
from .records import BadRecords, Record
from .runner import Summary, link_corpus
from .shards import ShardedOutput
from .writers import OUTPUT_FORMATS, WRITERS

__all__ = ["INPUT_FORMATS", "OUTPUT_FORMATS", "WRITERS", "BadRecords", "LinkedDocuments", "Record",
           "ShardedOutput", "Summary", "input_files", "link_corpus", "read_records"]
