/**
 * The model as a graph, without a DOM: which nodes are drawn, the edges between them, the blocks a
 * person collapses (from the node names' hierarchy, or from the graph's structure when the names
 * are flat), search, and the colours of a node. Shared by the JupyterLab viewer and the
 * PartitionView anywidget, and unit-tested in Node (test/graph.test.ts).
 *
 * Nothing here names a precision, a device colour or a target: they come in as facts
 * (ryzen_nb.spec.facts(), through the server or the widget's trait).
 */

/** One node of the NPU partition, as the server and the widget send it (NPUProgram.nodes). */
export interface IGraphNode {
  name: string;
  /** op type; "domain:op" for a custom domain */
  op: string;
  device: string;
  precision: string;
  /** why the node stays on the CPU ("" on the NPU) */
  reason: string;
  subgraph: number | null;
  /** a QuantizeLinear/DequantizeLinear that only converts */
  quantizer: boolean;
  inputs?: string[];
  outputs?: string[];
}

/** The parts of ryzen_nb.spec.facts() the graph reads (the lab's IFacts and the widget's trait fit). */
export interface IGraphFacts {
  precisions?: Array<{ name: string; label?: string; colour?: string; description?: string }>;
  devices?: Array<{ name: string; colour?: string; description?: string }>;
}

/** A block of nodes that can be collapsed into one box. The root holds the whole model. */
export interface IGroup {
  id: string;
  /** what its box says: the last part of a name prefix ("layer3"), or "block 4" */
  label: string;
  /** the whole prefix or the range of the block, for the tooltip */
  title: string;
  parent: IGroup | null;
  groups: IGroup[];
  /** the nodes directly in this group (not in a child group), drawn or not, by index */
  leaves: number[];
  /** depth below the root (the root is 0) */
  depth: number;
}

export interface IGrouping {
  root: IGroup;
  /** the group each node sits in directly */
  groupOf: IGroup[];
  byId: Map<string, IGroup>;
  /** where the blocks come from: the names' hierarchy, the graph's structure, or none (a small model) */
  kind: 'names' | 'structure' | 'none';
}

/** A group needs at least this many operators to be worth a box of its own. */
export const MIN_GROUP = 3;
/** Models with fewer operators are not grouped at all. */
export const MIN_GROUPED_MODEL = 16;
/** A structural block stops growing at this many operators (a long chain of single-tensor cuts). */
export const MAX_BLOCK = 40;

/**
 * Whether a node is drawn. Quantizer nodes are most of a QDQ graph and are drawn only on request;
 * a Constant node only feeds a value (Netron shows it as an attribute) and is never drawn: the
 * table lists both.
 */
export function isDrawn(node: IGraphNode, showQuantizers: boolean): boolean {
  return node.op !== 'Constant' && (showQuantizers || !node.quantizer);
}

/** An operator: what the blocks are made of (neither a quantizer nor a Constant). */
export function isOperator(node: IGraphNode): boolean {
  return isDrawn(node, false);
}

/** Producer of each tensor and consumers of each tensor, by node index. */
export function tensorIndex(nodes: IGraphNode[]): { producer: Map<string, number>; consumers: Map<string, number[]> } {
  const producer = new Map<string, number>();
  const consumers = new Map<string, number[]>();
  nodes.forEach((node, i) => {
    for (const t of node.outputs ?? []) {
      if (t) {
        producer.set(t, i);
      }
    }
    for (const t of node.inputs ?? []) {
      if (!t) {
        continue;
      }
      const list = consumers.get(t);
      if (list) {
        list.push(i);
      } else {
        consumers.set(t, [i]);
      }
    }
  });
  return { producer, consumers };
}

/**
 * The edges between drawn nodes, as [from, to] node indices: a node that is not drawn passes its
 * inputs through (Conv → Q → DQ → Relu becomes Conv → Relu when quantizers are hidden). Model
 * inputs and initializers have no producer and make no edge.
 */
