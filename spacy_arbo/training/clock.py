"""A `spacy train` logger that records how many updates a run made and how long they took,
so that runs of different objectives can be compared at equal wall-clock time."""
import time
from typing import IO, Any, Callable, Dict, Optional, Tuple

import srsly
from spacy.language import Language
from spacy.util import registry

from ..util import atomic_path


@registry.loggers("spacy_arbo.TrainingClock.v1")
def make_training_clock(path: Optional[str] = None) -> Callable:
    """Writes {"updates", "seconds", "evaluations"} to `path` (JSON) at every evaluation and at
    the end: seconds from the start of the training loop, evaluations included. Chain it with
    spaCy's console logger (`spacy.ChainLogger.v1`); with `path` null it records nothing."""

    def setup(nlp: Language, stdout: IO, stderr: IO) -> Tuple[Callable, Callable]:
        start = time.perf_counter()
        clock = {"updates": 0, "seconds": 0.0, "evaluations": 0}

        def write() -> None:
            if path is not None:
                with atomic_path(path) as tmp:
                    srsly.write_json(tmp, clock)

        def log_step(info: Optional[Dict[str, Any]]) -> None:
            # spaCy calls this once per update, with `info` only when it evaluated.
            clock["updates"] += 1
            clock["seconds"] = round(time.perf_counter() - start, 2)
            if info is not None:
                clock["evaluations"] += 1
                write()

        return log_step, write

    return setup
