"""Check a game record (/records/verify/): a record someone has, sent as a file or as its text,
replayed from its seed and compared with this site's own, as `manage.py verify --site` does; bad
input answered with a sentence and 400; nothing told of a game that is not over."""

from __future__ import annotations

import copy
import html
import json
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.files.uploadedfile import SimpleUploadedFile
from django.template.loader import render_to_string
from django.test import Client
from django.urls import reverse
from django_ratelimit.core import _split_rate

from games.archive.records import NOT_OVER_HERE, SAME_AS_HELD, record_build
from games.archive.views import NO_RECORD, NOT_HELD, TWO_RECORDS, record_too_large
from games.models import Game
from games.web.middleware import too_large
from tests.conftest import FIXED_SEED, play_to_the_end
from tests.test_limits import assert_limited

pytestmark = pytest.mark.django_db

URL = "/records/verify/"


@pytest.fixture
def finished(make_cornmaze) -> Game:
    return play_to_the_end(make_cornmaze(seats=3, size=6, seed=FIXED_SEED))


@pytest.fixture
def downloaded(client: Client, finished: Game) -> bytes:
    """The finished game's record, as its download link serves it."""
    response = client.get(reverse("game_record", args=[finished.pk]))
    assert response.status_code == 200
    return response.content


def send_file(client: Client, data: bytes, name: str = "record.json") -> Any:
    return client.post(URL, {"file": SimpleUploadedFile(name, data, "application/json")})


def page_text(response: Any) -> str:
    return html.unescape(response.content.decode())


def test_the_page_is_the_urls_and_is_linked_where_the_check_is_promised(client, finished):
    assert reverse("record_verify") == URL
    page = client.get(URL)
    assert page.status_code == 200
    assert 'enctype="multipart/form-data"' in page.content.decode()
    for linking in (
        reverse("game_replay", args=[finished.pk]),
        reverse("rules", args=["cornmaze"]),
        reverse("rules", args=["mazerace"]),
        reverse("lobby"),  # the footer's "checked"
    ):
        assert f'href="{URL}"' in client.get(linking).content.decode(), linking


def test_a_downloaded_record_checks_out_and_is_the_sites(client, finished, downloaded):
    for response in (
        send_file(client, downloaded),
        client.post(URL, {"text": downloaded.decode()}),
        # Saved with a byte order mark, as some editors save: read as the command reads it.
        send_file(client, b"\xef\xbb\xbf" + downloaded),
    ):
        assert response.status_code == 200
        text = page_text(response)
        moves = len(json.loads(downloaded)["moves"])
        assert f"✔ cornmaze game {finished.pk} checks out:" in text
        assert f"all {moves} moves and every random draw replay exactly." in text
        assert SAME_AS_HELD in text
        assert "does NOT check out" not in text


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda r: r["result"].update(places=[1, 1, 1]), "The result is not"),
        (lambda r: r["players"][0].update(name="someone-else"), "The field 'players' is not what"),
        (lambda r: r.update(seed="00" * 32), "does not match"),
        (lambda r: r["moves"].pop(), "this site holds"),
    ],
    ids=["outcome", "name", "seed", "a move less"],
)
def test_a_changed_record_does_not_check_out(client, downloaded, change, problem):
    record = json.loads(downloaded)
    change(record)
    response = send_file(client, json.dumps(record, indent=2).encode())
    assert response.status_code == 200
    text = page_text(response)
    assert "✘ The record does NOT check out" in text
    assert problem in text, text
    assert SAME_AS_HELD not in text


def test_a_record_of_another_site_checks_out_by_its_seed_alone(client, downloaded):
    record = {**json.loads(downloaded), "id": "999999"}
    text = page_text(send_file(client, json.dumps(record).encode()))
    assert "checks out" in text and NOT_HELD in text
    assert SAME_AS_HELD not in text


