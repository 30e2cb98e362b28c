"""An out-of-KB benchmark from a linked corpus (issue 84): a seeded share of the entities that an
evaluation set mentions leaves the KB, and their mentions become NIL gold, as PEL's OKB set turns
the mentions of entities it takes out of the KB into NIL (appendix D). A linker is then scored on
what NIL detection needs: telling the mentions its KB lacks from those it has.

The draw is by entity, not by mention: the distinct KB ids among the evaluation set's gold ids
(every part of a composite), sorted, then `random.Random(seed).sample`, so one seed is one draw
on any machine. A composite gold id (`D1|D2`) keeps the parts the KB still has and is NIL only when
every part left (`without_held_out`): the mention still names an entity of the KB, and this is how
`kb remove` rewrites a link memory's composites, so the two agree. Training mentions of held-out
entities keep their spans and get the same ids: a recognizer still learns them as mentions (they
are), and the retriever's training skips NIL mentions, so no held-out entity is learned from.
"""
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Collection, Dict, List, Optional, Sequence, Set, Tuple

from spacy.tokens import Doc, Span
from spacy.vocab import Vocab

from ..kb.disk_store import DiskEntityStore
from ..kb.entities import NIL, kept_parts, split_ids
from ..kb.store import BaseEntityStore, open_store
from ..ranges import check_range
from ..util import ArboError, PathLike, atomic_path
from .docbin import read_docbin, write_docbin

KB_DIR = "kb"
EVAL_FILE = "eval.spacy"
TRAIN_FILE = "train.spacy"
HELD_OUT_FILE = "held_out.json"
DEFAULT_SHARE = 0.2


@dataclass
class Reduction:
    """What holding entities out did to a corpus's gold mentions."""

    mentions: int = 0
    # Mentions whose gold was NIL (or empty) before: entities the KB never had.
    already_nil: int = 0
    # Mentions whose every id part was held out: NIL gold now.
    turned_nil: int = 0
    composites: int = 0
    # Composites with every part held out (counted in turned_nil too).
    composites_nil: int = 0
    # Composites with some parts held out: their gold keeps the others.
    composites_reduced: int = 0


def without_held_out(kb_id: str, held_out: Collection[str]) -> str:
    """`kb_id` less its held-out parts (`kept_parts`, the rule `kb remove` applies to a link memory)."""
    return kept_parts(kb_id, lambda part: part not in held_out)


def mentioned_kb_ids(docs: Sequence[Doc], kb: BaseEntityStore) -> Dict[str, str]:
    """Every gold id part of `docs` (NIL aside) that the KB resolves -> the KB's id for it."""
    return {part: kb_id for doc in docs for ent in doc.ents for part in split_ids(ent.kb_id_)
            if part != NIL and (kb_id := kb.resolve(part)) is not None}


def draw_held_out(kb_ids: Collection[str], share: float, seed: int) -> List[str]:
    """`round(share * n)` (at least one) of the `n` distinct `kb_ids`, drawn with `seed`, sorted."""
    check_range("share", share, 0, 1, low_open=True, high_open=True)
    pool = sorted(set(kb_ids))
    count = min(len(pool), max(1, round(share * len(pool))))
    return sorted(random.Random(seed).sample(pool, count))


def hold_out_mentions(docs: Sequence[Doc], held_out: Collection[str],
                      resolve: Dict[str, str]) -> Tuple[Reduction, List[List[Any]]]:
    """Rewrite, in place, each gold id of `docs` without its held-out parts (`without_held_out`,
    a part compared as the KB spells it, through `resolve`); returns the counts and, for each
    mention now NIL, [doc id, start char, end char, its former gold id]."""
    counts, turned = Reduction(), []
    for index, doc in enumerate(docs):
        ents = []
        for ent in doc.ents:
            kb_id = "|".join(resolve.get(part, part) for part in split_ids(ent.kb_id_))
            new_id = without_held_out(kb_id, held_out) if kb_id else ent.kb_id_
            composite = len(split_ids(ent.kb_id_)) > 1
            counts.mentions += 1
            counts.already_nil += ent.kb_id_ in ("", NIL)
            counts.composites += composite
            if new_id == NIL and ent.kb_id_ not in ("", NIL):
                counts.turned_nil += 1
                counts.composites_nil += composite
                turned.append([doc.user_data.get("doc_id", index), ent.start_char, ent.end_char, ent.kb_id_])
            elif new_id != kb_id:
                counts.composites_reduced += 1
            ents.append(ent if new_id == kb_id else Span(doc, ent.start, ent.end, label=ent.label_, kb_id=new_id))
        doc.ents = ents
    return counts, turned


