"""``python -m ryzen_nb.quark.tools.evaluate --baseline_results_folder A --quantized_results_folder B``:
compare the results of the float and the quantized model saved as files of the same names (.npy,
.png, .jpg), as Quark's tool — with :func:`ryzen_nb.evaluation.evaluate_folders`, which adds SQNR
and the largest difference to Quark's cosine, L2, PSNR and SSIM."""

import argparse
import sys
from collections.abc import Sequence

from ryzen_nb.evaluation.folders import evaluate_folders
from ryzen_nb.quark.tools import _cli


def main(argv: Sequence[str] | None = None) -> int:
    p = _cli.parser("evaluate", "Compare baseline and quantized results saved in two folders.")
    _cli.add_path(p, "baseline_results_folder", ["--baseline_results_folder"], "the float model's results")
    _cli.add_path(p, "quantized_results_folder", ["--quantized_results_folder"], "the quantized model's results")

    def evaluate(args: argparse.Namespace) -> None:
        print(evaluate_folders(args.baseline_results_folder, args.quantized_results_folder).report())

    return _cli.run(p, evaluate, argv, ("baseline_results_folder", "quantized_results_folder"))


if __name__ == "__main__":
    sys.exit(main())
