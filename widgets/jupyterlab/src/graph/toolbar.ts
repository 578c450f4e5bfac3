/** The graph view's toolbar: search with previous/next, expand and collapse all, zoom, fit, and
 * (when the host has none of its own) the "quantizer nodes" box; and the devices' legend. */

import { IPalette } from './model';

export interface IToolbarActions {
  step: (direction: number) => void;
  expandAll: () => void;
  collapseAll: () => void;
  zoom: (factor: number) => void;
  fit: () => void;
  /** given: the toolbar has a "quantizer nodes" box that calls it */
  showQuantizers?: (show: boolean) => void;
}

export interface IToolbar {
  bar: HTMLDivElement;
  search: HTMLInputElement;
  found: HTMLSpanElement;
  quantizers: HTMLInputElement | null;
}

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = className;
  if (text !== undefined) {
    e.textContent = text;
  }
  return e;
}

export function buildToolbar(actions: IToolbarActions): IToolbar {
  const bar = el('div', 'rnb-graph-toolbar');
  const search = el('input', 'rnb-graph-search');
  search.type = 'search';
  search.placeholder = 'Find: name, op, precision, reason';
  search.setAttribute('aria-label', 'Find nodes in the graph');
  const found = el('span', 'rnb-graph-found');
  const button = (cls: string, label: string, title: string, action: () => void): HTMLButtonElement => {
    const b = el('button', `rnb-graph-button ${cls}`, label);
    b.type = 'button';
    b.title = title;
    b.setAttribute('aria-label', title);
    b.addEventListener('click', action);
    return b;
  };
  bar.append(
    search,
    button('rnb-graph-prev', '↑', 'Previous match (Shift+Enter)', () => actions.step(-1)),
    button('rnb-graph-next', '↓', 'Next match (Enter)', () => actions.step(1)),
    found,
    button('rnb-graph-expand', 'Expand all', 'Open every block', actions.expandAll),
    button('rnb-graph-collapse', 'Collapse all', 'Close every block', actions.collapseAll),
    button('rnb-graph-zoom-out', '−', 'Zoom out (or Ctrl+wheel)', () => actions.zoom(1 / 1.25)),
    button('rnb-graph-zoom-in', '+', 'Zoom in (or Ctrl+wheel)', () => actions.zoom(1.25)),
    button('rnb-graph-fit', 'Fit', 'Show the whole graph', actions.fit)
  );
  let quantizers: HTMLInputElement | null = null;
  const show = actions.showQuantizers;
  if (show) {
    const label = el('label', 'rnb-graph-toggle');
    const box = el('input', 'rnb-graph-show-quantizers');
    box.type = 'checkbox';
    box.addEventListener('change', () => show(box.checked));
    label.append(box, ' quantizer nodes');
    bar.append(label);
    quantizers = box;
  }
  return { bar, search, found, quantizers };
}

/** How the graph shows each device (its colour from the facts): a stripe and an edge, dashed on the CPU. */
export function legendItems(palette: IPalette): HTMLElement[] {
  const items: HTMLElement[] = [];
  for (const [name, colour] of palette.device) {
    const item = el('span', `rnb-graph-legend-item rnb-graph-legend-${name.toLowerCase()}`);
    const swatch = el('span', 'rnb-graph-legend-swatch');
    if (colour) {
      swatch.style.borderColor = colour;
    }
    item.append(swatch, name === 'NPU' ? 'on the NPU' : name === 'CPU' ? 'on the CPU (dashed)' : name);
    items.push(item);
  }
  if (items.length) {
    items.push(el('span', 'rnb-graph-legend-note', 'box colour: precision'));
  }
  return items;
}
