"""Engines and bots are pure Python: every module of theirs, each found on disk (a new one is
checked as soon as it is added), loads in a fresh interpreter without Django, Celery or any
other part of the site. (`lint-imports` checks the same of the imports as written.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def modules_of(package: str) -> list[str]:
    folder = ROOT.joinpath(*package.split("."))
    return sorted(
        package if path.name == "__init__.py" else f"{package}.{path.stem}"
        for path in folder.glob("*.py")
    )


MODULES = modules_of("games.engines") + modules_of("games.bots")

CHECK = f"""
import importlib, sys
for name in {MODULES!r}:
    importlib.import_module(name)
from games.bots import BOTS, levels
for game in ("cornmaze", "robotmaze", "mazerace"):
    assert levels(game), game
outside = sorted(
    m for m in sys.modules
    if m.split(".")[0] in {{"django", "celery", "kombu", "mazesite"}}
    or (m.startswith("games.") and not m.startswith(("games.engines", "games.bots")))
)
assert not outside, outside
"""


def test_every_engine_and_bot_module_loads_without_django_or_the_site() -> None:
    assert {"games.bots.cornmaze", "games.bots.mazerace", "games.bots.robotmaze"} <= set(MODULES)
    assert {"games.engines.cornmaze", "games.engines.mazerace", "games.engines.robotmaze"} <= set(
        MODULES
    )
    done = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
