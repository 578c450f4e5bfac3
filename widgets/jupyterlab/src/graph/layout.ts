/**
 * Where every box and edge of the graph goes: a layered layout (dagre) run block by block.
 *
 * One dagre run over a whole 500-node model takes seconds (its cost grows faster than the node
 * count). So each expanded block is laid out on its own, with its child blocks as single boxes of
 * their own size, and the results are cached: expanding or collapsing a block lays out that block
 * and its ancestors again, nothing else. Edges between blocks follow the route dagre gives them at
 * the level of their closest common block.
 */

import { Graph, layout as runDagre } from '@dagrejs/dagre';

import { ancestry, IGroup, IGrouping } from './model';

/** Sizes in SVG user units (pixels at zoom 1). */
export const SIZE = {
  nodeWidth: 168,
  nodeHeight: 40,
  groupWidth: 200,
  groupHeight: 56,
  /** above a block's content: its label */
  header: 26,
  pad: 12,
  margin: 16,
  nodesep: 18,
  ranksep: 28
} as const;

export type Point = [number, number];

/** A box by its top-left corner and size. */
export interface IBox {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** What the view draws: boxes for nodes, collapsed blocks and expanded blocks, and edges. */
export interface IScene {
  width: number;
  height: number;
  nodes: Array<{ index: number; box: IBox }>;
  /** collapsed blocks: one box each */
  collapsed: Array<{ group: IGroup; box: IBox }>;
  /** expanded blocks: a frame around their content */
  clusters: Array<{ group: IGroup; box: IBox }>;
  /** between units: "n:<node index>" or "g:<group id>" */
  edges: Array<{ from: string; to: string; points: Point[] }>;
  /** where each unit (node or collapsed block) was put */
  boxes: Map<string, IBox>;
  /** dagre runs this scene needed (the other blocks came from the cache) */
  runs: number;
}

interface ILocal {
  w: number;
  h: number;
  /** centre of each child, relative to the block's content */
  at: Map<string, Point>;
  size: Map<string, [number, number]>;
  routes: Map<string, Point[]>;
}

/** Joins the two ends of a link: a character no node or block name holds. */
const LINK = '\u0000';

export const nodeKey = (index: number): string => `n:${index}`;
export const groupKey = (group: IGroup): string => `g:${group.id}`;

/** The layout of one model's graph; keep it while the model's structure stays the same (the cache). */
export class GraphLayout {
  constructor(private readonly _grouping: IGrouping) {}

  /** Layouts computed so far (for the tests: a cached block is not laid out again). */
  get cached(): number {
    return this._cache.size;
  }

