/**
 * The graph view: the model laid out as a graph (./layout), each node filled with its precision's
 * colour and edged with its device's colour (dashed on the CPU), blocks that collapse and expand,
 * search by name, zoom and pan, a tooltip and a side panel with the reason of every CPU node.
 *
 * Framework-free DOM, so the JupyterLab viewer (a Lumino widget) and the PartitionView anywidget
 * mount the same view. Every colour of a precision or device comes from the facts handed to it;
 * every text from the model goes in as textContent.
 */

import { drawScene, groupTooltip, nodeTooltip, statusLine, svg } from './draw';
import { GraphLayout, IScene, nodeKey, Point } from './layout';
import {
  ancestry,
  drawnEdges,
  groupNodes,
  IGraphFacts,
  IGraphNode,
  IGroup,
  IGrouping,
  isDrawn,
  IPalette,
  palette,
  search,
  tensorIndex
} from './model';
import { renderPanel } from './panel';
import { buildToolbar, el, legendItems } from './toolbar';

/** Blocks open, first to last and outer before inner, while at most this many boxes are drawn. */
export const EXPAND_BUDGET = 160;
const ZOOM_MIN = 0.02; // Fit shows a 500-layer model whole, as an overview
const ZOOM_MAX = 2.5;
let views = 0; // each view's arrow marker needs a document-wide unique id

export interface IGraphViewOptions {
  /** a "show quantizer nodes" box in the toolbar (the lab viewer has one for both of its tabs) */
  quantizerToggle?: boolean;
  /** told the name of the node selected in the graph ("" when none) */
  onSelect?: (name: string) => void;
  /** told when the toolbar's "quantizer nodes" box changes */
  onShowQuantizers?: (show: boolean) => void;
}

/** What identifies a model's structure: the same one keeps its blocks, layouts and expanded state. */
function structureOf(nodes: IGraphNode[]): string {
  return nodes
    .map(n => [n.name, n.op, n.quantizer ? 1 : 0, (n.inputs ?? []).join('\u0002'), (n.outputs ?? []).join('\u0002')].join('\u0001'))
    .join('\u0003');
}

export class GraphView {
  /** the element to mount */
  readonly node: HTMLDivElement;

  constructor(options: IGraphViewOptions = {}) {
    this._options = options;
    this._marker = `rnb-graph-arrow-${++views}`;
    this.node = el('div', 'rnb-graph');
    const toolbar = buildToolbar({
      step: direction => this._step(direction),
      expandAll: () => this.expandAll(),
      collapseAll: () => this.collapseAll(),
      zoom: factor => this._zoomBy(factor),
      fit: () => this._fit(true),
      showQuantizers: options.quantizerToggle
        ? show => {
            this.setShowQuantizers(show);
            this._options.onShowQuantizers?.(show);
          }
        : undefined
    });
    const bar = toolbar.bar;
    this._search = toolbar.search;
    this._found = toolbar.found;
    this._quantizerBox = toolbar.quantizers;
    this._legend = el('span', 'rnb-graph-legend');
    this._status = el('div', 'rnb-graph-status');
    this._status.setAttribute('role', 'status');
    const body = el('div', 'rnb-graph-body');
    this._viewport = el('div', 'rnb-graph-viewport');
    this._viewport.tabIndex = 0;
    this._viewport.setAttribute('aria-label', 'The model as a graph: click a node for its details, a block to open it');
    this._svg = svg('svg', 'rnb-graph-svg') as SVGSVGElement;
    this._viewport.append(this._svg);
    this._panel = el('div', 'rnb-graph-panel');
    this._panel.hidden = true;
    body.append(this._viewport, this._panel);
    this._tooltip = el('div', 'rnb-graph-tooltip');
    this._tooltip.hidden = true;
    this.node.append(bar, this._legend, this._status, body, this._tooltip);
    this.node.setAttribute('data-node-count', '0');
    this._listen();
  }

  /** Milliseconds the last layout took (dagre runs and placing; drawing not included). */
  get layoutMs(): number {
    return this._layoutMs;
  }

  /** The current scene (for the tests and the screenshots' reports). */
  get scene(): IScene | null {
    return this._scene;
  }

