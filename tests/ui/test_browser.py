"""The notebook widgets in a real browser: JupyterLab + headless Chromium, driven by Playwright.

The other UI tests drive the widgets from Python; this one checks what a user sees. It starts
JupyterLab on 127.0.0.1 (a free port, a random token, settings and runtime files in a temporary
folder, every feature that would reach the internet turned off), opens ``browser/widgets.ipynb``
(a copy), runs all cells and checks the DOM: the config builder, the calibration wizard, the
comparison dashboard with rendered plotly figures and the partition view, each clicked once to see
that it reacts (through the kernel where the widget's logic lives in Python). The browser console
must stay free of errors, and no request may leave the machine. Screenshots of the page and of
each widget go to ``tests/ui/screenshots/`` (git-ignored).

The browser is Debian's ``/usr/bin/chromium``, driven through ``executable_path``: Playwright's
own browser download is never used (these machines have no internet). Without Chromium or the
``playwright`` package the test is skipped, unless ``RYZEN_NB_REQUIRE_BROWSER=1`` (set by
``.ci/run``), which turns the skip into a failure so that a broken install cannot pass as a skip.

Run it alone::

    RYZEN_NB_REQUIRE_BROWSER=1 .venv/bin/python -m pytest -q tests/ui/test_browser.py -s
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

HERE = Path(__file__).resolve().parent
NOTEBOOK_DIR = HERE / "browser"
NOTEBOOK = "widgets.ipynb"
SCREENSHOTS = HERE / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")

#: Chromium flags for a closed network and a container: no sandbox (we run as root in CI), no GPU,
#: and none of the background traffic Chromium starts on its own (QUIC probes, component and
#: variations updates, sync, first-run pages) that would hang or log errors without internet.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

#: The whole test (server start, browser, run, checks, shutdown) must finish within this many
#: seconds; every wait below takes its timeout from what is left, so a hang fails with the name of
#: the step that hung instead of blocking CI. A normal run takes well under a minute.
DEADLINE_S = 240.0
#: the longest single wait for the browser (JupyterLab loading, the kernel starting, a widget rendering)
STEP_S = 45.0
#: running all cells: quantizing and comparing on 50 samples takes a few seconds, a cold kernel a few more
RUN_ALL_S = 150.0

#: Console errors proven harmless, as (regular expression, why it is harmless). Keep this minimal:
#: every other console error or uncaught page exception fails the test.
CONSOLE_ALLOWLIST: list[tuple[re.Pattern[str], str]] = []

#: The step buttons of CalibrationWizard (ryzen_nb.ui.wizard.STEPS, numbered as the widget shows them).
#: The wizard has no root CSS class, so the test finds it by these buttons.
WIZARD_STEPS = ["1. Source", "2. Preprocessing", "3. Mapping", "4. Preview", "5. Size"]

#: JupyterLab front-end settings (JUPYTERLAB_SETTINGS_DIR) that keep the page off the internet:
#: no news feed and no update check (both ask jupyterlab.github.io / pypi.org), and no extension
#: manager (it lists extensions from PyPI).
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                         "checkForUpdates": False},
    "@jupyterlab/extensionmanager-extension/plugin.jupyterlab-settings": {"enabled": False},
}


# -- skipping ---------------------------------------------------------------------------------------


def _missing(reason: str) -> None:
    """Skip, or fail when CI requires the browser test (a missing browser must not pass as a skip)."""
    if os.environ.get("RYZEN_NB_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}, and RYZEN_NB_REQUIRE_BROWSER=1 requires the browser test to run.", pytrace=False)
    pytest.skip(reason)


def _playwright() -> Any:
    try:
        from playwright import sync_api
    except ImportError:
        _missing("the browser test needs the 'playwright' package (pip install -e '.[test]')")
    if not CHROMIUM.is_file():
        _missing(f"the browser test needs Chromium at {CHROMIUM} (apt-get install chromium)")
    return sync_api


# -- the time budget --------------------------------------------------------------------------------


class Deadline:
    """The test's overall time budget; ``ms(cap)`` is the timeout for the next wait."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.start = time.monotonic()
        self.end = self.start + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def ms(self, cap: float = STEP_S) -> float:
        """Milliseconds to wait at most: ``cap`` seconds, never past the deadline."""
        left = self.left()
        if left <= 0:
            pytest.fail(f"the browser test exceeded its deadline of {self.seconds:.0f} s", pytrace=False)
        return 1000.0 * min(cap, left)


