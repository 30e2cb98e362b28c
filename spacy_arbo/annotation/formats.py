"""The formats `link` reads and writes, apart from the readers and writers: the command line
offers them as choices without importing spaCy."""

INPUT_FORMATS = ("auto", "text", "jsonl", "pubtator", "bioc-xml", "bioc-json")
OUTPUT_FORMATS = ("jsonl", "pubtator", "bioc", "bioc-json", "spacy")
# Which mentions `link` links: the pipeline's recognizers', the input's own, or both (docs/annotate.md).
MENTION_SOURCES = ("pipeline", "input", "both")
