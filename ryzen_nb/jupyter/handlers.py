"""The HTTP endpoints of the JupyterLab extension (see :mod:`ryzen_nb.jupyter`): thin tornado
handlers over :mod:`ryzen_nb.jupyter.service`, behind Jupyter server's authentication."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tornado
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from ryzen_nb.errors import RyzenNBError
from ryzen_nb.jupyter import service
from ryzen_nb.spec.targets import DEFAULT_TARGET

__all__ = ["setup_handlers"]


class _Handler(APIHandler):
    @property
    def root(self) -> Path:
        return Path(self.settings.get("server_root_dir", ".")).expanduser()

    def answer(self, work: Any) -> None:
        """Run ``work()`` and answer its result as JSON, or the error for a person with its status."""
        try:
            result = work()
        except service.ServiceError as exc:
            self.set_status(exc.status)
            result = {"error": str(exc)}
        except RyzenNBError as exc:
            self.set_status(400)
            result = {"error": f"{type(exc).__name__}: {exc}"}
        self.finish(json.dumps(result))

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
    def get(self) -> None:
        self.answer(lambda: {"tutorials": [t.as_dict() for t in service.tutorials()]})


class CopyTutorialHandler(_Handler):
    @tornado.web.authenticated
    def post(self, name: str) -> None:
        self.answer(lambda: service.copy_tutorial(name, self.root, str(self.body().get("directory", ""))))


class FactsHandler(_Handler):
    @tornado.web.authenticated
    def get(self) -> None:
        self.answer(service.facts)


class OnnxHandler(_Handler):
    @tornado.web.authenticated
    def get(self) -> None:
        path = self.get_query_argument("path", "")
        # without a choice (the viewer's first request) the server's defaults: the front end names none
        target = self.get_query_argument("target", DEFAULT_TARGET)
        precision = self.get_query_argument("precision", service.AS_IS)
        self.answer(lambda: service.onnx_summary(self.root, path, target, precision))


class QuantizeNotebookHandler(_Handler):
    @tornado.web.authenticated
    def post(self) -> None:
        self.answer(lambda: service.quantize_notebook(self.root, str(self.body().get("path", ""))))


def setup_handlers(web_app: Any) -> None:
    base = url_path_join(web_app.settings["base_url"], "ryzen-nb")
    web_app.add_handlers(".*$", [
        (url_path_join(base, "tutorials"), TutorialsHandler),
        (url_path_join(base, "tutorials", "([^/]+)", "copy"), CopyTutorialHandler),
        (url_path_join(base, "facts"), FactsHandler),
        (url_path_join(base, "onnx"), OnnxHandler),
        (url_path_join(base, "quantize-notebook"), QuantizeNotebookHandler),
    ])
