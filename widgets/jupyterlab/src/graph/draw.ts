/**
 * The graph's SVG: a box per node (filled with its precision's colour, edged and striped with its
 * device's, dashed on the CPU), a stacked box per collapsed block with the precisions inside as a
 * bar, a frame per expanded block, and the edges. Colours come from the palette (the facts); text
 * from the model goes in as textContent.
 */

import { IBox, IScene, Point } from './layout';
import { clip, groupStats, IGraphNode, IGroup, IGrouping, IPalette, textOn } from './model';

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg(tag: string, className: string, attributes: Record<string, string | number> = {}): SVGElement {
  const e = document.createElementNS(SVG_NS, tag) as SVGElement;
  if (className) {
    e.setAttribute('class', className);
  }
  for (const [key, value] of Object.entries(attributes)) {
    e.setAttribute(key, String(value));
  }
  return e;
}

function text(x: number, y: number, className: string, content: string, fill = ''): SVGElement {
  const t = svg('text', className, { x, y });
  if (fill) {
    t.setAttribute('fill', fill);
  }
  t.textContent = content;
  return t;
}

/** An SVG path through the points, its corners rounded (dagre's routes are polylines). */
export function edgePath(points: Point[]): string {
  if (points.length < 2) {
    return '';
  }
  const f = (n: number): string => (Math.round(n * 10) / 10).toString();
  let d = `M${f(points[0][0])},${f(points[0][1])}`;
  for (let k = 1; k < points.length - 1; k++) {
    const [x, y] = points[k];
    const [nx, ny] = points[k + 1];
    d += ` Q${f(x)},${f(y)} ${f((x + nx) / 2)},${f((y + ny) / 2)}`;
  }
  const [lx, ly] = points[points.length - 1];
  return `${d} L${f(lx)},${f(ly)}`;
}

/** What a drawing needs besides the scene. */
export interface IDrawing {
  nodes: IGraphNode[];
  drawn: boolean[];
  palette: IPalette;
  /** the id of this view's arrowhead marker (unique in the document) */
  marker: string;
}

/** Replace the content of ``target`` with the scene. */
export function drawScene(target: SVGSVGElement, scene: IScene, drawing: IDrawing): void {
  const defs = svg('defs', '');
  const marker = svg('marker', '', {
    id: drawing.marker,
    viewBox: '0 0 10 10',
    refX: 9,
    refY: 5,
    markerWidth: 7,
    markerHeight: 7,
    orient: 'auto-start-reverse'
  });
  marker.append(svg('path', 'rnb-graph-arrow', { d: 'M0,0 L10,5 L0,10 z' }));
  defs.append(marker);
  const clusters = svg('g', 'rnb-graph-clusters');
  for (const { group, box } of scene.clusters) {
    clusters.append(clusterFrame(group, box, drawing));
  }
  const edges = svg('g', 'rnb-graph-edges');
  for (const edge of scene.edges) {
    const path = svg('path', 'rnb-graph-edge', { d: edgePath(edge.points), 'marker-end': `url(#${drawing.marker})` });
    path.setAttribute('data-from', edge.from);
    path.setAttribute('data-to', edge.to);
    edges.append(path);
  }
  const boxes = svg('g', 'rnb-graph-nodes');
  for (const { group, box } of scene.collapsed) {
    boxes.append(collapsedBox(group, box, drawing));
  }
  for (const { index, box } of scene.nodes) {
    boxes.append(nodeBox(index, box, drawing));
  }
  target.replaceChildren(defs, clusters, edges, boxes);
  target.setAttribute('viewBox', `0 0 ${scene.width} ${scene.height}`);
}

function nodeBox(index: number, box: IBox, { nodes, palette }: IDrawing): SVGElement {
  const node = nodes[index];
  const device = palette.device.get(node.device) ?? '';
  const fill = palette.precision.get(node.precision)?.colour ?? '';
  const cpu = node.device !== 'NPU';
  const g = svg('g', `rnb-graph-node${cpu ? ' rnb-graph-cpu' : ''}${fill ? '' : ' rnb-graph-plain'}`, {
    transform: `translate(${box.x},${box.y})`
  });
  g.setAttribute('data-index', String(index));
  g.setAttribute('data-name', node.name);
  const frame = svg('rect', 'rnb-graph-box', { width: box.w, height: box.h, rx: 5 });
  if (fill) {
    frame.setAttribute('fill', fill);
  }
  if (device) {
    frame.setAttribute('stroke', device);
  }
  const stripe = svg('rect', 'rnb-graph-stripe', { x: 0, y: 0, width: 7, height: box.h, rx: 3 });
  if (device) {
    stripe.setAttribute('fill', device);
  }
  const ink = textOn(fill);
  g.append(
    frame,
    stripe,
    text(13, 16, 'rnb-graph-op', clip(node.op, 15), ink),
    text(box.w - 7, 16, 'rnb-graph-prec', node.precision || '', ink),
    text(13, 32, 'rnb-graph-name', clip(node.name, 25), ink)
  );
  return g;
}

