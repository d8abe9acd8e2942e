from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_settings_pass_check_deploy():
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="0",
        SECRET_KEY="x" * 20 + "a-long-random-production-secret-key-0123456789",
        ALLOWED_HOSTS="mazes.example.com",
    )
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_production_without_a_secret_key_fails_loudly():
    result = manage("check", DEBUG="0")
    assert result.returncode != 0
    assert "Set the environment variable SECRET_KEY" in result.stderr


def test_a_malformed_boolean_fails_loudly():
    result = manage("check", DEBUG="maybe")
    assert result.returncode != 0
    assert "DEBUG must be a boolean" in result.stderr


PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "x" * 20 + "a-long-random-production-secret-key-0123456789",
    "ALLOWED_HOSTS": "mazes.example.com",
}
SHOW = "from django.conf import settings as s; print(s.SECURE_PROXY_SSL_HEADER, s.RATE_LIMITS)"


def test_the_proxy_https_header_is_believed_only_behind_a_proxy():
    alone = manage("shell", "-c", SHOW, **PRODUCTION)
    assert alone.returncode == 0, alone.stderr
    assert "\nNone {" in alone.stdout  # a client's X-Forwarded-Proto means nothing

    behind = manage("shell", "-c", SHOW, TRUSTED_PROXIES="1", **PRODUCTION)
    assert behind.returncode == 0, behind.stderr
    assert "\n('HTTP_X_FORWARDED_PROTO', 'https') {" in behind.stdout


def test_rates_can_be_overridden_and_a_bad_one_fails_loudly():
    changed = manage("shell", "-c", SHOW, RATE_LIMITS="signup_client=3/h, move_seat=10/2s")
    assert changed.returncode == 0, changed.stderr
    assert "'signup_client': '3/h'" in changed.stdout
    assert "'move_seat': '10/2s'" in changed.stdout
    assert "'guest_client': '30/10m'" in changed.stdout

    for bad in ("signup_client=lots", "nothing=3/h", "signup_client=0/h"):
        result = manage("check", RATE_LIMITS=bad)
        assert result.returncode != 0, bad
        assert "RATE_LIMITS:" in result.stderr


def test_kept_pages_are_keyed_by_the_code_and_templates_that_draw_them(tmp_path: Path) -> None:
    """A deploy that changes a template or the drawing code moves the kept pages, partials and
    logs to new keys (GAME_LOG_CACHE_PREFIX): none drawn by the code before it is served."""
    from mazesite import settings as site

    (tmp_path / "templates" / "games").mkdir(parents=True)
    (tmp_path / "games" / "ui").mkdir(parents=True)
    page = tmp_path / "templates" / "games" / "game.html"
    page.write_text("<p>{{ game }}</p>")
    drawing = tmp_path / "games" / "ui" / "board.py"
    drawing.write_text("CELL = '<td>'\n")
    first = site.drawing_version(tmp_path)
    assert site.drawing_version(tmp_path) == first  # the same files, the same keys
    (tmp_path / "games" / "notes.txt").write_text("not code")
    (tmp_path / "games" / "ui" / "board.cpython-311.pyc").write_bytes(b"\x00")
    assert site.drawing_version(tmp_path) == first
    page.write_text("<p class='title'>{{ game }}</p>")
    second = site.drawing_version(tmp_path)
    drawing.write_text("CELL = '<td class=\"cell\">'\n")
    third = site.drawing_version(tmp_path)
    drawing.rename(tmp_path / "games" / "ui" / "grid.py")
    fourth = site.drawing_version(tmp_path)
    assert len({first, second, third, fourth}) == 4
    assert f"game-log:{site.drawing_version(site.BASE_DIR)}:" == site.GAME_LOG_CACHE_PREFIX
