"""PartitionView's front end in Chromium, without JupyterLab: the shipped module (``partition_view.js``)
is imported as anywidget imports it (from a blob) and rendered against a stand-in for the widget
model holding a real view's synced state. Checked: the graph tab comes first, laid out, with the
facts' colours; nodes and blocks react to clicks; search finds and selects; a selection travels
between the graph, the ``selected`` trait and the table; a 514-node model lays out with every
block open. The full notebook run is in ``tests/ui/test_browser.py``; screenshots go to
``tests/ui/screenshots/partition_graph_*.png``.
"""

from __future__ import annotations

from typing import Any

import pytest

from ryzen_nb import testing
from ryzen_nb.spec.precisions import DEVICES, PRECISIONS
from ryzen_nb.ui.partition import PartitionView
from tests.ui.lab_harness import CHROMIUM, CHROMIUM_ARGS, playwright_api, shoot

pytestmark = pytest.mark.slow

#: a stand-in for the anywidget model: get/set/on/off/save_changes over a plain object, and render()
#: of the module under test into a fresh element; window.__saved records what the view sent back
MOUNT = """async ([source, state]) => {
  const listeners = {};
  window.__saved = [];
  const model = {
    get: (key) => state[key],
    set: (key, value) => { state[key] = value; (listeners["change:" + key] || []).forEach((f) => f()); },
    save_changes: () => window.__saved.push({selected: state.selected, target: state.target}),
    on: (event, f) => { (listeners[event] = listeners[event] || []).push(f); },
    off: () => {},
  };
  window.__model = model;
  const module = await import(URL.createObjectURL(new Blob([source], {type: "text/javascript"})));
  const el = document.createElement("div");
  document.body.append(el);
  module.default.render({model, el});
}"""


@pytest.fixture()
def page() -> Any:
    """A fresh Chromium page per test (Playwright's loop must not outlive a test: pytest-jupyter
    closes the event loop after each)."""
    sync_api = playwright_api()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            # the module must not fetch anything: every request from the page fails the test
            requests: list[str] = []
            context.route("**/*", lambda route: (requests.append(route.request.url), route.abort()))
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("console", lambda message: message.type == "error" and errors.append(message.text))
            page.set_content("<!doctype html><html><body style='margin:8px'></body></html>")
            yield page
            assert not errors, f"errors in the page: {errors}"
            assert not requests, f"the module asked the network for {requests}"
        finally:
            browser.close()


def mount(page: Any, view: PartitionView) -> Any:
    page.evaluate("document.body.replaceChildren()")
    page.add_style_tag(content=PartitionView._css)
    state = {k: v for k, v in view.get_state().items() if k in ("nodes", "summary", "target", "facts", "selected",
                                                                  "error")}
    page.evaluate(MOUNT, [PartitionView._esm, state])
    root = page.locator(".rnb-partition-view")
    root.locator(".rnb-graph-node").first.wait_for(timeout=30_000)
    return root


