"""What the browser tests share: JupyterLab in a subprocess, Debian's Chromium driven by Playwright,
a time budget, a watch on the browser console, and the checks of what a user sees (text cut off,
widgets wider than their output, empty error boxes) at the window sizes people use.

The browser is Debian's ``/usr/bin/chromium``, driven through ``executable_path``: Playwright's own
browser download is never used (these machines have no internet). Without Chromium or the
``playwright`` package a browser test is skipped, unless ``RYZEN_NB_REQUIRE_BROWSER=1`` (set by
``.ci/run``), which turns the skip into a failure so that a broken install cannot pass as a skip.

Screenshots go to ``tests/ui/screenshots/`` (git-ignored), named by test: ``widgets_*``,
``tutorial_*``, ``lab_*``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
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
SCREENSHOTS = HERE / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")

#: the window sizes every view is checked and photographed at: a 13" laptop and a desktop monitor
VIEWPORTS = ((1280, 800), (1920, 1080))

#: Chromium flags for a closed network and a container: no sandbox (we run as root in CI), no GPU,
#: and none of the background traffic Chromium starts on its own (QUIC probes, component and
#: variations updates, sync, first-run pages) that would hang or log errors without internet.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

#: the longest single wait for the browser (JupyterLab loading, the kernel starting, a widget rendering)
STEP_S = 45.0

#: Console errors proven harmless, as (regular expression, why it is harmless). Keep this minimal:
#: every other console error or uncaught page exception fails the test.
CONSOLE_ALLOWLIST: list[tuple[re.Pattern[str], str]] = []

#: What ipywidgets logs when a widget message fails, at any console level (some are warnings): the
#: front end then shows stale or empty state (the wizard's histogram drawn empty, for one).
WIDGET_FAILURES = re.compile(r"Error setting state|Could not send widget sync message|Could not create a (view|model)"
                             r"|Error (creating|displaying) widget|Failed to (create|load) (view|model|widget)")

#: JupyterLab front-end settings (JUPYTERLAB_SETTINGS_DIR). No news feed and no update check (both ask
#: jupyterlab.github.io / pypi.org), no extension manager (it lists extensions from PyPI): nothing
#: leaves the machine. Notebooks render every cell (no windowing), so that the checks below measure
#: cells outside the window too; and no autosave, so that the runs never write a dialog-raising
#: "file changed on disk" race.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                         "checkForUpdates": False},
    "@jupyterlab/extensionmanager-extension/plugin.jupyterlab-settings": {"enabled": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


# -- skipping ---------------------------------------------------------------------------------------


def _missing(reason: str) -> None:
    """Skip, or fail when CI requires the browser test (a missing browser must not pass as a skip)."""
    if os.environ.get("RYZEN_NB_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}, and RYZEN_NB_REQUIRE_BROWSER=1 requires the browser test to run.", pytrace=False)
    pytest.skip(reason)


def playwright_api() -> Any:
    """``playwright.sync_api``, or a skip (a failure in CI) saying what is missing."""
    try:
        from playwright import sync_api
    except ImportError:
        _missing("the browser test needs the 'playwright' package (pip install -e '.[test]')")
    if not CHROMIUM.is_file():
        _missing(f"the browser test needs Chromium at {CHROMIUM} (apt-get install chromium)")
    return sync_api


# -- the time budget --------------------------------------------------------------------------------


class Deadline:
    """A test's overall time budget; ``ms(cap)`` is the timeout for the next wait."""

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
        # the tutorials' quick sizes, as nbval runs them (notebooks/conftest.py): the same steps, fewer samples
        env.setdefault("RYZEN_NB_QUICK", "1")
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

    def api(self, method: str, path: str, timeout: float = 5) -> Any:
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
def jupyterlab(tmp: Path, deadline: Deadline, root: Path) -> Iterator[JupyterLab]:
    """JupyterLab serving ``root`` (a temporary folder: the runs' autosaves and outputs never touch
    the repository), stopped with its kernels afterwards."""
    server = JupyterLab(tmp, root)
    try:
        server.start(deadline)
        yield server
    finally:
        server.stop()


