"""Entity-linking corpora (PubTator, BLINK/arboEL mention JSONL) as spaCy Docs.

`pubtator` and `blink` read the two file formats into gold mentions (`gold_mention`);
`conversion` turns them into Docs whose entities carry the gold ids as the KB spells them,
counting what it changes in a `ConversionReport` (`conversion_report`); `docbin` writes, reads and
joins `.spacy` files; `named_corpora` knows where the workflow's corpora lie; and
`spacy_training` registers the reader and augmenter that `spacy train` configs name.
"""
from .blink import DEFAULT_LABEL, BlinkMention, read_blink_jsonl
from .conversion import CORPUS_FORMATS, AnnotatedText, convert_corpus, guess_corpus_format, iter_corpus
from .conversion_report import ConversionReport
from .docbin import join_docbins, read_docbin, write_docbin
from .gold_mention import NO_ID, Mention, parse_gold_ids
from .named_corpora import NAMED_CORPORA, NamedCorpus, SplitConversion, convert_named_corpus, named_corpus
from .pubtator import PubTatorDocument, read_pubtator
from .spacy_training import create_one_label_augmenter, create_pubtator_reader

__all__ = [
    "CORPUS_FORMATS", "DEFAULT_LABEL", "NAMED_CORPORA", "NO_ID", "AnnotatedText", "BlinkMention",
    "ConversionReport", "Mention", "NamedCorpus", "PubTatorDocument", "SplitConversion",
    "convert_corpus", "convert_named_corpus", "create_one_label_augmenter", "create_pubtator_reader",
    "guess_corpus_format", "iter_corpus", "join_docbins", "named_corpus", "parse_gold_ids", "read_blink_jsonl",
    "read_docbin", "read_pubtator", "write_docbin",
]
