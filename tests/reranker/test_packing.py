from collections import Counter

import pytest

from spacy_arbo.reranker.packing import (
    CONTEXT, MODES, Mention, Pair, Pass, Sentence, Specials, centered_window, layout, pack, plan_passes,
)
from spacy_arbo.reranker.planning import batches
from spacy_arbo.util import ArboError

SPECIALS = Specials(cls=1, sep=2, mask=3)


def sentence(n_tokens, mentions, passage=0, first_id=100):
    """A sentence of distinct token ids; `mentions` = [(start, end, [candidate lengths])].
    Candidate tokens encode (pair index, position), so layouts can be checked by value."""
    ids = list(range(first_id, first_id + n_tokens))
    packed, index = [], [0]

    def pair(start, end, length):
        i = first_id * 100 + index[0]
        index[0] += 1
        return Pair(i, ids[start:end], [10_000_000 + i * 100 + k for k in range(length)])

    for start, end, lengths in mentions:
        packed.append(Mention(start, end, [pair(start, end, n) for n in lengths]))
    return Sentence(ids, packed, passage)


def all_pairs(sentences):
    return {p.index: p for s in sentences for m in s.mentions for p in m.pairs}


def check_passes(passes, sentences, max_length):
    pairs = all_pairs(sentences)
    seen = Counter(i for p in passes for i in p.pair_index)
    assert seen == Counter(pairs.keys())  # every pair exactly once
    for p in passes:
        assert len(p) <= max_length
        assert p.input_ids[0] == SPECIALS.cls and p.input_ids[-1] == SPECIALS.sep
        assert p.input_ids.count(SPECIALS.mask) == len(p.mask_positions) == len(p.pair_index)
        assert len(p.mention_starts) == len(p.candidate_ends) == len(p.pair_index)
        for position, index, start, end in zip(p.mask_positions, p.pair_index, p.mention_starts, p.candidate_ends):
            pair = pairs[index]
            assert p.input_ids[position] == SPECIALS.mask
            assert p.input_ids[position - len(pair.mention): position] == list(pair.mention)
            after = position + 1 + len(pair.candidate)
            assert (start, end) == (position - len(pair.mention), after)
            assert p.input_ids[position + 1: after] == list(pair.candidate)
            assert p.input_ids[after] == SPECIALS.sep
            # The pair's tokens form one slot; the context before it has its positions.
            assert set(p.slots[position - len(pair.mention): after + 1]) == {p.slots[position]} != {CONTEXT}


def test_layout_of_one_sentence_follows_the_templates():
    s = sentence(4, [(1, 2, [2, 1]), (3, 4, [1])])
    (multi,) = pack([s], "multi", 64, SPECIALS)
    c = [10_000_000 + i for i in (1_000_000, 1_000_001, 1_000_100, 1_000_200)]
    # [CLS] t [SEP] m1 [MASK] c11 [SEP] m1 [MASK] c12 [SEP] m2 [MASK] c21 [SEP]  (eq. 7)
    assert multi.input_ids == [1, 100, 101, 102, 103, 2, 101, 3, c[0], c[1], 2, 101, 3, c[2], 2, 103, 3, c[3], 2]
    assert multi.mask_positions == [7, 12, 16]
    assert multi.mention_starts == [6, 11, 15] and multi.candidate_ends == [10, 14, 18]
    assert multi.position_ids == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 6, 7, 8, 9, 6, 7, 8, 9]
    assert multi.slots == [-1] * 6 + [0] * 5 + [1] * 4 + [2] * 4
    base = pack([s], "base", 64, SPECIALS)
    # One pass per pair (eq. 2): [CLS] t [SEP] m [MASK] c [SEP]
    assert [p.input_ids for p in base][1] == [1, 100, 101, 102, 103, 2, 101, 3, c[2], 2]
    assert [len(p.pair_index) for p in pack([s], "parallel", 64, SPECIALS)] == [2, 1]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("max_length", [16, 24, 40, 512])
