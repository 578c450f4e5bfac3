"""Every tutorial as a user meets it: a card of the launcher's "Ryzen AI" section, clicked in
JupyterLab in Chromium, copies the tutorial into the (empty) working folder and opens it; Run All
runs it top to bottom (the quick sizes, as nbval runs it: RYZEN_NB_QUICK=1). Then, at 1280x800 and
1920x1080: no error in the notebook, none in the browser console, no failed widget message, no text
cut off, no widget wider than the notebook and no empty error box (``lab_harness.JS_LAYOUT_PROBLEMS``).

One JupyterLab and one browser serve all the tutorials; each runs in its own kernel, shut down
before the next one starts. Screenshots of every widget and figure output go to
``tests/ui/screenshots/tutorial_<notebook>_<size>_*.png`` (git-ignored).

Run it alone (a few minutes)::

    RYZEN_NB_REQUIRE_BROWSER=1 .venv/bin/python -m pytest -q tests/ui/test_tutorials_browser.py
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.lab_harness import (
    JS_APP_READY,
    JS_CLOSE_NOTEBOOK,
    JS_KERNEL_IDLE,
    NOTEBOOK,
    WIDGET_OUTPUTS,
    Browser,
    Deadline,
    browser_page,
    check_views,
    clear_screenshots,
    jupyterlab,
    playwright_api,
    run_all_cells,
)

pytestmark = pytest.mark.slow

TUTORIALS = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
#: one tutorial, from its card to its closing: nbval's own limit for a notebook (notebooks/conftest.py)
#: is 180 s, the browser and the checks at two sizes add a little
TUTORIAL_S = 360.0
LAUNCHER_SECTION = "Ryzen AI"


@pytest.fixture
def jp_asyncio_loop() -> Iterator[None]:
    """Replaces pytest-jupyter's autouse fixture, which closes the thread's event loop after every
    test: here that loop is Playwright's, running for all the tests of the module (one browser)."""
    yield None


@pytest.fixture
def jp_server_cleanup() -> Iterator[None]:
    """Replaces pytest-jupyter's autouse cleanup of its in-process server (none runs here), which
    would run on Playwright's event loop."""
    yield None


class Lab:
    """The JupyterLab, browser page and tutorial list all the tests of this module share."""

    def __init__(self, server: Any, b: Browser, tutorials: dict[str, dict[str, Any]]) -> None:
        self.server, self.b, self.tutorials = server, b, tutorials


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    sync_api = playwright_api()
    clear_screenshots("tutorial_")
    tmp = tmp_path_factory.mktemp("tutorials")
    root = tmp / "work"
    root.mkdir()
    # the server's and browser's budget: each test gives the page a deadline of its own
    deadline = Deadline(120.0)
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(jupyterlab(tmp, deadline, root))
        playwright = stack.enter_context(sync_api.sync_playwright())
        b = stack.enter_context(browser_page(playwright, sync_api, server, deadline))
        with b.step("JupyterLab opens with its launcher"):
            b.page.goto(f"{server.url}/lab?token={server.token}", wait_until="domcontentloaded", timeout=b.ms())
            b.page.wait_for_function(JS_APP_READY, timeout=b.ms())
        tutorials = {t["name"]: t for t in server.api("GET", "/ryzen-nb/tutorials")["tutorials"]}
        yield Lab(server, b, tutorials)


def test_the_launcher_has_a_card_per_tutorial(lab: Lab) -> None:
    assert sorted(lab.tutorials) == TUTORIALS, "the launcher's tutorials are not the notebooks in notebooks/"
    b = lab.b
    b.deadline = Deadline(60.0)
    with b.step("the launcher's 'Ryzen AI' section"):
        cards = _cards(b)
        b.expect(cards).to_have_count(len(TUTORIALS), timeout=b.ms())
        labels = cards.all_inner_texts()
    for name, tutorial in lab.tutorials.items():
        assert any(f"{tutorial['number']} · {tutorial['title']}" in label for label in labels), (name, labels)


@pytest.mark.parametrize("name", TUTORIALS)
def test_tutorial_from_its_launcher_card(lab: Lab, name: str) -> None:
    b, tutorial = lab.b, lab.tutorials.get(name)
    assert tutorial is not None, f"the launcher has no card for {name}"
    b.deadline = Deadline(TUTORIAL_S)
    mark = b.problems.mark()
    with b.step(f"the launcher card of {name} opens a copy of it"):
        b.page.evaluate("() => window.jupyterapp.commands.execute('launcher:create').then(() => true)")
        card = _cards(b).filter(has_text=f"{tutorial['number']} · {tutorial['title']}")
        b.expect(card).to_have_count(1, timeout=b.ms())
        card.click(timeout=b.ms())
        b.expect(b.page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current",
                                has_text=f"{name}.ipynb")).to_be_visible(timeout=b.ms())
        b.page.wait_for_function(JS_KERNEL_IDLE, timeout=b.ms())
        assert (lab.server.root / f"{name}.ipynb").is_file()
    try:
        with b.step(f"Run All in {name}"):
            run_all_cells(b, TUTORIAL_S)
            b.page.wait_for_timeout(1000)  # widgets render after the kernel is idle: their state comes by messages
        with b.step(f"measuring and photographing {name} at 1280x800 and 1920x1080"):
            layout = check_views(b, NOTEBOOK, f"tutorial_{name}", WIDGET_OUTPUTS)
    finally:
        with contextlib.suppress(Exception):  # the next tutorial starts from a closed notebook and no kernel
            b.page.evaluate(JS_CLOSE_NOTEBOOK)
    console = b.problems.unexplained_console_errors(since=mark)
    assert not console, f"{name}: the browser console reported errors:\n" + "\n".join(console)
    assert not layout, f"{name}: what a user would see as broken:\n" + "\n".join(layout)
    assert not b.problems.external, "the page tried to reach other hosts:\n" + "\n".join(b.problems.external)


def _cards(b: Browser) -> Any:
    launcher = b.page.locator(".jp-Launcher:visible")
    section = launcher.locator(".jp-Launcher-section", has=b.page.locator(".jp-Launcher-sectionTitle",
                                                                          has_text=LAUNCHER_SECTION))
    return section.locator(".jp-LauncherCard")
