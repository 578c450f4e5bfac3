"""The HTTP endpoints of the JupyterLab extension (see :mod:`ryzen_nb.jupyter`): thin tornado
handlers over :mod:`ryzen_nb.jupyter.service`, behind Jupyter server's authentication and XSRF
checks.

Paths are checked against the contents manager's rules: its root folder, and its hidden-file rule
(``allow_hidden``; the contents manager's own ``is_hidden`` is asked, and the path after symbolic
links is checked too). The .onnx viewer's analysis runs in worker processes
(:mod:`ryzen_nb.jupyter.analysis`), never on the event loop. Every failure, a bug included, is
answered with its HTTP status and ``{"error": "..."}`` written for a person.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from http.client import responses
from pathlib import Path
from typing import Any

import tornado
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import ensure_async, url_path_join

from ryzen_nb.errors import RyzenNBError
from ryzen_nb.jupyter import analysis, service
from ryzen_nb.spec.targets import DEFAULT_TARGET

__all__ = ["setup_handlers"]

#: what an error without a message of ours means to the person who sees it
_STATUS_HELP = {
    403: "Not allowed: this request is not logged in to Jupyter, or it lacks Jupyter's XSRF token. Reload the page.",
    404: "Not found.",
    405: "This endpoint does not take that HTTP method.",
}


class _Handler(APIHandler):
    @property
    def root(self) -> Path:
        """The folder the server serves: its contents manager's root (the allowed root)."""
        root = getattr(self.contents_manager, "root_dir", None) or self.settings.get("server_root_dir", ".")
        return Path(root).expanduser()

    @property
    def allow_hidden(self) -> bool:
        return bool(getattr(self.contents_manager, "allow_hidden", False))

    async def visible(self, path: str, what: str) -> None:
        """Refuse (404, as the contents API does) a hidden path unless the server allows hidden files."""
        if self.allow_hidden or not path.strip("/"):
            return
        try:
            hidden = await ensure_async(self.contents_manager.is_hidden(path.strip("/")))
        except Exception:  # noqa: BLE001 - outside the root or unreadable: the service's own checks answer
            return
        if hidden:
            raise service.ServiceError(f"The {what} {path!r} is hidden (it or a folder on its path starts with '.'); "
                                       "this Jupyter server does not serve hidden files "
                                       "(ContentsManager.allow_hidden is False).", 404)

    async def answer(self, work: Callable[[], Any | Awaitable[Any]]) -> None:
        """Run ``work()`` (awaited if it is a coroutine) and answer its result as JSON, or the
        error for a person with its status."""
        try:
            result = work()
            if isinstance(result, Awaitable):
                result = await result
        except service.ServiceError as exc:
            self.set_status(exc.status)
            result = {"error": str(exc)}
        except RyzenNBError as exc:
            self.set_status(400)
            result = {"error": f"{type(exc).__name__}: {exc}"}
        except Exception as exc:  # noqa: BLE001 - a bug: logged with its traceback, answered in words
            self.log.exception("ryzen-nb: %s %s failed", self.request.method, self.request.path)
            self.set_status(500)
            result = {"error": f"Internal error in ryzen-nb's server extension (a bug; the server log has the "
                               f"traceback): {type(exc).__name__}: {exc}"}
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(result))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Errors raised before :meth:`answer` (authentication, XSRF, a bad method) as the same
        JSON, with ``error`` for the front end."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = getattr(exc, "log_message", None) or ""
        text = _STATUS_HELP.get(status_code, responses.get(status_code, "Error"))
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": f"{text} ({message})" if message else text, "message": message or text}))

    def body(self) -> dict[str, Any]:
        try:
            data = json.loads(self.request.body or b"{}")
        except ValueError:
            raise service.ServiceError("The request body must be JSON.") from None
        if not isinstance(data, dict):
            raise service.ServiceError("The request body must be a JSON object.")
        return data


class TutorialsHandler(_Handler):
    @tornado.web.authenticated
    async def get(self) -> None:
        await self.answer(lambda: {"tutorials": [t.as_dict() for t in service.tutorials()]})


class CopyTutorialHandler(_Handler):
    @tornado.web.authenticated
    async def post(self, name: str) -> None:
        async def work() -> dict[str, str]:
            directory = str(self.body().get("directory", ""))
            await self.visible(directory, "folder")
            return service.copy_tutorial(name, self.root, directory, self.allow_hidden)

        await self.answer(work)


class FactsHandler(_Handler):
    @tornado.web.authenticated
    async def get(self) -> None:
        await self.answer(service.facts)


class OnnxHandler(_Handler):
    @tornado.web.authenticated
    async def get(self) -> None:
        path = self.get_query_argument("path", "")
        # without a choice (the viewer's first request) the server's defaults: the front end names none
        target = self.get_query_argument("target", DEFAULT_TARGET)
        precision = self.get_query_argument("precision", service.AS_IS)

        async def work() -> dict[str, Any]:
            await self.visible(path, "model")
            return await analysis.viewer_summary(self.root, path, target, precision, self.allow_hidden)

        await self.answer(work)


class QuantizeNotebookHandler(_Handler):
    @tornado.web.authenticated
    async def post(self) -> None:
        async def work() -> dict[str, str]:
            path = str(self.body().get("path", ""))
            await self.visible(path, "model")
            return service.quantize_notebook(self.root, path, self.allow_hidden)

        await self.answer(work)


def setup_handlers(web_app: Any) -> None:
    base = url_path_join(web_app.settings["base_url"], "ryzen-nb")
    web_app.add_handlers(".*$", [
        (url_path_join(base, "tutorials"), TutorialsHandler),
        (url_path_join(base, "tutorials", "([^/]+)", "copy"), CopyTutorialHandler),
        (url_path_join(base, "facts"), FactsHandler),
        (url_path_join(base, "onnx"), OnnxHandler),
        (url_path_join(base, "quantize-notebook"), QuantizeNotebookHandler),
    ])
