"""OBO and OWL ontologies as KB sources: every current term of an OBO, OBO Graphs JSON or OWL
(RDF/XML) file, read with pronto, becomes one entity.

A term's synonyms of the chosen scopes are its aliases, its is-a superclasses its parents. The
ids that name a term elsewhere reach it through the store's alternative ids (`store.resolve`):
its `alt_id`s, the obsolete terms it replaces and its cross-references (`_extra_ids` says which
wins when two terms claim one). Obsolete terms are no entities.
"""
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from ..util import ArboError, ArboWarning, PathLike
from .entities import Entity, dedupe_aliases, normalize_id
from .formats import DEFAULT_SYNONYM_SCOPES, SYNONYM_SCOPES

if TYPE_CHECKING:
    import pronto

# Obsolete ids listed per message before "...".
SHOWN_IDS = 5
# How strongly an id is claimed as another name of a term, strongest first.
ALT_ID, REPLACED, XREF = range(3)


@dataclass(frozen=True)
class OntologyEntities:
    """The entities of an ontology and what reading it left out."""

    entities: Tuple[Entity, ...]
    # Obsolete terms whose id now reaches the term that replaces them.
    obsolete_replaced: int
    # Obsolete terms with no single current replacement: their ids reach no entity.
    obsolete_dropped: Tuple[str, ...]
    # Alternative ids, obsolete ids and cross-references claimed by two terms, left out.
    ambiguous_ids: Tuple[str, ...]


def read_ontology(path: PathLike, synonym_scopes: Sequence[str] = DEFAULT_SYNONYM_SCOPES,
                  root: Optional[str] = None) -> Iterator[Tuple[int, Entity]]:
    """The `readers.READERS` shape of `ontology_entities` (an entity's number for a line); warns
    (`ArboWarning`) when obsolete terms were left out, as corpora may use their ids."""
    found = ontology_entities(path, synonym_scopes, root)
    yield from enumerate(found.entities, start=1)
    if found.obsolete_dropped:
        warnings.warn(f"{path}: obsolete terms with no single current replacement (replaced_by, or one consider) "
                      f"reach no entity: {len(found.obsolete_dropped):,} ({_listed(found.obsolete_dropped)}).",
                      ArboWarning, stacklevel=2)


def ontology_entities(path: PathLike, synonym_scopes: Sequence[str] = DEFAULT_SYNONYM_SCOPES,
                      root: Optional[str] = None) -> OntologyEntities:
    """The entities of the current terms of an ontology file (of the branch under `root`, with
    it, when given), in the order of their ids; synonyms of `synonym_scopes` are their aliases."""
    path = Path(path)
    scopes = _check_scopes(synonym_scopes)
    terms = _load(path)
    by_id: Dict[str, "pronto.Term"] = {}
    for term in terms:
        kb_id = normalize_id(term.id)
        if kb_id in by_id:
            raise ArboError(f"{path}: terms '{by_id[kb_id].id}' and '{term.id}' are one id once normalised "
                            f"('{kb_id}', docs/kb.md).")
        if not term.obsolete and not (term.name or "").strip():
            raise ArboError(f"{path}: term '{term.id}' has no name.")
        by_id[kb_id] = term
    current = {kb_id: term for kb_id, term in by_id.items() if not term.obsolete}
    parents = {kb_id: sorted(normalize_id(p.id) for p in term.superclasses(distance=1, with_self=False))
               for kb_id, term in current.items()}
    _check_acyclic(path, parents)
    if root is not None:
        current = _branch(path, current, by_id, root)
    replaced, unreplaced = _replacements(by_id)
    extra, ambiguous = _extra_ids(current, replaced)
    reached = {other for ids in extra.values() for other in ids}
    entities = tuple(Entity(
        id=kb_id, name=term.name.strip(), aliases=_aliases(term, scopes),
        definition=str(term.definition or "").strip(), alt_ids=extra.get(kb_id, ()),
        parents=tuple(p for p in parents[kb_id] if p in current),
    ) for kb_id, term in current.items())
    return OntologyEntities(entities, sum(1 for kb_id, term in by_id.items() if term.obsolete and kb_id in reached),
                            tuple(kb_id for kb_id in unreplaced if kb_id not in reached), tuple(sorted(ambiguous)))


def _check_scopes(synonym_scopes: Sequence[str]) -> Tuple[str, ...]:
    scopes = tuple(dict.fromkeys(scope.upper() for scope in synonym_scopes))
    unknown = [scope for scope in scopes if scope not in SYNONYM_SCOPES]
    if unknown:
        raise ArboError(f"Unknown synonym scope {unknown[0]!r}; expected some of {SYNONYM_SCOPES}.")
    return scopes


