"""What a corpus conversion kept, changed and dropped, so that nothing is lost silently."""
from collections import Counter
from typing import Dict

import wasabi

# The counts a conversion keeps, in the order its table prints them, with each row's words.
COUNTS: Dict[str, str] = {
    "docs": "documents",
    "mentions": "gold mentions read",
    "entities": "entities set on docs",
    "nil_mentions": "NIL mentions (no id or not in KB)",
    "no_id": "  of which without an id (-1)",
    "not_in_kb": "  of which with ids the KB lacks",
    "composite_mentions": "composite mentions (several ids)",
    "composite_parts_dropped": "composite id parts not in KB",
    "skipped_by_type": "mentions skipped by type filter",
    "expanded_spans": "spans expanded to token bounds",
    "overlapping_dropped": "overlapping mentions dropped",
    "unalignable_dropped": "mentions with no tokens dropped",
    "sentence_breaks_removed": "sentence breaks removed inside mentions",
}


class ConversionReport:
    """Every key of `COUNTS` is an attribute that starts at 0 (or at the keyword given) and
    that conversion adds to (`report.nil_mentions += 1`); `entities_by_type` counts the
    entities set per label, `mention_types` the mentions read per type (kept or not)."""

    def __init__(self, source: str = "", **counts: int) -> None:
        unknown = sorted(set(counts) - set(COUNTS))
        if unknown:
            raise TypeError(f"ConversionReport has no count '{unknown[0]}'; its counts: {', '.join(COUNTS)}.")
        self.source = source
        self.entities_by_type: Counter = Counter()
        self.mention_types: Counter = Counter()
        for name in COUNTS:
            setattr(self, name, counts.get(name, 0))

    def as_table(self) -> str:
        rows = [(text, f"{getattr(self, name):,}") for name, text in COUNTS.items()]
        rows += [(f"  entities labelled {label}", f"{count:,}")
                 for label, count in sorted(self.entities_by_type.items())]
        header = f"Conversion of {self.source}\n" if self.source else ""
        return header + wasabi.table(rows, aligns=("l", "r"), max_col=60)

    def __str__(self) -> str:
        return self.as_table()
