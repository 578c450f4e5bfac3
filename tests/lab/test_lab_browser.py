"""The JupyterLab extension in a real browser, as a user meets it right after ``pip install``:
JupyterLab from this environment (the prebuilt extension comes from the wheel's shared data, the
server extension from its config) and Debian's Chromium driven by Playwright (no browser download).

It finds the "Ryzen AI" section of the launcher with a card per tutorial, opens a tutorial from it
(a copy lands in the working folder), opens an ``.onnx`` file from the file browser and sees its
summary and NPU partition — its graph, coloured by device and precision from the server's facts, and
its table (then another precision and target) — asks "Quantize with ryzen-nb…" from
the file's context menu and gets the notebook, and sees the error for a file that is not ONNX. The
harness (server, deadline, console watch, no request leaving the machine) is the widgets' browser
tests', in ``tests/ui/lab_harness.py``. Screenshots go to ``tests/ui/screenshots/lab_*.png``.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest

from ryzen_nb.spec.precisions import DEVICES, PRECISIONS
from tests.ui.lab_harness import (
    JS_APP_READY,
    JS_KERNEL_IDLE,
    NOTEBOOK,
    WIDGET_OUTPUTS,
    Deadline,
    browser_page,
    check_views,
    jupyterlab,
    playwright_api,
    run_all_cells,
    shoot,
)

pytestmark = pytest.mark.slow


def _hex(css_colour: str) -> str:
    """``rgb(31, 111, 180)`` as ``#1f6fb4``."""
    red, green, blue = (int(v) for v in css_colour[css_colour.index("(") + 1:css_colour.index(")")].split(",")[:3])
    return f"#{red:02x}{green:02x}{blue:02x}"



@contextlib.contextmanager
def _lab(tmp: Path, deadline: Deadline):
    root = tmp / "work"
    root.mkdir()
    from ryzen_nb import zoo

    shutil.copy(zoo.load_model("resnet_digits").path, root / "digits.onnx")
    (root / "notes.onnx").write_text("these are notes, not a model\n")
    with jupyterlab(tmp, deadline, root) as server:
        yield server