  /** The model to show. The same structure again (another target) keeps the blocks, layouts and view. */
  setData(nodes: IGraphNode[], facts?: IGraphFacts | null): void {
    if (facts !== undefined) {
      this._palette = palette(facts);
    }
    const structure = structureOf(nodes);
    this._nodes = nodes;
    this._links = tensorIndex(nodes);
    if (structure !== this._structure) {
      this._structure = structure;
      this._grouping = groupNodes(nodes);
      this._layout = new GraphLayout(this._grouping);
      this._edgesFor.clear();
      this._expanded = this._defaultExpanded();
      this._zoom = 0; // fit the width again on the next drawing
      this._selected = -1;
    }
    const selected = this._selected >= 0 ? nodes[this._selected]?.name : '';
    this._selected = selected ? nodes.findIndex(n => n.name === selected) : -1;
    this._updateMatches();
    this._requestRender();
  }

  setFacts(facts: IGraphFacts | null): void {
    this._palette = palette(facts);
    this._requestRender();
  }

  setShowQuantizers(show: boolean): void {
    if (show === this._showQuantizers) {
      return;
    }
    this._showQuantizers = show;
    if (this._quantizerBox) {
      this._quantizerBox.checked = show;
    }
    if (this._selected >= 0 && !isDrawn(this._nodes[this._selected], show)) {
      this._setSelected(-1);
    }
    this._updateMatches();
    this._requestRender();
  }

  /** Select a node by name ("" for none); ``reveal`` opens its blocks and scrolls it into view. */
  select(name: string, reveal = true): void {
    const index = name ? this._nodes.findIndex(n => n.name === name) : -1;
    if (index === this._selected && !reveal) {
      return;
    }
    this._selected = index >= 0 && isDrawn(this._nodes[index], this._showQuantizers) ? index : -1;
    this._renderPanel();
    if (reveal && this._selected >= 0) {
      if (this._visible) {
        this._reveal(this._selected);
      } else {
        this._revealLater = true; // a hidden viewport has no size to scroll in
      }
    } else {
      this._highlight();
    }
  }

  expandAll(): void {
    this._expanded = new Set(this._grouping ? [...this._grouping.byId.keys()].filter(id => id !== 'root') : []);
    this._requestRender();
  }

  collapseAll(): void {
    this._expanded = new Set();
    this._requestRender();
  }

  /** A hidden view (another tab) draws nothing until it is shown again. */
  setVisible(visible: boolean): void {
    this._visible = visible;
    if (!visible) {
      return;
    }
    if (this._dirty || !this._zoom) {
      this._render();
    }
    if (this._revealLater && this._selected >= 0) {
      this._reveal(this._selected);
    }
    this._revealLater = false;
  }

  dispose(): void {
    this._disposed = true;
    this._resize?.disconnect();
    window.removeEventListener('mousemove', this._onDrag);
    window.removeEventListener('mouseup', this._onDrop);
    this.node.remove();
  }

  // -- drawing -------------------------------------------------------------------------------------

  private _drawn(): boolean[] {
    return this._nodes.map(n => isDrawn(n, this._showQuantizers));
  }

  private _edges(drawn: boolean[]): Array<[number, number]> {
    const variant = this._showQuantizers ? 'q' : '-';
    let edges = this._edgesFor.get(variant);
    if (!edges) {
      edges = drawnEdges(this._nodes, drawn);
      this._edgesFor.set(variant, edges);
    }
    return edges;
  }

  /** Open blocks in order while the drawing stays within EXPAND_BUDGET boxes. */
  private _defaultExpanded(): Set<string> {
    const expanded = new Set<string>();
    if (!this._grouping) {
      return expanded;
    }
    const drawn = this._drawn();
    const boxes = (g: IGroup): number => g.leaves.filter(i => drawn[i]).length + g.groups.length;
    let shown = boxes(this._grouping.root);
    const queue = [...this._grouping.root.groups];
    while (queue.length) {
      const group = queue.shift() as IGroup;
      const more = boxes(group) - 1;
      if (shown + more <= EXPAND_BUDGET) {
        expanded.add(group.id);
        shown += more;
        queue.push(...group.groups);
      }
    }
    return expanded;
  }

  private _requestRender(): void {
    this._dirty = true;
    if (this._visible && !this._disposed) {
      this._render();
    }
  }

