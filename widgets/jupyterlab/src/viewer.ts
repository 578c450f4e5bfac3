/**
 * The ONNX viewer: opening an .onnx file shows its summary and, for a chosen NPU target and
 * precision, the emulated partition and latency estimate computed by the server extension, with
 * the model as a graph (./graph, coloured by device and precision) and as a table, in two tabs.
 * The file's bytes never travel to the browser (the model factory's fileFormat is null): the
 * server reads the model where it lies. The targets, precisions and their colours are the server's
 * facts (GET /ryzen-nb/facts); the first request names no target or precision, so the server's
 * defaults apply.
 */

import { ABCWidgetFactory, DocumentRegistry, DocumentWidget, TextModelFactory } from '@jupyterlab/docregistry';
import type { CommandRegistry } from '@lumino/commands';
import { Widget } from '@lumino/widgets';

import { getFacts, requestAPI } from './api';
import { GraphView } from './graph/view';
import { ryzenIcon } from './icon';
import {
  deviceColourVariables,
  escapeHTML,
  precisionOptions,
  renderEpLog,
  renderNodeTable,
  renderPartitionHead,
  renderSummary,
  targetOptions
} from './render';
import type { IFacts, IOnnxSummary } from './types';

export const MODEL_FACTORY = 'ryzen-nb-onnx';
export const VIEWER_FACTORY = 'ryzen-nb ONNX viewer';
export const QUANTIZE_COMMAND = 'ryzen-nb:quantize';

/** A document model that loads no content: only the path matters to the viewer. */
export class OnnxModelFactory extends TextModelFactory {
  get name(): string {
    return MODEL_FACTORY;
  }
  get contentType(): 'file' {
    return 'file';
  }
  get fileFormat(): null {
    return null;
  }
}

function select(label: string, className: string): [HTMLLabelElement, HTMLSelectElement] {
  const wrapper = document.createElement('label');
  wrapper.className = 'rnb-control';
  wrapper.textContent = `${label} `;
  const element = document.createElement('select');
  element.className = className;
  wrapper.appendChild(element);
  return [wrapper, element];
}

function setOptions(element: HTMLSelectElement, options: Array<[string, string]>, value: string): void {
  element.innerHTML = options
    .map(([v, text]) => `<option value="${escapeHTML(v)}">${escapeHTML(text)}</option>`)
    .join('');
  element.value = options.some(([v]) => v === value) ? value : (options[0]?.[0] ?? '');
}

export class OnnxViewer extends Widget {
  constructor(
    private readonly _context: DocumentRegistry.Context,
    private readonly _commands: CommandRegistry
  ) {
    super();
    this.addClass('rnb-onnx-viewer');
    const bar = document.createElement('div');
    bar.className = 'rnb-controls';
    const [targetLabel, target] = select('NPU target', 'rnb-target');
    const [precisionLabel, precision] = select('precision', 'rnb-precision');
    this._target = target;
    this._precision = precision;
    // filled from the server's first answer: until then no choice is made here
    setOptions(target, [], '');
    setOptions(precision, [], '');
    const quantizers = document.createElement('label');
    quantizers.className = 'rnb-control';
    this._showQuantizers = document.createElement('input');
    this._showQuantizers.type = 'checkbox';
    quantizers.append(this._showQuantizers, ' show quantizer nodes');
    const quantize = document.createElement('button');
    quantize.className = 'jp-mod-styled jp-mod-accept rnb-quantize';
    quantize.textContent = 'Quantize with ryzen-nb…';
    quantize.onclick = () => void this._commands.execute(QUANTIZE_COMMAND, { path: this._context.localPath });
    bar.append(targetLabel, precisionLabel, quantizers, quantize);

    this._status = document.createElement('div');
    this._status.className = 'rnb-status';
    this._summaryNode = document.createElement('div');
    this._partitionNode = document.createElement('div');
    this._partitionNode.className = 'rnb-partition-panel';
    this._partitionHead = document.createElement('div');
    // the graph first (how people look at a model), the table second; only the shown one is drawn
    this._tabs = document.createElement('div');
    this._tabs.className = 'rnb-tabs';
    this._tabs.setAttribute('role', 'tablist');
    this._graphPanel = document.createElement('div');
    this._graphPanel.className = 'rnb-tab-panel rnb-graph-tab';
    this._graph = new GraphView();
    this._graphPanel.append(this._graph.node);
    this._tablePanel = document.createElement('div');
    this._tablePanel.className = 'rnb-tab-panel rnb-table-tab';
    for (const [name, label, panel] of [
      ['graph', 'Graph', this._graphPanel],
      ['table', 'Table', this._tablePanel]
    ] as const) {
      const tab = document.createElement('button');
      tab.type = 'button';
      tab.className = 'rnb-tab';
      tab.textContent = label;
      tab.dataset.tab = name;
      tab.setAttribute('role', 'tab');
      tab.onclick = () => this._showTab(name);
      panel.setAttribute('role', 'tabpanel');
      this._tabs.append(tab);
    }
    this._epLog = document.createElement('div');
    this._partitionNode.append(this._partitionHead, this._tabs, this._graphPanel, this._tablePanel, this._epLog);
    this._showTab('graph');
    this._partitionNode.hidden = true;
    this.node.append(this._status, this._summaryNode, bar, this._partitionNode);

    target.onchange = () => void this.refresh();
    precision.onchange = () => void this.refresh();
    this._showQuantizers.onchange = () => {
      this._graph.setShowQuantizers(this._showQuantizers.checked);
      this._renderPartition();
    };
    void this._context.ready.then(() => this.refresh());
    this._context.pathChanged.connect(() => void this.refresh());
  }

