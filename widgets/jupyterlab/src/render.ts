/**
 * Pure functions from the server's JSON to HTML strings and messages: everything the ONNX viewer
 * shows is decided here, so it is unit-tested in Node without a browser (test/render.test.ts).
 * Every value that comes from a model file (names, op types, reasons) is escaped.
 */

import type { ICopyResult, INodeInfo, IOnnxSummary, IPartition, ITensorInfo } from './types';

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

/** The share of operators (quantizer nodes not counted) on the NPU, in percent with one decimal. */
export function npuShare(partition: IPartition): number {
  const total = partition.npu_operators + partition.cpu_operators;
  return total ? Math.round((1000 * partition.npu_operators) / total) / 10 : 0;
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

function nodeRow(node: INodeInfo, index: number): string {
  const device = node.device === 'NPU' ? 'rnb-npu' : 'rnb-cpu';
  return (
    `<tr class="${device}"><td>${index}</td><td class="rnb-op">${escapeHTML(node.op)}</td>` +
    `<td class="rnb-name">${escapeHTML(node.name)}</td>` +
    `<td><span class="rnb-chip ${device}">${escapeHTML(node.device)}</span></td>` +
    `<td>${escapeHTML(node.precision)}</td><td class="rnb-reason">${node.device === 'CPU' ? escapeHTML(node.reason) : ''}</td></tr>`
  );
}

/**
 * The partition for one target and precision: the headline, the latency estimate, why operators
 * stay on the CPU, and every operator (quantizer nodes only on request: they are most of a QDQ graph).
 */
export function renderPartition(partition: IPartition, showQuantizers = false): string {
  const breakdown = Object.entries(partition.latency_breakdown_ms)
    .map(([k, v]) => `${escapeHTML(k)} ${escapeHTML(formatMs(v))}`)
    .join(' · ');
  const reasons = new Map<string, number>();
  for (const node of partition.nodes) {
    if (node.device === 'CPU' && !node.quantizer) {
      reasons.set(node.reason, (reasons.get(node.reason) ?? 0) + 1);
    }
  }
  const reasonList = reasons.size
    ? '<ul class="rnb-reasons">' +
      [...reasons.entries()]
        .sort((a, b) => b[1] - a[1])
        .map(([reason, n]) => `<li><b>${n}×</b> ${escapeHTML(reason)}</li>`)
        .join('') +
      '</ul>'
    : '<p>Every operator runs on the NPU.</p>';
  const rows = partition.nodes
    .map((node, i) => [node, i] as const)
    .filter(([node]) => showQuantizers || !node.quantizer)
    .map(([node, i]) => nodeRow(node, i))
    .join('');
  const hidden = partition.nodes.filter(n => n.quantizer).length;
  return (
    '<section class="rnb-partition">' +
    `<p class="rnb-headline">${escapeHTML(partitionHeadline(partition))}</p>` +
    `<p class="rnb-latency">estimated latency on ${escapeHTML(partition.target)}: ` +
    `<b>${escapeHTML(formatMs(partition.latency_ms))}</b> <span class="rnb-muted">(${breakdown}; ` +
    `${escapeHTML(partition.latency_note)})</span></p>` +
    `<h3>Why operators stay on the CPU</h3>${reasonList}` +
    `<h3>Operators <span class="rnb-muted">${
      hidden && !showQuantizers ? `(${hidden} quantizer nodes hidden)` : ''
    }</span></h3>` +
    '<table class="rnb-table rnb-nodes"><thead><tr><th>#</th><th>op</th><th>name</th><th>device</th>' +
    `<th>precision</th><th>why on the CPU</th></tr></thead><tbody>${rows}</tbody></table>` +
    `<details><summary>what the Vitis AI EP would print</summary><pre>${escapeHTML(partition.ep_log)}</pre></details>` +
    '</section>'
  );
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
