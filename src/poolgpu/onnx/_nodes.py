"""Whole ONNX nodes: :func:`run_node` and the op classes of :data:`OPS` for
``onnx.reference.ReferenceEvaluator``.  The only part of poolgpu that imports the onnx
package, and only when one of them is used."""

from __future__ import annotations

from collections.abc import Sequence as SequenceABC
from typing import Any, List, Optional, Sequence

from ..arguments import integer, integers, sequence
from ..device import Device
from ..errors import ValidationError
from ..tensor import Tensor
from ._operators import (average_pool, global_average_pool, global_lp_pool, global_max_pool, lp_pool, max_pool,
                         max_roi_pool, max_unpool)
from ._quantized import qlinear_average_pool, qlinear_global_average_pool
from ._roi_align import roi_align

#: ONNX's pooling op types, in the order of the contract; each maps to its function.
OP_TYPES = ("MaxPool", "AveragePool", "LpPool", "GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool", "MaxUnpool",
            "MaxRoiPool", "RoiAlign")
_FUNCTIONS = {"MaxPool": max_pool, "AveragePool": average_pool, "LpPool": lp_pool, "GlobalMaxPool": global_max_pool,
              "GlobalAveragePool": global_average_pool, "GlobalLpPool": global_lp_pool, "MaxUnpool": max_unpool,
              "MaxRoiPool": max_roi_pool, "RoiAlign": roi_align}
_DOMAINS = ("", "ai.onnx")

#: ONNX Runtime's quantized pooling op types (domain com.microsoft, opset 1), which the onnx
#: package has no schemas for: their functions (whose defaults are the attributes'), their
#: attributes, those required, and which of their inputs they require.
CONTRIB_DOMAIN = "com.microsoft"
_CONTRIB = {
    "QLinearAveragePool": (qlinear_average_pool, ("auto_pad", "ceil_mode", "channels_last", "count_include_pad",
                                                  "kernel_shape", "pads", "strides"), ("kernel_shape",),
                           (True, True, False, True, False)),
    "QLinearGlobalAveragePool": (qlinear_global_average_pool, ("channels_last",), (), (True, True, True, True, True)),
}
_INPUT_NAMES = ("X", "x_scale", "x_zero_point", "y_scale", "y_zero_point")


def _onnx():
    try:
        import onnx  # noqa: PLC0415 (poolgpu does not need onnx elsewhere)
        import onnx.defs  # noqa: PLC0415
    except ImportError as exc:
        raise ImportError("poolgpu.onnx's run_node and OPS read ONNX nodes with the onnx package: "
                          "pip install onnx") from exc
    return onnx


def _schema(onnx, op_type: str, opset: Optional[int]):
    """The operator's schema in force at ``opset`` (default: the newest the onnx package
    knows), its name for messages (``"AveragePool-11 (in force at opset 12)"``)."""
    if opset is None:
        opset = onnx.defs.onnx_opset_version()
    else:
        opset = integer(opset, "opset", minimum=1)
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        raise ValidationError("opset", f"{op_type} does not exist in opset {opset} of ONNX") from None
    return schema, f"{op_type}-{schema.since_version} (in force at opset {opset})"


def _attributes(onnx, node, schema, op: str) -> dict:
    """The node's attributes, checked against the schema (named ``op`` in messages), with
    the schema's defaults for those not given (bytes stay bytes: the functions take both)."""
    given = {}
    for attribute in node.attribute:
        if attribute.name not in schema.attributes:
            known = ", ".join(sorted(schema.attributes)) or "none"
            raise ValidationError(attribute.name, f"{op} has no attribute {attribute.name!r}; its attributes: {known}")
        if attribute.ref_attr_name:
            raise ValidationError(attribute.name, f"refers to the attribute {attribute.ref_attr_name!r} of an "
                                                  "enclosing function; run_node takes nodes with values")
        given[attribute.name] = onnx.helper.get_attribute_value(attribute)
    for name, spec in schema.attributes.items():
        if name in given:
            continue
        if spec.required:
            raise ValidationError(name, f"{op} needs the attribute {name!r}")
        if spec.default_value.type:  # 0: no default (e.g. pads, strides: the function's own)
            given[name] = onnx.helper.get_attribute_value(spec.default_value)
    return given