  private _render(): void {
    this._dirty = false;
    const grouping = this._grouping;
    if (!grouping || !this._layout) {
      return;
    }
    const drawn = this._drawn();
    const started = performance.now();
    const edges = this._edges(drawn);
    const scene = this._layout.scene(drawn, edges, this._expanded, this._showQuantizers ? 'q' : '-');
    this._layoutMs = Math.round(performance.now() - started);
    this._scene = scene;
    drawScene(this._svg, scene, { nodes: this._nodes, drawn, palette: this._palette, marker: this._marker });
    this.node.setAttribute('data-node-count', String(scene.nodes.length));
    this._status.textContent = statusLine(this._nodes, drawn, grouping, this._expanded, this._layoutMs, scene.runs);
    this.node.setAttribute('data-layout-ms', String(this._layoutMs));
    this._legend.replaceChildren(...legendItems(this._palette));
    this._renderPanel();
    if (!this._zoom) {
      this._fit(false);
    } else {
      this._applyZoom();
    }
    this._highlight();
  }

  private _renderPanel(): void {
    const index = this._selected;
    this._panel.hidden = index < 0;
    if (index < 0) {
      this._panel.replaceChildren();
      return;
    }
    renderPanel(this._panel, this._nodes, this._links, index, this._palette, {
      go: (target: number) => this._choose(target, true),
      close: () => this._choose(-1, false)
    });
  }

  // -- selection, search, highlight ------------------------------------------------------------------

  private _setSelected(index: number): void {
    this._selected = index;
    this._renderPanel();
    this._highlight();
  }

  /** A selection the user made here: tell the host. */
  private _choose(index: number, reveal: boolean): void {
    this._setSelected(index);
    if (reveal && index >= 0) {
      this._reveal(index);
    }
    this._options.onSelect?.(index >= 0 ? this._nodes[index].name : '');
  }

  private _reveal(index: number): void {
    const group = this._grouping?.groupOf[index];
    const closed = group ? ancestry(group).filter(g => !this._expanded.has(g.id)) : [];
    if (closed.length) {
      for (const g of closed) {
        this._expanded.add(g.id);
      }
      this._render();
    } else {
      this._highlight();
    }
    const box = this._scene?.boxes.get(nodeKey(index));
    if (box) {
      this._centre(box.x + box.w / 2, box.y + box.h / 2);
    }
  }

  private _updateMatches(): void {
    const query = this._search.value;
    this._matches = search(this._nodes, this._drawn(), query);
    this._matchAt = -1;
    this._found.textContent = query.trim() ? (this._matches.length ? `${this._matches.length} found` : 'none found') : '';
  }

  private _step(direction: number): void {
    if (!this._matches.length) {
      return;
    }
    this._matchAt = (this._matchAt + direction + this._matches.length) % this._matches.length;
    this._found.textContent = `${this._matchAt + 1} of ${this._matches.length}`;
    this._choose(this._matches[this._matchAt], true);
  }

  /** Selected node, its edges, and search matches (a closed block holding a match is marked too). */
  private _highlight(): void {
    const matched = new Set(this._matches);
    const groupsWithMatches = new Set<string>();
    for (const i of this._matches) {
      for (const g of this._grouping ? ancestry(this._grouping.groupOf[i]) : []) {
        groupsWithMatches.add(g.id);
      }
    }
    for (const e of Array.from(this._svg.querySelectorAll('.rnb-graph-node'))) {
      const index = Number(e.getAttribute('data-index'));
      e.classList.toggle('rnb-graph-selected', index === this._selected);
      e.classList.toggle('rnb-graph-match', matched.has(index));
    }
    for (const e of Array.from(this._svg.querySelectorAll('.rnb-graph-group'))) {
      e.classList.toggle('rnb-graph-match', groupsWithMatches.has(e.getAttribute('data-group') ?? ''));
    }
    const key = this._selected >= 0 ? nodeKey(this._selected) : '';
    for (const e of Array.from(this._svg.querySelectorAll('.rnb-graph-edge'))) {
      e.classList.toggle('rnb-graph-edge-hot', !!key && (e.getAttribute('data-from') === key || e.getAttribute('data-to') === key));
    }
  }

  // -- zoom and pan ------------------------------------------------------------------------------------

