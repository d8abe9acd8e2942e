from __future__ import annotations

import copy
import hashlib
import io
import json

import pytest
from django.core.management import CommandError, call_command

from games.archive.records import record_build, record_verify
from games.models import Game
from tests.conftest import FIXED_SEED, a_legal_move, play_to_the_end, seat_user, to_move

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(make_cornmaze) -> Game:
    return play_to_the_end(make_cornmaze(seats=3, size=6, seed=FIXED_SEED))


def test_a_finished_record_is_complete_and_checks_out(finished):
    record = record_build(finished, viewer_seat=None)
    assert record["seed"] == finished.seed_hex
    assert record["result"]["status"] == "finished"
    assert record["result"]["reason"] == "exit"
    assert sorted(record["result"]["places"]) == [1, 2, 2]
    assert [m["ply"] for m in record["moves"]] == list(range(1, finished.ply + 1))
    assert record_verify(record) == []


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        (lambda r: r.update(seed="00" * 32), "does not match"),
        (lambda r: r["initial"]["arrows"].__setitem__(0, "<" * 6), "starting position"),
        (lambda r: r.update(first_seat=(r["first_seat"] + 1) % 3), "first seat"),
        (lambda r: r["moves"][0]["outcome"].update(drawn=["?", "?"]), "Move 1"),
        (lambda r: r["result"].update(places=[1, 1, 1]), "result"),
        (lambda r: r["result"].update(status="aborted", places=[]), "says it was aborted"),
        (lambda r: r["result"].update(status="active", places=[]), "says it goes on"),
        (lambda r: r["result"].update(status="won"), "status 'won' is none of"),
        (lambda r: r.update(format="something/2"), "not a mazesite-record/1"),
        (lambda r: r["moves"][0].update(ply=7), "Move 1 is numbered 7"),
        (lambda r: r["options"].update(clock="live"), "The clock 'live' is not this game's"),
        (lambda r: r["options"].update(clock="P1D"), "The clock 'P1D' is not this game's"),
    ],
)
def test_a_tampered_record_does_not_check_out(finished, tamper, problem):
    record = copy.deepcopy(record_build(finished, viewer_seat=None))
    tamper(record)
    problems = record_verify(record)
    assert problems and any(problem in p for p in problems), problems


@pytest.mark.parametrize(
    ("reason", "problem"),
    [
        ("aborted", "clock ran out before it began, but it has moves"),
        ("player_aborted", "several players moved"),
        ("withdrawn", "withdrawn before it started, but it has moves, places"),
        ("declined", "declined before it started, but it has moves, places"),
        ("lost interest", "reason 'lost interest' is none of"),
    ],
)
def test_a_game_cut_short_cannot_be_passed_off_as_aborted(finished, reason, problem):
    """A lost game's record cut after a few moves and said to be aborted (which has no result)
    used to check out: an abort's reason says what moves the game may have."""
    record = copy.deepcopy(record_build(finished, viewer_seat=None))
    record["moves"] = record["moves"][:3]  # three players' moves: nobody has won yet
    record["result"] = {"status": "aborted", "reason": reason, "places": []}
    problems = record_verify(record)
    assert problems and any(problem in p for p in problems), problems
    # Still running, it would have no seed yet.
    record["result"] = {"status": "active", "reason": "", "places": []}
    assert any("seed is published at its end" in p for p in record_verify(record))


def test_games_aborted_by_the_rules_check_out(make_cornmaze, make_user):
    from games.play import challenges, core

    # Aborted by a player after its creator's move; aborted on time with no move; withdrawn.
    # The first of these fixed seeds that has the creator move first.
    games = (make_cornmaze(seed=hashlib.sha256(b"%d" % i).digest()) for i in range(20))
    game = next(g for g in games if to_move(g) == 0)
    core.move_submit(
        game_id=game.pk, user=seat_user(game, 0), number=0, move={"shifts": a_legal_move(game)}
    )
    challenges.game_abort(game_id=game.pk, user=seat_user(game, 1))
    on_time = make_cornmaze()
    on_time.seats.exclude(deadline=None).update(deadline="2000-01-01T00:00Z")
    core.seat_timeout(game_id=on_time.pk, seat_index=to_move(on_time))
    creator = make_user()
    withdrawn = core.game_create(
        kind="cornmaze",
        creator=creator,
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
        reserved=challenges.challenged_players(names=[make_user().username], creator=creator),
    )
    challenges.game_withdraw(game_id=withdrawn.pk, user=withdrawn.seats.get(index=0).user)
    for aborted, reason in (
        (game, "player_aborted"),
        (on_time, "aborted"),
        (withdrawn, "withdrawn"),
    ):
        aborted.refresh_from_db()
        record = record_build(aborted, viewer_seat=None)
        assert (record["result"]["status"], record["result"]["reason"]) == ("aborted", reason)
        assert record_verify(record) == [], reason