def run_node(node: Any, inputs: Sequence[Any], opset: Optional[int] = None,
             device: Optional[Device] = None) -> List[Any]:
    """Run one ONNX pooling node: its attributes, optional inputs and outputs, as ONNX
    Runtime and ``onnx.reference`` run it.

    Parameters
    ----------
    node : onnx.NodeProto
        A node of one of the op types MaxPool, AveragePool, LpPool, GlobalMaxPool,
        GlobalAveragePool, GlobalLpPool, MaxUnpool, MaxRoiPool, RoiAlign (domain "" or "ai.onnx"),
        or ONNX Runtime's QLinearAveragePool, QLinearGlobalAveragePool (domain
        "com.microsoft").
    inputs : sequence of array_like or Tensor
        One per name of ``node.input``, in order; an optional input (MaxUnpool's
        ``output_shape``, QLinearAveragePool's zero points) may be left out, or given as None
        where its name is empty.
    opset : int, optional
        The model's ONNX opset, which decides the attributes the node may have and their
        defaults; default None: the newest the onnx package knows.  (com.microsoft's
        operators have one version.)
    device : Device, optional
        Default: the first input's device, or the default device for arrays.

    Returns
    -------
    list
        One entry per name of ``node.output``: NumPy arrays for array inputs, Tensors for a
        Tensor; MaxPool's ``Indices`` as int64.  An output whose name is empty (left out)
        is None and not computed.

    Raises
    ------
    ValidationError
        Naming ``node`` (no NodeProto, or an op type that is no pooling op), ``inputs``,
        ``opset``, or an attribute (unknown, missing, or of a wrong value), before any GPU
        work.
    ImportError
        The onnx package is not installed.
    """
    onnx = _onnx()
    if not isinstance(node, onnx.NodeProto):
        raise ValidationError("node", f"expected an onnx.NodeProto, got {type(node).__name__}")
    if node.domain == CONTRIB_DOMAIN and node.op_type in _CONTRIB:
        return _run_contrib(onnx, node, inputs, device)
    if node.domain not in _DOMAINS or node.op_type not in _FUNCTIONS:
        name = f"{node.domain}::{node.op_type}" if node.domain else node.op_type
        raise ValidationError("node.op_type", f"{name} is no ONNX pooling operator; run_node takes "
                                              f"{', '.join(OP_TYPES)}, and ONNX Runtime's "
                                              f"{', '.join(f'{CONTRIB_DOMAIN}::{t}' for t in _CONTRIB)}")
    schema, op = _schema(onnx, node.op_type, opset)
    attributes = _attributes(onnx, node, schema, op)
    values = _node_inputs(node, inputs, schema.max_input, op)
    if len(values) < schema.min_input or any(v is None for v in values[:schema.min_input]):
        raise ValidationError("inputs", f"{node.op_type} needs its first {schema.min_input} inputs, got "
                                        f"{[type(v).__name__ for v in values]} for {list(node.input)}")
    if len(node.output) > schema.max_output:
        raise ValidationError("node.output", f"{op} has at most {schema.max_output} outputs, the node names "
                                             f"{len(node.output)}")
    wanted = [bool(name) for name in node.output]
    if node.op_type == "MaxPool":
        attributes["return_indices"] = len(wanted) > 1 and wanted[1]
    if node.op_type == "RoiAlign" and schema.since_version < 16:   # RoiAlign-10: output_half_pixel only
        attributes["coordinate_transformation_mode"] = "output_half_pixel"
    if node.op_type == "MaxUnpool":
        shape = values[2] if len(values) > 2 else None
        if shape is not None:
            shape = shape.numpy() if isinstance(shape, Tensor) else shape
            attributes["output_shape"] = integers(getattr(shape, "tolist", lambda: shape)(), "output_shape",
                                                  minimum=1, maximum=None)
        values = values[:2]
    results = _FUNCTIONS[node.op_type](*values, **attributes, device=device)
    results = list(results) if isinstance(results, tuple) else [results]
    return [results[i] if want and i < len(results) else None for i, want in enumerate(wanted)]