  /** The last answer of the server, if any. */
  get summary(): IOnnxSummary | null {
    return this._summary;
  }

  /** Ask the server for the summary and partition for the chosen target and precision. */
  async refresh(): Promise<void> {
    const request = ++this._requests;
    const query = new URLSearchParams({ path: this._context.localPath });
    if (this._target.value) {
      query.set('target', this._target.value);
    }
    if (this._precision.value) {
      query.set('precision', this._precision.value);
    }
    this._showStatus('busy', 'Compiling for the emulated NPU…');
    try {
      const [summary, facts] = await Promise.all([
        requestAPI<IOnnxSummary>(`onnx?${query.toString()}`),
        getFacts()
      ]);
      if (request !== this._requests || this.isDisposed) {
        return; // a newer choice of target or precision is on its way
      }
      this._summary = summary;
      this._facts = facts;
      for (const [name, colour] of deviceColourVariables(facts)) {
        this.node.style.setProperty(name, colour);
      }
      this._showStatus('', '');
      this._summaryNode.innerHTML = renderSummary(summary);
      setOptions(this._target, targetOptions(facts), summary.target);
      setOptions(this._precision, precisionOptions(summary.precisions, facts), summary.precision);
      this._renderPartition();
    } catch (error) {
      if (request !== this._requests || this.isDisposed) {
        return;
      }
      this._summary = null;
      this._summaryNode.innerHTML = '';
      this._partitionNode.hidden = true;
      this._showStatus('error', (error as Error).message);
    }
  }

  private _renderPartition(): void {
    const summary = this._summary;
    if (!summary) {
      return;
    }
    const partition = summary.partition;
    this._partitionNode.hidden = false;
    this._tabs.hidden = !partition;
    this._epLog.hidden = !partition;
    if (summary.partition_error || !partition) {
      const message = summary.partition_error ?? 'The server sent no partition.';
      this._partitionHead.innerHTML = `<div class="rnb-error" role="alert">${escapeHTML(message)}</div>`;
      this._showTab(this._tab);
      return;
    }
    this._partitionHead.innerHTML = renderPartitionHead(partition, this._facts);
    this._tablePanel.innerHTML = renderNodeTable(partition, this._facts, this._showQuantizers.checked);
    this._epLog.innerHTML = renderEpLog(partition);
    this._graph.setData(partition.nodes, this._facts);
    this._showTab(this._tab);
  }

  private _showTab(name: 'graph' | 'table'): void {
    this._tab = name;
    for (const tab of Array.from(this._tabs.children) as HTMLElement[]) {
      const on = tab.dataset.tab === name;
      tab.classList.toggle('rnb-tab-active', on);
      tab.setAttribute('aria-selected', on ? 'true' : 'false');
    }
    const shown = !!this._summary?.partition;
    this._graphPanel.hidden = !shown || name !== 'graph';
    this._tablePanel.hidden = !shown || name !== 'table';
    this._graph.setVisible(!this._graphPanel.hidden);
  }

  dispose(): void {
    this._graph.dispose();
    super.dispose();
  }

  private _showStatus(kind: '' | 'busy' | 'error', message: string): void {
    this._status.className = `rnb-status ${kind ? `rnb-${kind}` : ''}`;
    this._status.setAttribute('role', kind === 'error' ? 'alert' : 'status');
    this._status.textContent = message;
  }

  private _requests = 0;
  private _summary: IOnnxSummary | null = null;
  private _facts: IFacts | null = null;
  private readonly _target: HTMLSelectElement;
  private readonly _precision: HTMLSelectElement;
  private readonly _showQuantizers: HTMLInputElement;
  private readonly _status: HTMLDivElement;
  private readonly _summaryNode: HTMLDivElement;
  private readonly _partitionNode: HTMLDivElement;
  private readonly _partitionHead: HTMLDivElement;
  private readonly _tabs: HTMLDivElement;
  private readonly _graphPanel: HTMLDivElement;
  private readonly _tablePanel: HTMLDivElement;
  private readonly _epLog: HTMLDivElement;
  private readonly _graph: GraphView;
  private _tab: 'graph' | 'table' = 'graph';
}

export class OnnxViewerFactory extends ABCWidgetFactory<DocumentWidget<OnnxViewer>> {
  constructor(
    options: DocumentRegistry.IWidgetFactoryOptions<DocumentWidget<OnnxViewer>>,
    private readonly _commands: CommandRegistry
  ) {
    super(options);
  }

  protected createNewWidget(context: DocumentRegistry.Context): DocumentWidget<OnnxViewer> {
    const widget = new DocumentWidget({ content: new OnnxViewer(context, this._commands), context });
    widget.title.icon = ryzenIcon;
    return widget;
  }
}
