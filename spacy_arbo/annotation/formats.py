"""The formats `link` reads and writes, apart from the readers and writers: the command line
offers them as choices without importing spaCy."""

INPUT_FORMATS = ("auto", "text", "jsonl", "pubtator", "bioc-xml", "bioc-json")
OUTPUT_FORMATS = ("jsonl", "pubtator", "bioc", "bioc-json", "spacy")