  private _applyZoom(): void {
    const scene = this._scene;
    if (!scene) {
      return;
    }
    this._svg.setAttribute('width', String(Math.round(scene.width * this._zoom)));
    this._svg.setAttribute('height', String(Math.round(scene.height * this._zoom)));
  }

  /** Zoom to the viewport's width (``all``: the whole graph), at most 1. */
  private _fit(all: boolean): void {
    const scene = this._scene;
    if (!scene) {
      return;
    }
    const width = this._viewport.clientWidth || 800;
    const height = this._viewport.clientHeight || 560;
    const zoom = Math.min(1, (width - 8) / scene.width, all ? (height - 8) / scene.height : 1);
    this._autoZoom = !all;
    this._fittedWidth = this._viewport.clientWidth;
    this._zoom = Math.max(ZOOM_MIN, zoom);
    this._applyZoom();
    this._viewport.scrollTop = 0;
    this._viewport.scrollLeft = Math.max(0, (scene.width * this._zoom - width) / 2);
  }

  private _zoomBy(factor: number, at?: Point): void {
    const v = this._viewport;
    const [px, py] = at ?? [v.clientWidth / 2, v.clientHeight / 2];
    const sx = (v.scrollLeft + px) / this._zoom;
    const sy = (v.scrollTop + py) / this._zoom;
    this._zoom = Math.min(ZOOM_MAX, Math.max(ZOOM_MIN, this._zoom * factor));
    this._autoZoom = false;
    this._applyZoom();
    v.scrollLeft = sx * this._zoom - px;
    v.scrollTop = sy * this._zoom - py;
  }

  private _centre(x: number, y: number): void {
    const v = this._viewport;
    v.scrollLeft = Math.max(0, x * this._zoom - v.clientWidth / 2);
    v.scrollTop = Math.max(0, y * this._zoom - v.clientHeight / 2);
  }

  // -- events ------------------------------------------------------------------------------------------

