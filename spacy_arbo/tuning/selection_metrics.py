"""What `pipeline_choice.select_pipeline` may choose by, apart from the evaluation it runs: the
command line offers these as choices without importing spaCy."""

# Link F (what a NIL threshold is tuned for) or accuracy@1; e2e_f: end-to-end link F from raw
# text, for pipelines that differ in how they find mentions.
SELECTION_METRICS = ("nel_micro_f", "accuracy_strict", "accuracy", "e2e_f")
