"""``PartitionView``: where each node of a model runs on the NPU, as a graph and as a layer list.

Two tabs. **Graph**: the model laid out by a layered layout (dagre), each node filled with its
precision's colour and edged with its device's (dashed on the CPU), blocks of repeated layers that
collapse and open (from the node names, or the graph's structure when the names are flat), search
by name, zoom, and a side panel with the reason of every CPU node. **Table**: one row per node with
the same colours and reasons, a minimap of the whole model and a filter. A target dropdown
recompiles. The front end is ``partition_view.js`` (and ``.css``) beside this module: one ES module
for anywidget that loads nothing from the network, built from ``widgets/jupyterlab/partition_view``
and the graph view the JupyterLab viewer shares (``widgets/jupyterlab/src/graph``) by
``npm run build`` there; it works in JupyterLab 4, Notebook 7 and VS Code. The precisions, their
labels and colours, the device colours and the targets come from :func:`ryzen_nb.spec.facts`
through the ``facts`` trait: the front end types none of them.

>>> from ryzen_nb.ui.partition import PartitionView                     # doctest: +SKIP
>>> view = PartitionView("model_xint8.onnx", target="PHX")              # doctest: +SKIP
>>> view                                                                # doctest: +SKIP
>>> view.target = "STX"          # recompiles; the dropdown in the header does the same
>>> view.cpu_reasons()           # pandas DataFrame: the CPU operators and why
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anywidget
import onnx
import traitlets

from ryzen_nb import spec
from ryzen_nb.graph.io import ModelLike, load_model
from ryzen_nb.npu.compile import NPUProgram
from ryzen_nb.npu.compile import compile as npu_compile
from ryzen_nb.npu.partition import NodeAssignment
from ryzen_nb.spec.targets import DEFAULT_TARGET, Target, get_target
from ryzen_nb.ui._base import ErrorBox, asset, surfaces_errors

__all__ = ["PartitionView"]


class _BannerErrorBox(ErrorBox):
    """An :class:`ErrorBox` that also reports its message as plain text.

    An anywidget cannot hold ipywidgets children, so the box itself is never displayed inside
    :class:`PartitionView`: its text goes to the view's synced ``error`` trait, which the front end
    shows as a red banner. ``last_error`` keeps the exception for Python, as everywhere else.
    """

    def __init__(self, report: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._report = report

    def show(self, error: BaseException | str, context: str = "") -> None:
        super().show(error, context)
        kind = type(error).__name__ if isinstance(error, BaseException) else "Problem"
        where = f" ({context})" if context else ""
        self._report(f"{kind}{where}: {error}")

    def clear(self) -> None:
        super().clear()
        self._report("")


def _display_name_of(model: Any, proto: onnx.ModelProto) -> str:
    """What the header calls the model: its file name when it came from a file, else its graph name."""
    if isinstance(model, (str, Path)):
        return Path(model).name
    return proto.graph.name or "model"


def _node_dict(n: NodeAssignment) -> dict[str, Any]:
    """One node as the front end reads it (JSON-safe: the subgraph of a CPU node is None -> null)."""
    return {
        "index": n.index,
        "name": n.name,
        "op": f"{n.domain}:{n.op_type}" if n.domain else n.op_type,  # as NPUProgram.table() writes it
        "device": n.device,
        "precision": n.precision,
        "reason": n.reason,
        "subgraph": n.subgraph,
        "quantizer": bool(n.quantizer),
        "inputs": [t for t in n.inputs if t],  # "" marks an omitted optional input: nothing to show
        "outputs": [t for t in n.outputs if t],
    }


def _view_facts() -> dict[str, Any]:
    """What the front end needs of :func:`ryzen_nb.spec.facts`: the precisions (legend order, labels,
    colours), the device colours and the targets of the dropdown."""
    everything = spec.facts()
    return {key: everything[key] for key in ("precisions", "devices", "targets", "docs")}


def _summary(program: NPUProgram, model_name: str) -> dict[str, Any]:
    """The header's figures. Counts include quantizer nodes, as the Vitis AI EP's log counts them."""
    # the compilers that actually receive work, not every compiler the target has
    used = sorted({program.compilers[n.precision] for n in program.npu_nodes if n.precision in program.compilers})
    return {
        "model": model_name,
        "target": program.target.name,
        "target_label": program.target.label,
        "generation": program.target.generation,
        "compiler": ", ".join(used),
        "npu_ops": program.npu_operators,
        "cpu_ops": program.cpu_operators,
        "npu_share": round(100.0 * program.npu_share, 2),  # percent with two decimals, as the EP log prints it
        "subgraphs": len(program.subgraphs),
        "cpu_subgraphs": program.cpu_subgraph_count(),
        "precisions": program.precisions,
        "nodes": len(program.nodes),
    }


class PartitionView(anywidget.AnyWidget):
    """The NPU partition of a model: a graph and a layer list coloured by device and precision,
    with the reason for each CPU node, collapsible blocks, search, filters and a target dropdown.

    ``model_or_program`` is an :class:`~ryzen_nb.npu.compile.NPUProgram`, an ``onnx.ModelProto``
    or a path. ``target`` defaults to the program's own target, or ``"STX"`` (the default target of
    :mod:`ryzen_nb.spec.targets`) for a model;
    ``compile_options`` are passed to :func:`ryzen_nb.npu.compile` (e.g. ``compiler="X1"``) on
    every compilation, including the one a change of ``target`` triggers.

    >>> view = PartitionView(quantized_model, target="PHX")                 # doctest: +SKIP
    >>> view.summary["npu_share"], view.summary["compiler"]                  # doctest: +SKIP
    (96.55, 'X1')
    >>> view.target = "STX"; view.summary["compiler"]                        # doctest: +SKIP
    'X2'
    >>> view.target = "nope"; view.error                                     # doctest: +SKIP
    "UnknownNameError (changing the NPU target): Unknown NPU target 'nope'. ..."

    An error while recompiling leaves the previous partition (and ``target``) in place and shows
    the message in the widget's red banner (the ``error`` trait); ``errors.last_error`` keeps the
    exception.
    """

    _esm = asset("partition_view.js")
    _css = asset("partition_view.css")

    #: one dict per node: index, name, op, device, precision, reason, subgraph, quantizer, inputs, outputs
    nodes = traitlets.List(traitlets.Dict()).tag(sync=True)
    #: model, target, target_label, generation, compiler, npu_ops, cpu_ops, npu_share (percent),
    #: subgraphs, cpu_subgraphs, precisions ({precision: NPU operators}), nodes
    summary = traitlets.Dict().tag(sync=True)
    #: the short name of the compiled target (PHX, HPT, STX, KRK, STXH); setting it recompiles
    target = traitlets.Unicode(DEFAULT_TARGET).tag(sync=True)
    #: the facts the front end shows (from :func:`ryzen_nb.spec.facts`): ``precisions`` (name, label,
    #: colour, description... in legend order), ``devices`` (NPU and CPU colours), ``targets`` (the
    #: dropdown's choices) and ``docs``
    facts = traitlets.Dict().tag(sync=True)
    #: the name of the node clicked in the graph or the list ("" for none)
    selected = traitlets.Unicode("").tag(sync=True)
    #: the message of the last failed callback, shown as a red banner ("" for none)
    error = traitlets.Unicode("").tag(sync=True)

    def __init__(self, model_or_program: NPUProgram | ModelLike, target: str | Target | None = None,
                 **compile_options: Any) -> None:
        # Not a callback: bad arguments raise here, in the cell that creates the view.
        if isinstance(model_or_program, NPUProgram):
            program = model_or_program
            self._model = program.model
            name = _display_name_of(None, program.model)
            # the program does not record the options it was compiled with: recompile only when asked
            if compile_options or (target is not None and get_target(target).name != program.target.name):
                program = npu_compile(self._model, program.target if target is None else target, **compile_options)
        else:
            # parsed once: every recompilation (target changes) reuses this copy
            self._model = load_model(model_or_program)
            name = _display_name_of(model_or_program, self._model)
            program = npu_compile(self._model, DEFAULT_TARGET if target is None else target, **compile_options)
        self._display_name = name  # not _model_name: that trait names the widget class for the front end
        self._options = dict(compile_options)
        self._program = program
        self._quiet = True  # the initial trait values are not a user's change of target
        self.errors: ErrorBox = _BannerErrorBox(self._set_error)
        super().__init__(
            nodes=[_node_dict(n) for n in program.nodes],
            summary=_summary(program, name),
            target=program.target.name,
            facts=_view_facts(),
        )
        self._quiet = False

    # -- Python API --------------------------------------------------------------------------------
    @property
    def program(self) -> NPUProgram:
        """The :class:`~ryzen_nb.npu.compile.NPUProgram` on display (the last successful compilation)."""
        return self._program

    @property
    def selected_node(self) -> NodeAssignment | None:
        """The :class:`~ryzen_nb.npu.partition.NodeAssignment` of the selected row, if any."""
        return next((n for n in self._program.nodes if n.name == self.selected), None)

    def cpu_reasons(self) -> Any:
        """pandas DataFrame of the CPU operators and why (:meth:`NPUProgram.cpu_reasons`)."""
        return self._program.cpu_reasons()

    # -- callbacks ---------------------------------------------------------------------------------
    def _set_error(self, message: str) -> None:
        self.error = message

    @contextlib.contextmanager
    def _quietly(self) -> Iterator[None]:
        """Change traits without treating the change as a request to recompile."""
        self._quiet, before = True, self._quiet
        try:
            yield
        finally:
            self._quiet = before

    @traitlets.observe("target")
    def _target_observer(self, change: dict[str, Any]) -> None:
        # Deliberately a thin dispatcher, not decorated itself: the work (and every exception) is in
        # _change_target, which is. Decorating this one too would clear the error banner when the
        # failed change is reverted below (the revert notifies this observer again).
        if self._quiet:
            return
        self._change_target(change["new"], change["old"])

    @surfaces_errors("changing the NPU target")
    def _change_target(self, new: str, old: str) -> None:
        """Recompile for ``new`` (from Python or the dropdown); on failure put ``old`` back and raise."""
        try:
            target = get_target(new)
            program = self._program if target.name == self._program.target.name else (
                npu_compile(self._model, target, **self._options))
        except Exception:
            with self._quietly():
                self.target = old  # the dropdown shows what is still on display
            raise
        self._show(program, target.name)

    def _show(self, program: NPUProgram, target_name: str) -> None:
        self._program = program
        with self.hold_sync(), self._quietly():  # one message to the front end, not four
            self.nodes = [_node_dict(n) for n in program.nodes]
            self.summary = _summary(program, self._display_name)
            self.target = target_name  # an alias such as "strix" becomes "STX", which the dropdown lists
            if self.selected and self.selected_node is None:
                self.selected = ""

    def __repr__(self) -> str:
        return f"<PartitionView {self._display_name} on {self._program.target.name}: {self._program.summary()}>"
