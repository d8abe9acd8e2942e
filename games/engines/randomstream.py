"""The game's random stream: every chance in a game comes from here.

Block k of the stream is SHA-256(seed || k), with k as 8 bytes big-endian, for k = 0, 1, 2...;
the stream is the blocks one after another. A draw of a whole number below n takes the next 4
bytes as a big-endian unsigned integer x; if x >= 2**32 - (2**32 mod n) the 4 bytes are thrown
away and the next 4 taken (so every answer is equally likely); otherwise the answer is x mod n.

The stream's position is the number of bytes taken so far, so a game state stores it as one
integer and any program can pick the stream up where the game left it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

BLOCK_BYTES = 32
DRAW_BYTES = 4
_SPAN = 1 << (8 * DRAW_BYTES)


def block(seed: bytes, index: int) -> bytes:
    return hashlib.sha256(seed + index.to_bytes(8, "big")).digest()


class RandomStream:
    def __init__(self, seed: bytes, position: int = 0) -> None:
        if position < 0 or position % DRAW_BYTES:
            raise ValueError(f"a stream position is a multiple of {DRAW_BYTES}, not {position}")
        self.seed = seed
        self.position = position

    def _next_word(self) -> int:
        index, offset = divmod(self.position, BLOCK_BYTES)
        word = block(self.seed, index)[offset : offset + DRAW_BYTES]
        self.position += DRAW_BYTES
        return int.from_bytes(word, "big")

    def below(self, n: int) -> int:
        """A whole number from 0 to n - 1, each equally likely."""
        if n < 1:
            raise ValueError("n must be at least 1")
        limit = _SPAN - _SPAN % n
        while True:
            x = self._next_word()
            if x < limit:
                return x % n

    def choice(self, options: Sequence[T]) -> T:
        return options[self.below(len(options))]
