"""Run a poolgpu bundle with wgpu-py, from its manifest alone: what any WebGPU host does
(docs/portable.md, "Running a bundle: what every host does"), in Python.  It imports nothing of poolgpu.

    python examples/wgpu_host.py BUNDLE INPUTS OUTPUTS

reads INPUTS/<role>.bin for every input tensor of BUNDLE/manifest.json and writes
OUTPUTS/<role>.bin for every output, as js/run-node.mjs does.
"""

import json
import sys
from pathlib import Path

import wgpu

FORMAT = "poolgpu-bundle/1"
TENSOR_USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


def run_bundle(device: wgpu.GPUDevice, directory, inputs: dict) -> dict:
    """Run the bundle in ``directory`` on ``device``: ``inputs`` maps each input role to its
    DirectML bytes; returns each output role's bytes (its ``byte_size``)."""
    directory = Path(directory)
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    if manifest["format"] != FORMAT:
        raise ValueError(f"{directory}: not a {FORMAT} bundle")
    modules = {name: device.create_shader_module(label=name, code=(directory / name).read_text(encoding="utf-8"))
               for name in manifest["shaders"]}
    # One buffer per tensor, from byte 0; inputs hold their bytes, outputs and scratch zeros.
    buffers = {}
    for tensor in manifest["tensors"]:
        data = bytearray(tensor["buffer_size"])
        if tensor["kind"] == "input":
            given = inputs[tensor["role"]]
            data[: len(given)] = given
        buffers[tensor["role"]] = device.create_buffer_with_data(data=data, usage=TENSOR_USAGE)
    pipelines, uniforms = {}, {}
    encoder = device.create_command_encoder()
    compute_pass = encoder.begin_compute_pass()
    for dispatch in manifest["dispatches"]:
        bindings = dispatch["bindings"]
        key = (dispatch["shader"], dispatch["entry_point"], json.dumps(dispatch["constants"], sort_keys=True),
               tuple((b["binding"], b["type"]) for b in bindings))
        if key not in pipelines:  # one pipeline per shader, constants and binding types
            layout = device.create_bind_group_layout(entries=[
                {"binding": b["binding"], "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": b["type"]}}
                for b in bindings])
            pipeline = device.create_compute_pipeline(
                layout=device.create_pipeline_layout(bind_group_layouts=[layout]),
                compute={"module": modules[dispatch["shader"]], "entry_point": dispatch["entry_point"],
                         "constants": dispatch["constants"]})
            pipelines[key] = pipeline, layout
        pipeline, layout = pipelines[key]
        entries = []
        for b in bindings:
            if b["type"] == "uniform":
                if b["bytes"] not in uniforms:
                    uniforms[b["bytes"]] = device.create_buffer_with_data(data=bytes.fromhex(b["bytes"]),
                                                                          usage=wgpu.BufferUsage.UNIFORM)
                buffer = uniforms[b["bytes"]]
                resource = {"buffer": buffer, "offset": 0, "size": buffer.size}
            else:
                resource = {"buffer": buffers[b["tensor"]], "offset": b["offset"], "size": b["size"]}
            entries.append({"binding": b["binding"], "resource": resource})
        compute_pass.set_pipeline(pipeline)
        compute_pass.set_bind_group(0, device.create_bind_group(layout=layout, entries=entries))
        compute_pass.dispatch_workgroups(*dispatch["workgroups"])
    compute_pass.end()
    device.queue.submit([encoder.finish()])
    return {t["role"]: bytes(device.queue.read_buffer(buffers[t["role"]], 0, t["byte_size"]))
            for t in manifest["tensors"] if t["kind"] == "output"}


def main(bundle: str, inputs: str, outputs: str) -> None:
    manifest = json.loads((Path(bundle) / "manifest.json").read_text(encoding="utf-8"))
    given = {t["role"]: (Path(inputs) / f"{t['role']}.bin").read_bytes()
             for t in manifest["tensors"] if t["kind"] == "input"}
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    # the adapter's largest bindings and buffers, and offsets aligned as finely as the bundle's
    names = ("max-storage-buffer-binding-size", "max-buffer-size")
    required = {name: adapter.limits[name] for name in names}
    alignment = manifest["limits"]["minStorageBufferOffsetAlignment"]
    required["min-storage-buffer-offset-alignment"] = max(min(alignment, 256),
                                                          adapter.limits["min-storage-buffer-offset-alignment"])
    device = adapter.request_device_sync(required_limits=required)
    results = run_bundle(device, bundle, given)
    Path(outputs).mkdir(parents=True, exist_ok=True)
    for role, data in results.items():
        (Path(outputs) / f"{role}.bin").write_bytes(data)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: python examples/wgpu_host.py BUNDLE INPUTS OUTPUTS")
    main(*sys.argv[1:])