export function drawnEdges(nodes: IGraphNode[], drawn: boolean[]): Array<[number, number]> {
  const { producer } = tensorIndex(nodes);
  const through = new Map<number, number[]>(); // a hidden node -> the drawn nodes it stands for
  const sourcesOf = (hidden: number): number[] => {
    const known = through.get(hidden);
    if (known) {
      return known;
    }
    through.set(hidden, []); // a cycle (never in ONNX) ends here instead of recursing forever
    const found = new Set<number>();
    for (const t of nodes[hidden].inputs ?? []) {
      const p = t ? producer.get(t) : undefined;
      if (p === undefined) {
        continue;
      }
      for (const s of drawn[p] ? [p] : sourcesOf(p)) {
        found.add(s);
      }
    }
    const list = [...found];
    through.set(hidden, list);
    return list;
  };
  const seen = new Set<string>();
  const edges: Array<[number, number]> = [];
  nodes.forEach((node, to) => {
    if (!drawn[to]) {
      return;
    }
    for (const t of node.inputs ?? []) {
      const p = t ? producer.get(t) : undefined;
      if (p === undefined || p === to) {
        continue;
      }
      for (const from of drawn[p] ? [p] : sourcesOf(p)) {
        const key = `${from}>${to}`;
        if (from !== to && !seen.has(key)) {
          seen.add(key);
          edges.push([from, to]);
        }
      }
    }
  });
  return edges;
}

/**
 * The name prefix a node sits under: "/layer1/layer1.0/conv1/Conv" → ["layer1", "layer1.0", "conv1"]
 * (exporters that write paths), "layer0.query.matmul_10" → ["layer0", "query"] (dotted names),
 * "Conv_node_2" → [] (flat names).
 */
export function namePath(name: string): string[] {
  const parts = (name.includes('/') ? name.split('/') : name.split('.')).filter(p => p.length > 0);
  return parts.slice(0, -1);
}

function newGroup(id: string, label: string, title: string, parent: IGroup | null): IGroup {
  const group: IGroup = { id, label, title, parent, groups: [], leaves: [], depth: parent ? parent.depth + 1 : 0 };
  parent?.groups.push(group);
  return group;
}

interface ITrie {
  label: string;
  path: string;
  children: Map<string, ITrie>;
  leaves: number[];
  count: number;
}

/** "layer1" > "0" reads as "layer1.0": a bare index says nothing on its own. */
const numbered = (part: string): boolean => /^\d+$/.test(part);

/** The groups of the names' hierarchy: prefixes of at least MIN_GROUP operators, single-child chains merged. */
function groupsFromNames(nodes: IGraphNode[], operators: number[], root: IGroup, groupOf: IGroup[]): number {
  const trie: ITrie = { label: '', path: '', children: new Map(), leaves: [], count: 0 };
  for (const i of operators) {
    let at = trie;
    at.count++;
    for (const part of namePath(nodes[i].name)) {
      let next = at.children.get(part);
      if (!next) {
        next = { label: part, path: at.path ? `${at.path}/${part}` : part, children: new Map(), leaves: [], count: 0 };
        at.children.set(part, next);
      }
      at = next;
      at.count++;
    }
    at.leaves.push(i);
  }
  let grouped = 0;
  const build = (entry: ITrie, into: IGroup): void => {
    for (const i of entry.leaves) {
      groupOf[i] = into;
      if (into !== root) {
        grouped++;
      }
    }
    for (const child of entry.children.values()) {
      if (child.count < MIN_GROUP || child.count === operators.length) {
        build(child, into); // too small to collapse, or the whole model: its nodes stay where they are
        continue;
      }
      // a prefix with nothing but one child prefix ("encoder" > "layer") is one group, not two nested
      let inner = child;
      let name = entry.label && numbered(child.label) ? `${entry.label}.${child.label}` : child.label;
      while (inner.leaves.length === 0 && inner.children.size === 1) {
        const only = inner.children.values().next().value as ITrie;
        if (only.count < MIN_GROUP) {
          break;
        }
        inner = only;
        name = numbered(only.label) ? `${name}.${only.label}` : `${name}/${only.label}`;
      }
      build(inner, newGroup(`n:${inner.path}`, name, inner.path, into));
    }
  };
  build(trie, root);
  return grouped;
}

/**
 * Blocks from the graph's structure, for flat names: the operators in graph order are cut where a
 * single tensor is alive (the output of a residual block, of a LayerNorm…), and runs of fewer than
 * MIN_GROUP operators join the block before them (up to MAX_BLOCK operators).
 */
