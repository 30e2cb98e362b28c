"""Cross-encoder inputs: (mention, candidate) pairs packed behind their sentence, and
partitioned into passes that fit the context window (multi cross-encoder paper, 4.2).

A sentence block is `t [SEP] m1 [MASK] c11 [SEP] m1 [MASK] c12 [SEP] ... [SEP]` (eq. 2, 5
and 7); a pass is `[CLS]` followed by one or more blocks (several only in `passage` mode,
the concatenation of sentence templates of 4.2.6). Everything here works on token ids,
so it is independent of the tokenizer and of torch.
"""
from dataclasses import dataclass, field
from typing import Iterator, List, NamedTuple, Sequence, Tuple

from ..util import ArboError

MODES = ("base", "parallel", "multi", "passage")
# The pair slot of tokens that belong to no pair: [CLS] and the sentence text.
CONTEXT = -1
# The block of [CLS]: every token may attend to it, it attends only to itself.
GLOBAL = -1


class Specials(NamedTuple):
    cls: int
    sep: int
    mask: int


class Pair(NamedTuple):
    """One (mention, candidate) pair; `index` is the caller's number for it, under which
    its score comes back."""

    index: int
    mention: Sequence[int]
    candidate: Sequence[int]

    @property
    def cost(self) -> int:
        """`m [MASK] c [SEP]`."""
        return len(self.mention) + len(self.candidate) + 2


class Mention(NamedTuple):
    """A mention's token range inside its sentence's ids, and its pairs."""

    start: int
    end: int
    pairs: Sequence[Pair]


class Sentence(NamedTuple):
    """A sentence's token ids and its mentions; sentences of one passage (a doc) share
    passes in `passage` mode and must come one after the other."""

    ids: Sequence[int]
    mentions: Sequence[Mention]
    passage: int = 0


class Block(NamedTuple):
    """`context [SEP]` followed by the pairs scored against it."""

    context: Sequence[int]
    pairs: Sequence[Pair]

    @property
    def cost(self) -> int:
        return len(self.context) + 1 + sum(p.cost for p in self.pairs)


@dataclass
class Pass:
    """One input sequence of the cross-encoder, with what the model needs besides ids:
    per token its block and pair slot (for pair-isolating attention) and its position
    within its own block and pair (sentence positions, then pair positions restarting
    after the sentence, so that a pair sees the positions it would see alone)."""

    input_ids: List[int] = field(default_factory=list)
    position_ids: List[int] = field(default_factory=list)
    blocks: List[int] = field(default_factory=list)
    slots: List[int] = field(default_factory=list)
    mask_positions: List[int] = field(default_factory=list)
    pair_index: List[int] = field(default_factory=list)
    # Per pair, where its mention starts and where its candidate ends (at its [SEP]): the
    # mention's tokens run up to its [MASK], the candidate's from after it.
    mention_starts: List[int] = field(default_factory=list)
    candidate_ends: List[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.input_ids)

    def _extend(self, ids: Sequence[int], first_position: int, block: int, slot: int) -> None:
        self.input_ids.extend(ids)
        self.position_ids.extend(range(first_position, first_position + len(ids)))
        self.blocks.extend([block] * len(ids))
        self.slots.extend([slot] * len(ids))


def centered_window(n_tokens: int, start: int, end: int, budget: int) -> Tuple[int, int]:
    """The `budget` tokens of a sequence that keep [start, end) as near the middle as the
    edges allow; a mention longer than the budget keeps its beginning."""
    if n_tokens <= budget:
        return 0, n_tokens
    width = end - start
    first = start - (budget - width) // 2 if width < budget else start
    first = max(0, min(first, n_tokens - budget))
    return first, first + budget