# -- JupyterLab -------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JupyterLab:
    """A JupyterLab server in a subprocess, with its own config, data, runtime and settings folders."""

    def __init__(self, tmp: Path, root: Path) -> None:
        self.tmp = tmp
        self.root = root
        self.port = _free_port()
        self.token = secrets.token_hex(24)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp / "jupyterlab.log"
        self.runtime_dir = tmp / "runtime"
        self.proc: subprocess.Popen[bytes] | None = None

    def _environment(self) -> dict[str, str]:
        """The server's environment: nothing read from (or written to) the user's Jupyter folders."""
        settings = self.tmp / "lab-settings"
        for name, values in LAB_SETTINGS.items():
            path = settings / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        env = dict(os.environ)
        env.update(
            JUPYTER_CONFIG_DIR=str(self.tmp / "config"),
            JUPYTER_DATA_DIR=str(self.tmp / "data"),  # labextensions and kernelspecs still come from sys.prefix
            JUPYTER_RUNTIME_DIR=str(self.runtime_dir),  # kernels' connection files: how leftovers are found
            JUPYTERLAB_SETTINGS_DIR=str(settings),
            JUPYTERLAB_WORKSPACES_DIR=str(self.tmp / "workspaces"),  # a fresh layout: just the notebook
            IPYTHONDIR=str(self.tmp / "ipython"),  # no user startup files in the kernel
            PYTHONUNBUFFERED="1",
        )
        return env

    def start(self, deadline: Deadline) -> None:
        command = [
            sys.executable, "-m", "jupyter", "lab", "--no-browser",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
            "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: run cells and read kernel state
            # nothing that reaches the internet: the news feed, the update check, PyPI extension listings
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-root")  # CI containers run as root; JupyterLab refuses without this
        self.log = self.log_path.open("wb")
        # its own session, so that teardown can signal the server's whole process group
        self.proc = subprocess.Popen(command, cwd=self.root, env=self._environment(), stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        limit = time.monotonic() + min(STEP_S, max(deadline.left(), 0))
        while time.monotonic() < limit:
            if self.proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with code {self.proc.returncode} before answering:\n{self.log_tail()}",
                            pytrace=False)
            with contextlib.suppress(OSError):
                if self.api("GET", "/api/status", timeout=2).get("started"):
                    return
            time.sleep(0.25)
        pytest.fail(f"JupyterLab did not answer /api/status within {STEP_S:.0f} s:\n{self.log_tail()}", pytrace=False)

    def api(self, method: str, path: str, timeout: float = 5) -> dict[str, Any]:
        request = urllib.request.Request(self.url + path, method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else {}

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no server log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Stop the server and its kernels: ask politely, then SIGTERM, then SIGKILL; then any kernel left."""
        if self.proc is not None and self.proc.poll() is None:
            # /api/shutdown shuts the kernels down before the server stops
            with contextlib.suppress(OSError, urllib.error.URLError):
                self.api("POST", "/api/shutdown", timeout=10)
            for sig, wait in ((None, 20), (signal.SIGTERM, 10), (signal.SIGKILL, 10)):
                if sig is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(self.proc.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=wait)
                    break
        if self.proc is not None:
            self.log.close()
        # Kernels run in sessions of their own (jupyter_client starts them so), out of reach of the
        # group signals above. Ours are the processes whose command line names our runtime folder.
        for pid in _processes_mentioning(str(self.runtime_dir)):
            warnings.warn(f"a kernel of the browser test outlived JupyterLab (pid {pid}); killing it", stacklevel=1)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _processes_mentioning(text: str) -> list[int]:
    """Pids of the processes whose command line contains ``text`` (Linux /proc; empty elsewhere)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if text in entry.read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                found.append(int(entry.parent.name))
    return [pid for pid in found if pid != os.getpid()]


@contextlib.contextmanager
def jupyterlab(tmp: Path, deadline: Deadline, root: Path | None = None) -> Iterator[JupyterLab]:
    """JupyterLab serving ``root`` (default: a copy of ``browser/``, so that the test's runs — autosave,
    checkpoints — never touch the repository), stopped with its kernels afterwards."""
    if root is None:
        root = tmp / "notebooks"
        shutil.copytree(NOTEBOOK_DIR, root)
    server = JupyterLab(tmp, root)
    try:
        server.start(deadline)
        yield server
    finally:
        server.stop()


# -- the browser ------------------------------------------------------------------------------------

# Page state the test polls, read through window.jupyterapp (exposed by --LabApp.expose_app_in_browser).
JS_KERNEL_IDLE = """() => {
  const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const kernel = panel && panel.sessionContext && panel.sessionContext.session
    && panel.sessionContext.session.kernel;
  return Boolean(kernel && kernel.status === "idle" && panel.context && panel.context.isReady);
}"""
# Starts "run all cells" without awaiting it (an awaited evaluate has no timeout); the outcome
# lands in window.__rnbRunAll: "true" when every cell ran without an error.
JS_RUN_ALL = """() => {
  window.__rnbRunAll = undefined;
  window.jupyterapp.commands.execute("notebook:run-all-cells").then(
    (ok) => { window.__rnbRunAll = String(ok); },
    (error) => { window.__rnbRunAll = "error: " + error; });
}"""
# The text of the error outputs (tracebacks) in the notebook, for the failure message.
JS_ERROR_OUTPUTS = """() => Array.from(document.querySelectorAll(
  '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')).map((e) => e.innerText)"""
# Visible plotly figures inside an element: [{title, width}] of each figure drawn on screen.
JS_VISIBLE_PLOTS = """(root) => Array.from(root.querySelectorAll(".js-plotly-plot"))
  .filter((plot) => plot.offsetParent !== null && plot.querySelector(".main-svg"))
  .map((plot) => ({title: (plot.querySelector(".gtitle") || {}).textContent || "",
                   width: plot.querySelector(".main-svg").getBoundingClientRect().width}))"""


class BrowserProblems:
    """What the page reported: console errors, uncaught exceptions, requests that tried to leave the machine."""

    def __init__(self, server_url: str) -> None:
        self.local_host = urlsplit(server_url).hostname
        self.console: list[str] = []
        self.external: list[str] = []

    def on_console(self, message: Any) -> None:
        if message.type == "error":
            where = message.location or {}
            self.console.append(f"console.error: {message.text} [{where.get('url', '?')}:{where.get('lineNumber', '?')}]")

    def on_page_error(self, error: Any) -> None:
        self.console.append(f"uncaught exception: {error.name}: {error.message}\n{error.stack or ''}".rstrip())

    def is_external(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https", "ws", "wss") and parts.hostname not in (self.local_host, "localhost")

    def block(self, route: Any) -> None:
        """Abort a request to another host (Chromium's flags should leave none; this catches the rest)."""
        self.external.append(route.request.url)
        route.abort()

    def unexplained_console_errors(self) -> list[str]:
        return [m for m in self.console if not any(pattern.search(m) for pattern, _ in CONSOLE_ALLOWLIST)]


def _shoot(target: Any, name: str) -> None:
    """Save a screenshot (of the page or of one element); a failing screenshot never fails the test."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(Exception):
        if hasattr(target, "goto"):  # a Page
            target.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
        else:
            target.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


class Browser:
    """The page under test, its time budget and what it reported; ``step`` names what is being waited for."""

    def __init__(self, page: Any, sync_api: Any, deadline: Deadline, problems: BrowserProblems) -> None:
        self.page = page
        self.expect = sync_api.expect
        self.timeout_error = sync_api.TimeoutError
        self.deadline = deadline
        self.problems = problems
        self.timings: list[tuple[str, float]] = []  # (step, seconds): printed at the end, for slow CI runs

    def ms(self, cap: float = STEP_S) -> float:
        return self.deadline.ms(cap)

    @contextlib.contextmanager
    def step(self, what: str) -> Iterator[None]:
        """A timeout or failed expectation inside fails the test naming the step, with a screenshot
        and the console errors so far (they usually say why a widget did not render)."""
        start = time.monotonic()
        failure = ""
        try:
            yield
        except (self.timeout_error, AssertionError) as exc:
            _shoot(self.page, "failure")
            console = "\n".join(self.problems.console) or "(none)"
            failure = (f"{what}: failed.\n{exc}\nscreenshot: {SCREENSHOTS / 'failure.png'}\n"
                       f"browser console errors so far:\n{console}")
        if failure:  # outside the except block: the report is this message, not a chain of two tracebacks
            pytest.fail(failure, pytrace=False)
        self.timings.append((what, time.monotonic() - start))


@contextlib.contextmanager
def browser_page(playwright: Any, sync_api: Any, server: JupyterLab, deadline: Deadline,
                 height: int = 1100) -> Iterator[Browser]:
    """Debian's Chromium on a fresh page that reports console errors and blocks requests leaving the machine."""
    problems = BrowserProblems(server.url)
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
                                         timeout=deadline.ms())
    try:
        context = browser.new_context(viewport={"width": 1400, "height": height})
        context.route(problems.is_external, problems.block)
        page = context.new_page()
        page.on("console", problems.on_console)
        page.on("pageerror", problems.on_page_error)
        yield Browser(page, sync_api, deadline, problems)
    finally:
        browser.close()


# -- the test ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_widgets_render_in_jupyterlab(tmp_path: Path) -> None:
    sync_api = _playwright()
    deadline = Deadline(DEADLINE_S)
    # the folder shows the last run only: no failure.png left over from an earlier one
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob("*.png"):
        if not old.name.startswith("lab_"):  # tests/lab's screenshots are that test's
            old.unlink()

    with jupyterlab(tmp_path, deadline) as server, sync_api.sync_playwright() as playwright:
        # a tall viewport: JupyterLab scrolls inside the notebook panel, so "full page" is the viewport
        with browser_page(playwright, sync_api, server, deadline, height=1100) as b:
            page, problems = b.page, b.problems

            with b.step("opening the notebook and starting its kernel"):
                page.goto(f"{server.url}/lab/tree/{NOTEBOOK}?token={server.token}", wait_until="domcontentloaded",
                          timeout=b.ms())
                page.wait_for_function(JS_KERNEL_IDLE, timeout=b.ms())

            with b.step("running all cells"):
                page.evaluate(JS_RUN_ALL)
                outcome = page.wait_for_function("() => window.__rnbRunAll", timeout=b.ms(RUN_ALL_S)).json_value()
                errors = "\n\n".join(page.evaluate(JS_ERROR_OUTPUTS))
                assert outcome == "true", f"a cell failed ({outcome}):\n{errors}"
                # the last cell's output: every widget above it has been displayed
                page.locator(".jp-OutputArea-output", has_text="rnb-notebook-done").wait_for(state="attached",
                                                                                          timeout=b.ms())
                page.wait_for_function(JS_KERNEL_IDLE, timeout=b.ms())

            _check_config_builder(b)
            _check_wizard(b)
            _check_dashboard(b)
            _check_partition_view(b)

            # the clicks' round trips through the kernel are over: nothing left to log errors
            with b.step("waiting for the kernel to be idle after the clicks"):
                page.wait_for_function(JS_KERNEL_IDLE, timeout=b.ms())
            _shoot(page, "page")
    print("\nbrowser test steps: " + ", ".join(f"{what} {seconds:.1f} s" for what, seconds in b.timings)
          + f"; {deadline.elapsed():.1f} s in all, server shutdown included")

    unexplained = problems.unexplained_console_errors()
    assert not unexplained, "the browser console reported errors:\n" + "\n".join(unexplained)
    assert not problems.external, "the page tried to reach other hosts:\n" + "\n".join(problems.external)
    assert deadline.left() > 0, f"the browser test took {deadline.elapsed():.0f} s, over its {DEADLINE_S:.0f} s budget"


def _check_config_builder(b: Browser) -> None:
    builder = b.page.locator(".rnb-config-builder")
    with b.step("the config builder rendered"):
        b.expect(builder).to_have_count(1, timeout=b.ms())
        b.expect(builder).to_be_visible(timeout=b.ms())
        b.expect(builder.get_by_text("Equivalent Python")).to_be_visible(timeout=b.ms())
        b.expect(builder).to_contain_text("get_default_config('XINT8')", timeout=b.ms())
    _shoot(builder, "config_builder")
    with b.step("the config builder's CLE checkbox changed the code preview"):
        # opening the accordion section is front-end only; the checkbox goes to the kernel and back
        builder.get_by_text("Accuracy recovery").click(timeout=b.ms())
        builder.get_by_role("checkbox", name="cross-layer equalization (CLE)").check(timeout=b.ms())
        b.expect(builder).to_contain_text("quant_config.include_cle = True", timeout=b.ms())
    _shoot(builder, "config_builder_cle")


def _check_wizard(b: Browser) -> None:
    # No root CSS class on CalibrationWizard: its output area is the one holding the step buttons.
    wizard = b.page.locator(".jp-OutputArea-output", has=b.page.get_by_role("button", name=WIZARD_STEPS[0]))
    with b.step("the calibration wizard rendered"):
        b.expect(wizard).to_have_count(1, timeout=b.ms())
        b.expect(wizard).to_be_visible(timeout=b.ms())
        b.expect(wizard).to_contain_text("Calibration data for", timeout=b.ms())
        for title in WIZARD_STEPS:
            b.expect(wizard.get_by_role("button", name=title)).to_be_visible(timeout=b.ms())
        b.expect(wizard).to_contain_text("Step 1 of 5", timeout=b.ms())
    _shoot(wizard, "wizard")
    with b.step("the wizard went to its Mapping step"):
        mapping = wizard.get_by_text("The model's inputs and what the first prepared sample gives")
        b.expect(mapping).to_be_hidden(timeout=b.ms())
        wizard.get_by_role("button", name="3. Mapping").click(timeout=b.ms())
        b.expect(wizard).to_contain_text("Step 3 of 5", timeout=b.ms())
        b.expect(mapping).to_be_visible(timeout=b.ms())
    _shoot(wizard, "wizard_mapping")


def _wait_for_plot(b: Browser, root: Any, title_start: str) -> None:
    """Wait until a plotly figure whose title starts so is drawn on screen with a real width (a
    figure first drawn in a hidden tab must still be resized when its tab is shown)."""
    b.page.wait_for_function(
        f"([root, title]) => ({JS_VISIBLE_PLOTS})(root).some((p) => p.title.startsWith(title) && p.width > 300)",
        arg=[root.element_handle(timeout=b.ms()), title_start], timeout=b.ms())


def _check_dashboard(b: Browser) -> None:
    dashboard = b.page.locator(".rnb-dashboard")
    with b.step("the dashboard rendered with its plotly figures"):
        b.expect(dashboard).to_have_count(1, timeout=b.ms())
        b.expect(dashboard).to_be_visible(timeout=b.ms())
        b.expect(dashboard.locator(".js-plotly-plot .main-svg").first).to_be_visible(timeout=b.ms())
        dashboard.scroll_into_view_if_needed(timeout=b.ms())
        _wait_for_plot(b, dashboard, "Task metric")
    _shoot(dashboard, "dashboard")
    with b.step("the dashboard's Fidelity tab showed its figure"):
        tab = dashboard.get_by_role("tab", name="Fidelity")
        tab.click(timeout=b.ms())
        b.expect(tab).to_have_attribute("aria-selected", "true", timeout=b.ms())
        _wait_for_plot(b, dashboard, "Output fidelity")
        plots = dashboard.evaluate(JS_VISIBLE_PLOTS)
        assert not any(p["title"].startswith("Task metric") for p in plots), f"Overview figures still shown: {plots}"
    _shoot(dashboard, "dashboard_fidelity")


def _check_partition_view(b: Browser) -> None:
    view = b.page.locator(".rnb-partition-view")
    with b.step("the partition view rendered its rows"):
        b.expect(view).to_have_count(1, timeout=b.ms())
        b.expect(view).to_be_visible(timeout=b.ms())
        b.expect(view).not_to_have_attribute("data-node-count", "0", timeout=b.ms())
        count = int(view.get_attribute("data-node-count", timeout=b.ms()) or 0)
        assert count > 0, f"data-node-count={count}"
        b.expect(view.locator(".rnb-pv-item").first).to_be_visible(timeout=b.ms())
        b.expect(view.locator(".rnb-pv-count-npu")).to_contain_text("NPU", timeout=b.ms())
    _shoot(view, "partition_view")
    with b.step("a click on a partition view row showed its details"):
        row = view.locator(".rnb-pv-item").first
        name = row.get_attribute("data-name", timeout=b.ms())
        assert name, "the first row has no data-name"
        row.click(timeout=b.ms())
        b.expect(view.locator(".rnb-pv-item.rnb-pv-selected")).to_have_count(1, timeout=b.ms())
        details = view.locator(".rnb-pv-details")
        b.expect(details).to_be_visible(timeout=b.ms())
        b.expect(details.locator(".rnb-pv-details-name")).to_have_text(name, timeout=b.ms())
    _shoot(view, "partition_view_selected")
