"""One self-contained HTML page of the proposals (`discover --html`, `link --discover-html`) for a
curator: each proposed entity with its mentions in context, its nearest KB entities and its parent,
a filter, and a button that saves the ticked proposals as the JSONL `kb add --new-only` reads. No
network and no server; the template is `templates/proposals.html.j2` (autoescaped)."""
from ..error_report import TEMPLATES
from ..util import PathLike, atomic_path
from .proposals import Discovery


def proposal_page(title: str, discovery: Discovery) -> str:
    records = [p.record() for p in discovery.proposals]
    return TEMPLATES.get_template("proposals.html.j2").render(title=title, summary=discovery.line(), proposals=records)


def write_proposal_page(title: str, discovery: Discovery, path: PathLike) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(proposal_page(title, discovery), encoding="utf8")
