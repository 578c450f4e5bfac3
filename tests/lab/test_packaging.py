"""What ``pip install ryzen-nb`` puts on a machine: the wheel carries the prebuilt JupyterLab
extension as shared data, the config enabling the server extension, every tutorial for the
launcher and the anywidget front ends (beside their Python classes in ryzen_nb/ui); nothing of the
TypeScript toolchain."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_every_tutorial_is_packaged() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    listed = set(re.findall(r'^"notebooks/([^"]+\.ipynb)" = "ryzen_nb/_tutorials/\1"$', pyproject, flags=re.M))
    shipped = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert shipped == listed, (f"list every notebook under [tool.hatch.build.targets.wheel.force-include]: missing "
                               f"{sorted(shipped - listed)}, stale {sorted(listed - shipped)}")


@pytest.mark.slow
def test_wheel_carries_the_jupyterlab_extension(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = tmp_path.glob("ryzen_nb-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    data = next(n.split("/")[0] for n in names if ".data/" in n)
    lab = f"{data}/data/share/jupyter/labextensions/ryzen-nb"
    assert f"{lab}/package.json" in names and f"{lab}/install.json" in names
    assert any(re.fullmatch(rf"{re.escape(lab)}/static/remoteEntry\.[0-9a-f]+\.js", n) for n in names)
    assert f"{data}/data/etc/jupyter/jupyter_server_config.d/ryzen_nb.json" in names
    tutorials = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")} | {"README.md"}
    assert {f"ryzen_nb/_tutorials/{t}" for t in tutorials} <= names
    assert {"ryzen_nb/ui/partition_view.js", "ryzen_nb/ui/partition_view.css"} <= names
    assert not any(n.startswith("ryzen_nb/_static/") for n in names), "the front ends ship beside their classes"
    assert not any("node_modules" in n or n.endswith(".ts") for n in names)
