"""How long checking the costliest record that `/records/verify/` accepts takes.

    .venv/bin/python bench/verify_worst.py              # a record of RECORD_MAX_BYTES
    .venv/bin/python bench/verify_worst.py --bytes 1000000

Anyone may post a record of up to `settings.RECORD_MAX_BYTES` (5 MB) to `/records/verify/`,
30 an hour from one network (`record_verify_client`); the page replays it on the request. The
most moves a record can hold for their bytes are a slow Maze Race's: a step is about 75 bytes
of compact JSON, and the two runners may walk back and forth for ever. This bench writes such a
record, every step legal, as large as the limit allows, and times what the page does with it:
the reading (`records.record_parse`) and the replay (`records.record_verify`), in process, with
no database (the record names no game of the site). It prints the moves, the bytes and the
seconds of each part, median of `--runs`."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))


def setup_django() -> None:
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mazesite.settings")
    os.environ.pop("REDIS_URL", None)
    os.environ["MAZESITE_VAR_DIR"] = "/tmp/mazesite-bench-var"
    import django

    django.setup()


def back_and_forth_record(most_bytes: int) -> bytes:
    """A finished-looking slow Maze Race record whose moves are legal steps, each runner in turn
    stepping to a neighbour and back, with as many moves as fit in `most_bytes`."""
    from games.archive.records import FORMAT
    from games.engines import ENGINES
    from games.engines.base import IllegalMove
    from games.models import PLAYER_ABORTED

    engine = ENGINES["mazerace"]
    seed = bytes(range(32))
    options = {"mode": "slow"}
    state = engine.start(seed, options, 2)
    head = {
        "format": FORMAT,
        "game": "mazerace",
        "id": "0",
        "url": "",
        "options": {**options, "clock": "P3D"},
        "seed_sha256": hashlib.sha256(seed).hexdigest(),
        "seed": seed.hex(),
        "players": [{"seat": i, "name": f"runner{i}", "bot": None} for i in range(2)],
        "first_seat": engine.first_seat(state),
        "initial": engine.initial(state),
        "clock_events": [],
        # Whatever the result says, it is checked after the last move is replayed.
        "result": {"status": "aborted", "reason": PLAYER_ABORTED, "places": []},
    }
    room = most_bytes - len(json.dumps({**head, "moves": []}, separators=(",", ":")))
    moves: list[str] = []
    ply = 0
    while True:
        ply += 1
        seat = (ply - 1) % 2
        for direction in "NESW":
            try:
                state, outcome = engine.apply(state, seat, {"dir": direction})
                break
            except IllegalMove:
                continue
        entry = json.dumps(
            {"ply": ply, "seat": seat, "move": {"dir": direction}, "outcome": outcome},
            separators=(",", ":"),
        )
        room -= len(entry) + 1
        if room < 0:
            break
        moves.append(entry)
    text = json.dumps(head, separators=(",", ":"))
    return (text[:-1] + ',"moves":[' + ",".join(moves) + "]}").encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=None, help="default: RECORD_MAX_BYTES")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    setup_django()
    from django.conf import settings

    from games.archive.records import record_parse, record_verify

    most = args.bytes or settings.RECORD_MAX_BYTES
    data = back_and_forth_record(most)
    assert len(data) <= most, (len(data), most)
    reads, replays = [], []
    for _ in range(args.runs):
        started = time.perf_counter()
        record = record_parse(data, name="The file")
        read = time.perf_counter()
        problems = record_verify(record)
        replays.append(time.perf_counter() - read)
        reads.append(read - started)
    print(f"slow Maze Race record: {len(record['moves']):,} legal steps in {len(data):,} bytes")
    # Found after the last move: both runners moved in a game said to be aborted by a player.
    print(f"found at the end: {problems}")
    print(
        f"read {statistics.median(reads):.2f} s, replay {statistics.median(replays):.2f} s "
        f"(median of {args.runs}); at 30 an hour from one network: "
        f"{30 * (statistics.median(reads) + statistics.median(replays)):.0f} s of CPU an hour"
    )


if __name__ == "__main__":
    main()
