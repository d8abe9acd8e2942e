from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from games.archive.records import record_build, record_differences, record_verify
from games.models import Game
from games.web.inputs import ascii_int


class Command(BaseCommand):
    help = (
        "Replay a game record from its seed and say whether it checks out ('-' reads stdin); "
        "with --site, also compare it with the game this site holds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument(
            "--site",
            action="store_true",
            help="Also compare the record with this site's own record of the game (its id): "
            "the players' names and the moves' times, which the seed cannot check.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["file"]
        try:
            # utf-8-sig: a file saved with a byte order mark (as some editors do) reads too.
            text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8-sig")
            record = json.loads(text.removeprefix("\ufeff"))
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise CommandError(f"{path} is not JSON: it is not UTF-8 text.") from None
        except json.JSONDecodeError as exc:
            raise CommandError(f"{path} is not JSON: {exc}") from None
        except ValueError:  # Python's limit on the digits of an integer
            raise CommandError(
                f"{path} is not a record: it holds a number too long to read."
            ) from None
        except RecursionError:
            raise CommandError(f"{path} is nested too deeply to be a record.") from None
        problems = record_verify(record)
        if options["site"] and isinstance(record, dict):
            problems += self._site_differences(record)
        if problems:
            for problem in problems:
                self.stderr.write(f"- {problem}")
            raise CommandError(f"{path} does NOT check out ({len(problems)} problem(s)).")
        moves = len(record.get("moves") or [])
        self.stdout.write(
            f"OK: {record['game']} game {record.get('id')} checks out: the seed matches its "
            f"SHA-256, and all {moves} moves and every random draw replay exactly."
            + (
                " It is the record this site holds, names and times included."
                if options["site"]
                else " (The players' names and the moves' times are not the seed's to check:"
                " --site compares them with the site's own.)"
            )
        )

    def _site_differences(self, record: dict[str, Any]) -> list[str]:
        game_id = record.get("id")
        pk = ascii_int(game_id)
        game = Game.objects.filter(pk=pk).first() if pk is not None else None
        if game is None:
            return [f"This site holds no game {game_id!r}."]
        return record_differences(record, record_build(game, viewer_seat=None))