  /**
   * The scene for the drawn nodes, their edges and the expanded blocks. ``variant`` names what else
   * changes the drawn set (whether quantizers are shown): layouts are cached per variant.
   */
  scene(drawn: boolean[], edges: Array<[number, number]>, expanded: ReadonlySet<string>, variant: string): IScene {
    const { root, groupOf } = this._grouping;
    const open = (g: IGroup): boolean => g === root || (expanded.has(g.id) && open(g.parent as IGroup));
    const drawnIn = new Map<IGroup, number>();
    groupOf.forEach((group, i) => {
      if (drawn[i]) {
        for (let g: IGroup | null = group; g; g = g.parent) {
          drawnIn.set(g, (drawnIn.get(g) ?? 0) + 1);
        }
      }
    });
    // a node's unit: itself, or the outermost collapsed block around it
    const unitOf = (i: number): { key: string; path: IGroup[] } => {
      const chain = ancestry(groupOf[i]);
      for (let k = 0; k < chain.length; k++) {
        if (!expanded.has(chain[k].id)) {
          return { key: groupKey(chain[k]), path: [root, ...chain.slice(0, k)] };
        }
      }
      return { key: nodeKey(i), path: [root, ...chain] };
    };
    // each edge between units belongs to the closest block holding both, between two of its children
    const levels = new Map<IGroup, Set<string>>();
    const unitEdges: Array<{ from: string; to: string; level: IGroup; a: string; b: string }> = [];
    const seen = new Set<string>();
    for (const [from, to] of edges) {
      const ua = unitOf(from);
      const ub = unitOf(to);
      const key = `${ua.key}${LINK}${ub.key}`;
      if (ua.key === ub.key || seen.has(key)) {
        continue;
      }
      seen.add(key);
      let common = 1;
      while (common < ua.path.length && common < ub.path.length && ua.path[common] === ub.path[common]) {
        common++;
      }
      const level = ua.path[common - 1];
      const a = common < ua.path.length ? groupKey(ua.path[common]) : ua.key;
      const b = common < ub.path.length ? groupKey(ub.path[common]) : ub.key;
      if (!levels.has(level)) {
        levels.set(level, new Set());
      }
      (levels.get(level) as Set<string>).add(`${a}${LINK}${b}`);
      unitEdges.push({ from: ua.key, to: ub.key, level, a, b });
    }

    let runs = 0;
    const locals = new Map<IGroup, ILocal>();
    const local = (group: IGroup): ILocal => {
      const known = locals.get(group);
      if (known) {
        return known;
      }
      const children: Array<[string, number, number]> = [];
      for (const i of group.leaves) {
        if (drawn[i]) {
          children.push([nodeKey(i), SIZE.nodeWidth, SIZE.nodeHeight]);
        }
      }
      const inner: string[] = [];
      for (const child of group.groups) {
        if (!drawnIn.get(child)) {
          continue;
        }
        if (expanded.has(child.id)) {
          const content = local(child);
          inner.push(`${child.id}:${content.w}x${content.h}`);
          children.push([groupKey(child), ...frameSize(content)]);
        } else {
          children.push([groupKey(child), SIZE.groupWidth, SIZE.groupHeight]);
        }
      }
      const links = [...(levels.get(group) ?? [])].sort();
      // what this block's layout depends on: its drawn children, their sizes and the links between them
      const key = `${group.id}|${variant}|${children.map(c => c[0]).join(',')}|${inner.join(',')}|${links.join(',')}`;
      let result = this._cache.get(key);
      if (!result) {
        result = layOut(children, links);
        runs++;
        this._cache.set(key, result);
      }
      locals.set(group, result);
      return result;
    };

    const top = local(root);
    const scene: IScene = {
      width: top.w + 2 * SIZE.margin,
      height: top.h + 2 * SIZE.margin,
      nodes: [],
      collapsed: [],
      clusters: [],
      edges: [],
      boxes: new Map(),
      runs
    };
    const origin = new Map<IGroup, Point>();
    const place = (group: IGroup, x0: number, y0: number): void => {
      origin.set(group, [x0, y0]);
      const content = local(group);
      for (const [key, [cx, cy]] of content.at) {
        const [w, h] = content.size.get(key) as [number, number];
        const box = { x: x0 + cx - w / 2, y: y0 + cy - h / 2, w, h };
        if (key.startsWith('n:')) {
          scene.nodes.push({ index: Number(key.slice(2)), box });
          scene.boxes.set(key, box);
          continue;
        }
        const child = this._grouping.byId.get(key.slice(2)) as IGroup;
        if (open(child)) {
          scene.clusters.push({ group: child, box });
          const inside = local(child);
          place(child, box.x + (box.w - inside.w) / 2, box.y + SIZE.header);
        } else {
          scene.collapsed.push({ group: child, box });
          scene.boxes.set(key, box);
        }
      }
    };
    place(root, SIZE.margin, SIZE.margin);

    for (const edge of unitEdges) {
      const [ox, oy] = origin.get(edge.level) as Point;
      const route = (locals.get(edge.level)?.routes.get(`${edge.a}${LINK}${edge.b}`) ?? []).map(
        ([x, y]) => [x + ox, y + oy] as Point
      );
      const from = scene.boxes.get(edge.from);
      const to = scene.boxes.get(edge.to);
      if (!from || !to || route.length < 2) {
        continue;
      }
      // inside an expanded block the edge starts at its node, not at the block's frame
      const start: Point = edge.a === edge.from ? route[0] : [from.x + from.w / 2, from.y + from.h];
      const end: Point = edge.b === edge.to ? route[route.length - 1] : [to.x + to.w / 2, to.y];
      scene.edges.push({ from: edge.from, to: edge.to, points: [start, ...route.slice(1, -1), end] });
    }
    return scene;
  }

  private readonly _cache = new Map<string, ILocal>();
}

/** The frame of an expanded block around content of this size. */
function frameSize(content: ILocal): [number, number] {
  return [Math.max(content.w + 2 * SIZE.pad, 140), content.h + SIZE.header + SIZE.pad];
}

/** One dagre run: children (key, width, height) and links between them (their keys joined by LINK). */
function layOut(children: Array<[string, number, number]>, links: string[]): ILocal {
  const graph = new Graph({ multigraph: false });
  graph.setGraph({ rankdir: 'TB', nodesep: SIZE.nodesep, ranksep: SIZE.ranksep, marginx: 0, marginy: 0 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const [key, width, height] of children) {
    graph.setNode(key, { width, height });
  }
  for (const link of links) {
    const [a, b] = link.split(LINK);
    graph.setEdge(a, b);
  }
  runDagre(graph);
  const at = new Map<string, Point>();
  const size = new Map<string, [number, number]>();
  for (const [key, width, height] of children) {
    const placed = graph.node(key) as { x: number; y: number };
    at.set(key, [placed.x, placed.y]);
    size.set(key, [width, height]);
  }
  const routes = new Map<string, Point[]>();
  for (const link of links) {
    const [a, b] = link.split(LINK);
    const label = graph.edge(a, b) as { points?: Array<{ x: number; y: number }> } | undefined;
    routes.set(link, (label?.points ?? []).map(p => [p.x, p.y] as Point));
  }
  const info = graph.graph() as { width?: number; height?: number };
  return { w: Math.max(info.width ?? 0, 1), h: Math.max(info.height ?? 0, 1), at, size, routes };
}
