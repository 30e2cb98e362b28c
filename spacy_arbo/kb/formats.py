"""The KB source formats `readers` reads, apart from the readers: the command line offers them
as choices without importing the stores."""

KB_FORMATS = ("jsonl", "ctd", "medic", "names")
