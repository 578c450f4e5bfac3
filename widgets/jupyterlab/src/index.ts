/**
 * ryzen-nb in JupyterLab 4:
 *  - a "Ryzen AI" launcher section with a card per tutorial (copied into the current folder, never
 *    over a copy the user changed, then opened);
 *  - an ONNX viewer for .onnx files (summary, NPU partition per target and precision, latency);
 *  - "Quantize with ryzen-nb…" in the command palette and the file browser's context menu.
 * The work is done by the server extension (ryzen_nb.jupyter), reached through ./api.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import {
  ICommandPalette,
  InputDialog,
  Notification,
  WidgetTracker,
  showErrorMessage
} from '@jupyterlab/apputils';
import { DocumentWidget } from '@jupyterlab/docregistry';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import type { ReadonlyJSONObject } from '@lumino/coreutils';

import { postJSON, requestAPI } from './api';
import { ryzenIcon } from './icon';
import { copyNotice } from './render';
import type { ICopyResult, ITutorial } from './types';
import {
  MODEL_FACTORY,
  OnnxModelFactory,
  OnnxViewer,
  OnnxViewerFactory,
  QUANTIZE_COMMAND,
  VIEWER_FACTORY
} from './viewer';

export const OPEN_TUTORIAL_COMMAND = 'ryzen-nb:open-tutorial';
export const CATEGORY = 'Ryzen AI';

function currentFolder(app: JupyterFrontEnd, browser: IDefaultFileBrowser | null): string {
  return browser ? app.serviceManager.contents.localPath(browser.model.path) : '';
}

function selectedOnnx(browser: IDefaultFileBrowser | null): string | null {
  if (!browser) {
    return null;
  }
  for (const item of browser.selectedItems()) {
    if (item.type === 'file' && item.path.toLowerCase().endsWith('.onnx')) {
      return item.path;
    }
  }
  return null;
}

async function pickOnnx(app: JupyterFrontEnd, browser: IDefaultFileBrowser | null): Promise<string | null> {
  const folder = currentFolder(app, browser);
  const listing = await app.serviceManager.contents.get(folder, { content: true });
  const models = ((listing.content ?? []) as Array<{ path: string; type: string }>)
    .filter(item => item.type === 'file' && item.path.toLowerCase().endsWith('.onnx'))
    .map(item => item.path);
  if (!models.length) {
    await showErrorMessage(
      'No ONNX model to quantize',
      `There is no .onnx file in ${folder ? `'${folder}'` : 'the top folder'}. Open the folder that holds ` +
        'your model in the file browser, or right-click the .onnx file and choose "Quantize with ryzen-nb…".'
    );
    return null;
  }
  const choice = await InputDialog.getItem({ title: 'Quantize which model?', items: models });
  return choice.button.accept ? choice.value : null;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'ryzen-nb:plugin',
  description: 'Ryzen AI tutorials in the launcher, an ONNX viewer with the emulated NPU partition, and quantization notebooks.',
  autoStart: true,
  optional: [ILauncher, ICommandPalette, IDefaultFileBrowser, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    launcher: ILauncher | null,
    palette: ICommandPalette | null,
    browser: IDefaultFileBrowser | null,
    restorer: ILayoutRestorer | null
  ) => {
    const { commands, docRegistry } = app;

    // -- the ONNX viewer ------------------------------------------------------------------------
    docRegistry.addFileType({
      name: 'onnx',
      displayName: 'ONNX model',
      extensions: ['.onnx'],
      mimeTypes: ['application/octet-stream'],
      contentType: 'file',
      fileFormat: null,
      icon: ryzenIcon
    });
    docRegistry.addModelFactory(new OnnxModelFactory());
    const factory = new OnnxViewerFactory(
      {
        name: VIEWER_FACTORY,
        label: 'ONNX viewer (ryzen-nb)',
        modelName: MODEL_FACTORY,
        fileTypes: ['onnx'],
        defaultFor: ['onnx'],
        readOnly: true
      },
      commands
    );
    docRegistry.addWidgetFactory(factory);
    const tracker = new WidgetTracker<DocumentWidget<OnnxViewer>>({ namespace: 'ryzen-nb-onnx' });
    factory.widgetCreated.connect((_, widget) => {
      widget.context.pathChanged.connect(() => void tracker.save(widget));
      void tracker.add(widget);
    });
    if (restorer) {
      void restorer.restore(tracker, {
        command: 'docmanager:open',
        args: widget => ({ path: widget.context.path, factory: VIEWER_FACTORY }),
        name: widget => widget.context.path
      });
    }

    // -- "Quantize with ryzen-nb…" -----------------------------------------------------------------
    commands.addCommand(QUANTIZE_COMMAND, {
      label: 'Quantize with ryzen-nb…',
      caption: 'A new notebook with the config builder and calibration wizard for an ONNX model',
      icon: ryzenIcon,
      execute: async args => {
        try {
          const path = (args.path as string | undefined) ?? selectedOnnx(browser) ?? (await pickOnnx(app, browser));
          if (!path) {
            return;
          }
          const local = app.serviceManager.contents.localPath(path);
          const result = await postJSON<{ path: string }>('quantize-notebook', { path: local });
          return commands.execute('docmanager:open', { path: result.path });
        } catch (error) {
          await showErrorMessage('Quantize with ryzen-nb', error as Error);
        }
      }
    });
    app.contextMenu.addItem({
      command: QUANTIZE_COMMAND,
      selector: '.jp-DirListing-item[data-file-type="onnx"]',
      rank: 3
    });
    palette?.addItem({ command: QUANTIZE_COMMAND, category: CATEGORY });

    // -- the tutorials ----------------------------------------------------------------------------
    commands.addCommand(OPEN_TUTORIAL_COMMAND, {
      label: args => (args.title ? `${args.number} · ${args.title}` : 'Open a ryzen-nb tutorial'),
      caption: args => (args.teaches as string) ?? '',
      icon: ryzenIcon,
      execute: async args => {
        const name = args.name as string;
        try {
          const result = await postJSON<ICopyResult>(`tutorials/${encodeURIComponent(name)}/copy`, {
            directory: currentFolder(app, browser)
          });
          const notice = copyNotice(result);
          if (notice) {
            Notification.info(notice, { autoClose: 10000 });
          }
          return commands.execute('docmanager:open', { path: result.path });
        } catch (error) {
          await showErrorMessage(`Open the tutorial ${name}`, error as Error);
        }
      }
    });
    requestAPI<{ tutorials: ITutorial[] }>('tutorials')
      .then(({ tutorials }) => {
        for (const tutorial of tutorials) {
          const args = { ...tutorial } as unknown as ReadonlyJSONObject;
          launcher?.add({ command: OPEN_TUTORIAL_COMMAND, category: CATEGORY, rank: tutorial.number, args });
          palette?.addItem({ command: OPEN_TUTORIAL_COMMAND, category: CATEGORY, args });
        }
      })
      .catch((error: Error) => {
        console.warn('ryzen-nb: no tutorials in the launcher:', error.message);
        Notification.warning(`ryzen-nb: the tutorials are unavailable. ${error.message}`, { autoClose: 15000 });
      });
  }
};

export default plugin;
