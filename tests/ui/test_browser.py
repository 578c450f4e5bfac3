"""The notebook widgets in a real browser: JupyterLab + headless Chromium, driven by Playwright.

The other UI tests drive the widgets from Python; this one checks what a user sees. It starts
JupyterLab on 127.0.0.1 (a free port, a random token, settings and runtime files in a temporary
folder, every feature that would reach the internet turned off), opens ``browser/widgets.ipynb``
(a copy), runs all cells and checks the DOM: the config builder, the calibration wizard (its
histogram drawn), the comparison dashboard with rendered plotly figures and the partition view, each
clicked once to see that it reacts (through the kernel where the widget's logic lives in Python).
Then, at 1280x800 and 1920x1080, no text may be cut off, no widget be wider than the notebook and
no empty error box show. The browser console must stay free of errors and failed widget messages,
and no request may leave the machine. Screenshots go to ``tests/ui/screenshots/widgets_*.png``
(git-ignored). The harness is ``lab_harness.py``; ``test_tutorials_browser.py`` runs every tutorial
the same way.

Run it alone::

    RYZEN_NB_REQUIRE_BROWSER=1 .venv/bin/python -m pytest -q tests/ui/test_browser.py -s
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.ui.lab_harness import (
    JS_KERNEL_IDLE,
    JS_VISIBLE_PLOTS,
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
    shoot,
)

HERE = Path(__file__).resolve().parent
NOTEBOOK_DIR = HERE / "browser"
NOTEBOOK_FILE = "widgets.ipynb"

#: The whole test (server start, browser, run, checks, shutdown) must finish within this many
#: seconds; every wait below takes its timeout from what is left, so a hang fails with the name of
#: the step that hung instead of blocking CI. A normal run takes about a minute.
DEADLINE_S = 300.0
#: running all cells: quantizing and comparing on 50 samples takes a few seconds, a cold kernel a few more
RUN_ALL_S = 150.0

#: The step buttons of CalibrationWizard (ryzen_nb.ui.wizard.STEPS, numbered as the widget shows them).
WIZARD_STEPS = ["1. Source", "2. Preprocessing", "3. Mapping", "4. Preview", "5. Size"]


# -- the test ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_widgets_render_in_jupyterlab(tmp_path: Path) -> None:
    sync_api = playwright_api()
    deadline = Deadline(DEADLINE_S)
    clear_screenshots("widgets_")
    root = Path(shutil.copytree(NOTEBOOK_DIR, tmp_path / "notebooks"))  # the runs never touch the repository

    with jupyterlab(tmp_path, deadline, root) as server, sync_api.sync_playwright() as playwright:
        with browser_page(playwright, sync_api, server, deadline) as b:
            page, problems = b.page, b.problems

            with b.step("opening the notebook and starting its kernel"):
                page.goto(f"{server.url}/lab/tree/{NOTEBOOK_FILE}?token={server.token}",
                          wait_until="domcontentloaded", timeout=b.ms())
                page.wait_for_function(JS_KERNEL_IDLE, timeout=b.ms())

            with b.step("running all cells"):
                run_all_cells(b, RUN_ALL_S)
                # the last cell's output: every widget above it has been displayed
                page.locator(".jp-OutputArea-output", has_text="rnb-notebook-done").wait_for(state="attached",
                                                                                          timeout=b.ms())

            _check_config_builder(b)
            _check_wizard(b)
            _check_dashboard(b)
            _check_partition_view(b)

            # the clicks' round trips through the kernel are over: nothing left to log errors
            with b.step("waiting for the kernel to be idle after the clicks"):
                page.wait_for_function(JS_KERNEL_IDLE, timeout=b.ms())
            with b.step("measuring the widgets at 1280x800 and 1920x1080"):
                layout = check_views(b, NOTEBOOK, "widgets", WIDGET_OUTPUTS)
    print(f"\nbrowser test steps: {b.timing_report()}; {deadline.elapsed():.1f} s in all, server shutdown included")

    unexplained = problems.unexplained_console_errors()
    assert not unexplained, "the browser console reported errors:\n" + "\n".join(unexplained)
    assert not layout, "what a user would see as broken:\n" + "\n".join(layout)
    assert not problems.external, "the page tried to reach other hosts:\n" + "\n".join(problems.external)
    assert deadline.left() > 0, f"the browser test took {deadline.elapsed():.0f} s, over its {DEADLINE_S:.0f} s budget"


def _check_config_builder(b: Browser) -> None:
    builder = b.page.locator(".rnb-config-builder")
    with b.step("the config builder rendered"):
        b.expect(builder).to_have_count(1, timeout=b.ms())
        b.expect(builder).to_be_visible(timeout=b.ms())
        b.expect(builder.get_by_text("Equivalent Python")).to_be_visible(timeout=b.ms())
        b.expect(builder).to_contain_text("get_default_config('XINT8')", timeout=b.ms())
    shoot(builder, "widgets_config_builder")
    with b.step("the config builder's CLE checkbox changed the code preview"):
        # opening the accordion section is front-end only; the checkbox goes to the kernel and back
        builder.get_by_text("Accuracy recovery").click(timeout=b.ms())
        builder.get_by_role("checkbox", name="cross-layer equalization (CLE)").check(timeout=b.ms())
        b.expect(builder).to_contain_text("quant_config.include_cle = True", timeout=b.ms())
    shoot(builder, "widgets_config_builder_cle")


def _check_wizard(b: Browser) -> None:
    # No root CSS class on CalibrationWizard: its output area is the one holding the step buttons.
    wizard = b.page.locator(".jp-OutputArea-output", has=b.page.get_by_role("button", name=WIZARD_STEPS[0]))
    with b.step("the calibration wizard rendered"):
        b.expect(wizard).to_have_count(1, timeout=b.ms())
        b.expect(wizard).to_be_visible(timeout=b.ms())
        b.expect(wizard).to_contain_text("Calibration data for", timeout=b.ms())
        for title in WIZARD_STEPS:
            b.expect(wizard.get_by_role("button", name=title)).to_be_visible(timeout=b.ms())
        b.expect(wizard).to_contain_text("Step 1 of 5", timeout=b.ms())
    shoot(wizard, "widgets_wizard")
    with b.step("the wizard went to its Mapping step"):
        mapping = wizard.get_by_text("The model's inputs and what the first prepared sample gives")
        b.expect(mapping).to_be_hidden(timeout=b.ms())
        wizard.get_by_role("button", name="3. Mapping").click(timeout=b.ms())
        b.expect(wizard).to_contain_text("Step 3 of 5", timeout=b.ms())
        b.expect(mapping).to_be_visible(timeout=b.ms())
    shoot(wizard, "widgets_wizard_mapping")
    with b.step("the wizard's Preview step drew the histogram of the calibration data"):
        wizard.get_by_role("button", name="4. Preview").click(timeout=b.ms())
        b.expect(wizard).to_contain_text("Step 4 of 5", timeout=b.ms())
        # the digits' pixel values: a histogram with bars, not an empty frame (its data arrives by a
        # widget message that once failed with "Error setting state")
        b.expect(wizard.locator(".js-plotly-plot .gtitle")).to_contain_text("Values of input", timeout=b.ms())
        b.expect(wizard.locator(".js-plotly-plot .trace.bars .point path").first).to_be_visible(timeout=b.ms())
        bars = wizard.locator(".js-plotly-plot .trace.bars .point path").count()
        assert bars >= 5, f"the histogram shows {bars} bars"
    shoot(wizard, "widgets_wizard_preview")


def _wait_for_plot(b: Browser, root: Any, title_start: str) -> None:
    """Wait until a plotly figure whose title starts so is drawn on screen with a real width (a
    figure first drawn in a hidden tab must still be resized when its tab is shown)."""
    b.page.wait_for_function(
        f"([root, title]) => ({JS_VISIBLE_PLOTS})(root).some((p) => p.title.startsWith(title) && p.width > 300)",
        arg=[root.element_handle(timeout=b.ms()), title_start], timeout=b.ms())


def _check_dashboard(b: Browser) -> None:
    dashboard = b.page.locator(".rnb-dashboard")
    with b.step("the dashboard rendered with its plotly figures"):
        b.expect(dashboard).to_have_count(1, timeout=b.ms())
        b.expect(dashboard).to_be_visible(timeout=b.ms())
        b.expect(dashboard.locator(".js-plotly-plot .main-svg").first).to_be_visible(timeout=b.ms())
        dashboard.scroll_into_view_if_needed(timeout=b.ms())
        _wait_for_plot(b, dashboard, "Task metric")
    shoot(dashboard, "widgets_dashboard")
    with b.step("the dashboard's Fidelity tab showed its figure"):
        tab = dashboard.get_by_role("tab", name="Fidelity")
        tab.click(timeout=b.ms())
        b.expect(tab).to_have_attribute("aria-selected", "true", timeout=b.ms())
        _wait_for_plot(b, dashboard, "Output fidelity")
        plots = dashboard.evaluate(JS_VISIBLE_PLOTS)
        assert not any(p["title"].startswith("Task metric") for p in plots), f"Overview figures still shown: {plots}"
    shoot(dashboard, "widgets_dashboard_fidelity")


def _check_partition_view(b: Browser) -> None:
    view = b.page.locator(".rnb-partition-view")
    with b.step("the partition view rendered its rows"):
        b.expect(view).to_have_count(1, timeout=b.ms())
        b.expect(view).to_be_visible(timeout=b.ms())
        b.expect(view).not_to_have_attribute("data-node-count", "0", timeout=b.ms())
        count = int(view.get_attribute("data-node-count", timeout=b.ms()) or 0)
        assert count > 0, f"data-node-count={count}"
        b.expect(view.locator(".rnb-pv-count-npu")).to_contain_text("NPU", timeout=b.ms())
    shoot(view, "widgets_partition_view")
    with b.step("the partition view's table of nodes"):
        # the view may open on another tab (a graph): the rows are in the one named "Table"
        table_tab = view.get_by_role("tab", name="Table")
        if table_tab.count():
            table_tab.click(timeout=b.ms())
        b.expect(view.locator(".rnb-pv-item").first).to_be_visible(timeout=b.ms())
    with b.step("a click on a partition view row showed its details"):
        row = view.locator(".rnb-pv-item").first
        name = row.get_attribute("data-name", timeout=b.ms())
        assert name, "the first row has no data-name"
        row.click(timeout=b.ms())
        b.expect(view.locator(".rnb-pv-item.rnb-pv-selected")).to_have_count(1, timeout=b.ms())
        details = view.locator(".rnb-pv-details")
        b.expect(details).to_be_visible(timeout=b.ms())
        b.expect(details.locator(".rnb-pv-details-name")).to_have_text(name, timeout=b.ms())
    shoot(view, "widgets_partition_view_selected")
    with b.step("'CPU nodes only' lists the CPU operators the view counts"):
        counted = view.locator(".rnb-pv-count-cpu").inner_text(timeout=b.ms())  # "CPU 2 ops"
        cpu_ops = int(counted.split()[1])
        assert cpu_ops > 0, f"the digits model in XINT8 leaves its boundary quantizers on the CPU, yet: {counted}"
        view.locator("input.rnb-pv-cpu-only").check(timeout=b.ms())
        b.expect(view.locator(".rnb-pv-item")).to_have_count(cpu_ops, timeout=b.ms())
        b.expect(view.locator(".rnb-pv-item:not(.rnb-pv-row-cpu)")).to_have_count(0)
        shoot(view, "widgets_partition_view_cpu_only")
        view.locator("input.rnb-pv-cpu-only").uncheck(timeout=b.ms())
