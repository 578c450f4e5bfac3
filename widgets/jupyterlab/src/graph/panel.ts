/**
 * The graph's side panel: the selected node's op, name, device and precision (coloured from the
 * facts), its NPU subgraph or why it stays on the CPU, and its inputs and outputs with links to the
 * nodes that produce and consume them.
 */

import { IGraphNode, IPalette, textOn } from './model';

export interface IPanelActions {
  /** select and show another node */
  go: (index: number) => void;
  close: () => void;
}

/** Links per tensor shown at most (a tensor read by 200 nodes would fill the panel). */
const MAX_LINKS = 8;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = className;
  if (text !== undefined) {
    e.textContent = text;
  }
  return e;
}

function chip(text: string, colour: string, title: string): HTMLSpanElement {
  const c = el('span', 'rnb-graph-chip', text);
  if (colour) {
    c.style.background = colour;
    c.style.borderColor = colour;
    c.style.color = textOn(colour);
  }
  c.title = title;
  return c;
}

/** Fill ``panel`` with node ``index``'s details. */
export function renderPanel(
  panel: HTMLElement,
  nodes: IGraphNode[],
  links: { producer: Map<string, number>; consumers: Map<string, number[]> },
  index: number,
  palette: IPalette,
  actions: IPanelActions
): void {
  const node = nodes[index];
  const head = el('div', 'rnb-graph-panel-head');
  const close = el('button', 'rnb-graph-panel-close', '×');
  close.type = 'button';
  close.title = 'Close (Esc)';
  close.addEventListener('click', actions.close);
  head.append(el('b', 'rnb-graph-panel-op', node.op), close);
  const name = el('div', 'rnb-graph-panel-name', node.name);
  const chips = el('div', 'rnb-graph-panel-chips');
  const precision = palette.precision.get(node.precision);
  chips.append(
    chip(node.device, palette.device.get(node.device) ?? '', node.device === 'NPU' ? 'runs on the NPU' : 'stays on the CPU'),
    chip(node.precision || '–', precision?.colour ?? '', precision ? `${precision.label}. ${precision.description}` : '')
  );
  const where = el(
    'div',
    node.device === 'NPU' ? 'rnb-graph-panel-where' : 'rnb-graph-panel-where rnb-graph-panel-reason',
    node.device === 'NPU'
      ? `Runs on the NPU, in subgraph ${node.subgraph ?? '–'}${node.quantizer ? ' (a quantizer)' : ''}.`
      : `Why on the CPU: ${node.reason || 'no reason recorded'}`
  );
  const link = (target: number): HTMLButtonElement => {
    const other = nodes[target];
    const b = el('button', 'rnb-graph-panel-link', `${other.op} ${other.name}`);
    b.type = 'button';
    b.title = `${other.device}${other.device === 'NPU' ? '' : `: ${other.reason}`}`;
    b.addEventListener('click', () => actions.go(target));
    return b;
  };
  const tensors = (label: string, names: string[], linked: (t: string) => number[]): HTMLElement => {
    const block = el('div', 'rnb-graph-panel-tensors');
    block.append(el('div', 'rnb-graph-panel-label', label));
    const list = el('ul', 'rnb-graph-panel-list');
    if (!names.length) {
      list.append(el('li', 'rnb-graph-panel-muted', 'none'));
    }
    for (const t of names) {
      const item = el('li', '');
      item.append(el('code', 'rnb-graph-panel-tensor', t));
      const targets = linked(t);
      for (const target of targets.slice(0, MAX_LINKS)) {
        item.append(link(target));
      }
      if (targets.length > MAX_LINKS) {
        item.append(el('span', 'rnb-graph-panel-muted', `and ${targets.length - MAX_LINKS} more`));
      }
      list.append(item);
    }
    block.append(list);
    return block;
  };
  const producerOf = (t: string): number[] => {
    const p = links.producer.get(t);
    return p === undefined ? [] : [p];
  };
  panel.replaceChildren(
    head,
    name,
    chips,
    where,
    tensors('inputs ← from', (node.inputs ?? []).filter(Boolean), producerOf),
    tensors('outputs → to', (node.outputs ?? []).filter(Boolean), t => links.consumers.get(t) ?? [])
  );
}
