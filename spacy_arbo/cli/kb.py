"""Commands on a KB and a trained pipeline's entity index: build-kb, index-kb, kb add,
kb remove, export-spacy-kb."""
import argparse
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..kb import formats
from ..util import ArboError
from ._util import add_gpu_option

if TYPE_CHECKING:
    from ..kb.entities import Entity
    from ..kb.store import BaseEntityStore

KB_FORMATS = ["auto", *formats.KB_FORMATS]


def add_commands(commands: "argparse._SubParsersAction") -> None:
    cmd = commands.add_parser("build-kb", help="read a KB source file and write an entity store")
    cmd.add_argument("source", help="scispacy JSONL, CTD diseases TSV(.gz), MEDIC, ID<TAB>name file, or an ontology "
                     "(OBO, OBO Graphs JSON, OWL RDF/XML: format obo)")
    cmd.add_argument("out_dir")
    cmd.add_argument("--format", default="auto", choices=KB_FORMATS)
    cmd.add_argument("--store", default="memory", choices=["memory", "disk"],
                     help="memory: loaded whole, fastest lookups; disk: SQLite read on demand, for KBs of "
                     "millions of entities (built without holding them all)")
    cmd.add_argument("--synonym-scopes", nargs="+", type=str.upper, choices=formats.SYNONYM_SCOPES, metavar="SCOPE",
                     help="ontologies: the synonym scopes kept as aliases, of "
                     f"{', '.join(formats.SYNONYM_SCOPES)} (default: {' '.join(formats.DEFAULT_SYNONYM_SCOPES)})")
    cmd.add_argument("--root", metavar="ID", help="ontologies: keep only this term and the terms under it (is_a)")
    cmd.set_defaults(func=build_kb_command)

    cmd = commands.add_parser("index-kb", help="encode a KB with a pipeline's encoder and store the index beside it")
    cmd.add_argument("pipeline")
    cmd.add_argument("kb_dir")
    cmd.add_argument("--component", default="arbo_linker")
    cmd.add_argument("--workers", type=int, default=1,
                     help="encode on this many Ray workers (pip install 'spacy-arbo[ray]'); 1: in this process")
    cmd.add_argument("--ray-address", help="a Ray cluster to encode on (e.g. ray://head:10001); default: a local one")
    cmd.add_argument("--shard-dir", help="where Ray workers write vector shards; on a cluster, a folder all nodes "
                     "share (default: the system's temporary folder)")
    add_gpu_option(cmd)
    cmd.set_defaults(func=index_kb_command)

    kb_commands = commands.add_parser("kb", help="change a trained pipeline's KB without retraining").add_subparsers(
        dest="action", required=True)
    cmd = kb_commands.add_parser("add", help="add entities (one whose id the KB has, compared normalised as "
                                  "docs/kb.md says, replaces it); only they are encoded")
    cmd.add_argument("pipeline")
    cmd.add_argument("source", help="the entities, as build-kb reads them (scispacy JSONL, CTD TSV, MEDIC, "
                     "ID<TAB>name, ontology)")
    cmd.add_argument("--format", default="auto", choices=KB_FORMATS)
    cmd.add_argument("--new-only", action="store_true",
                     help="every entity must be new (the proposals of discover a curator accepted): an id the KB "
                     "has is an error naming its line, not a replacement")
    cmd = kb_commands.add_parser("remove", help="remove entities by id (compared normalised: chem:1 is CHEM:1)")
    cmd.add_argument("pipeline")
    cmd.add_argument("ids", nargs="+", metavar="ID")
    for cmd in kb_commands.choices.values():
        cmd.add_argument("--output", help="where to write the updated pipeline (default: over PIPELINE, atomically)")
        cmd.add_argument("--component", default="arbo_linker")
        add_gpu_option(cmd)
        cmd.set_defaults(func=kb_update_command)

    cmd = commands.add_parser("export-spacy-kb", help="write a pipeline's KB and entity vectors for spaCy's entity_linker")
    cmd.add_argument("pipeline")
    cmd.add_argument("out_dir")
    cmd.add_argument("--component", default="arbo_linker")
    cmd.add_argument("--top-k", type=int, default=10, help="candidates per mention")
    add_gpu_option(cmd)
    cmd.set_defaults(func=export_spacy_kb_command)


def build_kb_command(args: argparse.Namespace) -> None:
    from ..kb.readers import build_kb

    options = {name: value for name, value in (("synonym_scopes", args.synonym_scopes), ("root", args.root))
               if value is not None}
    stats = build_kb(args.source, args.out_dir, args.format, store=args.store, **options).stats()
    print(f"Wrote {args.out_dir}: {stats['entities']:,} entities, {stats['aliases']:,} aliases, "
          f"{stats['with_definition']:,} entities with a definition, {stats['alt_ids']:,} alternative ids")


