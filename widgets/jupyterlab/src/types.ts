/** The JSON the server extension answers (see ryzen_nb/jupyter/service.py). */

export interface ITutorial {
  /** file stem, e.g. "01_getting_started" */
  name: string;
  number: number;
  title: string;
  /** what the tutorial teaches, one line */
  teaches: string;
}

export interface ICopyResult {
  /** the copy, relative to the server's root */
  path: string;
  status: 'created' | 'unchanged' | 'kept-your-copy';
}

export interface ITensorInfo {
  name: string;
  shape: Array<number | string>;
  dtype: string;
}

export interface ITargetInfo {
  name: string;
  label: string;
  generation: string;
  precisions: string[];
}

export interface INodeInfo {
  name: string;
  op: string;
  device: 'NPU' | 'CPU';
  precision: string;
  reason: string;
  subgraph: number | null;
  quantizer: boolean;
}

export interface IPartition {
  target: string;
  ep_log: string;
  nodes: INodeInfo[];
  npu_operators: number;
  cpu_operators: number;
  npu_subgraphs: number;
  precisions: Record<string, number>;
  cpu_reasons: Array<Record<string, unknown>>;
  latency_ms: number;
  latency_breakdown_ms: Record<string, number>;
  latency_note: string;
}

export interface IOnnxSummary {
  file: string;
  size_mb: number;
  opset: number | null;
  ir_version: number;
  producer: string;
  inputs: ITensorInfo[];
  outputs: ITensorInfo[];
  operators: number;
  op_histogram: Record<string, number>;
  parameters: number;
  quantized: boolean;
  precisions: string[];
  targets: ITargetInfo[];
  target: string;
  precision: string;
  partition: IPartition | null;
  partition_error: string | null;
}
