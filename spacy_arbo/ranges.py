"""The one check that a number lies in an interval, and its one wording: "NAME takes a number in
[0, 1]; got VALUE." (or "a number >= 0", "... or null"). Light (the standard library only), so
that the CLI's argument types use it on the fast `--help` path."""
import math
import numbers
from typing import Any, Optional

from .util import ArboError

__all__ = ["check_range", "in_range", "interval_text", "range_message"]

Bound = Optional[float]


def interval_text(low: Bound = None, high: Bound = None, low_open: bool = False, high_open: bool = False) -> str:
    """"[0, 1]", "(0.5, 1]", "[0, 1)", ">= 0", "> 0", "<= 1", "< 1"; "any number" without bounds."""
    if low is not None and high is not None:
        return f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f"{'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"{'<' if high_open else '<='} {high:g}"
    return "any number"


def in_range(value: Any, low: Bound = None, high: Bound = None, *, low_open: bool = False,
             high_open: bool = False) -> bool:
    """Whether `value` is a finite real number (not a bool) within the bounds; None for a bound
    leaves that side open-ended."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    if not isinstance(value, numbers.Integral) and not math.isfinite(value):
        return False  # NaN compares false with every bound; infinity is no setting either
    if low is not None and (value <= low if low_open else value < low):
        return False
    if high is not None and (value >= high if high_open else value > high):
        return False
    return True


def range_message(value: Any, low: Bound = None, high: Bound = None, *, low_open: bool = False,
                  high_open: bool = False, allow_none: bool = False) -> str:
    """"takes a number in [0, 1]; got 2." : what a check says after the setting's name."""
    interval = interval_text(low, high, low_open, high_open)
    number = f"a number in {interval}" if low is not None and high is not None else \
        f"a number {interval}" if low is not None or high is not None else "a number"
    return f"takes {number}{' or null' if allow_none else ''}; got {value!r}."


def check_range(name: str, value: Any, low: Bound = None, high: Bound = None, *, low_open: bool = False,
                high_open: bool = False, allow_none: bool = False) -> None:
    """Raise ArboError("NAME takes a number in [low, high]; got VALUE.") unless `value` is a finite
    number within the bounds (`low_open` / `high_open`: that bound itself is outside), or None
    where `allow_none`. Bools, strings and NaN are never numbers here."""
    if value is None and allow_none:
        return
    if not in_range(value, low, high, low_open=low_open, high_open=high_open):
        raise ArboError(f"{name} " + range_message(value, low, high, low_open=low_open, high_open=high_open,
                                                    allow_none=allow_none))
