from __future__ import annotations

import hashlib
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from games.engines.randomstream import BLOCK_BYTES, RandomStream, block

SEED = bytes(range(32))


def test_block_zero_is_sha256_of_seed_and_counter() -> None:
    assert block(SEED, 0) == hashlib.sha256(SEED + (0).to_bytes(8, "big")).digest()
    assert block(SEED, 5) == hashlib.sha256(SEED + (5).to_bytes(8, "big")).digest()


def test_draws_read_the_stream_four_bytes_at_a_time() -> None:
    stream = RandomStream(SEED)
    words = b"".join(block(SEED, k) for k in range(2))
    expected = [int.from_bytes(words[i : i + 4], "big") % 4 for i in range(0, 64, 4)]
    assert [stream.below(4) for _ in range(16)] == expected
    assert stream.position == 2 * BLOCK_BYTES


def test_draws_are_roughly_uniform() -> None:
    stream = RandomStream(b"uniform")
    counts = Counter(stream.below(6) for _ in range(6000))
    assert set(counts) == set(range(6))
    # Each count is binomial(6000, 1/6): mean 1000, sd about 29; 150 is five sd.
    assert all(abs(count - 1000) < 150 for count in counts.values())


def test_a_word_in_the_rejected_tail_is_skipped() -> None:
    # n = 3 * 2**30 rejects any word >= 3 * 2**30, a quarter of all words.
    n = 3 << 30
    for seed_index in range(50):
        seed = f"reject-{seed_index}".encode()
        first = int.from_bytes(block(seed, 0)[:4], "big")
        if first >= n:
            second = int.from_bytes(block(seed, 0)[4:8], "big")
            if second < n:
                stream = RandomStream(seed)
                assert stream.below(n) == second % n
                assert stream.position == 8
                return
    pytest.fail("no seed with a rejected first word found")


def test_below_one_is_zero_and_below_zero_is_refused() -> None:
    assert RandomStream(SEED).below(1) == 0
    with pytest.raises(ValueError):
        RandomStream(SEED).below(0)


def test_position_must_be_a_multiple_of_four() -> None:
    with pytest.raises(ValueError):
        RandomStream(SEED, 6)
    with pytest.raises(ValueError):
        RandomStream(SEED, -4)


@given(
    seed=st.binary(min_size=1, max_size=40),
    before=st.lists(st.integers(1, 1000), max_size=20),
    after=st.lists(st.integers(1, 1000), min_size=1, max_size=20),
)
def test_a_stream_picked_up_at_its_position_goes_on_the_same(
    seed: bytes, before: list[int], after: list[int]
) -> None:
    stream = RandomStream(seed)
    for n in before:
        stream.below(n)
    resumed = RandomStream(seed, stream.position)
    assert [stream.below(n) for n in after] == [resumed.below(n) for n in after]


def test_choice_picks_by_below() -> None:
    options = ["a", "b", "c"]
    assert RandomStream(SEED).choice(options) == options[RandomStream(SEED).below(3)]