def _load(path: Path) -> List["pronto.Term"]:
    """The file's terms, sorted by id: pronto parses on a pool of threads, which add terms in the
    order they finish, and a KB's rows must not change from one build to the next. UTF-8, as
    the OBO format specifies (pronto would guess the encoding, with a warning); imports are not
    fetched: the KB is the file's own terms."""
    if not path.exists():
        raise ArboError(f"KB source '{path}' does not exist.")
    try:
        import pronto
    except ImportError:
        raise ArboError(f"{path}: reading an ontology needs pronto: pip install 'spacy-arbo[obo]'.") from None
    try:
        ontology = pronto.Ontology(str(path), import_depth=0, encoding="utf-8")
    except KeyError as err:  # what pronto raises for a reference to an undefined term
        raise ArboError(f"{path}: a term refers to {err}, which the file does not define.") from None
    except ValueError as err:
        if "could not find a parser" not in str(err):
            raise ArboError(f"{path}: not a readable ontology ({err}).") from None
        raise ArboError(f"{path}: not an ontology pronto reads (OBO, OBO Graphs JSON or OWL RDF/XML; convert OWL's "
                        "other syntaxes with ROBOT: robot convert --input X.ofn --output X.owl).") from None
    except Exception as err:  # the OBO, JSON and XML parsers raise unrelated types (SyntaxError, KeyError, ...)
        raise ArboError(f"{path}: not a readable ontology ({type(err).__name__}: {err}).") from None
    return sorted(ontology.terms(), key=lambda term: term.id)


def _check_acyclic(path: Path, parents: Dict[str, List[str]]) -> None:
    """An is-a cycle makes every term in it its own ancestor: one error naming its terms."""
    done: Set[str] = set()
    for start in parents:
        if start in done:
            continue
        trail, branches, on_trail = [start], [iter(parents[start])], {start}
        while branches:
            parent = next(branches[-1], None)
            if parent is None:
                on_trail.discard(trail[-1])
                done.add(trail.pop())
                branches.pop()
            elif parent in on_trail:
                cycle = trail[trail.index(parent):] + [parent]
                raise ArboError(f"{path}: is_a cycle: {' -> '.join(cycle)}.")
            elif parent not in done and parent in parents:
                on_trail.add(parent)
                trail.append(parent)
                branches.append(iter(parents[parent]))


def _branch(path: Path, current: Dict[str, "pronto.Term"], by_id: Dict[str, "pronto.Term"],
            root: str) -> Dict[str, "pronto.Term"]:
    """The current terms under `root` (pronto's transitive subclasses), `root` included."""
    root_id = normalize_id(root)
    if root_id not in by_id:
        raise ArboError(f"{path}: --root '{root}': no such term.")
    if root_id not in current:
        raise ArboError(f"{path}: --root '{root}': the term is obsolete.")
    under = {normalize_id(term.id) for term in current[root_id].subclasses(with_self=True)}
    return {kb_id: term for kb_id, term in current.items() if kb_id in under}


def _replacements(by_id: Dict[str, "pronto.Term"]) -> Tuple[Dict[str, str], List[str]]:
    """Obsolete id -> the current term it leads to (through `replaced_by`, else a lone
    `consider`, followed while the target is obsolete itself), and those that lead to none."""
    def successor(term: "pronto.Term") -> Optional[str]:
        targets = term.replaced_by or term.consider
        return normalize_id(next(iter(targets)).id) if len(targets) == 1 else None

    replaced, unreplaced = {}, []
    for kb_id, term in by_id.items():
        if not term.obsolete:
            continue
        seen, target = {kb_id}, successor(term)
        while target is not None and target in by_id and by_id[target].obsolete and target not in seen:
            seen.add(target)
            target = successor(by_id[target])
        if target is not None and target in by_id and not by_id[target].obsolete:
            replaced[kb_id] = target
        else:
            unreplaced.append(kb_id)
    return replaced, unreplaced


def _extra_ids(current: Dict[str, "pronto.Term"], replaced: Dict[str, str]
               ) -> Tuple[Dict[str, Tuple[str, ...]], Set[str]]:
    """Each current term's alternative ids: its alt_ids, the obsolete ids it replaces and its
    cross-references. An id claimed by several terms goes to the strongest claim (a term's own
    alt_id, then a replacement, then a cross-reference); one that names a current term, or that
    two claims of the same strength give to two terms, is left out: the store would give it to
    whichever claimed it first."""
    claims: Dict[str, Dict[int, Set[str]]] = defaultdict(lambda: defaultdict(set))
    for kb_id, term in current.items():
        for other in term.alternate_ids:
            claims[normalize_id(other)][ALT_ID].add(kb_id)
        for xref in term.xrefs:
            claims[normalize_id(xref.id)][XREF].add(kb_id)
    for obsolete, target in replaced.items():
        if target in current:
            claims[obsolete][REPLACED].add(target)
    extra: Dict[str, List[str]] = defaultdict(list)
    ambiguous = set()
    for other, by_strength in claims.items():
        owners = by_strength[min(by_strength)]
        if len(owners) > 1 or other in current:
            ambiguous.add(other)
        else:
            extra[next(iter(owners))].append(other)
    return {kb_id: tuple(sorted(ids)) for kb_id, ids in extra.items()}, ambiguous


def _aliases(term: "pronto.Term", scopes: Tuple[str, ...]) -> Tuple[str, ...]:
    """Synonyms of `scopes`, in the order of `scopes`, then alphabetical (pronto keeps them in
    a set); one per spelling, ignoring case, none the name's."""
    kept = [s for s in term.synonyms if s.scope in scopes]
    ranked = sorted(kept, key=lambda s: (scopes.index(s.scope), s.description))
    return dedupe_aliases(term.name.strip(), (text for text in (s.description.strip() for s in ranked) if text))


def _listed(ids: Iterable[str]) -> str:
    ids = list(ids)
    return ", ".join(ids[:SHOWN_IDS]) + (", ..." if len(ids) > SHOWN_IDS else "")
