"""``python -m ryzen_nb.quark.tools.random_quantize --input_model_path IN --quantized_model_path OUT
[--config XINT8]``: quantize on random inputs, to try a model's speed or partition before real
calibration data is at hand (the ranges say nothing about real data), as Quark's tool."""

import argparse
import re
import sys
from collections.abc import Sequence

from ryzen_nb.errors import ConfigError
from ryzen_nb.quark.quantization.api import ModelQuantizer
from ryzen_nb.quark.quantization.config.presets import get_default_config
from ryzen_nb.quark.tools import _cli


def subgraphs(text: str) -> list[tuple[list[str], list[str]]]:
    """Quark's ``--exclude_subgraphs`` text, ``"[a,b],[c];[d],[e]"``: (start nodes, end nodes) pairs."""
    pairs = []
    for part in filter(None, (s.strip() for s in text.split(";"))):
        lists = re.findall(r"\[(.*?)\]", part)
        if len(lists) != 2:
            raise ConfigError(f"--exclude_subgraphs takes '[start nodes],[end nodes]' pairs separated by ';'; got {part!r}.")
        pairs.append(tuple([n.strip() for n in names.split(",") if n.strip()] for names in lists))
    return pairs  # type: ignore[return-value]


def main(argv: Sequence[str] | None = None) -> int:
    p = _cli.parser("random_quantize", "Quantize an ONNX model on random data.")
    _cli.add_path(p, "input_model_path", ["--input_model_path"], "the float model")
    _cli.add_path(p, "quantized_model_path", ["--quantized_model_path"], "where to write the quantized model")
    p.add_argument("--config", default="XINT8", help="a Quark preset name (default XINT8)")
    p.add_argument("--exclude_nodes", default="", help="node names to keep in float, separated by ';'")
    p.add_argument("--exclude_subgraphs", default="", help="'[start nodes],[end nodes]' pairs separated by ';'")
    p.add_argument("--save_as_external_data", action="store_true",
                   help="accepted: models above protobuf's 2 GiB limit are always saved with external data")

    def quantize(args: argparse.Namespace) -> None:
        qc = get_default_config(args.config)
        qc.extra_options["UseRandomData"] = True
        qc.nodes_to_exclude.extend(n.strip() for n in args.exclude_nodes.split(";") if n.strip())
        qc.subgraphs_to_exclude.extend(subgraphs(args.exclude_subgraphs))
        quantizer = ModelQuantizer(qc)
        quantizer.quantize_model(args.input_model_path, args.quantized_model_path, progress=False)
        print(f"Quantized {args.input_model_path} ({args.config}, random data): {args.quantized_model_path}")

    return _cli.run(p, quantize, argv, ("input_model_path", "quantized_model_path"))


if __name__ == "__main__":
    sys.exit(main())
