/** Unit tests of what the ONNX viewer and the launcher show (node --test, no browser). */

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  copyNotice,
  deviceColourVariables,
  errorMessage,
  escapeHTML,
  formatCount,
  formatMs,
  formatShape,
  npuShare,
  partitionHeadline,
  precisionChip,
  precisionOptions,
  renderHistogram,
  renderLegend,
  renderEpLog,
  renderNodeTable,
  renderPartitionHead,
  renderSummary,
  safeColour,
  targetOptions
} from '../src/render';
import type { IFacts, INodeInfo, IOnnxSummary, IPartition, IPrecisionInfo } from '../src/types';

function precision(name: string, colour: string, targets: string[]): IPrecisionInfo {
  return {
    name,
    label: `${name}: a label`,
    colour,
    description: `what ${name} <is>`,
    activations: 'a',
    weights: 'w',
    runs_as: null,
    targets
  };
}

/** Facts as the server sends them (ryzen_nb.spec.facts()); the values are the test's own. */
const facts: IFacts = {
  precisions: [
    precision('XINT8', '#112233', ['PHX', 'STX']),
    precision('BF16', '#445566', ['STX']),
    precision('OTHER', '#778899', [])
  ],
  devices: [
    { name: 'NPU', colour: '#00aa00', description: 'runs on the NPU' },
    { name: 'CPU', colour: '#aa0000', description: 'stays on the CPU' }
  ],
  targets: [
    { name: 'PHX', label: 'Phoenix', generation: 'XDNA', precisions: ['XINT8'], compilers: { XINT8: 'X1' } },
    { name: 'STX', label: 'Strix Point', generation: 'XDNA2', precisions: ['XINT8', 'BF16'], compilers: {} }
  ],
  default_target: 'STX'
};

function node(name: string, op: string, device: 'NPU' | 'CPU', extra: Partial<INodeInfo> = {}): INodeInfo {
  return { name, op, device, precision: 'XINT8', reason: '', subgraph: 0, quantizer: false, ...extra };
}

/** A partition as the server answers it: the counts and the share are NPUProgram's (every node counted). */
function partition(nodes: INodeInfo[]): IPartition {
  const npu = nodes.filter(n => n.device === 'NPU').length;
  return {
    target: 'STX',
    ep_log: '[Vitis AI EP] No. of Operators :   CPU     2    NPU    78',
    nodes,
    npu_operators: npu,
    cpu_operators: nodes.length - npu,
    npu_share: nodes.length ? Math.round((10000 * npu) / nodes.length) / 100 : 0,
    npu_subgraphs: 1,
    precisions: { XINT8: 3 },
    cpu_reasons: [],
    latency_ms: 1.23456,
    latency_breakdown_ms: { npu: 0.5, host: 0.73456 },
    latency_note: 'an estimate, not a measurement'
  };
}

const summary: IOnnxSummary = {
  file: 'model<1>.onnx',
  size_mb: 0.312,
  opset: 17,
  ir_version: 8,
  producer: 'pytorch 2.13',
  inputs: [{ name: 'image', shape: [1, 1, 8, 8], dtype: 'float32' }],
  outputs: [{ name: 'logits', shape: ['batch', 10], dtype: 'float32' }],
  operators: 4,
  op_histogram: { Conv: 2, Relu: 1, Gemm: 1 },
  parameters: 78123,
  quantized: false,
  precisions: ['as-is', 'XINT8'],
  target: 'STX',
  precision: 'as-is',
  partition: null,
  partition_error: null
};

test('escapeHTML escapes markup and quotes', () => {
  assert.equal(escapeHTML(`<img src="x" onerror='1'>&`), '&lt;img src=&quot;x&quot; onerror=&#39;1&#39;&gt;&amp;');
});

