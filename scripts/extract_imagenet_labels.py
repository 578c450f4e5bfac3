"""Write ``ryzen_nb/zoo/data/imagenet_classes.txt``: the 1000 ImageNet-1k class names, one a line.

Development tool. The names are torchvision's short ImageNet category names (BSD-3-Clause),
read from ``torchvision/models/_meta.py`` inside the torchvision wheel; the wheel is only downloaded
(``pip download --no-deps``), never installed, and no torchvision code is run. Line ``i`` is the
name of class index ``i`` (the order every ImageNet classifier, and foolbox's file names, use).

    python scripts/extract_imagenet_labels.py
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

TORCHVISION = "torchvision==0.29.2"
OUT = Path(__file__).resolve().parents[1] / "ryzen_nb" / "zoo" / "data" / "imagenet_classes.txt"


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "-d",
                scratch,
                TORCHVISION,
            ],
            check=True,
        )
        (wheel,) = Path(scratch).glob("torchvision-*.whl")
        source = zipfile.ZipFile(wheel).read("torchvision/models/_meta.py").decode()
    names = None
    for node in ast.parse(source).body:  # read the literal without importing torchvision
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_IMAGENET_CATEGORIES":
            names = ast.literal_eval(node.value)
    assert names is not None and len(names) == 1000, "torchvision's _IMAGENET_CATEGORIES not found"
    OUT.write_text("\n".join(names) + "\n")
    print(f"wrote {len(names)} names to {OUT}")


if __name__ == "__main__":
    main()
