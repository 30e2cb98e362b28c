"""What `kb_mention_finder` is configured with, apart from the component (spaCy): the command
line offers these without importing it."""

MODES = ("add", "replace")
# The label of the proposals when nobody gives one: the project's corpora (NCBI Disease,
# BC5CDR) link diseases. add-kb-finder prefers the type the KB's entities share.
DEFAULT_LABEL = "Disease"
