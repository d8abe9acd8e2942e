"""Every engine refuses a move that is not one with IllegalMove and its own sentence, whatever
JSON the move is: a record's moves (manage.py verify) and a bot's are applied as they come,
and Python's own words about a value of the wrong shape ("unhashable type: 'list'") used to
be a record check's answer."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from games.engines import ENGINES
from games.engines.base import IllegalMove

SEED = b"\x07" * 32
OPTIONS = {"cornmaze": {"size": 8}, "robotmaze": {}, "mazerace": {"mode": "slow"}}
KEYS = ["shifts", "warehouse", "program", "runs", "dir", "now_ms", "resign", "timeout", "x"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)
moves = st.one_of(
    json_values,
    st.builds(lambda key, value: {key: value}, st.sampled_from(KEYS), json_values),
    st.dictionaries(st.sampled_from(KEYS), json_values, max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(ENGINES)), move=moves)
def test_any_json_move_is_applied_or_refused_in_words(kind: str, move: Any) -> None:
    engine = ENGINES[kind]
    state = engine.start(SEED, OPTIONS[kind], 2)
    for seat in range(2):
        try:
            engine.apply(state, seat, move)
        except IllegalMove as exc:
            assert str(exc) and str(exc)[0].isupper(), exc