export function structuralBlocks(nodes: IGraphNode[], operators: number[]): number[][] {
  const drawn = nodes.map(() => false);
  for (const i of operators) {
    drawn[i] = true;
  }
  const position = new Map(operators.map((i, k) => [i, k]));
  const lastUse = operators.map((_, k) => k);
  for (const [from, to] of drawnEdges(nodes, drawn)) {
    const a = position.get(from) as number;
    const b = position.get(to) as number;
    lastUse[a] = Math.max(lastUse[a], b);
  }
  // live[k]: operators at or before k whose output is read after k
  const ends = new Array<number>(operators.length + 1).fill(0);
  for (let k = 0; k < operators.length; k++) {
    if (lastUse[k] > k) {
      ends[lastUse[k]]++;
    }
  }
  const segments: number[][] = [];
  let current: number[] = [];
  let live = 0;
  for (let k = 0; k < operators.length; k++) {
    live -= ends[k];
    if (lastUse[k] > k) {
      live++;
    }
    current.push(operators[k]);
    if (live <= 1) {
      segments.push(current);
      current = [];
    }
  }
  if (current.length) {
    segments.push(current);
  }
  const blocks: number[][] = [];
  for (const segment of segments) {
    const last = blocks[blocks.length - 1];
    if (last && (segment.length < MIN_GROUP || last.length < MIN_GROUP) && last.length + segment.length <= MAX_BLOCK) {
      last.push(...segment);
    } else {
      blocks.push([...segment]);
    }
  }
  return blocks;
}

/** The node a quantizer or Constant is drawn with: the operator it feeds, else the one feeding it. */
function anchorOperators(nodes: IGraphNode[], operator: boolean[]): number[] {
  const { producer, consumers } = tensorIndex(nodes);
  const anchor = nodes.map((_, i) => (operator[i] ? i : -1));
  const follow = (start: number, forward: boolean): number => {
    const queue = [start];
    const seen = new Set(queue);
    while (queue.length) {
      const at = queue.shift() as number;
      const next = forward
        ? (nodes[at].outputs ?? []).flatMap(t => consumers.get(t) ?? [])
        : (nodes[at].inputs ?? []).map(t => producer.get(t)).filter((p): p is number => p !== undefined);
      for (const n of next) {
        if (operator[n]) {
          return n;
        }
        if (!seen.has(n) && seen.size < 64) {
          seen.add(n);
          queue.push(n);
        }
      }
    }
    return -1;
  };
  nodes.forEach((_, i) => {
    if (anchor[i] < 0) {
      anchor[i] = follow(i, true);
      if (anchor[i] < 0) {
        anchor[i] = follow(i, false);
      }
    }
  });
  return anchor;
}

/**
 * The collapsible blocks of a model: the hierarchy of its node names when at least half of its
 * operators sit under a shared prefix, else blocks cut from its structure; none for a small model.
 * Quantizers and Constants join the block of the operator they feed, so the blocks do not change
 * when quantizers are shown.
 */
export function groupNodes(nodes: IGraphNode[]): IGrouping {
  const root = newGroup('root', '', '', null);
  const groupOf = nodes.map(() => root);
  const operator = nodes.map(isOperator);
  const operators = nodes.map((_, i) => i).filter(i => operator[i]);
  let kind: IGrouping['kind'] = 'none';
  if (operators.length >= MIN_GROUPED_MODEL) {
    if (2 * groupsFromNames(nodes, operators, root, groupOf) >= operators.length) {
      kind = 'names';
    } else {
      root.groups = [];
      groupOf.fill(root);
      const blocks = structuralBlocks(nodes, operators);
      if (blocks.length > 1) {
        kind = 'structure';
        blocks.forEach((members, k) => {
          if (members.length < MIN_GROUP) {
            return;
          }
          const first = nodes[members[0]];
          const last = nodes[members[members.length - 1]];
          const group = newGroup(`s:${k}`, `block ${k + 1}`, `block ${k + 1}: ${first.name} … ${last.name}`, root);
          for (const i of members) {
            groupOf[i] = group;
          }
        });
      }
    }
  }
  const anchor = anchorOperators(nodes, operator);
  nodes.forEach((_, i) => {
    if (!operator[i] && anchor[i] >= 0) {
      groupOf[i] = groupOf[anchor[i]];
    }
    groupOf[i].leaves.push(i);
  });
  const byId = new Map<string, IGroup>();
  const walk = (group: IGroup): void => {
    byId.set(group.id, group);
    group.groups.forEach(walk);
  };
  walk(root);
  return { root, groupOf, byId, kind };
}

