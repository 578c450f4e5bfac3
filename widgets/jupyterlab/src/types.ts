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

/** One NPU target of ryzen_nb.spec.targets (the fields the viewer reads; the server sends them all). */
export interface ITargetInfo {
  name: string;
  label: string;
  generation: string;
  /** the precisions its NPU runs */
  precisions: string[];
  /** compiler per precision: X1, X2, VAIML */
  compilers: Record<string, string>;
}

/** One precision of the NPU partition (ryzen_nb.spec.precisions), as every view shows it. */
export interface IPrecisionInfo {
  name: string;
  label: string;
  colour: string;
  description: string;
  activations: string;
  weights: string;
  /** the precision the NPU computes it in, when another one (MX and FP32: BF16) */
  runs_as: string | null;
  /** the targets whose NPU runs it */
  targets: string[];
}

/** Where a node runs: NPU or CPU, with its colour. */
export interface IDeviceInfo {
  name: string;
  colour: string;
  description: string;
}

/** The NPU facts the server hands the front end (GET /ryzen-nb/facts = ryzen_nb.spec.facts()). */
export interface IFacts {
  /** in legend order */
  precisions: IPrecisionInfo[];
  devices: IDeviceInfo[];
  targets: ITargetInfo[];
  default_target: string;
}

export interface INodeInfo {
  name: string;
  op: string;
  device: 'NPU' | 'CPU';
  precision: string;
  reason: string;
  subgraph: number | null;
  quantizer: boolean;
  /** the tensors it reads and writes: the graph's edges */
  inputs?: string[];
  outputs?: string[];
}

export interface IPartition {
  target: string;
  ep_log: string;
  nodes: INodeInfo[];
  /** nodes on the NPU and the CPU, counted as the Vitis AI EP log counts them (quantizers included) */
  npu_operators: number;
  cpu_operators: number;
  /** percent of the model on the NPU, two decimals: NPUProgram.npu_share, as the EP log prints it */
  npu_share: number;
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
  /** the precision menu: "as-is", then the presets the server can quantize the file with */
  precisions: string[];
  target: string;
  precision: string;
  partition: IPartition | null;
  partition_error: string | null;
}