function collapsedBox(group: IGroup, box: IBox, { nodes, drawn, palette }: IDrawing): SVGElement {
  const stats = groupStats(group, nodes, drawn);
  const g = svg('g', 'rnb-graph-group', { transform: `translate(${box.x},${box.y})` });
  g.setAttribute('data-group', group.id);
  g.append(
    svg('rect', 'rnb-graph-stack', { x: 4, y: 4, width: box.w, height: box.h, rx: 7 }),
    svg('rect', 'rnb-graph-group-box', { width: box.w, height: box.h, rx: 7 }),
    text(10, 18, 'rnb-graph-group-label', `▸ ${clip(group.label, 24)}`)
  );
  const count = text(10, 34, 'rnb-graph-group-count', `${stats.nodes} nodes`);
  const cpu = [...stats.devices].filter(([d]) => d !== 'NPU').reduce((s, [, n]) => s + n, 0);
  if (cpu) {
    const onCpu = svg('tspan', 'rnb-graph-group-cpu');
    onCpu.textContent = ` · ${cpu} on CPU`;
    const colour = palette.device.get('CPU');
    if (colour) {
      onCpu.setAttribute('fill', colour);
    }
    count.append(onCpu);
  }
  g.append(count);
  // the precisions inside, as a bar of their colours in proportion
  let x = 10;
  const width = box.w - 20;
  for (const [name, n] of stats.precisions) {
    const w = (width * n) / Math.max(1, stats.nodes);
    const colour = palette.precision.get(name)?.colour;
    // a presentation attribute loses to any stylesheet rule: uncoloured parts get a class instead
    const part = svg('rect', colour ? 'rnb-graph-group-bar' : 'rnb-graph-group-bar rnb-graph-group-bar-plain', {
      x,
      y: box.h - 13,
      width: Math.max(w, 1),
      height: 6
    });
    if (colour) {
      part.setAttribute('fill', colour);
    }
    g.append(part);
    x += w;
  }
  return g;
}

function clusterFrame(group: IGroup, box: IBox, { nodes, drawn }: IDrawing): SVGElement {
  const g = svg('g', 'rnb-graph-cluster', { transform: `translate(${box.x},${box.y})` });
  g.setAttribute('data-group', group.id);
  const stats = groupStats(group, nodes, drawn);
  g.append(
    svg('rect', 'rnb-graph-cluster-box', { width: box.w, height: box.h, rx: 8 }),
    text(8, 17, 'rnb-graph-cluster-label', `▾ ${clip(group.label, Math.floor((box.w - 60) / 7))}`),
    text(box.w - 8, 17, 'rnb-graph-cluster-count', `${stats.nodes}`)
  );
  return g;
}

/** The tooltip of a node: op and name, where it runs and in which precision, and why on the CPU. */
export function nodeTooltip(node: IGraphNode, palette: IPalette): string[] {
  const precision = palette.precision.get(node.precision)?.label ?? node.precision;
  const lines = [
    `${node.op} · ${node.name}`,
    node.device === 'NPU'
      ? `NPU subgraph ${node.subgraph ?? '–'} · ${precision}`
      : `${node.device}${precision ? ` · ${precision}` : ''}`
  ];
  if (node.device !== 'NPU' && node.reason) {
    lines.push(`Why on the CPU: ${node.reason}`);
  }
  return lines;
}

/** The tooltip of a block: its name, what it holds per device, and the commonest CPU reasons. */
export function groupTooltip(group: IGroup, nodes: IGraphNode[], drawn: boolean[], collapsed: boolean): string[] {
  const stats = groupStats(group, nodes, drawn);
  const devices = [...stats.devices].map(([d, n]) => `${d} ${n}`).join(' · ');
  const lines = [group.title, `${stats.nodes} nodes: ${devices}`];
  for (const [reason, n] of [...stats.reasons].sort((a, b) => b[1] - a[1]).slice(0, 3)) {
    lines.push(`${n}× on the CPU: ${reason}`);
  }
  lines.push(collapsed ? 'Click to open' : 'Click its label to close');
  return lines;
}

/**
 * The line under the toolbar: "514 nodes · 16 blocks by name, 4 open · layout 120 ms · not drawn:
 * 1318 quantizer nodes (see the table)".
 */
export function statusLine(
  nodes: IGraphNode[],
  drawn: boolean[],
  grouping: IGrouping,
  expanded: ReadonlySet<string>,
  layoutMs: number,
  runs: number
): string {
  const parts = [`${drawn.filter(Boolean).length} nodes`];
  const blocks = grouping.byId.size - 1;
  if (blocks) {
    const open = [...expanded].filter(id => grouping.byId.has(id)).length;
    const by = grouping.kind === 'names' ? 'by name' : 'by structure';
    parts.push(`${blocks} block${blocks === 1 ? '' : 's'} ${by}, ${open ? `${open} open` : 'all closed'}`);
  }
  parts.push(`layout ${layoutMs} ms${runs ? '' : ' (cached)'}`);
  const quantizers = nodes.filter((n, i) => n.quantizer && !drawn[i] && n.op !== 'Constant').length;
  const constants = nodes.filter(n => n.op === 'Constant').length;
  const hidden = [
    ...(quantizers ? [`${quantizers} quantizer nodes`] : []),
    ...(constants ? [`${constants} Constant nodes`] : [])
  ];
  return parts.join(' · ') + (hidden.length ? ` · not drawn: ${hidden.join(', ')} (see the table)` : '');
}
