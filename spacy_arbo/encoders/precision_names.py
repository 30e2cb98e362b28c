"""The names of the transformer's arithmetics (`precision.py` says what each does), apart from
torch: settings check them and the command line offers them without importing it."""

PRECISIONS = ("auto", "fp32", "bf16", "int8")