def test_a_truncated_file_is_not_json(client, downloaded):
    response = send_file(client, downloaded[: len(downloaded) // 2])
    assert response.status_code == 400
    assert "The file is not JSON: " in page_text(response)


@pytest.mark.parametrize(
    ("data", "sentence"),
    [
        (b"", "The file is empty."),
        (b"\xef\xbb\xbf \n", "The file is empty."),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "The file is not JSON: it is not UTF-8"),
        (b"\xff\xfe{\x00}\x00", "The file is not JSON: it is not UTF-8 text."),
        (b"{not json", "The file is not JSON: Expecting property name"),
        (b'[{"format": "mazesite-record/1"}]', "A record is a JSON object."),
        (b"[" * 100_000, "The file is nested too deeply to be a record."),
        (b'{"id": ' + b"9" * 5000 + b"}", "holds a number too long to read."),
    ],
    ids=["empty", "bom only", "binary", "utf-16", "bad json", "array", "deep", "long number"],
)
def test_a_file_that_is_no_record_is_refused_with_its_sentence(client, data, sentence):
    response = send_file(client, data)
    assert response.status_code == 400
    assert sentence in page_text(response)
    assert 'role="alert"' in response.content.decode()


def test_pasted_text_that_is_no_record_is_refused_and_kept_to_mend(client):
    response = client.post(URL, {"text": '{"format": "mazesite-record/1",'})
    assert response.status_code == 400
    text = page_text(response)
    assert "The text is not JSON: " in text
    assert '{"format": "mazesite-record/1",</textarea>' in text  # kept to be mended


def test_one_record_one_way(client, downloaded):
    for data, sentence in (
        ({}, NO_RECORD),
        ({"text": "  \n"}, NO_RECORD),
        (
            {"file": SimpleUploadedFile("r.json", downloaded), "text": downloaded.decode()},
            TWO_RECORDS,
        ),
    ):
        response = client.post(URL, data)
        assert response.status_code == 400
        assert sentence in page_text(response)


def test_a_record_too_large_is_refused_before_it_is_read(client):
    most = settings.RECORD_MAX_BYTES
    data = b'{"moves": [' + b" " * (most - 12) + b"]}"
    assert len(data) == most + 1
    response = send_file(client, data)
    assert response.status_code == 400
    assert record_too_large() in page_text(response)
    response = client.post(URL, {"text": data.decode()})
    assert response.status_code == 400
    assert record_too_large() in page_text(response)
    # A body larger than any the site takes is refused by what it declares, before a byte of it
    # is read: here it declares far more than it holds.
    response = client.post(
        URL, {"text": "{}"}, CONTENT_LENGTH=str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    )
    assert response.status_code == 400
    assert too_large() in page_text(response)  # on a page with the site's header


def test_a_record_naming_a_game_not_over_is_not_compared(client, make_cornmaze, downloaded):
    """The site's record of a running game is never compared with a record sent in: it would
    tell what the site holds of that game (a Maze Race's steps, a warehouse)."""
    running = make_cornmaze(seats=3, size=6)
    for record in (
        {**json.loads(downloaded), "id": str(running.pk), "url": running.get_absolute_url()},
        copy.deepcopy(record_build(running, viewer_seat=None)),
    ):
        response = send_file(client, json.dumps(record).encode())
        assert response.status_code == 200
        text = page_text(response)
        assert "does NOT check out" in text
        assert NOT_OVER_HERE in text
        assert "what this site holds" not in text and "this site holds" not in text
        assert running.seed_hex not in text


def test_checking_records_is_limited_but_a_mistake_costs_nothing(client, downloaded, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "record_verify_client": "2/h"}
    limit, _period = _split_rate(settings.RATE_LIMITS["record_verify_client"])
    for _ in range(3):
        assert send_file(client, b"[").status_code == 400
    for _ in range(limit):
        assert send_file(client, downloaded).status_code == 200
    assert_limited(
        send_file(client, downloaded), "Your network has had many records checked in a short time."
    )
    assert client.get(URL).status_code == 200  # the page itself is not counted


def test_a_private_game_waiting_for_players_is_no_game_to_others(client, make_user, downloaded):
    """Its page is a 404 to whoever it does not keep a seat for: so is it here."""
    from games.play import core

    creator = make_user()
    private = core.game_create(
        kind="cornmaze",
        creator=creator,
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
        invite=True,
    )
    record = {**json.loads(downloaded), "id": str(private.pk)}
    assert client.get(reverse("game", args=[private.pk])).status_code == 404
    assert NOT_HELD in page_text(send_file(client, json.dumps(record).encode()))
    client.force_login(creator)
    assert NOT_OVER_HERE in page_text(send_file(client, json.dumps(record).encode()))


def test_a_long_list_of_problems_shows_its_first_twenty_and_counts_the_rest(rf):
    """A record given another game's id differs in every field and move (210 problems for a
    long Maze Race): the first twenty are listed, the rest counted."""
    request = rf.get(URL)
    request.user = AnonymousUser()
    problems = [f"Problem number {i}." for i in range(1, 26)]
    page = html.unescape(
        render_to_string(
            "archive/record_verify.html",
            {"verification": {"ok": False, "problems": problems}},
            request,
        )
    )
    assert "✘ The record does NOT check out (25 problems)" in page
    assert "<li>Problem number 20.</li>" in page
    assert "Problem number 21." not in page
    assert "… and 5 more: the first are the ones to look at." in page