  private _listen(): void {
    this._search.addEventListener('input', () => {
      this._updateMatches();
      this._highlight();
    });
    this._search.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        event.preventDefault();
        this._step(event.shiftKey ? -1 : 1);
      } else if (event.key === 'Escape') {
        this._search.value = '';
        this._updateMatches();
        this._highlight();
      }
    });
    this._svg.addEventListener('click', event => {
      const target = event.target as Element;
      const node = target.closest('.rnb-graph-node');
      const group = target.closest('.rnb-graph-group');
      const cluster = target.closest('.rnb-graph-cluster-label, .rnb-graph-cluster-count');
      if (this._dragged) {
        return; // the end of a pan, not a click
      }
      if (node) {
        const index = Number(node.getAttribute('data-index'));
        this._choose(index === this._selected ? -1 : index, false);
      } else if (group) {
        this._toggle(group.getAttribute('data-group') ?? '', true);
      } else if (cluster) {
        this._toggle(cluster.closest('.rnb-graph-cluster')?.getAttribute('data-group') ?? '', false);
      }
    });
    this._svg.addEventListener('mousemove', event => this._hover(event));
    this._svg.addEventListener('mouseleave', () => {
      this._tooltip.hidden = true;
    });
    this._viewport.addEventListener('keydown', event => {
      if (event.key === 'Escape') {
        this._choose(-1, false);
      }
    });
    this._viewport.addEventListener(
      'wheel',
      event => {
        if (!(event.ctrlKey || event.metaKey)) {
          return; // a plain wheel scrolls, as everywhere in a notebook
        }
        event.preventDefault();
        const rect = this._viewport.getBoundingClientRect();
        this._zoomBy(Math.exp(-event.deltaY * 0.002), [event.clientX - rect.left, event.clientY - rect.top]);
      },
      { passive: false }
    );
    // drag the background to pan
    let from: [number, number, number, number] | null = null;
    this._viewport.addEventListener('mousedown', event => {
      if (event.button !== 0 || (event.target as Element).closest('.rnb-graph-node, .rnb-graph-group')) {
        return;
      }
      from = [event.clientX, event.clientY, this._viewport.scrollLeft, this._viewport.scrollTop];
      this._dragged = false;
    });
    this._onDrag = (event: MouseEvent) => {
      if (!from) {
        return;
      }
      const dx = event.clientX - from[0];
      const dy = event.clientY - from[1];
      if (Math.abs(dx) + Math.abs(dy) > 3) {
        this._dragged = true;
        this.node.classList.add('rnb-graph-panning');
      }
      this._viewport.scrollLeft = from[2] - dx;
      this._viewport.scrollTop = from[3] - dy;
    };
    this._onDrop = () => {
      if (!from) {
        return;
      }
      from = null;
      this.node.classList.remove('rnb-graph-panning');
      setTimeout(() => (this._dragged = false), 0); // the click that ends a drag is not a selection
    };
    // the first drawing may happen before the host gives the view a width: fit again once it has one
    if (typeof ResizeObserver === 'function') {
      this._resize = new ResizeObserver(() => {
        const width = this._viewport.clientWidth;
        if (this._autoZoom && this._scene && width > 0 && Math.abs(width - this._fittedWidth) > 40) {
          this._fit(false);
        }
      });
      this._resize.observe(this._viewport);
    }
    // on the window: a drag goes on when the pointer leaves the graph
    window.addEventListener('mousemove', this._onDrag);
    window.addEventListener('mouseup', this._onDrop);
  }

  private _toggle(id: string, open: boolean): void {
    if (!id) {
      return;
    }
    if (open) {
      this._expanded.add(id);
    } else {
      this._expanded.delete(id);
    }
    this._render();
    const box = this._scene?.boxes.get(`g:${id}`) ?? this._scene?.clusters.find(c => c.group.id === id)?.box;
    if (box) {
      this._centre(box.x + box.w / 2, box.y + Math.min(box.h / 2, 200));
    }
  }

  private _hover(event: MouseEvent): void {
    const target = event.target as Element;
    const node = target.closest('.rnb-graph-node');
    const group = target.closest('.rnb-graph-group, .rnb-graph-cluster');
    let lines: string[] = [];
    if (node) {
      lines = nodeTooltip(this._nodes[Number(node.getAttribute('data-index'))], this._palette);
    } else if (group && this._grouping) {
      const g = this._grouping.byId.get(group.getAttribute('data-group') ?? '');
      if (g) {
        lines = groupTooltip(g, this._nodes, this._drawn(), group.classList.contains('rnb-graph-group'));
      }
    }
    if (!lines.length) {
      this._tooltip.hidden = true;
      return;
    }
    this._tooltip.textContent = lines.join('\n');
    this._tooltip.hidden = false;
    const rect = this.node.getBoundingClientRect();
    const x = event.clientX - rect.left + 14;
    this._tooltip.style.left = `${Math.min(x, Math.max(0, rect.width - 340))}px`;
    this._tooltip.style.top = `${event.clientY - rect.top + 16}px`;
  }

  private readonly _options: IGraphViewOptions;
  private readonly _marker: string;
  private readonly _search: HTMLInputElement;
  private readonly _found: HTMLSpanElement;
  private readonly _legend: HTMLSpanElement;
  private readonly _status: HTMLDivElement;
  private readonly _viewport: HTMLDivElement;
  private readonly _svg: SVGSVGElement;
  private readonly _panel: HTMLDivElement;
  private readonly _tooltip: HTMLDivElement;
  private _quantizerBox: HTMLInputElement | null = null;
  private _nodes: IGraphNode[] = [];
  private _links: ReturnType<typeof tensorIndex> = { producer: new Map(), consumers: new Map() };
  private _palette: IPalette = palette(null);
  private _structure = '';
  private _grouping: IGrouping | null = null;
  private _layout: GraphLayout | null = null;
  private readonly _edgesFor = new Map<string, Array<[number, number]>>();
  private _expanded = new Set<string>();
  private _showQuantizers = false;
  private _scene: IScene | null = null;
  private _layoutMs = 0;
  private _zoom = 0;
  private _selected = -1;
  private _matches: number[] = [];
  private _matchAt = -1;
  private _visible = true;
  private _revealLater = false;
  private _autoZoom = true;
  private _fittedWidth = 0;
  private _resize: ResizeObserver | null = null;
  private _dirty = false;
  private _disposed = false;
  private _dragged = false;
  private _onDrag: (event: MouseEvent) => void = () => undefined;
  private _onDrop: () => void = () => undefined;
}