def test_launcher_viewer_and_quantize_in_jupyterlab(tmp_path: Path) -> None:
    sync_api = playwright_api()
    # the generated notebook's Run All (quantize, compile, compare on the digits model) takes a minute of it
    deadline = Deadline(480.0)
    with _lab(tmp_path, deadline) as server, sync_api.sync_playwright() as playwright:
        tutorials = server.api("GET", "/ryzen-nb/tutorials")["tutorials"]
        assert tutorials, "the server extension lists no tutorials"
        with browser_page(playwright, sync_api, server, deadline, viewport=(1280, 1000)) as b:
            page, problems = b.page, b.problems

            with b.step("the launcher shows a 'Ryzen AI' section with a card per tutorial"):
                page.goto(f"{server.url}/lab?token={server.token}", wait_until="domcontentloaded", timeout=b.ms())
                page.wait_for_function(JS_APP_READY, timeout=b.ms())
                section = page.locator(".jp-Launcher-section", has=page.locator(".jp-Launcher-sectionTitle",
                                                                                has_text="Ryzen AI"))
                cards = section.locator(".jp-LauncherCard")
                b.expect(cards).to_have_count(len(tutorials), timeout=b.ms())
                first = tutorials[0]
                b.expect(cards.first).to_contain_text(f"{first['number']} · {first['title']}", timeout=b.ms())
                shoot(page, "lab_launcher")

            with b.step("a launcher card copies its tutorial into the folder and opens it"):
                cards.first.click()
                name = f"{first['name']}.ipynb"
                tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=name)
                b.expect(tab).to_be_visible(timeout=b.ms())
                b.expect(page.locator(".jp-NotebookPanel:visible .jp-Cell").first).to_be_visible(timeout=b.ms())
                assert (server.root / name).is_file()

            with b.step("double-clicking an .onnx file opens the viewer with its summary and partition"):
                # the tutorial's copy joins the listing above digits.onnx: aim only once the rows have moved
                b.expect(page.locator(".jp-DirListing-item", has_text=name)).to_be_visible(timeout=b.ms())
                item = page.locator('.jp-DirListing-item[data-file-type="onnx"]', has_text="digits.onnx")
                item.dblclick(timeout=b.ms())
                b.expect(page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="digits.onnx")).to_be_visible(
                    timeout=b.ms())
                viewer = page.locator(".rnb-onnx-viewer:visible")
                b.expect(viewer.locator(".rnb-facts")).to_contain_text("digits.onnx", timeout=b.ms())
                b.expect(viewer.locator(".rnb-io")).to_contain_text("1×1×8×8")
                b.expect(viewer.locator(".rnb-histogram")).to_contain_text("Conv")
                b.expect(viewer.locator(".rnb-headline")).to_contain_text("on NPU", timeout=b.ms())
                b.expect(viewer.locator(".rnb-latency")).to_contain_text("estimated latency on STX")
                shoot(page, "lab_onnx_viewer")

            with b.step("the partition opens on its graph: a box per operator, laid out, coloured from the facts"):
                b.expect(viewer.locator(".rnb-tab.rnb-tab-active")).to_have_text("Graph")
                graph = viewer.locator(".rnb-graph")
                b.expect(graph.locator(".rnb-graph-node").first).to_be_visible(timeout=b.ms())
                boxes = graph.locator(".rnb-graph-node").count()
                assert boxes == int(graph.get_attribute("data-node-count") or 0) > 10
                assert graph.locator(".rnb-graph-edge").count() >= boxes - 1, "the graph has no edges"
                b.expect(graph.locator(".rnb-graph-status")).to_contain_text("layout")
                fill = graph.locator(".rnb-graph-node .rnb-graph-box").first.get_attribute("fill")
                assert fill in {p.colour for p in PRECISIONS.values()}, f"a box filled {fill}, not a precision's colour"
                graph.locator(".rnb-graph-search").fill("Conv")
                graph.locator(".rnb-graph-search").press("Enter")
                b.expect(graph.locator(".rnb-graph-panel")).to_be_visible(timeout=b.ms())
                b.expect(graph.locator(".rnb-graph-panel-op")).to_have_text("Conv")
                assert graph.locator(".rnb-graph-node.rnb-graph-selected").count() == 1
                shoot(page, "lab_onnx_viewer_graph")

            with b.step("choosing XINT8 on PHX recompiles: the convolutions run on the NPU"):
                viewer.locator("select.rnb-precision").select_option("XINT8")
                b.expect(viewer.locator(".rnb-latency")).to_contain_text("STX", timeout=b.ms())
                b.expect(viewer.locator(".rnb-status")).to_have_text("", timeout=b.ms())
                viewer.locator("select.rnb-target").select_option("PHX")
                b.expect(viewer.locator(".rnb-latency")).to_contain_text("estimated latency on PHX", timeout=b.ms())
                headline = viewer.locator(".rnb-headline").inner_text()
                npu_ops = int(headline.split("NPU ")[1].split(" ops")[0])
                assert npu_ops > 0, headline
                # the graph's boxes: XINT8's colour, edged with the NPU's (both ryzen_nb.spec facts)
                conv = viewer.locator(".rnb-graph-node", has_text="Conv").first
                b.expect(conv).to_be_visible(timeout=b.ms())
                assert conv.locator(".rnb-graph-box").get_attribute("fill") == PRECISIONS["XINT8"].colour
                assert conv.locator(".rnb-graph-box").get_attribute("stroke") == DEVICES["NPU"].colour
                shoot(page, "lab_onnx_viewer_graph_xint8_phx")
                viewer.locator(".rnb-tab", has_text="Table").click(timeout=b.ms())
                b.expect(viewer.locator(".rnb-graph")).to_be_hidden(timeout=b.ms())
                b.expect(viewer.locator("tr.rnb-npu", has_text="Conv").first).to_be_visible()
                # labels and colours are the server's facts (ryzen_nb.spec), not the front end's
                xint8 = PRECISIONS["XINT8"]
                b.expect(viewer.locator("select.rnb-precision option:checked")).to_have_text(xint8.label)
                b.expect(viewer.locator(".rnb-legend")).to_contain_text("XINT8")
                chip = viewer.locator("tr.rnb-npu .rnb-prec", has_text="XINT8").first
                assert _hex(chip.evaluate("e => getComputedStyle(e).backgroundColor")) == xint8.colour.lower()
                device = viewer.locator("tr.rnb-npu .rnb-chip.rnb-npu").first
                assert _hex(device.evaluate("e => getComputedStyle(e).backgroundColor")) == DEVICES["NPU"].colour.lower()
                shoot(page, "lab_onnx_viewer_xint8_phx")

            with b.step("the viewer at 1280x800 and 1920x1080: no text cut off, no empty error box"):
                layout = check_views(b, ".rnb-onnx-viewer", "lab_onnx_viewer_sizes")  # the hidden ones are skipped
                assert not layout, "what a user would see as broken in the viewer:\n" + "\n".join(layout)

            with b.step("'Quantize with ryzen-nb…' in the file's context menu writes and opens a notebook"):
                item.click(button="right", timeout=b.ms())
                page.locator(".lm-Menu-item", has_text="Quantize with ryzen-nb…").click(timeout=b.ms())
                tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="quantize_digits.ipynb")
                b.expect(tab).to_be_visible(timeout=b.ms())
                assert (server.root / "quantize_digits.ipynb").is_file()
                b.expect(page.locator(".jp-NotebookPanel:visible")).to_contain_text("ConfigBuilder", timeout=b.ms())

            with b.step("Run All in the generated notebook: no traceback, its widgets whole at both sizes"):
                # no data is chosen in its wizard: random stand-in samples let every cell run, and it says so
                page.wait_for_function(JS_KERNEL_IDLE, timeout=b.ms())
                run_all_cells(b, 300)
                b.expect(page.locator(".jp-NotebookPanel:visible")).to_contain_text("Random stand-in data",
                                                                                   timeout=b.ms())
                b.expect(page.locator(".jp-NotebookPanel:visible .rnb-dashboard")).to_be_visible(timeout=b.ms())
                layout = check_views(b, NOTEBOOK, "lab_quantize_notebook", WIDGET_OUTPUTS)
                assert not layout, "what a user would see as broken in the notebook:\n" + "\n".join(layout)

            with b.step("a file that is not ONNX shows the reason in the viewer"):
                # The notebook just wrote digits_quantized.onnx; the file browser lists it at its next poll
                # and every row below it moves down. A double-click aimed before that lands on the row that
                # took notes.onnx's place (CI once opened digits.onnx), so wait until the listing has it.
                assert (server.root / "digits_quantized.onnx").is_file()
                page.get_by_role("button", name="Refresh the file browser.").click(timeout=b.ms())
                b.expect(page.locator(".jp-DirListing-item", has_text="digits_quantized.onnx")).to_be_visible(
                    timeout=b.ms())
                page.locator('.jp-DirListing-item[data-file-type="onnx"]', has_text="notes.onnx").dblclick(
                    timeout=b.ms())
                b.expect(page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text="notes.onnx")).to_be_visible(
                    timeout=b.ms())
                error = page.locator(".rnb-onnx-viewer:visible .rnb-status.rnb-error")
                b.expect(error).to_contain_text("is not an ONNX model", timeout=b.ms())
                shoot(page, "lab_onnx_viewer_error")

            assert not problems.external, f"requests tried to leave the machine: {problems.external}"
            # the browser logs every failed request itself: the 415 for notes.onnx is the one this test asked for
            errors = [e for e in problems.unexplained_console_errors()
                      if not ("status of 415" in e and "path=notes.onnx" in e)]
            assert not errors, "the browser console reported errors:\n" + "\n".join(errors)