def write_reduced_kb(kb: BaseEntityStore, held_out: Set[str], path: Path) -> int:
    """The KB less `held_out`, in the kind of store it was (a disk store streams); returns its size."""
    def kept():
        return (entity for entity in kb if entity.id not in held_out)

    if isinstance(kb, DiskEntityStore):
        return len(DiskEntityStore.write(kept(), path, source=kb.source))
    reduced = kb.subset(lambda entity: entity.id not in held_out)
    reduced.to_disk(path)
    return len(reduced)


def hold_out_kb(kb_dir: PathLike, eval_path: PathLike, out_dir: PathLike, train_path: Optional[PathLike] = None,
                share: float = DEFAULT_SHARE, seed: int = 0) -> Dict[str, Any]:
    """Write OUT_DIR/kb (the KB less a seeded `share` of the entities the evaluation set mentions),
    OUT_DIR/eval.spacy (their mentions NIL), OUT_DIR/train.spacy with `train_path`, and
    OUT_DIR/held_out.json (what was held out, with its counts), which is also returned. Every
    input is read and checked first, and OUT_DIR appears whole or not at all."""
    check_range("share", share, 0, 1, low_open=True, high_open=True)
    if not Path(kb_dir).is_dir():
        raise ArboError(f"KB directory '{kb_dir}' does not exist; build one with `python -m spacy_arbo build-kb`.")
    kb = open_store(kb_dir)
    vocab = Vocab()
    docs = read_docbin(eval_path, vocab)
    resolve = mentioned_kb_ids(docs, kb)
    if not resolve:
        has_ids = any(ent.kb_id_ not in ("", NIL) for doc in docs for ent in doc.ents)
        why = f"none of its gold ids is in the KB at {kb_dir} (convert it with --kb)" if has_ids else \
            "no mention with a gold id"
        raise ArboError(f"{eval_path}: {why}: there is no entity to hold out.")
    train = read_docbin(train_path, vocab) if train_path else None
    held_out = draw_held_out(resolve.values(), share, seed)
    eval_counts, turned = hold_out_mentions(docs, set(held_out), resolve)
    record: Dict[str, Any] = {
        "kb": str(kb_dir), "eval": str(eval_path), "train": str(train_path) if train_path else None,
        "share": share, "seed": seed, "entities_mentioned": len(set(resolve.values())), "held_out": held_out,
        "eval_counts": asdict(eval_counts),
    }
    if train is not None:
        train_resolve = mentioned_kb_ids(train, kb)
        record["train_counts"] = asdict(hold_out_mentions(train, set(held_out), train_resolve)[0])
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        record["kb_entities"] = write_reduced_kb(kb, set(held_out), tmp / KB_DIR)
        record["turned_nil"] = turned
        write_docbin(docs, tmp / EVAL_FILE)
        if train is not None:
            write_docbin(train, tmp / TRAIN_FILE)
        (tmp / HELD_OUT_FILE).write_text(record_json(record), encoding="utf8")
    return record


def record_json(record: Dict[str, Any]) -> str:
    """`held_out.json`'s text: indented, but each mention of `turned_nil` on one line."""
    head = json.dumps({key: value for key, value in record.items() if key != "turned_nil"}, indent=2,
                      ensure_ascii=False)
    mentions = ",\n".join("    " + json.dumps(mention, ensure_ascii=False) for mention in record["turned_nil"])
    return f'{head[:-2]},\n  "turned_nil": [\n{mentions}\n  ]\n}}\n'