# -- the browser ------------------------------------------------------------------------------------

# Page state the tests poll, read through window.jupyterapp (exposed by --LabApp.expose_app_in_browser).
JS_APP_READY = "() => Boolean(window.jupyterapp && window.jupyterapp.shell && document.querySelector('.jp-Launcher'))"
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
# The current notebook's errors, read from its model: every error output (a cell that raised) and
# every traceback printed on stderr (a logged exception), as "cell N: ..." lines.
JS_NOTEBOOK_ERRORS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const found = [];
  if (!panel || !panel.content || !panel.content.model) return ["no notebook in front"];
  const cells = panel.content.model.cells;
  for (let i = 0; i < cells.length; i++) {
    const cell = cells.get(i);
    if (cell.type !== "code") continue;
    for (let k = 0; k < cell.outputs.length; k++) {
      const out = cell.outputs.get(k).toJSON();
      if (out.output_type === "error") found.push(`cell ${i}: ${out.ename}: ${out.evalue}`);
      const text = Array.isArray(out.text) ? out.text.join("") : String(out.text || "");
      if (out.output_type === "stream" && out.name === "stderr" && text.includes("Traceback (most recent call last)")) {
        found.push(`cell ${i} printed a traceback:\n${text.slice(-1500)}`);
      }
    }
  }
  return found;
}"""
# Shuts the current notebook's kernel down and closes it without a "save changes?" dialog (the run
# changed its outputs): one kernel at a time keeps the memory of a run of every tutorial low.
JS_CLOSE_NOTEBOOK = """async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.sessionContext) return "no notebook";
  await panel.sessionContext.shutdown();
  panel.context.model.dirty = false;
  panel.dispose();
  return "closed";
}"""
# Visible plotly figures inside an element: [{title, width}] of each figure drawn on screen.
JS_VISIBLE_PLOTS = """(root) => Array.from(root.querySelectorAll(".js-plotly-plot"))
  .filter((plot) => plot.offsetParent !== null && plot.querySelector(".main-svg"))
  .map((plot) => ({title: (plot.querySelector(".gtitle") || {}).textContent || "",
                   width: plot.querySelector(".main-svg").getBoundingClientRect().width}))"""

# What a user would see as broken, measured in the DOM under every element `selector` matches:
#  * text cut off: a table cell or header, a button, a label, a tab title or a drop-down whose content
#    is wider than its box (ipywidgets cut labels and buttons with an ellipsis; a cell spills over);
#  * a widget wider than the notebook's output area (clipped, or a scroll bar under it);
#  * an error box that shows with nothing in it;
#  * a widget that failed to render ("Error displaying widget").
# Each problem comes back as one line naming the element and its text.
JS_LAYOUT_PROBLEMS = """(selector) => {
  const problems = [];
  const shown = (el) => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== "hidden";
  };
  const name = (el) => {
    const classes = typeof el.className === "string" ? el.className.trim().split(/\\s+/).filter(Boolean) : [];
    const text = (el.innerText || el.value || "").replace(/\\s+/g, " ").trim().slice(0, 70);
    return `<${el.tagName.toLowerCase()}${classes.length ? " ." + classes.slice(0, 3).join(".") : ""}> "${text}"`;
  };
  const canvas = document.createElement("canvas").getContext("2d");
  const textWidth = (text, style) => { canvas.font = style.font; return canvas.measureText(text).width; };
  const cut = "td, th, button, .widget-label, .widget-label-basic, .lm-TabBar-tabLabel, .widget-readout, "
    + ".widget-html-content, .widget-checkbox label, .widget-toggle-button";
  for (const root of document.querySelectorAll(selector)) {
    if (!shown(root)) continue;
    for (const el of root.querySelectorAll(cut)) {
      if (shown(el) && el.scrollWidth > el.clientWidth + 1) {
        problems.push(`text cut off (${el.scrollWidth}px in ${el.clientWidth}px): ${name(el)}`);
      }
    }
    for (const el of root.querySelectorAll("select:not([multiple])")) {
      const option = el.options[el.selectedIndex];
      if (!shown(el) || !option) continue;
      const style = getComputedStyle(el);
      const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 16; // the arrow
      const need = textWidth(option.text, style);
      if (need > room + 1) problems.push(`drop-down text cut off (${Math.round(need)}px in ${Math.round(room)}px): `
                                         + `"${option.text.slice(0, 70)}"`);
    }
    for (const out of root.querySelectorAll(".jp-OutputArea-output")) {
      const widget = out.matches(".js-plotly-plot") ? out : out.querySelector(".jupyter-widgets, [class*='rnb-']");
      if (widget && shown(out) && out.scrollWidth > out.clientWidth + 1) {
        problems.push(`widget wider than its output area (${out.scrollWidth}px in ${out.clientWidth}px): ${name(widget)}`);
      }
      if (/Error displaying widget|Error rendering output item/.test(out.innerText || "")) {
        problems.push(`a widget failed to render: ${name(out)}`);
      }
    }
    for (const el of root.querySelectorAll("[class*='error'], [class*='Error']")) {
      if (shown(el) && !(el.innerText || "").trim() && !el.querySelector("svg, img, canvas")) {
        problems.push(`an empty error box shows: ${name(el)} (${Math.round(el.getBoundingClientRect().height)}px high)`);
      }
    }
  }
  return problems;
}"""


class BrowserProblems:
    """What the page reported: console errors, widget failures, uncaught exceptions, requests that
    tried to leave the machine. ``mark()`` and ``since(mark)`` give what one step caused."""

    def __init__(self, server_url: str) -> None:
        self.local_host = urlsplit(server_url).hostname
        self.console: list[str] = []
        self.external: list[str] = []

    def on_console(self, message: Any) -> None:
        if message.type == "error" or WIDGET_FAILURES.search(message.text):
            where = message.location or {}
            self.console.append(f"console.{message.type}: {message.text} "
                                f"[{where.get('url', '?')}:{where.get('lineNumber', '?')}]")

    def on_page_error(self, error: Any) -> None:
        self.console.append(f"uncaught exception: {error.name}: {error.message}\n{error.stack or ''}".rstrip())

    def is_external(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https", "ws", "wss") and parts.hostname not in (self.local_host, "localhost")

    def block(self, route: Any) -> None:
        """Abort a request to another host (Chromium's flags should leave none; this catches the rest)."""
        self.external.append(route.request.url)
        route.abort()

    def mark(self) -> int:
        return len(self.console)

    def unexplained_console_errors(self, since: int = 0) -> list[str]:
        return [m for m in self.console[since:] if not any(pattern.search(m) for pattern, _ in CONSOLE_ALLOWLIST)]


def clear_screenshots(prefix: str) -> None:
    """Remove a test's screenshots of an earlier run (the folder shows the last run of each test)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob(f"{prefix}*.png"):
        old.unlink()


def shoot(target: Any, name: str) -> None:
    """Save a screenshot (of the page or of one element); a failing screenshot never fails the test."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(Exception):
        if hasattr(target, "goto"):  # a Page
            target.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
        else:
            target.screenshot(path=str(SCREENSHOTS / f"{name}.png"), timeout=10_000)


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
            shoot(self.page, "failure")
            console = "\n".join(self.problems.console) or "(none)"
            failure = (f"{what}: failed.\n{exc}\nscreenshot: {SCREENSHOTS / 'failure.png'}\n"
                       f"browser console errors so far:\n{console}")
        if failure:  # outside the except block: the report is this message, not a chain of two tracebacks
            pytest.fail(failure, pytrace=False)
        self.timings.append((what, time.monotonic() - start))

    def timing_report(self) -> str:
        return ", ".join(f"{what} {seconds:.1f} s" for what, seconds in self.timings)


@contextlib.contextmanager
def browser_page(playwright: Any, sync_api: Any, server: JupyterLab, deadline: Deadline,
                 viewport: tuple[int, int] = VIEWPORTS[0]) -> Iterator[Browser]:
    """Debian's Chromium on a fresh page that reports console errors and blocks requests leaving the machine."""
    problems = BrowserProblems(server.url)
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
                                         timeout=deadline.ms())
    try:
        context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        context.route(problems.is_external, problems.block)
        page = context.new_page()
        page.on("console", problems.on_console)
        page.on("pageerror", problems.on_page_error)
        yield Browser(page, sync_api, deadline, problems)
    finally:
        browser.close()


