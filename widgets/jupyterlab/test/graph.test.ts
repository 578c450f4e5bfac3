/** Unit tests of the graph view's model and layout (node --test, no browser). */

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { edgePath, statusLine } from '../src/graph/draw';
import { GraphLayout, IBox, SIZE } from '../src/graph/layout';
import {
  clip,
  drawnEdges,
  groupNodes,
  groupStats,
  IGraphNode,
  isDrawn,
  namePath,
  palette,
  safeColour,
  search,
  structuralBlocks,
  textOn
} from '../src/graph/model';

function op(name: string, type: string, inputs: string[], outputs: string[], extra: Partial<IGraphNode> = {}): IGraphNode {
  return { name, op: type, device: 'NPU', precision: 'XINT8', reason: '', subgraph: 0, quantizer: false, inputs, outputs, ...extra };
}

function quantizer(name: string, type: string, input: string, output: string): IGraphNode {
  return op(name, type, [input, `${name}.scale`], [output], { quantizer: true });
}

/** x → conv → Q → DQ → relu, a weight DQ into conv, a Constant into relu's neighbour add. */
const qdq: IGraphNode[] = [
  quantizer('w_dq', 'DequantizeLinear', 'w_q', 'w'),
  op('conv', 'Conv', ['x', 'w'], ['c']),
  quantizer('q', 'QuantizeLinear', 'c', 'cq'),
  quantizer('dq', 'DequantizeLinear', 'cq', 'cd'),
  op('relu', 'Relu', ['cd'], ['r']),
  op('k', 'Constant', [], ['kk']),
  op('add', 'Add', ['r', 'kk', 'c'], ['y'], { device: 'CPU', precision: 'FP32', reason: 'not quantized', subgraph: null })
];

test('edges go through the nodes that are not drawn', () => {
  const hidden = qdq.map(n => isDrawn(n, false));
  assert.deepEqual(hidden, [false, true, false, false, true, false, true]);
  assert.deepEqual(drawnEdges(qdq, hidden), [
    [1, 4],
    [4, 6],
    [1, 6]
  ]);
  const shown = qdq.map(n => isDrawn(n, true));
  assert.equal(shown[5], false, 'a Constant is never drawn');
  assert.deepEqual(drawnEdges(qdq, shown), [
    [0, 1],
    [1, 2],
    [2, 3],
    [3, 4],
    [4, 6],
    [1, 6]
  ]);
});

test('name paths of exporters that write paths, dots, or nothing', () => {
  assert.deepEqual(namePath('/layer1/layer1.0/conv1/Conv'), ['layer1', 'layer1.0', 'conv1']);
  assert.deepEqual(namePath('layer0.query.matmul_10'), ['layer0', 'query']);
  assert.deepEqual(namePath('Conv_node_2'), []);
  assert.deepEqual(namePath(''), []);
});

/** A dotted-name model: stem, then `layers` blocks of a residual pair, then a head; quantizers between. */
function dotted(layers: number): IGraphNode[] {
  const nodes: IGraphNode[] = [op('stem.conv', 'Conv', ['x'], ['s'])];
  let x = 's';
  for (let l = 0; l < layers; l++) {
    const t = `layer${l}`;
    nodes.push(quantizer(`${t}_q`, 'QuantizeLinear', x, `${t}.xq`));
    nodes.push(quantizer(`${t}_dq`, 'DequantizeLinear', `${t}.xq`, `${t}.xd`));
    nodes.push(op(`${t}.a.conv`, 'Conv', [`${t}.xd`], [`${t}.a`]));
    nodes.push(op(`${t}.a.relu`, 'Relu', [`${t}.a`], [`${t}.ar`]));
    nodes.push(op(`${t}.b.conv`, 'Conv', [`${t}.ar`], [`${t}.b`]));
    nodes.push(op(`${t}.add`, 'Add', [`${t}.b`, x], [`${t}.sum`]));
    nodes.push(op(`${t}.out`, 'Relu', [`${t}.sum`], [`${t}.y`]));
    x = `${t}.y`;
  }
  nodes.push(op('head', 'Gemm', [x], ['logits'], { device: 'CPU', precision: 'FP32', reason: 'after the last quantizer', subgraph: null }));
  return nodes;
}

