from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHECK = (
    "import games.engines, games.bots, games.bots.cornmaze, sys; "
    "assert not any(m.startswith('django') for m in sys.modules), "
    "sorted(m for m in sys.modules if m.startswith('django'))"
)


def test_engines_and_bots_load_without_django() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
