// PartitionView: the model as a graph (laid out by dagre, coloured by device and precision, blocks
// that collapse, search) and as a compact layer list, with the reason for every CPU node. Front end
// of ryzen_nb.ui.partition.PartitionView.
//
// The source of ryzen_nb/ui/partition_view.js, which build-widget.mjs bundles from this file, its
// helpers, the graph view shared with the JupyterLab viewer (../src/graph/) and @dagrejs/dagre:
// one ES module for anywidget (>= 0.9) that loads nothing from the network. Only the standard
// anywidget mechanisms are used (synced traits, model.on("change:..."), model.set + save_changes)
// so it runs the same in JupyterLab 4, Notebook 7 and VS Code.
//
// Synced traits read here: nodes, summary, target, facts, selected, error. `facts` is
// ryzen_nb.spec.facts() (precisions with their labels and colours, device colours, targets): this
// file names no precision, colour of a precision or device, or target itself.
// Written here: selected (a click on a row, a minimap cell or a graph node), target (the header's
// dropdown) and error (dismissing the red banner).
//
// The list is windowed: only the rows in view (plus a margin) are in the DOM, so a model of
// thousands of nodes costs the same to scroll as one of fifty. The minimap is a single <canvas>
// for the same reason (one element instead of one per node).

import { GraphView } from "../src/graph/view";
import {
  MARGIN_ROWS,
  ROW_HEIGHT,
  indexFacts,
  legendEntries,
  matches,
  minimapLayout,
  tensorLinks,
  visibleRange,
} from "./helpers.js";

export * from "./helpers.js";

const HIGHLIGHT = "#f0a800"; // selection and viewport marks: visible on light and dark backgrounds
const UNCOLOURED = "#888"; // minimap cells of a device the facts give no colour (facts not received yet)

// -- DOM helpers ----------------------------------------------------------------------------------

