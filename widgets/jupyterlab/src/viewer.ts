/**
 * The ONNX viewer: opening an .onnx file shows its summary and, for a chosen NPU target and
 * precision, the emulated partition and latency estimate computed by the server extension.
 * The file's bytes never travel to the browser (the model factory's fileFormat is null): the
 * server reads the model where it lies. The targets, precisions and their colours are the server's
 * facts (GET /ryzen-nb/facts); the first request names no target or precision, so the server's
 * defaults apply.
 */

import { ABCWidgetFactory, DocumentRegistry, DocumentWidget, TextModelFactory } from '@jupyterlab/docregistry';
import type { CommandRegistry } from '@lumino/commands';
import { Widget } from '@lumino/widgets';

import { getFacts, requestAPI } from './api';
import { ryzenIcon } from './icon';
import {
  deviceColourVariables,
  escapeHTML,
  precisionOptions,
  renderPartition,
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
    this.node.append(this._status, this._summaryNode, bar, this._partitionNode);

    target.onchange = () => void this.refresh();
    precision.onchange = () => void this.refresh();
    this._showQuantizers.onchange = () => this._renderPartition();
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
      this._partitionNode.innerHTML = '';
      this._showStatus('error', (error as Error).message);
    }
  }

  private _renderPartition(): void {
    const summary = this._summary;
    if (!summary) {
      return;
    }
    if (summary.partition_error) {
      this._partitionNode.innerHTML = `<div class="rnb-error" role="alert">${escapeHTML(summary.partition_error)}</div>`;
    } else if (summary.partition) {
      this._partitionNode.innerHTML = renderPartition(summary.partition, this._facts, this._showQuantizers.checked);
    }
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
