"""Each kernel's Params are declared once, in Python (Kernel.params), and the WGSL header is
generated from that declaration: a shader reading an undeclared field fails when its Kernel
is declared, and every program's passes give a value to every field.  No GPU needed."""

import re

import pytest

import poolgpu as pg
from poolgpu import kernels


def test_every_kernel_reads_only_the_params_it_declares():
    read_by_declaration = {}  # a declaration (shared by a kernel's variants) -> the fields they read
    for kernel in kernels.all_kernels():
        read = set(re.findall(r"\bparams\.(\w+)", re.sub(r"//[^\n]*", "", kernel.sources())))
        assert read <= set(kernel.fields), kernel.file
        read_by_declaration.setdefault(kernel.params, set()).update(read)
    # ... and none declares a field that no kernel sharing its declaration reads
    for params, read in read_by_declaration.items():
        assert set(params) <= read, sorted(set(params) - read)


def test_a_kernel_reading_an_undeclared_field_fails_when_declared():
    declared = kernels.window.MAX_POOL["general"]
    with pytest.raises(ValueError, match="does not declare.*'channels'"):
        kernels.Kernel(declared.file, declared.slots, declared.value_slot, declared.library,
                       tuple(f for f in declared.params if f != "channels"))
    with pytest.raises(ValueError, match="declared twice"):
        kernels.Kernel(declared.file, declared.slots, declared.value_slot, declared.library,
                       declared.params + ("channels",))


def test_no_shader_declares_params_or_the_workgroup_width_itself():
    # the header (common/header.wgsl) is the one place
    for path in kernels.core.WGSL_DIR.rglob("*.wgsl"):
        text = re.sub(r"//[^\n]*", "", path.read_text())
        if path.name != "header.wgsl":
            assert "struct Params" not in text and "var<uniform>" not in text, path.name
            assert "override WG_X" not in text, path.name


def test_the_header_declares_the_fields_in_the_order_they_are_packed():
    kernel = kernels.gradients.MAX_POOL_GRAD
    source = kernels.shader_source(kernel, (pg.DataType.FLOAT32, pg.DataType.UINT32, pg.DataType.FLOAT32))
    struct = re.search(r"struct Params \{(.*?)\}", source, re.S).group(1)
    assert tuple(re.findall(r"(\w+): u32,", struct)) == kernel.fields
    values = {name: i for i, name in enumerate(kernel.fields)}
    packed = kernels.pack_params(kernel, values)
    assert len(packed) % 16 == 0 and list(packed[:4 * len(values):4]) == list(range(len(values)))