def test_the_graph_tab_of_a_partly_cpu_model(page) -> None:
    model = testing.resnet_cnn(0, blocks=(2, 2), width=8, image_size=16)
    import ryzen_nb

    config = ryzen_nb.get_default_config("XINT8")
    config.op_types_to_exclude = ["Add"]
    quantized = ryzen_nb.quantize(model, None, config, testing.random_images(4, size=16), progress=False).model
    view = PartitionView(quantized, target="PHX")
    root = mount(page, view)
    graph = root.locator(".rnb-graph")
    assert root.locator(".rnb-pv-tab-active").inner_text() == "Graph"
    assert root.locator(".rnb-pv-table-panel").is_hidden()
    operators = [n for n in view.nodes if not n["quantizer"] and n["op"] != "Constant"]
    assert graph.locator(".rnb-graph-node").count() == len(operators), "every block open: one box per operator"
    assert graph.locator(".rnb-graph-edge").count() >= len(operators) - 1
    # colours: a box's fill is its precision's, its edge its device's (ryzen_nb.spec facts); CPU boxes dashed
    adds = graph.locator(".rnb-graph-node.rnb-graph-cpu", has_text="Add")
    assert adds.count() == sum(n["op"] == "Add" for n in operators) > 0
    assert adds.first.locator(".rnb-graph-box").get_attribute("stroke") == DEVICES["CPU"].colour
    assert adds.first.locator(".rnb-graph-box").evaluate("e => getComputedStyle(e).strokeDasharray") != "none"
    conv = graph.locator(".rnb-graph-node:not(.rnb-graph-cpu)", has_text="Conv").first
    assert conv.locator(".rnb-graph-box").get_attribute("fill") == PRECISIONS["XINT8"].colour
    assert conv.locator(".rnb-graph-box").get_attribute("stroke") == DEVICES["NPU"].colour
    shoot(page, "partition_graph_cpu_nodes")

    # a click selects: the side panel says why, and the trait goes to the kernel
    add = adds.first
    name = add.get_attribute("data-name")
    add.click()
    panel = graph.locator(".rnb-graph-panel")
    assert panel.is_visible() and "Why on the CPU: not quantized" in panel.inner_text()
    assert page.evaluate("window.__saved.at(-1).selected") == name
    assert graph.locator(".rnb-graph-node.rnb-graph-selected").get_attribute("data-name") == name
    assert graph.locator(".rnb-graph-edge-hot").count() >= 2, "the selected node's edges stand out"
    add.hover()
    tooltip = graph.locator(".rnb-graph-tooltip")
    assert tooltip.is_visible() and "Why on the CPU" in tooltip.inner_text()
    shoot(page, "partition_graph_selected")

    # the table shows the same selection; a row picked there is selected in the graph
    root.locator(".rnb-pv-tab", has_text="Table").click()
    assert graph.is_hidden() and root.locator(".rnb-pv-item.rnb-pv-selected").get_attribute("data-name") == name
    row = root.locator(".rnb-pv-item", has_text="Conv").first
    picked = row.get_attribute("data-name")
    row.click()
    root.locator(".rnb-pv-tab", has_text="Graph").click()
    assert graph.locator(".rnb-graph-node.rnb-graph-selected").get_attribute("data-name") == picked


def test_blocks_search_and_a_500_node_model(page, record_property) -> None:
    view = PartitionView(testing.bert_encoder(0, layers=15), target="STX")
    assert len(view.nodes) >= 500
    root = mount(page, view)
    graph = root.locator(".rnb-graph")
    status = graph.locator(".rnb-graph-status")
    assert "514 nodes · 16 blocks by name" in status.inner_text()
    opened = graph.locator(".rnb-graph-node").count()
    assert 0 < opened < 200, "a large model opens with some blocks closed"
    default_ms = int(graph.get_attribute("data-layout-ms"))

    graph.locator(".rnb-graph-collapse").click()
    # closed: the embeddings and 15 layers as one box each, and the pooling node outside any block
    assert graph.locator(".rnb-graph-group").count() == 16
    assert graph.locator(".rnb-graph-node").evaluate_all("nodes => nodes.map((n) => n.dataset.name)") == ["pool"]
    block = graph.locator(".rnb-graph-group", has_text="layer3")
    assert "34 nodes" in (block.text_content() or "")
    block.click()
    assert graph.locator(".rnb-graph-cluster", has_text="layer3").count() == 1
    assert graph.locator(".rnb-graph-node").count() == 34 + 1

    search = graph.locator(".rnb-graph-search")
    search.fill("layer9 softmax")
    search.press("Enter")
    selected = graph.locator(".rnb-graph-node.rnb-graph-selected")
    assert selected.get_attribute("data-name").startswith("layer9.softmax"), "the match opened its block"
    assert graph.locator(".rnb-graph-found").inner_text() == "1 of 1"
    assert page.evaluate("window.__saved.at(-1).selected").startswith("layer9.softmax")
    shoot(page, "partition_graph_search")

    graph.locator(".rnb-graph-expand").click()
    assert graph.locator(".rnb-graph-node").count() == len(view.nodes)
    expanded_ms = int(graph.get_attribute("data-layout-ms"))
    boxes = graph.locator(".rnb-graph-node .rnb-graph-box").evaluate_all(
        "boxes => boxes.map((b) => { const r = b.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; })")
    assert len(boxes) == len(view.nodes)
    record_property("layout_ms_chromium", {"default": default_ms, "every_block_open": expanded_ms})
    print(f"Chromium: 514-node model laid out in {default_ms} ms (default blocks open), {expanded_ms} ms (all open)")
    assert expanded_ms < 30_000
    graph.locator(".rnb-graph-fit").click()
    shoot(page, "partition_graph_500_fit")
