"""ryzen-nb inside JupyterLab: the server half of the JupyterLab extension.

After ``pip install ryzen-nb`` JupyterLab loads both halves with no further step: the prebuilt
front end (``share/jupyter/labextensions/ryzen-nb``, from the TypeScript in ``widgets/jupyterlab``)
and this server extension (enabled by ``etc/jupyter/jupyter_server_config.d/ryzen_nb.json``). The
front end calls these endpoints, under ``/ryzen-nb/``:

========================================  ==================================================================
``GET  tutorials``                        the tutorials shipped with ryzen-nb (number, title, what each teaches)
``POST tutorials/<name>/copy``            copy one into a folder of the user (``{"directory": "..."}``), never
                                          overwriting a copy the user changed; answers the path to open
``GET  facts``                            the NPU facts the viewer shows (:func:`ryzen_nb.spec.facts`): precisions
                                          with labels and colours, device colours, targets, the default target
``GET  onnx?path=..&target=..&precision``  an ONNX file's summary (inputs, outputs, op histogram, parameters,
                                          opset) and, for a target and precision, the NPU partition with the
                                          reason for every CPU operator, the latency estimate and the share
                                          of the model on the NPU (``NPUProgram.npu_share``)
``POST quantize-notebook``                a new notebook beside ``{"path": "model.onnx"}`` with the config builder
                                          for it; answers its path
========================================  ==================================================================

Errors (a missing file, not an ONNX model, a model too large with its external data, a hidden
file, a path outside the server's folder, a busy server (503), an analysis past its time limit
(504), a bug (500)) answer with an HTTP error status and ``{"error": "..."}`` written for a person,
which the front end shows. The viewer's analysis runs in worker processes
(:mod:`ryzen_nb.jupyter.analysis`, :mod:`ryzen_nb.jupyter.workers`), never on the server's event
loop: a large model does not hold up the rest of the server.
"""

from __future__ import annotations

from typing import Any

__all__ = ["_jupyter_labextension_paths", "_jupyter_server_extension_points", "_load_jupyter_server_extension"]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt front end is, for ``jupyter labextension develop`` (a wheel installs it as
    shared data instead)."""
    return [{"src": "labextension", "dest": "ryzen-nb"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "ryzen_nb.jupyter"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    # the handlers import jupyter_server and tornado: loaded when a Jupyter server loads the extension
    from ryzen_nb.jupyter.handlers import setup_handlers

    setup_handlers(serverapp.web_app)
    serverapp.log.info("ryzen-nb: server extension loaded (/ryzen-nb/)")