test('blocks from the names: one per prefix, quantizers with the operator they feed', () => {
  const nodes = dotted(4);
  const grouping = groupNodes(nodes);
  assert.equal(grouping.kind, 'names');
  assert.deepEqual(
    grouping.root.groups.map(g => g.label),
    ['layer0', 'layer1', 'layer2', 'layer3']
  );
  const layer2 = grouping.byId.get('n:layer2');
  assert.ok(layer2);
  // "layer2.a" and "layer2.b" hold two operators each: too small to be blocks of their own
  assert.deepEqual(layer2.groups, []);
  assert.deepEqual(
    layer2.leaves.map(i => nodes[i].name),
    ['layer2_q', 'layer2_dq', 'layer2.a.conv', 'layer2.a.relu', 'layer2.b.conv', 'layer2.add', 'layer2.out']
  );
  assert.equal(grouping.groupOf[0], grouping.root, 'stem.conv alone is no block');
  assert.equal(grouping.groupOf[nodes.length - 1], grouping.root);
});

test('a prefix over the whole model is not a block; a chain of single prefixes is one block', () => {
  const nodes = dotted(4).map(n => ({ ...n, name: `model/encoder/${n.name.replace(/\./g, '/')}` }));
  const grouping = groupNodes(nodes);
  assert.equal(grouping.kind, 'names');
  assert.deepEqual(
    grouping.root.groups.map(g => g.label),
    ['layer0', 'layer1', 'layer2', 'layer3']
  );
  const wrapped = dotted(4).map(n => (n.name.startsWith('layer1.') ? { ...n, name: `layer1.inner.${n.name.slice(7)}` } : n));
  const numbered = dotted(4).map(n => (n.name.startsWith('layer1.') ? { ...n, name: `layer1.0.${n.name.slice(7)}` } : n));
  assert.equal(groupNodes(numbered).byId.get('n:layer1/0')?.label, 'layer1.0', 'a bare index keeps its parent');
  const inner = groupNodes(wrapped).byId.get('n:layer1/inner');
  assert.ok(inner, 'layer1 > inner, with nothing else in layer1, is one block');
  assert.equal(inner.label, 'layer1/inner');
});

test('blocks from the structure when the names are flat', () => {
  const nodes = dotted(5).map((n, i) => ({ ...n, name: `${n.op}_node_${i}` }));
  const grouping = groupNodes(nodes);
  assert.equal(grouping.kind, 'structure');
  const operators = nodes.map((_, i) => i).filter(i => isDrawn(nodes[i], false));
  const blocks = structuralBlocks(nodes, operators);
  // cut where one tensor is alive: after each residual block's final Relu (stem and head join a neighbour)
  assert.deepEqual(
    blocks.map(b => b.length),
    [6, 5, 5, 5, 6]
  );
  assert.ok(blocks.every(b => b.some(i => nodes[i].op === 'Add')));
  assert.equal(grouping.root.groups.length, 5);
  assert.match(grouping.root.groups[0].title, /^block 1: Conv_node_0 … Relu_node_/);
});

test('a small model has no blocks', () => {
  assert.equal(groupNodes(qdq).kind, 'none');
  assert.equal(groupNodes(qdq).byId.size, 1);
});

test('search: every word in the name, op, precision or reason; drawn nodes only', () => {
  const drawn = qdq.map(n => isDrawn(n, false));
  assert.deepEqual(search(qdq, drawn, 'CONV'), [1]);
  assert.deepEqual(search(qdq, drawn, 'add not quantized'), [6]);
  assert.deepEqual(search(qdq, drawn, 'q'), [6], 'the quantizers are hidden; "not quantized" matches');
  assert.deepEqual(search(qdq, qdq.map(n => isDrawn(n, true)), 'dequantize'), [0, 3]);
  assert.deepEqual(search(qdq, drawn, '  '), []);
});

test('stats of a block: nodes per device and precision, CPU reasons', () => {
  const nodes = dotted(2);
  const grouping = groupNodes(nodes);
  const drawn = nodes.map(n => isDrawn(n, false));
  const stats = groupStats(grouping.root, nodes, drawn);
  assert.equal(stats.nodes, 12);
  assert.deepEqual([...stats.devices], [
    ['NPU', 11],
    ['CPU', 1]
  ]);
  assert.deepEqual([...stats.reasons], [['after the last quantizer', 1]]);
});

test('colours: only hex colours from the facts; text readable on them', () => {
  assert.equal(safeColour('#1f6fb4'), '#1f6fb4');
  assert.equal(safeColour('red'), '');
  assert.equal(safeColour('#12345'), '');
  assert.equal(safeColour('url(#x)'), '');
  assert.equal(textOn('#1f6fb4'), '#ffffff');
  assert.equal(textOn('#f0f0a0'), '#111111');
  assert.equal(textOn('#fff'), '#111111');
  assert.equal(textOn('nonsense'), '');
  const p = palette({ precisions: [{ name: 'XINT8', colour: '#123456', label: 'XINT8: int8' }], devices: [{ name: 'CPU', colour: 'javascript:1' }] });
  assert.equal(p.precision.get('XINT8')?.colour, '#123456');
  assert.equal(p.device.get('CPU'), '', 'a colour that is not hex is dropped');
  assert.equal(clip('layer1.0.conv_10', 8), 'layer1.…');
  assert.equal(clip('short', 8), 'short');
});