def _node_inputs(node, inputs: Sequence[Any], most: int, op: str) -> list:
    """The arrays of ``inputs``, one per name of ``node.input`` (of at most ``most``): those
    left out at the end, or named ``""``, None."""
    if len(node.input) > most:
        raise ValidationError("node.input", f"{op} takes at most {most} inputs, the node names {len(node.input)}")
    values = list(sequence(inputs, "inputs", "arrays"))
    if len(values) > len(node.input):
        raise ValidationError("inputs", f"the node names {len(node.input)} inputs {list(node.input)}, got "
                                        f"{len(values)} arrays")
    values += [None] * (len(node.input) - len(values))  # optional inputs left out
    return [value if name else None for name, value in zip(node.input, values)]


def _run_contrib(onnx, node, inputs: Sequence[Any], device: Optional[Device]) -> List[Any]:
    """run_node for ONNX Runtime's quantized pooling nodes (_CONTRIB)."""
    function, known, needed, required = _CONTRIB[node.op_type]
    op = f"{CONTRIB_DOMAIN}::{node.op_type}"
    attributes = {}
    for attribute in node.attribute:
        if attribute.name not in known:
            raise ValidationError(attribute.name, f"{op} has no attribute {attribute.name!r}; its attributes: "
                                                  f"{', '.join(sorted(known))}")
        attributes[attribute.name] = onnx.helper.get_attribute_value(attribute)
    for name in needed:
        if name not in attributes:
            raise ValidationError(name, f"{op} needs the attribute {name!r}")
    values = _node_inputs(node, inputs, len(required), op)
    values += [None] * (len(required) - len(values))
    missing = [name for name, value, must in zip(_INPUT_NAMES, values, required) if must and value is None]
    if missing:
        raise ValidationError("inputs", f"{op} needs its inputs {', '.join(missing)}, got "
                                        f"{[type(v).__name__ for v in values]} for {list(node.input)}")
    if len(node.output) > 1:
        raise ValidationError("node.output", f"{op} has one output, the node names {len(node.output)}")
    if node.output and not node.output[0]:
        return [None]
    return [function(*values, **attributes, device=device)]


class Ops(SequenceABC):
    """The op classes of every ONNX pooling op type for ``onnx.reference.ReferenceEvaluator``
    (``new_ops=pgo.OPS``), made on first use: only then is onnx imported."""

    def __init__(self) -> None:
        self._classes = None

    def _made(self) -> tuple:
        if self._classes is None:
            self._classes = tuple(_op_class(op_type) for op_type in OP_TYPES) + tuple(
                _op_class(op_type, CONTRIB_DOMAIN) for op_type in _CONTRIB)
        return self._classes

    def __getitem__(self, index):
        return self._made()[index]

    def __len__(self) -> int:
        return len(OP_TYPES) + len(_CONTRIB)

    def __repr__(self) -> str:
        contrib = ", ".join(f"{CONTRIB_DOMAIN}::{t}" for t in _CONTRIB)
        return f"poolgpu.onnx.OPS (onnx.reference op classes: {', '.join(OP_TYPES)}, {contrib})"


def _op_class(op_type: str, domain: str = "") -> type:
    """An ``onnx.reference.op_run.OpRun`` named ``op_type`` that runs the node on poolgpu."""
    _onnx()
    from onnx.reference.op_run import OpRun  # noqa: PLC0415

    def _run(self, *inputs, **attributes):
        # The node itself holds the attributes; the model's opset decides their defaults.
        opset = self.run_params.get("opsets", {}).get(self.onnx_node.domain or "")
        return tuple(run_node(self.onnx_node, list(inputs), opset=opset))

    name = f"{domain}::{op_type}" if domain else f"ONNX {op_type}"
    return type(op_type, (OpRun,), {
        "op_domain": domain, "_run": _run, "__module__": __name__,
        "__doc__": f"{name} on poolgpu, for onnx.reference.ReferenceEvaluator(..., new_ops=pgo.OPS).",
    })