def test_partitioning_keeps_every_pair_once_within_the_window(mode, max_length):
    sentences = [
        sentence(6, [(0, 2, [3, 1, 4, 1, 5]), (4, 6, [2, 6, 5])], passage=0, first_id=100),
        sentence(3, [(1, 2, [1, 1])], passage=0, first_id=200),
        sentence(30, [(2, 3, [2, 2]), (27, 29, [3])], passage=1, first_id=300),  # longer than small windows
        sentence(5, [(0, 1, [])], passage=1, first_id=400),  # a mention without candidates
    ]
    passes = pack(sentences, mode, max_length, SPECIALS)
    check_passes(passes, sentences, max_length)
    n_pairs = len(all_pairs(sentences))
    if mode == "base":
        assert len(passes) == n_pairs
    if max_length == 512:
        expected = {"base": n_pairs, "parallel": 5, "multi": 3, "passage": 2}[mode]
        assert len(passes) == expected


def test_an_overflowing_sentence_is_split_with_its_text_in_every_pass():
    s = sentence(10, [(0, 1, [4] * 6)])  # 12 + 6 pairs of 7 tokens = 54 > 32
    passes = pack([s], "multi", 32, SPECIALS)
    assert [len(p.pair_index) for p in passes] == [2, 2, 2]
    for p in passes:
        assert p.input_ids[:12] == [1, *range(100, 110), 2]


def test_passage_mode_joins_sentences_of_one_passage_only():
    a = sentence(3, [(0, 1, [1])], passage=0, first_id=100)
    b = sentence(3, [(0, 1, [1])], passage=0, first_id=200)
    c = sentence(3, [(0, 1, [1])], passage=1, first_id=300)
    plan = plan_passes([a, b, c], "passage", 64)
    assert [[block.context[0] for block in blocks] for blocks in plan] == [[100, 200], [300]]
    joined = layout(plan[0], SPECIALS)
    # Each sentence restarts its positions and is its own block.
    assert joined.input_ids == [1, 100, 101, 102, 2, 100, 3, 11_000_000, 2,
                                200, 201, 202, 2, 200, 3, 12_000_000, 2]
    assert joined.blocks == [-1] + [0] * 8 + [1] * 8
    assert joined.position_ids == [0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8]


def test_a_sentence_longer_than_the_window_is_cut_around_each_mention():
    s = sentence(100, [(3, 5, [2, 2]), (90, 91, [1])])
    passes = pack([s], "multi", 24, SPECIALS)
    check_passes(passes, [s], 24)
    # The first mention's pairs cost 6: 24 - 2 - 6 = 16 context tokens, the mention kept.
    first = passes[0]
    assert first.input_ids[1:17] == list(range(100, 116)) and first.input_ids[17] == 2
    # The second mention reads a window around token 90 that ends with the sentence.
    second = passes[-1]
    context = second.input_ids[1: second.input_ids.index(2)]
    assert 190 in context and context == list(range(100 + 100 - len(context), 200))


def test_centered_window():
    assert centered_window(10, 2, 3, 20) == (0, 10)
    assert centered_window(100, 50, 52, 10) == (46, 56)
    assert centered_window(100, 1, 2, 10) == (0, 10)
    assert centered_window(100, 98, 100, 10) == (90, 100)
    assert centered_window(100, 10, 40, 10) == (10, 20)  # a mention longer than the budget


def test_a_pair_that_cannot_fit_is_an_error():
    with pytest.raises(ArboError, match="cannot fit a context window of 8"):
        pack([sentence(2, [(0, 1, [6])])], "base", 8, SPECIALS)
    with pytest.raises(ArboError, match="Unknown mode 'document'"):
        pack([sentence(2, [(0, 1, [1])])], "document", 64, SPECIALS)


def test_batches_respect_the_budget_and_keep_grouped_passes_together():
    def make(length, pair_index):
        return Pass(input_ids=[0] * length, pair_index=list(pair_index))

    passes = [make(10, [0]), make(8, [1]), make(8, [2]), make(6, [3]), make(4, [4, 5])]
    alone = list(batches(passes, 20))
    assert [[len(p) for p in b] for b in alone] == [[10, 8], [8, 6], [4]]
    assert all(len(b) * len(b[0]) <= 20 for b in alone)
    # Pairs 0, 3 and 5 belong together (so 0, 3, 4, 5 through the fifth pass), pair 2 alone.
    key = {0: "a", 1: "b", 2: "c", 3: "a", 4: "d", 5: "a"}
    grouped = list(batches(passes, 20, together=key.__getitem__))
    assert [[len(p) for p in b] for b in grouped] == [[10, 6, 4], [8, 8]]
    assert sorted(i for b in grouped for p in b for i in p.pair_index) == list(range(6))
