"""`link_memory`: links a mention whose text the training corpus annotates, and almost
always with the same id, to that id.

A dense retriever trained for minutes on a CPU does not memorise its training set: many test
mentions of a biomedical corpus occur verbatim in train, and the retriever misses some that
train's majority id gets right (BioSyn's protocol gets the same effect from exact dictionary
matches). The memory sits after the linker (and reranker) and overrides only mentions whose
text is frequent and unambiguous enough (`min_count`, `min_share`, which
`tuning.tune_link_memory` chooses on a dev set), the text compared without case, punctuation
and, with `fold_plurals`, plural endings."""
import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span
from spacy.training import Example, validate_examples
from spacy.util import SimpleFrozenList
from spacy.vocab import Vocab

from ..component_settings import CFG, check_at_least, config_checked, read_cfg, store_in_config, write_cfg
from ..kb.entities import NIL, kept_parts, split_ids
from ..kb.store import BaseEntityStore
from ..ranges import check_range
from ..util import ArboError, atomic_path, read_json
from .common.kb_versions import check_kb_version, kb_version, pipeline_kb, read_version, write_version
from .common.links import install_extensions, write_kb_id
from .common.neighbours import neighbours

MEMORY_FILE = "memory.json"
_NON_WORD = re.compile(r"\W+")


def memory_key(text: str) -> str:
    """Case and punctuation do not change which entity a mention names ("Breast-cancer")."""
    return _NON_WORD.sub(" ", text.lower()).strip()


def fold_plurals(key: str) -> str:
    """`key` (a `memory_key`) with English plural endings dropped from words of 5 letters
    or more ("hereditary ovarian cancers" -> "hereditary ovarian cancer", "ataxias",
    "anomalies" -> "anomaly", "abscesses" -> "abscess"); "-ss", "-us", "-is" words are not
    plurals ("stenosis")."""
    def singular(word: str) -> str:
        if len(word) < 5 or not word.endswith("s") or word.endswith(("ss", "us", "is")):
            return word
        if word.endswith("sses"):
            return word[:-2]
        return word[:-3] + "y" if word.endswith("ies") else word[:-1]

    return " ".join(singular(word) for word in key.split())


def check_memory_settings(min_count: int, min_share: float, fold: bool) -> None:
    check_at_least(1, min_count=min_count)
    check_range("link_memory: min_share", min_share, 0.5, 1, low_open=True)
    if not isinstance(fold, bool):
        raise ArboError(f"link_memory: fold_plurals takes true or false; got {fold!r}.")


@Language.factory(
    "link_memory",
    assigns=["token.ent_kb_id", "span._.kb_ents"],
    default_config={"min_count": 1, "min_share": 0.8, "fold_plurals": False},
)
@config_checked
def make_link_memory(nlp: Language, name: str, min_count: Any, min_share: Any, fold_plurals: Any) -> "LinkMemory":
    install_extensions()
    return LinkMemory(nlp.vocab, name, min_count=min_count, min_share=min_share, fold_plurals=fold_plurals, nlp=nlp)