/** The groups from the root down to (and with) ``group``, the root excluded. */
export function ancestry(group: IGroup): IGroup[] {
  const chain: IGroup[] = [];
  for (let g: IGroup | null = group; g && g.parent; g = g.parent) {
    chain.unshift(g);
  }
  return chain;
}

/** Every node index inside a group, its child groups included. */
export function members(group: IGroup): number[] {
  return [...group.leaves, ...group.groups.flatMap(members)];
}

/** What a collapsed block holds: drawn nodes per device and per precision, and its CPU reasons. */
export interface IGroupStats {
  nodes: number;
  devices: Map<string, number>;
  precisions: Map<string, number>;
  reasons: Map<string, number>;
}

export function groupStats(group: IGroup, nodes: IGraphNode[], drawn: boolean[]): IGroupStats {
  const stats: IGroupStats = { nodes: 0, devices: new Map(), precisions: new Map(), reasons: new Map() };
  const bump = (map: Map<string, number>, key: string): void => {
    map.set(key, (map.get(key) ?? 0) + 1);
  };
  for (const i of members(group)) {
    if (!drawn[i]) {
      continue;
    }
    const node = nodes[i];
    stats.nodes++;
    bump(stats.devices, node.device);
    bump(stats.precisions, node.precision || '');
    if (node.device !== 'NPU' && node.reason) {
      bump(stats.reasons, node.reason);
    }
  }
  return stats;
}

/**
 * The nodes a search finds: every word (white space separated, case-insensitive) occurs in the
 * node's name, op, precision or reason — as the table's filter reads it. Only drawn nodes count.
 */
export function search(nodes: IGraphNode[], drawn: boolean[], query: string): number[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) {
    return [];
  }
  const found: number[] = [];
  nodes.forEach((node, i) => {
    if (!drawn[i]) {
      return;
    }
    const fields = [node.name, node.op, node.precision, node.reason].map(v => String(v ?? '').toLowerCase());
    if (words.every(w => fields.some(f => f.includes(w)))) {
      found.push(i);
    }
  });
  return found;
}

/** A colour from the facts, or '' when it is not a plain hex colour. */
export function safeColour(colour: unknown): string {
  return typeof colour === 'string' && /^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(colour) ? colour : '';
}

/** Text that stays readable on ``background``: dark on light colours, white on dark ones. */
export function textOn(background: string): string {
  const hex = safeColour(background).slice(1);
  if (!hex) {
    return '';
  }
  const full = hex.length === 3 ? [...hex].map(c => c + c).join('') : hex;
  const [r, g, b] = [0, 2, 4].map(k => parseInt(full.slice(k, k + 2), 16) / 255);
  const linear = (c: number): number => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  const luminance = 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
  // the contrast of white and of near-black against the background: the larger wins
  return (1.05 / (luminance + 0.05) >= (luminance + 0.05) / 0.06 ? '#ffffff' : '#111111');
}

/** The facts indexed for drawing: colour and label of each precision, colour of each device. */
export interface IPalette {
  precision: Map<string, { colour: string; label: string; description: string }>;
  device: Map<string, string>;
}

export function palette(facts: IGraphFacts | null | undefined): IPalette {
  const precision = new Map<string, { colour: string; label: string; description: string }>();
  for (const p of facts?.precisions ?? []) {
    precision.set(p.name, { colour: safeColour(p.colour), label: p.label || p.name, description: p.description ?? '' });
  }
  const device = new Map<string, string>();
  for (const d of facts?.devices ?? []) {
    device.set(d.name, safeColour(d.colour));
  }
  return { precision, device };
}

/** A label cut to ``max`` characters with an ellipsis (SVG text does not wrap or clip itself). */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(1, max - 1))}…`;
}
