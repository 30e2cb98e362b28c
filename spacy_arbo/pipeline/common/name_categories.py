"""The words that end hundreds of a KB's names ("disease", "syndrome"): a category, which most KBs
list as a name of its own and few texts mean as a mention when they write it alone ("the disease
progressed"). Read off the names, so a small KB has none."""
from collections import Counter
from typing import Iterable, Optional, Set

# A one-word name is a category where it ends at least this many of the KB's other names.
MIN_NAMES = 300


def name_categories(normal_names: Iterable[str], min_names: Optional[int] = None) -> Set[str]:
    """The one-word names that end `min_names` (default `MIN_NAMES`) of the other names or more.
    `normal_names`: lower-cased, single-spaced names."""
    min_names = MIN_NAMES if min_names is None else min_names
    names = set(normal_names)
    counts = Counter(name.rpartition(" ")[2] for name in names if " " in name)
    return {name for name in names if " " not in name and counts[name] >= min_names}
