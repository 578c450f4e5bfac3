import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { errorMessage } from './render';
import type { IFacts } from './types';

/** A request to ryzen-nb's server extension failed; the message is written for a person. */
export class RyzenNBRequestError extends Error {
  constructor(
    message: string,
    readonly status: number
  ) {
    super(message);
    this.name = 'RyzenNBRequestError';
  }
}

/** Call ``/ryzen-nb/<endpoint>`` of the Jupyter server and answer its JSON. */
export async function requestAPI<T>(
  endpoint: string,
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const url = URLExt.join(settings.baseUrl, 'ryzen-nb', endpoint);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ServerConnection.NetworkError(error as TypeError);
  }
  const text = await response.text();
  let data: unknown = {};
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!response.ok) {
    throw new RyzenNBRequestError(errorMessage(response.status, data), response.status);
  }
  return data as T;
}

let factsRequest: Promise<IFacts> | null = null;

/**
 * The NPU facts (``GET /ryzen-nb/facts``): precisions with labels and colours, device colours,
 * targets. Asked once per page, since they change only with ryzen-nb itself; a failed request is
 * asked again the next time.
 */
export function getFacts(): Promise<IFacts> {
  if (!factsRequest) {
    factsRequest = requestAPI<IFacts>('facts').catch((error: unknown) => {
      factsRequest = null;
      throw error;
    });
  }
  return factsRequest;
}

export function postJSON<T>(endpoint: string, body: Record<string, unknown>): Promise<T> {
  return requestAPI<T>(endpoint, { method: 'POST', body: JSON.stringify(body) });
}