// Text goes in with textContent only: node names and reasons come from the model file.
function h(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function precisionBadge(precision, indexed) {
  const badge = h("span", "rnb-pv-badge rnb-pv-prec", precision || "–");
  const record = indexed.precision.get(precision);
  if (record && record.colour) {
    badge.style.background = record.colour;
    badge.style.borderColor = record.colour;
    badge.title = record.description ? `${record.label}. ${record.description}` : record.label || precision;
  } else {
    badge.classList.add("rnb-pv-prec-other"); // a quantizer that converts on the CPU has no precision
  }
  return badge;
}

function deviceBadge(device) {
  return h("span", `rnb-pv-badge rnb-pv-dev rnb-pv-dev-${device === "NPU" ? "npu" : "cpu"}`, device || "?");
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// -- the view -------------------------------------------------------------------------------------

function render({ model, el }) {
  // Everything lives in this closure: two views of one model (the same widget displayed twice)
  // share only the synced traits, never DOM ids or module-level state.
  const state = {
    nodes: [],
    rows: [], // the nodes that pass the filters, in graph order
    rowOf: new Map(), // node index -> position in rows
    byName: new Map(),
    links: { producer: new Map(), consumers: new Map() },
    query: "",
    cpuOnly: false,
    showQuantizers: false,
    frame: 0,
    filterTimer: 0,
    pendingTarget: null, // the target this view asked the kernel for, until the kernel answers
    layout: minimapLayout(600, 0),
    facts: indexFacts(null),
    tab: "graph",
    fromGraph: false,
  };

  const root = h("div", "rnb-partition-view");
  root.setAttribute("data-node-count", "0");

  // header: model, target dropdown, compiler, counts, legend
  const header = h("div", "rnb-pv-header");
  const title = h("div", "rnb-pv-title");
  const modelName = h("span", "rnb-pv-model");
  const targetSelect = h("select", "rnb-pv-target");
  targetSelect.title = "NPU target: changing it recompiles the model";
  const compiler = h("span", "rnb-pv-compiler");
  const busy = h("span", "rnb-pv-busy", "compiling…");
  busy.hidden = true;
  title.append(modelName, h("span", "rnb-pv-on", "on"), targetSelect, compiler, busy);
  const counts = h("div", "rnb-pv-counts");
  const legend = h("div", "rnb-pv-legend");
  header.append(title, counts, legend);

  const errorBanner = h("div", "rnb-pv-error");
  errorBanner.setAttribute("role", "alert");
  const errorText = h("span", "rnb-pv-error-text");
  const errorClose = h("button", "rnb-pv-error-close", "×");
  errorClose.title = "Dismiss";
  errorBanner.append(errorText, errorClose);
  errorBanner.hidden = true;

  const minimap = h("canvas", "rnb-pv-minimap");
  minimap.setAttribute("aria-label", "Minimap: one cell per listed node, coloured by device; click to go to a node");

  const controls = h("div", "rnb-pv-controls");
  const filter = h("input", "rnb-pv-filter");
  filter.type = "search";
  filter.placeholder = "Filter: name, op, precision, reason";
  filter.setAttribute("aria-label", "Filter nodes");
  const cpuOnlyLabel = h("label", "rnb-pv-toggle");
  const cpuOnly = h("input", "rnb-pv-cpu-only");
  cpuOnly.type = "checkbox";
  cpuOnlyLabel.append(cpuOnly, document.createTextNode(" CPU nodes only"));
  const quantLabel = h("label", "rnb-pv-toggle");
  const showQuantizers = h("input", "rnb-pv-show-quantizers");
  showQuantizers.type = "checkbox";
  quantLabel.append(showQuantizers, document.createTextNode(" show quantizer nodes"));
  const shown = h("span", "rnb-pv-shown");
  controls.append(filter, cpuOnlyLabel, quantLabel, shown);

  const listHead = h("div", "rnb-pv-row rnb-pv-list-head");
  for (const [cls, text] of [["idx", "#"], ["op", "op"], ["name", "name"], ["device", "device"],
    ["precision", "precision"], ["subgraph", "subgraph"], ["reason", "why on the CPU"]]) {
    listHead.append(h("span", `rnb-pv-cell rnb-pv-${cls}`, text));
  }
  const scroller = h("div", "rnb-pv-scroller");
  scroller.tabIndex = 0;
  scroller.setAttribute("role", "listbox");
  scroller.setAttribute("aria-label", "Nodes of the model");
  const spacer = h("div", "rnb-pv-spacer");
  scroller.append(spacer);
  const empty = h("div", "rnb-pv-empty", "No node matches the filters.");
  empty.hidden = true;

  const details = h("div", "rnb-pv-details");
  details.hidden = true;

  // two tabs: the graph first (how people look at a model), the list second; only the shown one is drawn
  const tabs = h("div", "rnb-pv-tabs");
  tabs.setAttribute("role", "tablist");
  const graphTab = h("button", "rnb-pv-tab", "Graph");
  const tableTab = h("button", "rnb-pv-tab", "Table");
  const graphPanel = h("div", "rnb-pv-tab-panel rnb-pv-graph-panel");
  const tablePanel = h("div", "rnb-pv-tab-panel rnb-pv-table-panel");
  for (const [tab, panel, name] of [[graphTab, graphPanel, "graph"], [tableTab, tablePanel, "table"]]) {
    tab.type = "button";
    tab.dataset.tab = name;
    tab.setAttribute("role", "tab");
    panel.setAttribute("role", "tabpanel");
    panel.dataset.tab = name;
  }
  tabs.append(graphTab, tableTab);
  const graph = new GraphView({
    quantizerToggle: true,
    onSelect: (name) => {
      state.fromGraph = true; // the graph shows it already: no need to open blocks and scroll there
      select(name);
      state.fromGraph = false;
    },
    onShowQuantizers: (show) => {
      showQuantizers.checked = show; // one setting for both tabs
      onToggle();
    },
  });
  graphPanel.append(graph.node);
  tablePanel.append(minimap, controls, listHead, scroller, empty, details);

  root.append(header, errorBanner, tabs, graphPanel, tablePanel);
  el.append(root);

  // -- tabs ---------------------------------------------------------------------------------------
  function showTab(name) {
    state.tab = name;
    for (const tab of [graphTab, tableTab]) {
      const on = tab.dataset.tab === name;
      tab.classList.toggle("rnb-pv-tab-active", on);
      tab.setAttribute("aria-selected", on ? "true" : "false");
    }
    graphPanel.hidden = name !== "graph";
    tablePanel.hidden = name !== "table";
    graph.setVisible(name === "graph");
    if (name === "table") {
      onSelected(); // the list and the minimap were not drawn while hidden
    }
  }

  // -- facts: colours of the devices (CSS variables of the stylesheet and the minimap) -----------------
  function loadFacts() {
    state.facts = indexFacts(model.get("facts"));
    for (const [device, colour] of state.facts.deviceColour) {
      if (colour) root.style.setProperty(`--rnb-pv-${String(device).toLowerCase()}`, colour);
    }
  }

  // -- header ------------------------------------------------------------------------------------
  function renderHeader() {
    const s = model.get("summary") || {};
    modelName.textContent = s.model || "model";
    modelName.title = s.model || "";
    const targets = state.facts.targets;
    const current = model.get("target") || s.target || "";
    targetSelect.replaceChildren();
    const names = targets.map((t) => (typeof t === "string" ? t : t.name));
    if (current && !names.includes(current)) names.unshift(current);
    for (const name of names) {
      const info = targets.find((t) => t === name || t.name === name);
      const option = h("option", null, info && info.label ? `${name} — ${info.label}` : name);
      option.value = name;
      targetSelect.append(option);
    }
    targetSelect.value = current;
    compiler.textContent = s.compiler ? `compiler ${s.compiler}` : "no NPU compiler (nothing on the NPU)";

    counts.replaceChildren(
      h("span", "rnb-pv-count rnb-pv-count-npu", `NPU ${s.npu_ops ?? 0} ops`),
      h("span", "rnb-pv-count rnb-pv-count-cpu", `CPU ${s.cpu_ops ?? 0} ops`),
      h("span", "rnb-pv-count", `${Number(s.npu_share ?? 0).toFixed(1)}% on NPU`),
      h("span", "rnb-pv-count", plural(s.subgraphs ?? 0, "NPU subgraph")),
    );

    legend.replaceChildren();
    for (const entry of legendEntries(state.facts, s.precisions)) {
      const item = h("span", "rnb-pv-legend-item");
      item.title = entry.label;
      const swatch = h("span", "rnb-pv-swatch");
      swatch.style.background = entry.colour;
      item.append(swatch, document.createTextNode(entry.count ? `${entry.name} ${entry.count}` : entry.name));
      if (!entry.count) item.classList.add("rnb-pv-legend-absent");
      legend.append(item);
    }
  }

  function renderError() {
    const message = model.get("error") || "";
    errorText.textContent = message;
    errorBanner.hidden = !message;
  }

  // -- filtering ------------------------------------------------------------------------------------
  function applyFilter() {
    state.rows = state.nodes.filter((n) => matches(n, state.query, state.cpuOnly, state.showQuantizers));
    state.rowOf = new Map(state.rows.map((n, i) => [n.index, i]));
    spacer.style.height = `${state.rows.length * ROW_HEIGHT}px`;
    empty.hidden = state.rows.length > 0 || state.nodes.length === 0;
    const hiddenQuantizers = state.showQuantizers ? 0 : state.nodes.filter((n) => n.quantizer).length;
    shown.textContent = `showing ${state.rows.length} of ${state.nodes.length}` +
      (hiddenQuantizers ? ` (${plural(hiddenQuantizers, "quantizer node")} hidden)` : "");
    schedule();
  }

  function loadNodes() {
    state.nodes = model.get("nodes") || [];
    state.byName = new Map(state.nodes.map((n) => [n.name, n]));
    state.links = tensorLinks(state.nodes);
    root.setAttribute("data-node-count", String(state.nodes.length));
    graph.setData(state.nodes, model.get("facts"));
    applyFilter();
    renderDetails();
  }

  // -- windowed list ------------------------------------------------------------------------------
  function rowElement(node, position, selectedName) {
    const cpu = node.device !== "NPU";
    const row = h("div", `rnb-pv-row rnb-pv-item${cpu ? " rnb-pv-row-cpu" : ""}` +
      `${node.quantizer ? " rnb-pv-quantizer" : ""}${node.name === selectedName ? " rnb-pv-selected" : ""}` +
      `${position % 2 ? " rnb-pv-odd" : ""}`); // striping by list position: stable while the window moves
    row.style.top = `${position * ROW_HEIGHT}px`;
    row.dataset.name = node.name;
    row.setAttribute("role", "option");
    row.setAttribute("aria-selected", node.name === selectedName ? "true" : "false");
    const name = h("span", "rnb-pv-cell rnb-pv-name", node.name);
    name.title = node.name;
    const subgraph = h("span", "rnb-pv-cell rnb-pv-subgraph", node.subgraph ?? "");
    const reason = h("span", "rnb-pv-cell rnb-pv-reason", cpu ? node.reason : "");
    if (cpu && node.reason) reason.title = node.reason;
    const device = h("span", "rnb-pv-cell rnb-pv-device");
    device.append(deviceBadge(node.device));
    const precision = h("span", "rnb-pv-cell rnb-pv-precision");
    precision.append(precisionBadge(node.precision, state.facts));
    row.append(h("span", "rnb-pv-cell rnb-pv-idx", node.index), h("span", "rnb-pv-cell rnb-pv-op", node.op),
      name, device, precision, subgraph, reason);
    return row;
  }

  function renderRows() {
    const { start, end } = visibleRange(scroller.scrollTop, ROW_HEIGHT, scroller.clientHeight || 400,
      state.rows.length, MARGIN_ROWS);
    const selectedName = model.get("selected") || "";
    const fragment = document.createDocumentFragment();
    for (let i = start; i < end; i++) fragment.append(rowElement(state.rows[i], i, selectedName));
    spacer.replaceChildren(fragment); // ~50 rows at most: rebuilding is cheaper than diffing
  }

  // -- minimap ------------------------------------------------------------------------------------
  function drawMinimap() {
    const width = minimap.clientWidth || root.clientWidth || 600;
    const layout = minimapLayout(width, state.rows.length);
    state.layout = layout;
    const ratio = (typeof window !== "undefined" && window.devicePixelRatio) || 1;
    minimap.style.height = `${layout.height}px`;
    minimap.width = Math.round(width * ratio);
    minimap.height = Math.round(layout.height * ratio);
    const ctx = minimap.getContext && minimap.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, layout.height);
    const cell = Math.max(1, layout.pitch - 1);
    const cellHeight = layout.lineHeight - 2;
    const at = (i) => [(i % layout.cols) * layout.pitch, Math.floor(i / layout.cols) * layout.lineHeight + 1];
    // quantizers are drawn faded: they follow their neighbours and would otherwise dominate
    for (const [device, quantizer] of [["NPU", false], ["NPU", true], ["CPU", false], ["CPU", true]]) {
      ctx.fillStyle = state.facts.deviceColour.get(device) || UNCOLOURED;
      ctx.globalAlpha = quantizer ? 0.4 : 1;
      state.rows.forEach((n, i) => {
        if ((n.device === "NPU") === (device === "NPU") && Boolean(n.quantizer) === quantizer) {
          const [x, y] = at(i);
          ctx.fillRect(x, y, cell, cellHeight);
        }
      });
    }
    ctx.globalAlpha = 1;
    // the rows currently in view, as an outline per minimap line
    const { start, end } = visibleRange(scroller.scrollTop, ROW_HEIGHT, scroller.clientHeight || 400,
      state.rows.length, 0);
    ctx.strokeStyle = HIGHLIGHT;
    ctx.lineWidth = 1;
    for (let i = start; i < end;) {
      const lineEnd = Math.min(end, (Math.floor(i / layout.cols) + 1) * layout.cols);
      const [x, y] = at(i);
      ctx.strokeRect(x - 0.5, y - 0.5, (lineEnd - i) * layout.pitch, cellHeight + 1);
      i = lineEnd;
    }
    const selectedRow = state.rowOf.get(state.byName.get(model.get("selected"))?.index);
    if (selectedRow !== undefined) {
      const [x, y] = at(selectedRow);
      ctx.fillStyle = HIGHLIGHT;
      ctx.fillRect(x, y + cellHeight - 2, cell, 3);
    }
  }

  function minimapRowAt(event) {
    const rect = minimap.getBoundingClientRect();
    const col = Math.floor((event.clientX - rect.left) / state.layout.pitch);
    const line = Math.floor((event.clientY - rect.top) / state.layout.lineHeight);
    const i = line * state.layout.cols + col;
    return col >= 0 && col < state.layout.cols && i >= 0 && i < state.rows.length ? i : -1;
  }

  // -- one repaint per animation frame, however many scroll events arrive ---------------------------
  function schedule() {
    if (state.frame) return;
    const run = () => {
      state.frame = 0;
      renderRows();
      drawMinimap();
    };
    state.frame = typeof requestAnimationFrame === "function" ? requestAnimationFrame(run) : setTimeout(run, 16);
  }

  function cancelFrame() {
    if (!state.frame) return;
    if (typeof cancelAnimationFrame === "function") cancelAnimationFrame(state.frame);
    clearTimeout(state.frame);
    state.frame = 0;
  }

  // -- selection ----------------------------------------------------------------------------------
  function select(name) {
    model.set("selected", name || "");
    model.save_changes();
    onSelected(); // the change event also fires, but updating now keeps the click snappy
  }

  function scrollToRow(position, onlyIfHidden) {
    const top = position * ROW_HEIGHT;
    const viewport = scroller.clientHeight || 400;
    if (onlyIfHidden && top >= scroller.scrollTop && top + ROW_HEIGHT <= scroller.scrollTop + viewport) return;
    scroller.scrollTop = Math.max(0, top - (viewport - ROW_HEIGHT) / 2);
  }

  function onSelected() {
    const node = state.byName.get(model.get("selected"));
    const position = node ? state.rowOf.get(node.index) : undefined;
    if (position !== undefined) scrollToRow(position, true);
    graph.select(model.get("selected") || "", !state.fromGraph);
    renderDetails();
    schedule();
  }

  function nodeLink(index) {
    const node = state.nodes[index];
    const link = h("button", "rnb-pv-link", node ? `#${node.index} ${node.op} ${node.name}` : `#${index}`);
    link.title = node ? `${node.device}: ${node.reason || node.precision || ""}` : "";
    link.addEventListener("click", () => node && select(node.name));
    return link;
  }

  function tensorList(label, tensors, linksOf) {
    const block = h("div", "rnb-pv-tensors");
    block.append(h("div", "rnb-pv-details-label", label));
    const list = h("ul", "rnb-pv-tensor-list");
    const names = (tensors || []).filter(Boolean);
    if (!names.length) list.append(h("li", "rnb-pv-muted", "none"));
    for (const t of names) {
      const item = h("li", null);
      item.append(h("code", "rnb-pv-tensor", t));
      for (const index of linksOf(t).slice(0, 8)) item.append(nodeLink(index));
      list.append(item);
    }
    block.append(list);
    return block;
  }

  function renderDetails() {
    const node = state.byName.get(model.get("selected"));
    details.hidden = !node;
    if (!node) {
      details.replaceChildren();
      return;
    }
    const head = h("div", "rnb-pv-details-head");
    const name = h("span", "rnb-pv-details-name", node.name);
    name.title = node.name;
    const close = h("button", "rnb-pv-details-close", "×");
    close.title = "Close (Esc)";
    close.addEventListener("click", () => select(""));
    head.append(h("span", "rnb-pv-idx", `#${node.index}`), h("b", "rnb-pv-op", node.op), name,
      deviceBadge(node.device), precisionBadge(node.precision, state.facts), close);
    const facts = h("div", "rnb-pv-details-facts");
    const where = node.device === "NPU"
      ? `NPU subgraph ${node.subgraph ?? "–"}${node.quantizer ? " (quantizer)" : ""}`
      : `on the CPU${node.quantizer ? " (quantizer)" : ""}`;
    facts.append(h("span", null, where));
    const reason = h("div", node.device === "NPU" ? "rnb-pv-details-reason rnb-pv-muted" : "rnb-pv-details-reason",
      node.device === "NPU" ? "Runs on the NPU." : `Why on the CPU: ${node.reason || "no reason recorded"}`);
    const io = h("div", "rnb-pv-details-io");
    io.append(
      tensorList("inputs (← producer)", node.inputs, (t) => {
        const p = state.links.producer.get(t);
        return p === undefined ? [] : [p];
      }),
      tensorList("outputs (→ consumers)", node.outputs, (t) => state.links.consumers.get(t) || []),
    );
    details.replaceChildren(head, facts, reason, io);
  }

  // -- events -------------------------------------------------------------------------------------
  const onScroll = () => schedule();
  const onListClick = (event) => {
    const row = event.target.closest && event.target.closest(".rnb-pv-item");
    if (!row) return;
    select(row.dataset.name === model.get("selected") ? "" : row.dataset.name); // a second click deselects
  };
  const onListKey = (event) => {
    if (event.key === "Escape") {
      select("");
      return;
    }
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    event.preventDefault(); // move the selection, not the page
    const node = state.byName.get(model.get("selected"));
    const current = node ? state.rowOf.get(node.index) : undefined;
    const step = event.key === "ArrowDown" ? 1 : -1;
    const next = current === undefined ? (step > 0 ? 0 : state.rows.length - 1) : current + step;
    if (next >= 0 && next < state.rows.length) select(state.rows[next].name);
  };
  const onMinimapClick = (event) => {
    const i = minimapRowAt(event);
    if (i < 0) return;
    scrollToRow(i, false);
    select(state.rows[i].name);
  };
  const onMinimapMove = (event) => {
    const i = minimapRowAt(event);
    const n = i >= 0 ? state.rows[i] : null;
    minimap.title = n ? `#${n.index} ${n.op} ${n.name} — ${n.device}${n.device === "CPU" && n.reason ? `: ${n.reason}` : ""}` : "";
  };
  const onFilterInput = () => {
    clearTimeout(state.filterTimer);
    // a short pause so typing in a 5000-node model does not refilter on every key
    state.filterTimer = setTimeout(() => {
      state.query = filter.value;
      applyFilter();
    }, 80);
  };
  const onToggle = () => {
    state.cpuOnly = cpuOnly.checked;
    state.showQuantizers = showQuantizers.checked;
    graph.setShowQuantizers(state.showQuantizers);
    applyFilter();
  };
  const onTargetPick = () => {
    if (targetSelect.value === model.get("target")) return;
    // "compiling…" until the kernel answers: new nodes, an error, or the target put back
    state.pendingTarget = targetSelect.value;
    busy.hidden = false;
    model.set("target", targetSelect.value);
    model.save_changes();
  };
  const onErrorClose = () => {
    model.set("error", "");
    model.save_changes();
  };

  scroller.addEventListener("scroll", onScroll, { passive: true });
  scroller.addEventListener("click", onListClick);
  scroller.addEventListener("keydown", onListKey);
  minimap.addEventListener("click", onMinimapClick);
  minimap.addEventListener("mousemove", onMinimapMove);
  filter.addEventListener("input", onFilterInput);
  cpuOnly.addEventListener("change", onToggle);
  showQuantizers.addEventListener("change", onToggle);
  targetSelect.addEventListener("change", onTargetPick);
  errorClose.addEventListener("click", onErrorClose);
  graphTab.addEventListener("click", () => showTab("graph"));
  tableTab.addEventListener("click", () => showTab("table"));

  function answered() {
    state.pendingTarget = null;
    busy.hidden = true;
  }

  const handlers = {
    "change:nodes": () => {
      answered();
      loadNodes();
    },
    "change:summary": () => {
      answered();
      renderHeader();
    },
    "change:target": () => {
      // model.set fires this at once for our own request: only another value is an answer
      if (model.get("target") !== state.pendingTarget) answered();
      renderHeader();
    },
    "change:facts": () => {
      loadFacts();
      graph.setFacts(model.get("facts"));
      renderHeader();
      renderDetails();
      schedule(); // the rows' badges and the minimap
    },
    "change:selected": onSelected,
    "change:error": () => {
      if (model.get("error")) answered();
      renderError();
    },
  };
  for (const [event, handler] of Object.entries(handlers)) model.on(event, handler);

  // the minimap's width follows the output area (JupyterLab side panels, VS Code resizing)
  const resize = typeof ResizeObserver === "function" ? new ResizeObserver(() => schedule()) : null;
  if (resize) resize.observe(root);

  loadFacts();
  renderHeader();
  renderError();
  loadNodes();
  showTab("graph");
  onSelected();

  return () => {
    for (const [event, handler] of Object.entries(handlers)) model.off(event, handler);
    if (resize) resize.disconnect();
    cancelFrame();
    clearTimeout(state.filterTimer);
    graph.dispose();
    root.remove();
  };
}

export default { render };

// The graph's pure parts, for the tests of the built module (tests/ui/test_partition_view.py).
export { drawnEdges, groupNodes, isDrawn } from "../src/graph/model";
export { GraphLayout } from "../src/graph/layout";