class LinkMemory(Pipe):
    """Counts, per normalised mention text, the ids the gold annotates. `initialize` reads
    the training examples' gold mentions (what `spacy train` passes), `add` any gold docs.
    `kb_version` is that of the KB its ids were checked against (`kb_versions`): the KB of
    `nlp`, the pipeline it is in, when it was initialized or added there."""

    def __init__(self, vocab: Vocab, name: str = "link_memory", *, min_count: int = 1, min_share: float = 0.8,
                 fold_plurals: bool = False, nlp: Optional[Language] = None) -> None:
        check_memory_settings(min_count, min_share, fold_plurals)
        self.vocab = vocab
        self.name = name
        self.nlp = nlp
        self.kb_version: Optional[str] = None
        self.min_count = min_count
        self.min_share = min_share
        self.fold_plurals = fold_plurals
        self.counts: Dict[str, Counter] = {}
        self._links: Optional[Dict[str, Tuple[str, float]]] = None

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *, nlp: Optional[Language] = None) -> None:
        examples = list(get_examples())
        validate_examples(examples, f"{self.name}.initialize")
        self.nlp = nlp if nlp is not None else self.nlp
        self.counts = {}
        self.add(eg.reference for eg in examples)
        self.kb_version = _version_of(self.nlp)

    def add(self, docs: Iterable[Doc]) -> int:
        """Count the gold links of `docs`; return how many mentions were counted."""
        n_mentions = 0
        for doc in docs:
            for ent in doc.ents:
                if ent.kb_id_:
                    self.counts.setdefault(memory_key(ent.text), Counter())[ent.kb_id_] += 1
                    n_mentions += 1
        self._links = None
        return n_mentions

    def forget_unknown_ids(self, known: Callable[[str], bool]) -> int:
        """Spell the remembered ids as a corpus converted against a KB that `known` describes
        would (the parts it has, else NIL), so that the memory links to no entity a KB update
        removed; how many texts changed."""
        counts: Dict[str, Counter] = {}
        for key, ids in self.counts.items():
            counts[key] = Counter()
            for kb_id, n in ids.items():
                counts[key][kept_parts(kb_id, known)] += n
        changed = sum(counts[key] != ids for key, ids in self.counts.items())
        self.counts = counts
        self._links = None
        return changed

    def follow_kb(self, kb: BaseEntityStore) -> Optional[str]:
        changed = self.forget_unknown_ids(lambda kb_id: kb_id in kb)
        self.kb_version = kb_version(kb)
        return f"{changed:,} remembered texts were linked to removed ids, which now read NIL" if changed else None

    def _lookup_key(self, key: str) -> str:
        return fold_plurals(key) if self.fold_plurals else key

    @property
    def links(self) -> Dict[str, Tuple[str, float]]:
        """The texts the memory links (plurals folded with `fold_plurals`), each with its
        majority id and that id's share. The counts stay per `memory_key`."""
        if self._links is None:
            self._links = {}
            grouped: Dict[str, Counter] = {}
            for key, ids in self.counts.items():
                grouped.setdefault(self._lookup_key(key), Counter()).update(ids)
            for key, ids in grouped.items():
                total = sum(ids.values())
                kb_id, count = ids.most_common(1)[0]
                if total >= self.min_count and count / total >= self.min_share:
                    self._links[key] = (kb_id, count / total)
        return self._links

    def __call__(self, doc: Doc) -> Doc:
        check_kb_version(self.name, self, self.nlp)
        for ent in doc.ents:
            self.link(ent)
        return doc

    def with_settings(self, min_count: int, min_share: float, fold: bool) -> "LinkMemory":
        """The same counts under other settings."""
        other = LinkMemory(self.vocab, self.name, min_count=min_count, min_share=min_share, fold_plurals=fold,
                           nlp=self.nlp)
        other.counts, other.kb_version = self.counts, self.kb_version
        return other

    def add_to(self, nlp: Language) -> "LinkMemory":
        """A copy of this memory (settings and counts) as the last component of `nlp`, of the
        KB `nlp` links to."""
        added = nlp.add_pipe("link_memory", name=self.name, last=True, config=self.cfg)
        added.counts, added.kb_version = self.counts, _version_of(nlp)
        return added

    def lookup(self, span: Span) -> Optional[Tuple[str, float]]:
        """The id the memory links `span` to and its share; None when its text is not
        remembered well enough."""
        return self.links.get(self._lookup_key(memory_key(span.text)))

    def link(self, span: Span) -> bool:
        """Link `span` from memory; False when its text is not remembered well enough."""
        found = self.lookup(span)
        if found is None:
            return False
        kb_id, share = found
        write_kb_id(span, kb_id)
        span._.kb_ents = remembered_candidates(kb_id, share)
        return True

    def _payload(self) -> Dict[str, Dict[str, int]]:
        return {key: dict(ids) for key, ids in sorted(self.counts.items())}

    def _load_payload(self, payload: object, where: str) -> None:
        if not isinstance(payload, dict) or not all(
            isinstance(ids, dict) and ids and all(isinstance(n, int) and n > 0 for n in ids.values())
            for ids in payload.values()
        ):
            raise ArboError(f"{where}: expected {{mention text: {{kb id: positive count}}}}.")
        self.counts = {key: Counter(ids) for key, ids in payload.items()}
        self._links = None

    @property
    def cfg(self) -> Dict[str, Any]:
        """The settings, as the factory takes them."""
        return {"min_count": self.min_count, "min_share": self.min_share, "fold_plurals": self.fold_plurals}

    def _load_cfg(self, cfg: Dict[str, Any]) -> None:
        """Bytes carry no config that the memory was made from (`nlp.from_bytes` keeps the
        components it has): it takes the settings saved with it, and the pipeline's config follows."""
        check_memory_settings(cfg["min_count"], cfg["min_share"], cfg["fold_plurals"])
        self.min_count, self.min_share, self.fold_plurals = cfg["min_count"], cfg["min_share"], cfg["fold_plurals"]
        self._links = None
        store_in_config(self.nlp, self, cfg)

    def to_bytes(self, *, exclude: Iterable[str] = SimpleFrozenList()) -> bytes:
        return srsly.msgpack_dumps({"counts": self._payload(), "kb_version": self.kb_version, CFG: self.cfg})

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = SimpleFrozenList()) -> "LinkMemory":
        data = srsly.msgpack_loads(bytes_data)
        if isinstance(data, dict) and {"counts", "kb_version"} <= set(data) <= {"counts", "kb_version", CFG}:
            counts, self.kb_version = data["counts"], data["kb_version"]
            if CFG in data:  # bytes written before memories saved their settings have none
                self._load_cfg(data[CFG])
        else:  # bytes written before memories recorded their KB: the counts alone, of no known KB
            counts, self.kb_version = data, None
        self._load_payload(counts, f"{self.name} bytes")
        return self

    def to_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> None:
        """The counts, the KB version and the settings (`cfg`; from disk, `spacy.load` makes the
        memory from the config.cfg saved with it, which holds the same values, and from the
        settings given at load time, which stand)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        with atomic_path(path / MEMORY_FILE) as tmp:
            srsly.write_json(tmp, self._payload())
        write_cfg(path / CFG, self.cfg)
        write_version(path, self.kb_version)

    def from_disk(self, path, *, exclude: Iterable[str] = SimpleFrozenList()) -> "LinkMemory":
        file = Path(path) / MEMORY_FILE
        if not file.exists():
            raise ArboError(f"{file} is missing: the pipeline's {self.name} was not saved whole.")
        self._load_payload(read_json(file), str(file))
        read_cfg(Path(path) / CFG)  # checked, not applied: spacy.load made the memory from its config.cfg
        self.kb_version = read_version(Path(path))
        return self


def _version_of(nlp: Optional[Language]) -> Optional[str]:
    linking = pipeline_kb(nlp)
    return None if linking is None else kb_version(linking[1])


def remembered_candidates(kb_id: str, share: float) -> List[Tuple[str, float]]:
    """What the memory offers as candidates: each part of its id, scored by the id's share."""
    return [] if kb_id == NIL else [(part, share) for part in split_ids(kb_id)]


def memories_after(nlp: Optional[Language], component: object) -> List[LinkMemory]:
    """The enabled link memories that run after `component` in `nlp`: their links replace
    whatever `component` decides for the mentions they remember."""
    return [proc for _, proc in neighbours(nlp, component)[1] if isinstance(proc, LinkMemory)]


def unknown_ids(memory: LinkMemory, known: Callable[[str], bool]) -> List[str]:
    """Ids the memory would write that `known` rejects (ids a pipeline's KB lacks)."""
    return sorted({part for ids in memory.counts.values() for kb_id in ids
                   for part in split_ids(kb_id) if kb_id != NIL and not known(part)})
