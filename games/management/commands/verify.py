from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.core.management.base import BaseCommand, CommandError, CommandParser

from games.archive.records import (
    SAME_AS_HELD,
    RecordUnreadable,
    record_checked_out,
    record_parse,
    record_site_differences,
    record_verify,
)


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
            data = sys.stdin.read() if path == "-" else Path(path).read_bytes()
            record = record_parse(data, name=path)
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror}") from None
        except RecordUnreadable as exc:
            raise CommandError(str(exc)) from None
        problems = record_verify(record)
        if options["site"] and isinstance(record, dict):
            differences = record_site_differences(record, user=AnonymousUser())
            if differences is None:
                differences = [f"This site holds no game {record.get('id')!r}."]
            problems += differences
        if problems:
            for problem in problems:
                self.stderr.write(f"- {problem}")
            raise CommandError(f"{path} does NOT check out ({len(problems)} problem(s)).")
        self.stdout.write(
            f"OK: {record_checked_out(record)} "
            + (
                SAME_AS_HELD
                if options["site"]
                else "(The players' names and the moves' times are not the seed's to check:"
                " --site compares them with the site's own.)"
            )
        )
