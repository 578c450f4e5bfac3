/**
 * Pure functions from the server's JSON to HTML strings and messages: everything the ONNX viewer
 * shows is decided here, so it is unit-tested in Node without a browser (test/render.test.ts).
 * Every value that comes from a model file (names, op types, reasons) is escaped.
 *
 * No NPU fact is written here: the precisions, their labels and colours, the device colours and the
 * targets come from the server (GET /ryzen-nb/facts, ryzen_nb.spec.facts()) as an IFacts.
 */

import type {
  ICopyResult,
  IFacts,
  INodeInfo,
  IOnnxSummary,
  IPartition,
  IPrecisionInfo,
  ITensorInfo
} from './types';

export function escapeHTML(value: unknown): string {
  return String(value)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** [1, 3, 224, 224] -> "1×3×224×224"; a symbolic dimension stays a name ("batch×3×224×224"). */
export function formatShape(shape: Array<number | string>): string {
  return shape.length ? shape.map(d => String(d)).join('×') : 'scalar';
}

/** 4652008 -> "4.65 M"; 78123 -> "78.1 k"; 512 -> "512". */
export function formatCount(n: number): string {
  if (n >= 1e9) {
    return `${(n / 1e9).toPrecision(3)} G`;
  }
  if (n >= 1e6) {
    return `${(n / 1e6).toPrecision(3)} M`;
  }
  if (n >= 1e3) {
    return `${(n / 1e3).toPrecision(3)} k`;
  }
  return String(n);
}

export function formatMs(ms: number): string {
  return ms >= 100 ? `${ms.toFixed(0)} ms` : ms >= 1 ? `${ms.toFixed(2)} ms` : `${(ms * 1000).toFixed(0)} µs`;
}

/**
 * The share of the model on the NPU, in percent with one decimal: the server's NPUProgram.npu_share
 * (every node counted, quantizers included, as the Vitis AI EP log counts them), never recomputed here.
 */
export function npuShare(partition: IPartition): number {
  return Math.round(10 * (Number(partition.npu_share) || 0)) / 10;
}

/** A colour from the server, or '' when it is not a plain hex colour (it goes into a style attribute). */
export function safeColour(colour: unknown): string {
  return typeof colour === 'string' && /^#[0-9a-fA-F]{3,8}$/.test(colour) ? colour : '';
}

/** The record of a precision in the facts, if the facts have one. */
export function precisionInfo(facts: IFacts | null, name: string): IPrecisionInfo | undefined {
  return facts?.precisions.find(p => p.name === name);
}

/**
 * The CSS variables that colour the devices, from the facts: the stylesheet reads
 * ``var(--rnb-device-npu)`` and ``var(--rnb-device-cpu)`` and defines no colour of its own.
 */
export function deviceColourVariables(facts: IFacts | null): Array<[string, string]> {
  return (facts?.devices ?? [])
    .filter(d => safeColour(d.colour))
    .map(d => [`--rnb-device-${d.name.toLowerCase()}`, d.colour] as [string, string]);
}

/** A precision as a coloured chip with its label and description as the tooltip; plain text without a colour. */
export function precisionChip(precision: string, facts: IFacts | null): string {
  const info = precisionInfo(facts, precision);
  const colour = safeColour(info?.colour);
  if (!info || !colour) {
    return `<span class="rnb-prec-plain">${escapeHTML(precision || '–')}</span>`;
  }
  const title = info.description ? `${info.label}. ${info.description}` : info.label;
  return (
    `<span class="rnb-chip rnb-prec" style="background:${colour}" title="${escapeHTML(title)}">` +
    `${escapeHTML(precision)}</span>`
  );
}

/**
 * The legend: the precisions some target's NPU runs, in the facts' order, each with its count of NPU
 * operators (``partition.precisions``); precisions no NPU runs (INT, OTHER) stay out of it.
 */
export function renderLegend(perPrecision: Record<string, number>, facts: IFacts | null): string {
  const entries = (facts?.precisions ?? []).filter(p => p.targets.length > 0);
  if (!entries.length) {
    return '';
  }
  return (
    '<div class="rnb-legend">' +
    entries
      .map(p => {
        const count = perPrecision[p.name] ?? 0;
        return (
          `<span class="rnb-legend-item${count ? '' : ' rnb-muted'}" title="${escapeHTML(p.label)}">` +
          `<span class="rnb-swatch" style="background:${safeColour(p.colour)}"></span>` +
          `${escapeHTML(count ? `${p.name} ${count}` : p.name)}</span>`
        );
      })
      .join('') +
    '</div>'
  );
}

/** The target menu: every target of the facts, "STX — Strix Point (Ryzen AI 300)". */
export function targetOptions(facts: IFacts | null): Array<[string, string]> {
  return (facts?.targets ?? []).map(t => [t.name, `${t.name} — ${t.label}`]);
}

/** The precision menu the server offers for a file, each entry with its label when it is a precision. */
export function precisionOptions(menu: string[], facts: IFacts | null): Array<[string, string]> {
  return menu.map(p => [p, precisionInfo(facts, p)?.label ?? p]);
}

/** One line, as a person would say it: "NPU 78 ops · CPU 2 ops · 97.5% on NPU · 1 NPU subgraph". */
export function partitionHeadline(partition: IPartition): string {
  const subgraphs = partition.npu_subgraphs;
  return (
    `NPU ${partition.npu_operators} ops · CPU ${partition.cpu_operators} ops · ` +
    `${npuShare(partition)}% on NPU · ${subgraphs} NPU subgraph${subgraphs === 1 ? '' : 's'}`
  );
}

/**
 * The message to show for a failed request. The server extension answers ``{"error": "..."}``
 * written for a person; anything else (an HTML 404 page) means the extension is not running.
 */
export function errorMessage(status: number, body: unknown): string {
  if (body && typeof body === 'object' && typeof (body as { error?: unknown }).error === 'string') {
    return (body as { error: string }).error;
  }
  if (status === 404) {
    return (
      "ryzen-nb's server extension is not running in this Jupyter server. Enable it with " +
      "'jupyter server extension enable ryzen_nb.jupyter', then restart JupyterLab."
    );
  }
  return `The ryzen-nb server extension answered HTTP ${status}.`;
}

function tensorRows(tensors: ITensorInfo[]): string {
  return tensors
    .map(
      t =>
        `<tr><td class="rnb-name">${escapeHTML(t.name)}</td><td>${escapeHTML(formatShape(t.shape))}</td>` +
        `<td>${escapeHTML(t.dtype)}</td></tr>`
    )
    .join('');
}

/** The op histogram as bars, most frequent first; beyond ``limit`` ops the rest are summed. */
export function renderHistogram(histogram: Record<string, number>, limit = 12): string {
  const entries = Object.entries(histogram).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const shown = entries.slice(0, limit);
  const rest = entries.slice(limit);
  if (rest.length) {
    shown.push([`${rest.length} other op types`, rest.reduce((s, [, n]) => s + n, 0)]);
  }
  const max = Math.max(1, ...shown.map(([, n]) => n));
  return (
    '<div class="rnb-histogram">' +
    shown
      .map(
        ([op, n]) =>
          `<div class="rnb-bar-row"><span class="rnb-bar-label">${escapeHTML(op)}</span>` +
          `<span class="rnb-bar" style="width:${Math.max(2, Math.round((100 * n) / max))}%"></span>` +
          `<span class="rnb-bar-value">${n}</span></div>`
      )
      .join('') +
    '</div>'
  );
}

/** The model's summary: file, size, opset, parameters; inputs and outputs; the op histogram. */
export function renderSummary(summary: IOnnxSummary): string {
  const facts: Array<[string, string]> = [
    ['file', `${summary.file} (${summary.size_mb} MB)`],
    ['opset', summary.opset === null ? 'none' : String(summary.opset)],
    ['IR version', String(summary.ir_version)],
    ['parameters', formatCount(summary.parameters)],
    ['operators', String(summary.operators)],
    ['quantized', summary.quantized ? 'yes (QDQ)' : 'no (float)']
  ];
  if (summary.producer) {
    facts.push(['producer', summary.producer]);
  }
  return (
    '<section class="rnb-summary">' +
    '<dl class="rnb-facts">' +
    facts.map(([k, v]) => `<dt>${escapeHTML(k)}</dt><dd>${escapeHTML(v)}</dd>`).join('') +
    '</dl>' +
    '<div class="rnb-io"><table class="rnb-table"><caption>inputs</caption>' +
    '<thead><tr><th>name</th><th>shape</th><th>dtype</th></tr></thead><tbody>' +
    tensorRows(summary.inputs) +
    '</tbody></table><table class="rnb-table"><caption>outputs</caption>' +
    '<thead><tr><th>name</th><th>shape</th><th>dtype</th></tr></thead><tbody>' +
    tensorRows(summary.outputs) +
    '</tbody></table></div>' +
    `<h3>Operators</h3>${renderHistogram(summary.op_histogram)}` +
    '</section>'
  );
}

function nodeRow(node: INodeInfo, index: number, facts: IFacts | null): string {
  const device = node.device === 'NPU' ? 'rnb-npu' : 'rnb-cpu';
  return (
    `<tr class="${device}"><td>${index}</td><td class="rnb-op">${escapeHTML(node.op)}</td>` +
    `<td class="rnb-name">${escapeHTML(node.name)}</td>` +
    `<td><span class="rnb-chip ${device}">${escapeHTML(node.device)}</span></td>` +
    `<td>${precisionChip(node.precision, facts)}</td>` +
    `<td class="rnb-reason">${node.device === 'CPU' ? escapeHTML(node.reason) : ''}</td></tr>`
  );
}

/**
 * The partition for one target and precision, above the graph and table tabs: the headline, the
 * precisions on the NPU, the latency estimate and why operators stay on the CPU. ``facts`` labels
 * and colours the precisions.
 */
export function renderPartitionHead(partition: IPartition, facts: IFacts | null): string {
  const breakdown = Object.entries(partition.latency_breakdown_ms)
    .map(([k, v]) => `${escapeHTML(k)} ${escapeHTML(formatMs(v))}`)
    .join(' · ');
  const reasons = new Map<string, number>();
  let cpuQuantizers = 0;
  for (const node of partition.nodes) {
    if (node.device === 'CPU' && !node.quantizer) {
      reasons.set(node.reason, (reasons.get(node.reason) ?? 0) + 1);
    } else if (node.device === 'CPU') {
      cpuQuantizers += 1;
    }
  }
  // the headline counts every node: its CPU operators must not meet "every operator runs on the NPU"
  const allOnNpu = cpuQuantizers
    ? `<p>Every operator of the model runs on the NPU; the ${cpuQuantizers} CPU operator${cpuQuantizers === 1 ? ' is a quantizer node' : 's are quantizer nodes'} where data enters or leaves it.</p>`
    : '<p>Every operator runs on the NPU.</p>';
  const reasonList = reasons.size
    ? '<ul class="rnb-reasons">' +
      [...reasons.entries()]
        .sort((a, b) => b[1] - a[1])
        .map(([reason, n]) => `<li><b>${n}×</b> ${escapeHTML(reason)}</li>`)
        .join('') +
      '</ul>'
    : allOnNpu;
  return (
    '<section class="rnb-partition">' +
    `<p class="rnb-headline">${escapeHTML(partitionHeadline(partition))}</p>` +
    renderLegend(partition.precisions, facts) +
    `<p class="rnb-latency">estimated latency on ${escapeHTML(partition.target)}: ` +
    `<b>${escapeHTML(formatMs(partition.latency_ms))}</b> <span class="rnb-muted">(${breakdown}; ` +
    `${escapeHTML(partition.latency_note)})</span></p>` +
    `<h3>Why operators stay on the CPU</h3>${reasonList}` +
    '</section>'
  );
}

/**
 * The Table tab: every operator with its device, precision and reason (quantizer nodes only on
 * request: they are most of a QDQ graph).
 */
export function renderNodeTable(partition: IPartition, facts: IFacts | null, showQuantizers = false): string {
  const rows = partition.nodes
    .map((node, i) => [node, i] as const)
    .filter(([node]) => showQuantizers || !node.quantizer)
    .map(([node, i]) => nodeRow(node, i, facts))
    .join('');
  const hidden = partition.nodes.filter(n => n.quantizer).length;
  return (
    `<h3>Operators <span class="rnb-muted">${
      hidden && !showQuantizers ? `(${hidden} quantizer nodes hidden)` : ''
    }</span></h3>` +
    '<table class="rnb-table rnb-nodes"><thead><tr><th>#</th><th>op</th><th>name</th><th>device</th>' +
    `<th>precision</th><th>why on the CPU</th></tr></thead><tbody>${rows}</tbody></table>`
  );
}

/** What the Vitis AI EP would print, folded, under the tabs. */
export function renderEpLog(partition: IPartition): string {
  return `<details class="rnb-ep-log"><summary>what the Vitis AI EP would print</summary><pre>${escapeHTML(
    partition.ep_log
  )}</pre></details>`;
}

/** What to tell the user after a tutorial was copied (nothing when it simply opened). */
export function copyNotice(result: ICopyResult): string | null {
  if (result.status === 'kept-your-copy') {
    const file = result.path.split('/').pop();
    return (
      `${file} is already in this folder with your changes: it was kept and opened as it is. ` +
      'Rename or delete it to get the original tutorial again.'
    );
  }
  return null;
}