def _mention_contexts(sentence: Sentence, max_length: int) -> Iterator[Tuple[bool, Sequence[int], Mention]]:
    """(shares the whole sentence?, context, mention) for each mention with pairs.

    A mention whose longest pair cannot follow the whole sentence in one window reads a
    window of the sentence around itself instead (computed per mention, never per pair,
    so every mode gives a pair the same context).
    """
    for mention in sentence.mentions:
        if not mention.pairs:
            continue
        longest = max(p.cost for p in mention.pairs)
        budget = max_length - 2 - longest  # [CLS] and the [SEP] after the context
        if budget < 0:
            raise ArboError(
                f"A (mention, candidate) pair of {longest} tokens cannot fit a context window of "
                f"{max_length}: lower max_mention_tokens / max_name_tokens / alias_tokens / parent_tokens / "
                "definition_tokens."
            )
        if len(sentence.ids) <= budget:
            yield True, sentence.ids, mention
        else:
            first, last = centered_window(len(sentence.ids), mention.start, mention.end, budget)
            yield False, sentence.ids[first:last], mention


def sentence_blocks(sentence: Sentence, mode: str, max_length: int) -> List[Block]:
    """The blocks a mode makes of one sentence, before partitioning: one per pair (base),
    per mention (parallel), or per sentence (multi, passage)."""
    if mode not in MODES:
        raise ArboError(f"Unknown mode '{mode}'; expected one of {MODES}.")
    blocks: List[Block] = []
    shared = None  # the block of the mentions that share the whole sentence
    for whole, context, mention in _mention_contexts(sentence, max_length):
        if mode == "base":
            blocks.extend(Block(context, [pair]) for pair in mention.pairs)
        elif mode == "parallel" or not whole:
            blocks.append(Block(context, list(mention.pairs)))
        else:
            if shared is None:
                shared = Block(sentence.ids, [])
                blocks.append(shared)
            shared.pairs.extend(mention.pairs)
    return blocks


def split_block(block: Block, max_length: int) -> List[Block]:
    """4.2.5: as many pairs as fit behind the context, then a new pass with the same context."""
    room = max_length - 2 - len(block.context)
    chunks: List[Block] = []
    pairs: List[Pair] = []
    used = 0
    for pair in block.pairs:
        if pairs and used + pair.cost > room:
            chunks.append(Block(block.context, pairs))
            pairs, used = [], 0
        pairs.append(pair)
        used += pair.cost
    if pairs:
        chunks.append(Block(block.context, pairs))
    return chunks


def plan_passes(sentences: Sequence[Sentence], mode: str, max_length: int) -> List[List[Block]]:
    """The blocks of every pass. Each pair appears in exactly one pass, and no pass is
    longer than `max_length` tokens, [CLS] included."""
    passes: List[List[Block]] = []
    previous_passage = None
    for sentence in sentences:
        for block in sentence_blocks(sentence, mode, max_length):
            for chunk in split_block(block, max_length):
                can_join = (
                    mode == "passage" and passes and previous_passage == sentence.passage
                    and 1 + sum(b.cost for b in passes[-1]) + chunk.cost <= max_length
                )
                if can_join:
                    passes[-1].append(chunk)
                else:
                    passes.append([chunk])
                previous_passage = sentence.passage
    return passes


def layout(blocks: Sequence[Block], specials: Specials) -> Pass:
    """`[CLS] t [SEP] m [MASK] c [SEP] ...`, one [MASK] per pair."""
    packed = Pass()
    packed._extend([specials.cls], 0, GLOBAL, CONTEXT)
    slot = 0
    for number, block in enumerate(blocks):
        context = [*block.context, specials.sep]
        packed._extend(context, 1, number, CONTEXT)
        for pair in block.pairs:
            packed.mention_starts.append(len(packed))
            packed.mask_positions.append(len(packed) + len(pair.mention))
            packed.candidate_ends.append(len(packed) + len(pair.mention) + 1 + len(pair.candidate))
            packed.pair_index.append(pair.index)
            packed._extend([*pair.mention, specials.mask, *pair.candidate, specials.sep],
                           1 + len(context), number, slot)
            slot += 1
    return packed


def pack(sentences: Sequence[Sentence], mode: str, max_length: int, specials: Specials) -> List[Pass]:
    return [layout(blocks, specials) for blocks in plan_passes(sentences, mode, max_length)]
