"""ONNX models of the bench's operators, built in memory with onnx.helper (in the bench's
process; the ONNX Runtime peers only load the bytes)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from .peer_base import Unsupported

OPSET = 18  # the newest opset whose AveragePool the WebGPU provider has (1.27); MaxPool dilations since 10
_ELEMENT = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "uint32": TensorProto.UINT32,
            "int64": TensorProto.INT64, "uint8": TensorProto.UINT8}
CONTRIB = "com.microsoft"  # ONNX Runtime's own operators (QLinearAveragePool)


def onnx_inputs(inputs: dict) -> dict:
    """The arrays as the model takes them: ONNX indices are int64, ROI boxes (R, 5), the
    scales and zero points of QLinearAveragePool scalars."""
    feeds = dict(inputs)
    for name in ("xs", "xz", "ys", "yz"):
        if name in feeds:
            feeds[name] = feeds[name].reshape(())
    if "idx" in feeds:
        feeds["idx"] = feeds["idx"].astype(np.int64)
    if "rois" in feeds:
        feeds["rois"] = feeds["rois"].reshape(-1, 5)
    return feeds


def _model(nodes, inputs: dict, outputs: dict, initializers=()) -> bytes:
    """``outputs``: name -> element type name."""
    graph = helper.make_graph(
        nodes, "bench",
        [helper.make_tensor_value_info(name, _ELEMENT[a.dtype.name], a.shape) for name, a in inputs.items()],
        [helper.make_tensor_value_info(name, _ELEMENT[kind], None) for name, kind in outputs.items()],
        initializer=list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(CONTRIB, 1)])
    model.ir_version = 9
    return model.SerializeToString()


def build(spec: dict, inputs: dict, outputs) -> bytes:
    """The model computing ``spec``'s operator from ``onnx_inputs(inputs)`` into ``outputs``
    (poolgpu's output names, in order); raises Unsupported where ONNX has no such operator."""
    op = spec["op"]
    if spec["dtype"] == "bfloat16":
        raise Unsupported("ONNX Runtime's pooling kernels take no bfloat16")
    feeds = onnx_inputs(inputs)
    outputs = {name: "int64" if name == "idx" else spec["dtype"] for name in outputs}
    pool = dict(kernel_shape=list(spec["window_size"]), strides=list(spec["strides"]),
                pads=list(spec["start_padding"]) + list(spec["end_padding"]))
    if op in ("max", "max_idx", "max_dil2"):
        node = helper.make_node("MaxPool", ["x"], list(outputs), dilations=list(spec.get("dilations") or [1] * spec["dims"]), **pool)
    elif op in ("avg", "avg_incl_pad"):
        node = helper.make_node("AveragePool", ["x"], list(outputs), count_include_pad=int(spec["include_padding"]), **pool)
    elif op == "lp2":
        node = helper.make_node("LpPool", ["x"], list(outputs), p=2, **pool)
    elif op == "unpool":
        shape = helper.make_tensor("output_shape", TensorProto.INT64, [len(spec["x_sizes"])], list(spec["x_sizes"]))
        node = helper.make_node("MaxUnpool", ["v", "idx", "output_shape"], list(outputs), **pool)
        return _model([node], feeds, outputs, [shape])
    elif op in ("adaptive_max", "adaptive_avg"):
        if any(s != 1 for s in spec["output_size"]):
            raise Unsupported("ONNX has adaptive pooling only to 1 (GlobalMaxPool, GlobalAveragePool)")
        node = helper.make_node("GlobalMaxPool" if op == "adaptive_max" else "GlobalAveragePool", ["x"], list(outputs))
    elif op == "roi":
        node = helper.make_node("MaxRoiPool", ["x", "rois"], list(outputs), pooled_shape=list(spec["pooled_size"]),
                                spatial_scale=float(spec["spatial_scale"]))
    elif op in ("qavg", "qavg_ort", "qavg_torch"):
        if op != "qavg_ort":
            raise Unsupported(f"ONNX Runtime's QLinearAveragePool rounds as {op} does not")
        node = helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], list(outputs), domain=CONTRIB,
                                count_include_pad=int(spec["include_padding"]), **pool)
    elif op in ("max_bwd", "max_fwd_bwd", "avg_bwd"):
        raise Unsupported("ONNX has no pooling gradients (ORT's are in training builds only)")
    else:
        raise Unsupported(f"no {op}")
    return _model([node], feeds, outputs)


def identity(inputs: dict) -> bytes:
    """A model passing ``onnx_inputs(inputs)`` through, to place them on a device once."""
    feeds = onnx_inputs(inputs)
    nodes = [helper.make_node("Identity", [name], [f"{name}_on_device"]) for name in feeds]
    return _model(nodes, feeds, {f"{name}_on_device": a.dtype.name for name, a in feeds.items()})