def index_kb_command(args: argparse.Namespace) -> None:
    from ..kb.store import open_store
    from ..retrieval.sharded_encoding import encode_entities_on_ray
    from ._pipelines import linker_component, load_pipeline

    on_ray = args.workers != 1 or args.ray_address
    if on_ray and args.gpu_id >= 0:
        raise ArboError("index-kb: --gpu-id runs this process on a GPU, not Ray's workers; encode with "
                        "--workers 1 on the GPU, or on Ray's CPUs without --gpu-id.")
    nlp = load_pipeline(args.pipeline)
    linker = linker_component(nlp, args.component, args.pipeline)
    linker.set_kb(open_store(args.kb_dir))
    if on_ray:
        linker.refresh_index(vectors=encode_entities_on_ray(
            linker, args.pipeline, kb_dir=args.kb_dir, workers=args.workers, address=args.ray_address,
            shard_dir=args.shard_dir))
    else:
        linker.refresh_index()
    linker.retriever.save_prebuilt(args.kb_dir)
    print(f"Wrote the entity index of {args.pipeline} to {args.kb_dir}")


def kb_update_command(args: argparse.Namespace) -> None:
    """`kb add` / `kb remove`: change a trained pipeline's KB, encoding only what changed; the
    pipeline is written anew (temp path, then rename), so an interrupted update leaves the old one."""
    from ..kb.readers import read_kb
    from ..kb.updates import align_ids
    from ..pipeline.common.kb_versions import follow_kb, kb_holders
    from ._pipelines import linker_component, load_pipeline, write_pipeline

    nlp = load_pipeline(args.pipeline)
    linker = linker_component(nlp, args.component, args.pipeline)
    others = [name for name, kb in kb_holders(nlp) if kb is not linker.kb]
    if others:
        raise ArboError(f"kb {args.action}: {args.pipeline}: {', '.join(others)} links to a KB of its own, which "
                        f"this command does not change (it changes {args.component}'s); update that pipeline's "
                        "KB where it was made, or take the component out.")
    read = list(read_kb(args.source, args.format)) if args.action == "add" else []
    if args.action == "add" and args.new_only:
        refuse_known_ids(linker.kb, read, args.source, args.format)
        refuse_unknown_parents(linker.kb, read, args.source, args.format)
    # A new id the KB spells otherwise (a KB built before prefixes were case-blind) replaces its entity.
    add = align_ids(linker.kb, read)
    with tempfile.TemporaryDirectory(prefix="spacy_arbo_kb_") as tmp:
        update = linker.update_kb(add, args.ids if args.action == "remove" else (), store_dir=Path(tmp) / "kb")
        if not update.size:  # a pipeline whose KB is empty does not load
            raise ArboError(f"kb remove: removing {update.removed:,} entities would leave {args.component} of "
                            f"{args.pipeline} with no entity; nothing was written.")
        changes = follow_kb(nlp, linker.kb)
        output = Path(args.output or args.pipeline)
        write_pipeline(nlp, output)  # copies an on-disk KB out of `tmp`
    print(f"{args.component}: {update.describe(encodes=linker.retriever.dense is not None)}. Wrote {output}")
    for change in changes:
        print(change)


def refuse_known_ids(kb: "BaseEntityStore", add: Sequence["Entity"], source: str, fmt: str) -> None:
    """`kb add --new-only`: an error naming the first line whose id the KB has."""
    from ..kb.readers import entity_lines
    from ..kb.updates import ids_the_kb_has

    known = ids_the_kb_has(kb, add)
    if known:
        lines = entity_lines(source, fmt)
        new_id, kb_id = min(known, key=lambda pair: lines.get(pair[0], 0))
        more = f" ({len(known) - 1:,} more below)" if len(known) > 1 else ""
        raise ArboError(f"{source}:{lines.get(new_id, '?')}: id '{new_id}' is in the KB already (as '{kb_id}': "
                        f"{kb[kb_id].name}){more}; --new-only adds new entities only, so nothing was written.")


def refuse_unknown_parents(kb: "BaseEntityStore", add: Sequence["Entity"], source: str, fmt: str) -> None:
    """`kb add --new-only`: an error naming the first line with a parent that is neither in the KB
    nor among the new entities (a proposal's suggested parent edited by hand, say)."""
    from ..kb.readers import entity_lines

    new = {entity.id for entity in add}
    for entity in add:
        unknown = [p for p in entity.parents if p not in new and kb.resolve(p) is None]
        if unknown:
            line = entity_lines(source, fmt).get(entity.id, "?")
            raise ArboError(f"{source}:{line}: parent '{unknown[0]}' of '{entity.id}' is neither in the KB nor among "
                            "the new entities; --new-only adds entities under parents it knows, so nothing was written.")


def export_spacy_kb_command(args: argparse.Namespace) -> None:
    from ..pipeline.linker.spacy_kb_export import spacy_kb_from_linker
    from ._pipelines import linker_component, load_pipeline

    linker = linker_component(load_pipeline(args.pipeline), args.component, args.pipeline)
    kb = spacy_kb_from_linker(linker, top_k=args.top_k)
    kb.to_disk(args.out_dir)
    print(f"Wrote {args.out_dir}: {len(kb):,} entities, vectors of width {kb.entity_vector_length}, "
          f"for spaCy's entity_linker (entity_vector_length = {kb.entity_vector_length})")