def test_a_running_game_cannot_be_verified_yet(make_cornmaze):
    record = record_build(make_cornmaze(), viewer_seat=None)
    assert record["seed"] is None
    assert "not over" in record_verify(record)[0]


def test_export_prints_the_download_and_verify_reads_it(client, finished, tmp_path):
    out = io.StringIO()
    call_command("export", str(finished.pk), stdout=out)
    exported = json.loads(out.getvalue())
    downloaded = json.loads(client.get(f"/games/{finished.pk}/record.json").content)
    assert exported == downloaded
    path = tmp_path / "record.json"
    path.write_text(out.getvalue())
    out = io.StringIO()
    call_command("verify", str(path), stdout=out)
    assert "checks out" in out.getvalue()

    exported["moves"][-1]["outcome"]["end"] = [0, 0]
    path.write_text(json.dumps(exported))
    with pytest.raises(CommandError, match="does NOT check out"):
        call_command("verify", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(CommandError, match="no game 999999"):
        call_command("export", "999999")
    path.write_text("{not json")
    with pytest.raises(CommandError, match="not JSON"):
        call_command("verify", str(path))


def test_verify_with_site_compares_the_names_and_times_the_seed_cannot_check(finished, tmp_path):
    record = record_build(finished, viewer_seat=None)
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    out = io.StringIO()
    call_command("verify", str(path), "--site", stdout=out)
    assert "It is the record this site holds" in out.getvalue()
    renamed = copy.deepcopy(record)
    renamed["players"][0]["name"] = "someone-else"
    retimed = copy.deepcopy(record)
    retimed["moves"][2]["at"] = "2001-01-01T00:00:00+00:00"
    unknown = {**copy.deepcopy(record), "id": "999999"}
    elsewhere = {**copy.deepcopy(record), "url": record["url"].replace("/games/", "/games/1")}
    for changed, difference in (
        (renamed, "The field 'players' is not what this site holds."),
        (elsewhere, "The field 'url' is not what this site holds."),
        (retimed, "Move 3 is not what this site holds."),
        (unknown, "This site holds no game '999999'."),
    ):
        # The seed cannot tell: the record alone checks out.
        assert record_verify(changed) == []
        path.write_text(json.dumps(changed))
        out = io.StringIO()
        call_command("verify", str(path), stdout=out)
        assert "--site compares them" in out.getvalue()
        errors = io.StringIO()
        with pytest.raises(CommandError, match="does NOT check out"):
            call_command("verify", str(path), "--site", stdout=io.StringIO(), stderr=errors)
        assert difference in errors.getvalue()


def test_verify_with_site_takes_the_site_at_any_of_its_addresses(finished, tmp_path):
    """A record downloaded from `make run PORT=8197`, or through a proxy's name, names the site
    by the address it was reached at; the game's own path is what --site checks."""
    record = record_build(finished, viewer_seat=None)
    path = tmp_path / "record.json"
    for address in ("http://127.0.0.1:8197", "https://mazes.example.org"):
        url = address + finished.get_absolute_url()
        assert url != record["url"]
        path.write_text(json.dumps({**record, "url": url}))
        out = io.StringIO()
        call_command("verify", str(path), "--site", stdout=out)
        assert "It is the record this site holds" in out.getvalue()


def test_selfplay_stores_finished_games_and_writes_records(tmp_path):
    out = io.StringIO()
    call_command(
        "selfplay",
        "cornmaze",
        "--games",
        "4",
        "--size",
        "6",
        "--seats",
        "2",
        "--bots",
        "simple,strong",
        "--out",
        str(tmp_path),
        stdout=out,
    )
    text = out.getvalue()
    assert "4 games of Corn maze, 2 seats" in text
    assert "strong: won" in text and "simple: won" in text and "mean turns" in text
    games = Game.objects.filter(status=Game.Status.FINISHED)
    assert games.count() == 4
    files = sorted(tmp_path.glob("cornmaze-*.json"))
    assert len(files) == 4
    for f in files:
        assert record_verify(json.loads(f.read_text())) == []
    with pytest.raises(CommandError, match="Unknown bot"):
        call_command("selfplay", "cornmaze", "--bots", "genius", stdout=io.StringIO())


def test_a_record_nested_too_deeply_is_told_without_reaching_pythons_recursion_limit() -> None:
    """Told by counting brackets (those in strings are text), before json.loads recurses a
    call a level."""
    from games.archive.records import RECORD_MAX_DEPTH, RecordUnreadable, record_parse

    deepest = "[" * RECORD_MAX_DEPTH + "]" * RECORD_MAX_DEPTH
    assert record_parse(deepest, name="The file") == json.loads(deepest)
    assert record_parse('{"a": "[[[[{{{{' + "[" * 500 + '\\"]"}', name="x") == {
        "a": "[[[[{{{{" + "[" * 500 + '"]'
    }
    for text in ("[" * (RECORD_MAX_DEPTH + 1), "[" * 100_000, '{"a":' * 70):
        with pytest.raises(RecordUnreadable, match="^The file is nested too deeply"):
            record_parse(text, name="The file")