function overlap(a: IBox, b: IBox): boolean {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

test('layout: every drawn node placed once, no two boxes overlap, blocks frame their nodes', () => {
  const nodes = dotted(6);
  const grouping = groupNodes(nodes);
  const drawn = nodes.map(n => isDrawn(n, false));
  const layout = new GraphLayout(grouping);
  const all = new Set([...grouping.byId.keys()].filter(id => id !== 'root'));
  const scene = layout.scene(drawn, drawnEdges(nodes, drawn), all, '-');
  assert.deepEqual(
    scene.nodes.map(n => n.index).sort((a, b) => a - b),
    nodes.map((_, i) => i).filter(i => drawn[i])
  );
  for (let a = 0; a < scene.nodes.length; a++) {
    for (let b = a + 1; b < scene.nodes.length; b++) {
      assert.ok(!overlap(scene.nodes[a].box, scene.nodes[b].box), `${a} and ${b} overlap`);
    }
  }
  assert.equal(scene.clusters.length, 6);
  for (const { group, box } of scene.clusters) {
    for (const { index, box: inner } of scene.nodes) {
      const inside = grouping.groupOf[index] === group;
      const within = inner.x >= box.x && inner.x + inner.w <= box.x + box.w && inner.y >= box.y && inner.y + inner.h <= box.y + box.h;
      assert.equal(within, inside, `${nodes[index].name} and the frame of ${group.label}`);
    }
  }
  assert.ok(scene.edges.length >= 6 * 5 && scene.edges.every(e => e.points.length >= 2));
  assert.ok(scene.width >= SIZE.nodeWidth && scene.height > 6 * 5 * SIZE.nodeHeight);
});

test('layout: a collapsed block is one box its edges reach; layouts are cached per block', () => {
  const nodes = dotted(6);
  const grouping = groupNodes(nodes);
  const drawn = nodes.map(n => isDrawn(n, false));
  const edges = drawnEdges(nodes, drawn);
  const layout = new GraphLayout(grouping);
  const closed = layout.scene(drawn, edges, new Set(), '-');
  assert.equal(closed.runs, 1, 'all closed: the top level only');
  assert.equal(closed.collapsed.length, 6);
  assert.deepEqual(closed.nodes.map(n => nodes[n.index].name), ['stem.conv', 'head']);
  const keys = new Set(closed.edges.map(e => `${e.from}>${e.to}`));
  const head = `n:${nodes.length - 1}`;
  assert.ok(keys.has('n:0>g:n:layer0') && keys.has('g:n:layer0>g:n:layer1') && keys.has(`g:n:layer5>${head}`));
  assert.equal(keys.size, 7, 'a chain: stem, six blocks, head; edges inside a closed block are not drawn');
  const one = layout.scene(drawn, edges, new Set(['n:layer2']), '-');
  assert.equal(one.runs, 2, 'the opened block and the top level');
  assert.equal(one.clusters.length, 1);
  assert.equal(layout.scene(drawn, edges, new Set(['n:layer2']), '-').runs, 0, 'the same state again: cached');
  assert.equal(layout.scene(drawn, edges, new Set(), '-').runs, 0);
  const quantizers = nodes.map(n => isDrawn(n, true));
  const shown = layout.scene(quantizers, drawnEdges(nodes, quantizers), new Set(['n:layer2']), 'q');
  assert.equal(shown.runs, 2, 'showing quantizers is another variant');
  assert.equal(shown.nodes.length, 2 + 7);
});

test('edge paths and the status line', () => {
  assert.equal(edgePath([[0, 0]]), '');
  assert.equal(
    edgePath([
      [0, 0],
      [10, 20],
      [10, 40]
    ]),
    'M0,0 Q10,20 10,30 L10,40'
  );
  const nodes = dotted(2);
  const grouping = groupNodes(dotted(4));
  const drawn = nodes.map(n => isDrawn(n, false));
  const line = statusLine(nodes, drawn, grouping, new Set(['n:layer1']), 12, 3);
  assert.equal(line, '12 nodes · 4 blocks by name, 1 open · layout 12 ms · not drawn: 4 quantizer nodes (see the table)');
  assert.match(statusLine(nodes, nodes.map(() => true), grouping, new Set(), 0, 0), /all closed · layout 0 ms \(cached\)$/);
});