test('shapes, counts and times read as a person writes them', () => {
  assert.equal(formatShape([1, 3, 224, 224]), '1×3×224×224');
  assert.equal(formatShape(['batch', 128]), 'batch×128');
  assert.equal(formatShape([]), 'scalar');
  assert.equal(formatCount(4652008), '4.65 M');
  assert.equal(formatCount(78123), '78.1 k');
  assert.equal(formatCount(512), '512');
  assert.equal(formatCount(2.5e9), '2.50 G');
  assert.equal(formatMs(0.25), '250 µs');
  assert.equal(formatMs(1.23456), '1.23 ms');
  assert.equal(formatMs(250.4), '250 ms');
});

test('the NPU share is the server\'s, counted over every node as the EP log counts them', () => {
  const p = partition([
    node('q', 'QuantizeLinear', 'CPU', { quantizer: true }),
    node('conv', 'Conv', 'NPU'),
    node('relu', 'Relu', 'NPU'),
    node('softmax', 'Softmax', 'CPU', { reason: 'not supported on PHX' })
  ]);
  assert.equal(p.npu_share, 50); // 2 of 4 nodes: the quantizer counts
  assert.equal(npuShare(p), 50);
  assert.equal(partitionHeadline(p), 'NPU 2 ops · CPU 2 ops · 50% on NPU · 1 NPU subgraph');
  // shown as the server computed it, never recomputed from the counts
  assert.equal(npuShare({ ...p, npu_share: 97.46 }), 97.5);
  assert.equal(npuShare({ ...p, npu_share: 0 }), 0);
});

test('precisions are labelled and coloured from the facts, with nothing invented without them', () => {
  const chip = precisionChip('XINT8', facts);
  assert.match(chip, /class="rnb-chip rnb-prec" style="background:#112233"/);
  assert.match(chip, /title="XINT8: a label. what XINT8 &lt;is&gt;">XINT8<\/span>/);
  assert.equal(precisionChip('XINT8', null), '<span class="rnb-prec-plain">XINT8</span>');
  assert.equal(precisionChip('', facts), '<span class="rnb-prec-plain">–</span>');
  assert.equal(precisionChip('<b>', facts), '<span class="rnb-prec-plain">&lt;b&gt;</span>');
  const bad: IFacts = { ...facts, precisions: [precision('XINT8', 'red;background:url(x)', ['STX'])] };
  assert.equal(precisionChip('XINT8', bad), '<span class="rnb-prec-plain">XINT8</span>');
  assert.equal(safeColour('#abc'), '#abc');
  assert.equal(safeColour('#a1b2c3d4'), '#a1b2c3d4');
  assert.equal(safeColour('red'), '');
  assert.equal(safeColour(undefined), '');
});

test('the legend lists the precisions some NPU runs, in the facts\' order, with their counts', () => {
  const html = renderLegend({ BF16: 7 }, facts);
  assert.ok(html.indexOf('XINT8') < html.indexOf('BF16 7'));
  assert.match(html, /<span class="rnb-legend-item rnb-muted" title="XINT8: a label"><span class="rnb-swatch" style="background:#112233"><\/span>XINT8<\/span>/);
  assert.match(html, /<span class="rnb-legend-item" title="BF16: a label">.*BF16 7<\/span>/);
  assert.doesNotMatch(html, /OTHER/); // no target runs it
  assert.equal(renderLegend({ XINT8: 3 }, null), '');
});

test('menus and device colours come from the facts', () => {
  assert.deepEqual(targetOptions(facts), [
    ['PHX', 'PHX — Phoenix'],
    ['STX', 'STX — Strix Point']
  ]);
  assert.deepEqual(targetOptions(null), []);
  assert.deepEqual(precisionOptions(['as-is', 'XINT8', 'A8W8'], facts), [
    ['as-is', 'as-is'],
    ['XINT8', 'XINT8: a label'],
    ['A8W8', 'A8W8']
  ]);
  assert.deepEqual(deviceColourVariables(facts), [
    ['--rnb-device-npu', '#00aa00'],
    ['--rnb-device-cpu', '#aa0000']
  ]);
  assert.deepEqual(deviceColourVariables(null), []);
});