def _descriptions():
    x = pg.TensorDesc("float16", (2, 8, 12, 16))
    cl = pg.TensorDesc("float32", (2, 8, 12, 16), (1536, 1, 128, 8))
    window = dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))
    out = pg.MaxPooling2Desc(x, **window).output
    yield pg.MaxPooling2Desc(x, output_indices="uint32", **window)
    yield pg.MaxPooling2Desc(cl, window_size=(12, 16))
    yield pg.AveragePooling1Desc(cl, include_padding=True, **window)
    yield pg.LpPooling1Desc(x, p=3, **window)
    yield pg.AdaptiveMaxPoolingDesc(x, output_size=(5, 7), output_indices="uint64")
    yield pg.AdaptiveAveragePoolingDesc(cl, output_size=(3, 5))
    yield pg.RoiPoolingDesc(cl, pg.TensorDesc("float32", (1, 1, 3, 5)), spatial_scale=0.5, pooled_size=(2, 3))
    for strides in ((1, 1), (2, 2)):
        geometry = dict(window_size=(2, 2), strides=strides)
        dy = pg.MaxPooling2Desc(x, **geometry).output
        yield pg.MaxPoolingGradDesc(x, dy, x, **geometry)
        yield pg.AveragePoolingGradDesc(dy, x, **geometry)
        dy_cl = pg.MaxPooling2Desc(cl, **geometry).output
        yield pg.MaxPoolingGradDesc(cl, pg.TensorDesc("float32", dy_cl.sizes), cl, **geometry)
    yield pg.MaxUnpoolingDesc(pg.TensorDesc("float16", out.sizes), pg.TensorDesc("uint64", out.sizes), x)
    yield pg.MaxUnpoolingDesc(pg.TensorDesc("float16", out.sizes), pg.TensorDesc("uint32", out.sizes),
                              pg.TensorDesc("float16", x.sizes, tuple(2 * s for s in x.strides)))
    bins = pg.TensorDesc("float16", (2, 8, 5, 7))
    yield pg.AdaptiveMaxPoolingGradDesc(x, bins)
    yield pg.AdaptiveAveragePoolingGradDesc(pg.TensorDesc("float32", (2, 8, 5, 7)), cl)
    yield pg.MaxUnpoolingGradDesc(x, pg.TensorDesc("uint64", out.sizes))
    q, q_cl = pg.TensorDesc("int8", x.sizes), pg.TensorDesc("uint8", cl.sizes, cl.strides)
    scale, zero = pg.TensorDesc("float32", (1, 8, 1, 1)), pg.TensorDesc("uint8", (1, 1, 1, 1))
    for rounding in ("directml", "onnxruntime", "pytorch"):
        yield pg.QuantizedLinearAveragePoolingDesc(q, scale, output_scale=scale, rounding=rounding, **window)
        yield pg.QuantizedLinearAveragePoolingDesc(q_cl, scale, zero, scale, zero, rounding=rounding, **window)
    yield pg.QuantizedLinearAveragePoolingDesc(q, scale, output_scale=scale, rounding="onnxruntime_global",
                                               window_size=(12, 16))
    yield pg.AdaptiveAveragePoolingDesc(q, output_size=(5, 7))


@pytest.mark.parametrize("tuning", [pg.Tuning.for_cpu(), pg.Tuning.for_gpu()], ids=["cpu", "gpu"])
@pytest.mark.parametrize("limit", [None, 8192])
def test_every_pass_gives_every_declared_field_a_value(tuning, limit):
    seen = set()
    for desc in _descriptions():
        program = kernels.program_for(desc, tuning, limit)
        while program is not None:
            for p in program.passes:
                bases = {f"{slot.name}_base": 0 for slot in p.kernel.slots}
                kernels.pack_params(p.kernel, {**p.params, **bases})  # raises on a missing value
                seen.add(p.kernel)
            program = program.fallback
    assert len(seen) >= 15


def test_every_shader_sizes_its_workgroups_by_the_overrides_bundles_read():
    # bundles state the workgroup limits a host needs from the dispatches' WG_X, WG_Y, WG_Z
    from poolgpu.limits import WORKGROUP_OVERRIDES
    sizes = set()
    for path in kernels.core.WGSL_DIR.rglob("*.wgsl"):
        sizes.update(re.findall(r"@workgroup_size\(([^)]*)\)", path.read_text()))
    assert sizes == {"WG_X", "WG_X, WG_Y, WG_Z"}
    declared = "".join((kernels.core.WGSL_DIR / "common" / name).read_text() for name in ("header.wgsl", "grid.wgsl"))
    for name, default in WORKGROUP_OVERRIDES:
        assert re.search(rf"override {name}: u32 = {default}u;", declared), name


@pytest.mark.parametrize("module, name, file, const", [
    ("roi_align", "ROI_BLOCK", "common/carried_blocks.wgsl", "BLOCK"),
    ("roi_align", "SHARED_MAX_OUT", "roi_align_grad_shared.wgsl", "MAX_OUT"),
    ("roi_align", "SHARED_LIST_WORDS", "roi_align_grad_shared.wgsl", "LIST_WORDS"),
])
def test_python_mirrors_of_shader_constants_agree(module, name, file, const):
    # (the kernel layer sizes grids and loop declarations from these)
    text = (kernels.core.WGSL_DIR / file).read_text()
    value = re.search(rf"\bconst {const}: u32 = (\d+)u;", text)
    assert value is not None and int(value.group(1)) == getattr(getattr(kernels, module), name)
