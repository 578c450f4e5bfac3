"""The front ends built in ``widgets/jupyterlab``: the JupyterLab extension (TypeScript) and the
PartitionView anywidget's module (``partition_view/`` with the graph view of ``src/graph/`` and dagre,
bundled by ``build-widget.mjs``). Their unit tests pass, and the prebuilt assets shipped in
``ryzen_nb/labextension`` and ``ryzen_nb/ui/partition_view.{js,css}`` are exactly what the sources
build to (from package-lock.json, with only the npm registry reachable). Needs Node.js and npm; skipped
without them unless ``RYZEN_NB_REQUIRE_BROWSER=1`` (set by ``.ci/run``) makes that a failure.

After changing the TypeScript, rebuild and commit the assets::

    cd widgets/jupyterlab && npm install && PATH=$PWD/../../.venv/bin:$PATH npm run build
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "widgets" / "jupyterlab"
BUILT = ROOT / "ryzen_nb" / "labextension"
#: the anywidget's front end, built beside its Python class (ryzen_nb/ui/partition.py)
WIDGET = ("ryzen_nb/ui/partition_view.js", "ryzen_nb/ui/partition_view.css")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the sources (outputDir ../../ryzen_nb/labextension lands in the copy) with npm ci done."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        if os.environ.get("RYZEN_NB_REQUIRE_BROWSER") == "1":
            pytest.fail("Node.js and npm are needed to test the JupyterLab extension's front end.", pytrace=False)
        pytest.skip("Node.js and npm are not installed")
    tmp = tmp_path_factory.mktemp("frontend")
    copy = tmp / "widgets" / "jupyterlab"
    shutil.copytree(SOURCES, copy, ignore=shutil.ignore_patterns("node_modules", "lib", "build-test",
                                                                 "tsconfig.tsbuildinfo"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    # npm install, not npm ci, so that a stale lock shows up as a difference: the committed lock is the complete
    # one npm 11 writes (every platform's optional @rspack/binding-* and the @emnapi packages its wasm build
    # needs), and installing from it must leave it byte for byte unchanged.
    lock = (copy / "package-lock.json").read_bytes()
    done = subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=copy, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"npm install failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert (copy / "package-lock.json").read_bytes() == lock, "npm install changed package-lock.json: commit the new lock"
    return copy


def _npm(workspace: Path, script: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run([shutil.which("npm") or "npm", "run", script], cwd=workspace, env=env, capture_output=True,
                          text=True, timeout=600)


def test_typescript_unit_tests_pass(workspace: Path) -> None:
    done = _npm(workspace, "test")
    assert done.returncode == 0, f"npm test failed:\n{done.stdout[-5000:]}\n{done.stderr[-3000:]}"
    assert "# fail 0" in done.stdout


def test_shipped_assets_are_what_the_sources_build_to(workspace: Path) -> None:
    done = _npm(workspace, "build")
    assert done.returncode == 0, f"npm run build failed:\n{done.stdout[-5000:]}\n{done.stderr[-3000:]}"
    rebuilt = workspace.parents[1] / "ryzen_nb" / "labextension"
    built_files = {p.relative_to(rebuilt).as_posix() for p in rebuilt.rglob("*") if p.is_file()}
    shipped_files = {p.relative_to(BUILT).as_posix() for p in BUILT.rglob("*") if p.is_file()}
    assert built_files == shipped_files, (
        f"rebuild the extension and commit ryzen_nb/labextension: only built {sorted(built_files - shipped_files)}, "
        f"only shipped {sorted(shipped_files - built_files)}")
    differing = [name for name in sorted(built_files) if (rebuilt / name).read_bytes() != (BUILT / name).read_bytes()]
    assert not differing, f"the shipped assets differ from a fresh build of the sources: {differing}"
    for name in WIDGET:
        fresh = workspace.parents[1] / name
        assert fresh.is_file(), f"npm run build wrote no {name}"
        assert fresh.read_bytes() == (ROOT / name).read_bytes(), (
            f"{name} differs from a fresh build of widgets/jupyterlab/partition_view: run npm run build and commit it")
