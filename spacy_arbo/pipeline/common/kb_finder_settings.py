"""What `kb_mention_finder` is configured with, apart from the component (spaCy): the command
line offers these without importing it."""

MODES = ("add", "replace")
# The label of the proposals when nobody gives one: the project's corpora (NCBI Disease,
# BC5CDR) link diseases. add-kb-finder prefers the type the KB's entities share.
DEFAULT_LABEL = "Disease"
# Which of the KB's abbreviations ("HT", "CP", "RB1": short names in capitals) it
# proposes where a doc uses them without defining them: "all" (the default; clinical notes and
# many abstracts use common ones undefined) or "defined": only where the doc defines them with a
# long form that reads as a KB name (a disease KB's "CP" in a drug paper is cyclophosphamide).
# Where the doc defines one as something holding no KB name, it is never proposed.
SHORT_FORMS = ("all", "defined")
