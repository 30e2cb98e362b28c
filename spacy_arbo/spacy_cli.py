"""spaCy's own commands (`spacy assemble`, `spacy train`, `spacy apply`) load this module through
the `spacy_cli` entry point, before they run. From then on an ArboError that reaches the top (a
bad setting in a config: `top_k = 0`; a KB that does not load) is one line on stderr and exit
code 1, as spacy-arbo's own commands print it, instead of a traceback through spaCy and
confection. Every other error keeps its traceback."""
import sys
from types import TracebackType
from typing import Optional, Type

from .util import ArboError

_previous_hook = sys.excepthook


def report_arbo_errors(kind: Type[BaseException], error: BaseException, traceback: Optional[TracebackType]) -> None:
    """`sys.excepthook` under spaCy's commands: bad input as one line, the rest as before."""
    if isinstance(error, ArboError):
        print("error: " + str(error).replace("\n", " "), file=sys.stderr)
    else:
        _previous_hook(kind, error, traceback)


sys.excepthook = report_arbo_errors
