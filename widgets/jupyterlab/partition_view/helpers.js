// The pure parts of the PartitionView front end (./index.js): facts indexing, the legend, the
// windowed list's range, the filter, the minimap's layout and the tensor links. No DOM: the tests
// run them in Node (tests/ui/test_partition_view.py imports the built module).

/** Height of one list row in pixels; the CSS keeps rows at exactly this height. */
export const ROW_HEIGHT = 24;
/** Rows rendered above and below the visible ones, so fast scrolling does not show blanks. */
export const MARGIN_ROWS = 12;

// -- pure helpers (exported for the tests, no DOM) ---------------------------------------------------

/**
 * The `facts` trait, indexed for lookups. Missing parts read as empty: a view without facts shows
 * uncoloured badges rather than failing.
 *
 *   const f = indexFacts({precisions: [{name: "XINT8", colour: "#123456"}], devices: [], targets: []});
 *   f.precision.get("XINT8").colour   // -> "#123456"
 */
export function indexFacts(facts) {
  const list = (value) => (Array.isArray(value) ? value : []);
  const precisions = list(facts && facts.precisions);
  const devices = list(facts && facts.devices);
  return {
    precisions,
    precision: new Map(precisions.map((p) => [p.name, p])),
    deviceColour: new Map(devices.map((d) => [d.name, d.colour])),
    targets: list(facts && facts.targets),
  };
}

/**
 * The legend: the precisions some target's NPU runs, in the order of the facts, each with its count
 * of NPU operators (`perPrecision`, the summary's `precisions`). Precisions no NPU runs (INT, OTHER)
 * only ever label CPU nodes and stay out of it.
 */
export function legendEntries(indexed, perPrecision) {
  const counts = perPrecision || {};
  return indexed.precisions
    .filter((p) => Array.isArray(p.targets) && p.targets.length > 0)
    .map((p) => ({ name: p.name, label: p.label || p.name, colour: p.colour, count: Number(counts[p.name] || 0) }));
}

/**
 * The rows to put in the DOM for a scroll position: `{start, end}`, `end` exclusive.
 *
 *   visibleRange(0, 24, 240, 1000, 5)    // -> {start: 0, end: 16}
 *   visibleRange(2400, 24, 240, 1000, 5) // -> {start: 95, end: 116}
 */
export function visibleRange(scrollTop, rowHeight, viewport, count, margin) {
  const n = Math.max(0, Math.floor(Number(count) || 0));
  if (n === 0 || !(rowHeight > 0)) return { start: 0, end: 0 };
  const pad = Math.max(0, Math.floor(Number(margin) || 0));
  // the browser clamps scrollTop only after the spacer shrinks (a new filter): clamp here too
  const first = Math.min(Math.floor(Math.max(0, Number(scrollTop) || 0) / rowHeight), n - 1);
  const shown = Math.ceil(Math.max(0, Number(viewport) || 0) / rowHeight) + 1;
  return { start: Math.max(0, first - pad), end: Math.min(n, first + shown + pad) };
}

/**
 * Whether a node passes the filters. `query` is split on white space and every word must occur
 * (case-insensitive) in the node's name, op type, precision or reason: "conv xint8" finds the
 * XINT8 convolutions.
 *
 *   matches({name: "stem.conv", op: "Conv", precision: "XINT8", reason: "", device: "NPU",
 *            quantizer: false}, "CONV", false, false)   // -> true
 */
export function matches(node, query, cpuOnly, showQuantizers) {
  if (!node) return false;
  if (cpuOnly && node.device !== "CPU") return false;
  // "CPU nodes only" lists every operator the CPU count counts, the boundary quantizers included:
  // hiding them would leave the list empty for a model whose only CPU operators are its quantizers
  if (!showQuantizers && node.quantizer && !cpuOnly) return false;
  const words = String(query ?? "").toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return true;
  const fields = [node.name, node.op, node.precision, node.reason].map((v) => String(v ?? "").toLowerCase());
  return words.every((word) => fields.some((field) => field.includes(word)));
}

/**
 * How the minimap lays out `count` cells in `width` pixels: the largest cell (pitch, in pixels,
 * gap included) that keeps the strip within a few lines, down to 2 px for very large models.
 */
export function minimapLayout(width, count) {
  const w = Math.max(40, Math.floor(Number(width) || 0));
  const n = Math.max(0, Math.floor(Number(count) || 0));
  let pitch = 2;
  for (const candidate of [10, 8, 6, 5, 4, 3, 2]) {
    if (Math.ceil(n / Math.floor(w / candidate)) <= 6) {
      pitch = candidate;
      break;
    }
  }
  const cols = Math.max(1, Math.floor(w / pitch));
  const lines = Math.max(1, Math.ceil(n / cols));
  const lineHeight = Math.min(14, pitch + 4);
  return { pitch, cols, lines, lineHeight, height: lines * lineHeight };
}

/** Where a tensor comes from and where it goes, for the details panel's links. */
export function tensorLinks(nodes) {
  const producer = new Map();
  const consumers = new Map();
  for (const node of nodes) {
    for (const t of node.outputs || []) if (t) producer.set(t, node.index);
    for (const t of node.inputs || []) {
      if (!t) continue;
      if (!consumers.has(t)) consumers.set(t, []);
      consumers.get(t).push(node.index);
    }
  }
  return { producer, consumers };
}
