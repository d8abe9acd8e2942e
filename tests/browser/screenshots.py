"""Not a test (pytest does not collect it: its name is not test_*.py): a tool that takes a
screenshot of every page of the tour (tour.py), at 1280x900 and on a 390x844 phone, for a person
to look at. It needs the test database, as the browser tests do:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/mazesite_NAME \\
    REDIS_URL=redis://127.0.0.1:6379/0 .venv/bin/pytest tests/browser/screenshots.py -p no:randomly

The pictures go to test-artifacts/screens/<width>/<role>-<page>.png. SCREENS_ONLY=regex takes
only the pages whose "<role>-<page>" name matches."""

from __future__ import annotations

import os
import re
from pathlib import Path

from django.conf import settings

from tests.browser.tour import build_tour

SIZES = {"desktop": (1280, 900), "phone": (390, 844)}
OUT = Path(settings.BASE_DIR) / "test-artifacts" / "screens"
# What sticks out past the right edge of the window (a page should never scroll sideways).
WIDER = """() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  if (document.documentElement.scrollWidth <= width) return out;
  document.querySelectorAll("body *").forEach((e) => {
    const r = e.getBoundingClientRect();
    if (r.right > width + 1 && r.width > 0 && !e.closest(".visually-hidden, .table-wrap")) {
      out.push(`${e.tagName.toLowerCase()}.${e.classList}`);
    }
  });
  return out.slice(0, 8);
}"""
# Pages that look the same whoever visits them are taken once, for the first role that has them.
SAME_FOR_ALL = re.compile(r"^(rules-|new-|not-found|archive$)")


def test_screenshots(browser, live_server, transactional_db) -> None:
    tour = build_tour()
    only = re.compile(os.environ.get("SCREENS_ONLY", ""))
    taken: set[str] = set()
    stops = []
    for stop in tour.stops:
        if SAME_FOR_ALL.match(stop.name) and stop.name in taken:
            continue
        taken.add(stop.name)
        if only.search(f"{stop.role}-{stop.name}"):
            stops.append(stop)
    for label, (width, height) in SIZES.items():
        folder = OUT / label
        folder.mkdir(parents=True, exist_ok=True)
        for role in {s.role for s in stops}:
            phone = label == "phone"
            context = tour.context(
                browser,
                live_server.url,
                role,
                viewport={"width": width, "height": height},
                is_mobile=phone,
                has_touch=phone,
                device_scale_factor=1,
            )
            page = context.new_page()
            for stop in (s for s in stops if s.role == role):
                page.goto(stop.path)
                page.wait_for_load_state("load")
                page.wait_for_timeout(150)  # the times localised, the clocks ticked
                page.screenshot(path=folder / f"{role}-{stop.name}.png", full_page=True)
                wider = page.evaluate(WIDER)
                if wider:
                    print(f"{label} {role}-{stop.name}: wider than the window: {wider}")
                if phone and stop.name == "lobby":
                    page.locator("header .menu > summary").click()
                    page.screenshot(path=folder / f"{role}-{stop.name}-menu.png")
            context.close()