test('the partition lists CPU reasons grouped, hides quantizer nodes unless asked', () => {
  const p = partition([
    node('q', 'QuantizeLinear', 'NPU', { quantizer: true }),
    node('conv', 'Conv', 'NPU'),
    node('a', 'Softmax', 'CPU', { reason: 'Softmax <unsupported>' }),
    node('b', 'Softmax', 'CPU', { reason: 'Softmax <unsupported>' })
  ]);
  const head = renderPartitionHead(p, facts);
  assert.match(head, /<b>2×<\/b> Softmax &lt;unsupported&gt;/);
  assert.match(head, /<div class="rnb-legend">/);
  assert.match(head, /estimated latency on STX: <b>1.23 ms<\/b>/);
  assert.doesNotMatch(head, /<table/);
  const table = renderNodeTable(p, facts);
  assert.match(table, /<td><span class="rnb-chip rnb-prec" style="background:#112233"/);
  assert.match(table, /1 quantizer nodes hidden/);
  assert.doesNotMatch(table, /QuantizeLinear/);
  assert.match(renderEpLog(p), /<summary>what the Vitis AI EP would print<\/summary>/);
  const all = renderNodeTable(p, facts, true);
  assert.match(all, /QuantizeLinear/);
  assert.doesNotMatch(all, /quantizer nodes hidden/);
  assert.match(renderPartitionHead(partition([node('conv', 'Conv', 'NPU')]), null), /Every operator runs on the NPU/);
  // CPU operators that are all boundary quantizers: said as such, never "every operator runs on the NPU" alone
  const boundary = renderPartitionHead(partition([
    node('q', 'QuantizeLinear', 'CPU', { quantizer: true }), node('conv', 'Conv', 'NPU'),
    node('dq', 'DequantizeLinear', 'CPU', { quantizer: true })]), null);
  assert.match(boundary, /the 2 CPU operators are quantizer nodes where data enters or leaves it/);
});

test('the summary escapes names from the model file and lists inputs and outputs', () => {
  const html = renderSummary(summary);
  assert.match(html, /model&lt;1&gt;.onnx \(0.312 MB\)/);
  assert.match(html, /<td class="rnb-name">image<\/td><td>1×1×8×8<\/td><td>float32<\/td>/);
  assert.match(html, /batch×10/);
  assert.match(html, /78.1 k/);
  assert.match(html, /pytorch 2.13/);
});

test('the histogram puts the most frequent op first and sums the tail', () => {
  const html = renderHistogram({ Relu: 1, Conv: 5, Add: 2, Gemm: 1 }, 2);
  assert.ok(html.indexOf('Conv') < html.indexOf('Add'));
  assert.match(html, /2 other op types<\/span><span class="rnb-bar" style="width:40%"><\/span><span class="rnb-bar-value">2</);
});

test('errors: the server sentence when there is one, else how to enable the extension', () => {
  assert.equal(errorMessage(415, { error: 'x.onnx is not an ONNX model' }), 'x.onnx is not an ONNX model');
  assert.match(errorMessage(404, '<html>404</html>'), /jupyter server extension enable ryzen_nb.jupyter/);
  assert.equal(errorMessage(500, 'boom'), 'The ryzen-nb server extension answered HTTP 500.');
});

test('copying a tutorial over a changed copy says it was kept', () => {
  assert.equal(copyNotice({ path: 'a/01_getting_started.ipynb', status: 'created' }), null);
  assert.equal(copyNotice({ path: 'a/01_getting_started.ipynb', status: 'unchanged' }), null);
  assert.match(copyNotice({ path: 'a/01_getting_started.ipynb', status: 'kept-your-copy' }) ?? '', /^01_getting_started.ipynb is already/);
});