# -- what a user sees --------------------------------------------------------------------------------


def run_all_cells(b: Browser, seconds: float) -> None:
    """Run every cell of the notebook in front (JupyterLab's Run All) and wait for the kernel; fail
    with the notebook's tracebacks when a cell raised."""
    b.page.evaluate(JS_RUN_ALL)
    outcome = b.page.wait_for_function("() => window.__rnbRunAll", timeout=b.ms(seconds)).json_value()
    errors = "\n\n".join(b.page.evaluate(JS_NOTEBOOK_ERRORS))
    assert outcome == "true", f"Run All stopped at a failing cell ({outcome}):\n{errors}"
    assert not errors, f"the notebook shows errors:\n{errors}"
    b.page.wait_for_function(JS_KERNEL_IDLE, timeout=b.ms())


def layout_problems(b: Browser, selector: str) -> list[str]:
    """Text cut off, widgets wider than their output, empty error boxes and failed widgets under
    ``selector`` (see JS_LAYOUT_PROBLEMS)."""
    return b.page.evaluate(JS_LAYOUT_PROBLEMS, selector)


def check_views(b: Browser, selector: str, name: str, parts: str | None = None) -> list[str]:
    """At each of VIEWPORTS: measure ``selector`` for layout problems and photograph the page and
    each element ``parts`` matches (``{name}_{width}x{height}_page.png``, ``..._01.png``...). Returns
    the problems, each prefixed with the window size; the viewport is left at the first size."""
    found = []
    for width, height in VIEWPORTS:
        b.page.set_viewport_size({"width": width, "height": height})
        # JupyterLab and plotly lay out again on the resize event: give them a moment
        b.page.wait_for_timeout(600)
        found += [f"{width}x{height}: {p}" for p in layout_problems(b, selector)]
        shoot(b.page, f"{name}_{width}x{height}_page")
        if parts:
            elements = b.page.locator(parts).filter(visible=True).all()
            # JupyterLab scrolls inside its panels, not the page: an element taller than the window
            # would be photographed cut, so the window grows (in height only: widths stay) to hold it
            tallest = max([(e.bounding_box() or {}).get("height", 0) for e in elements], default=0)
            if tallest + 250 > height:
                b.page.set_viewport_size({"width": width, "height": min(int(tallest) + 250, 8000)})
                b.page.wait_for_timeout(300)
            for k, element in enumerate(elements, start=1):
                shoot(element, f"{name}_{width}x{height}_{k:02d}")
    b.page.set_viewport_size({"width": VIEWPORTS[0][0], "height": VIEWPORTS[0][1]})
    return found


#: the outputs worth a screenshot: a cell's own outputs (not those nested in an Output widget) holding a
#: widget, a plotly figure or one of ryzen-nb's views (JupyterLab's plotly renderer puts .js-plotly-plot
#: on the output element itself)
WIDGET_OUTPUTS = (".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell-outputArea > .jp-OutputArea-child > "
                  ".jp-OutputArea-output:is(.js-plotly-plot, :has(.jupyter-widgets, .js-plotly-plot, [class*='rnb-']))")
#: the outputs of the notebook in front: what the checks measure (JupyterLab's own toolbar is not ours)
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell-outputArea"
