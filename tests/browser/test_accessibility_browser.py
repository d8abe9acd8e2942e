"""axe-core on every page of the site, for every role (tour.py): no violation of any rule it
runs by default (WCAG 2 A and AA, and its best practices), and no ARIA reference to an id that
no element has.

axe is vendored (vendor/axe.min.js, from the npm package axe-core 4.14.1, MPL-2.0) and never
served by the site: Playwright puts it in each page from outside (an init script of this test's
browser contexts), where the page's Content-Security-Policy does not reach, so the policy stays
as strict as the site sends it."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.browser.tour import ROLES, build_tour

pytestmark = pytest.mark.browser

AXE = Path(__file__).parent / "vendor" / "axe.min.js"

RUN = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations.map((v) =>
    `${v.id} (${v.impact}): ${v.help}\\n` +
    v.nodes.slice(0, 3).map((n) =>
      `    ${n.target.join(" ")}: ${n.failureSummary.replace(/\\n/g, " ")}`
    ).join("\\n")
  );
}"""


def axe_violations(page: Page) -> list[str]:
    """What axe finds wrong on the page; its context has `AXE` as an init script."""
    return page.evaluate(RUN)


# An id named by an ARIA attribute that no element has: axe lets it pass when another id of
# the same attribute exists, and a screen reader then reads nothing (a form's help text
# without its id, say).
MISSING_IDS = r"""() => {
  const found = [];
  for (const name of ["aria-describedby", "aria-labelledby", "aria-controls", "aria-owns"]) {
    for (const el of document.querySelectorAll(`[${name}]`)) {
      for (const id of el.getAttribute(name).split(/\s+/).filter(Boolean)) {
        if (!document.getElementById(id)) found.push(`${el.tagName.toLowerCase()}[${name}=${id}]`);
      }
    }
  }
  return found;
}"""


# One test a role, so that the workers share them: each tour of every page takes a while.
@pytest.mark.parametrize("role", ROLES)
def test_no_page_has_an_accessibility_violation_for_each_role(
    browser, live_server, transactional_db, role: str
):
    tour = build_tour()
    found: list[str] = []
    context = tour.context(browser, live_server.url, role)
    context.add_init_script(path=AXE)
    page = context.new_page()
    stops = [s for s in tour.stops if s.role == role]
    assert stops
    for stop in stops:
        page.goto(stop.path)
        page.wait_for_load_state("load")
        found += [f"{role} {stop.path} ({stop.name}): {v}" for v in axe_violations(page)]
        found += [
            f"{role} {stop.path} ({stop.name}): no element with the id of {ref}"
            for ref in page.evaluate(MISSING_IDS)
        ]
    context.close()
    assert not found, "\n".join(found)
