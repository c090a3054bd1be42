"""No kernel loops longer than an invocation may: llvmpipe (the software adapters) ends an
invocation's loops after 65535 iterations in all, without an error, and GPUs reset
invocations that run for seconds.  Every Kernel declares its loops (``Kernel.loops``: per
loop variable of its WGSL, the most iterations one invocation runs, from a pass's override
constants and uniform values); here those declarations are checked against the WGSL, and
every pass of many programs, long windows, bins and planes among them, against the
tuning's loop budget.  Whether the declarations are true is checked on the adapters: at a
budget of the whole 65535, the split walks' results are still exact
(tests/test_long_windows.py)."""

import dataclasses
import re

import pytest

import poolgpu as pg
from poolgpu import kernels
from poolgpu.kernels.split import LOOP_LIMIT, loop_total
from helpers import PLANE_WORKGROUPS, with_variants, without_variants

F32, F16, BF16, U8, I64 = "float32", "float16", "bfloat16", "uint8", "int64"


def _loop_variables(kernel) -> set:
    """The loop variables of the kernel's WGSL (its file and library)."""
    return set(re.findall(r"\bfor\s*\(\s*var\s+(\w+)", re.sub(r"//[^\n]*", "", kernel.sources())))


def _windows():
    """(input sizes, window fields) of fixed-window pooling: short and long windows, global,
    padded, dilated, strided far, in 1, 2 and 3 dimensions."""
    yield (2, 8, 12, 16), dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))
    yield (2, 8, 12, 16), dict(window_size=(2, 2), strides=(2, 2))
    yield (2, 8, 12, 16), dict(window_size=(2, 2), strides=(3, 3))   # rows of 5 outputs
    yield (2, 4, 12, 12), dict(window_size=(2, 2), strides=(2, 2))   # dy rows of 6
    yield (1, 2, 8, 40), dict(window_size=(2, 2), strides=(2, 4))    # dy rows of 10
    yield (1, 2, 70000), dict(window_size=(70000,))
    yield (1, 2, 110000), dict(window_size=(70000,), strides=(40000,))
    yield (1, 2, 300, 300), dict(window_size=(300, 300))
    yield (1, 3, 300, 301), dict(window_size=(290, 17), strides=(3, 1), start_padding=(5, 0), end_padding=(0, 8))
    yield (1, 1, 40, 50, 60), dict(window_size=(30, 40, 50), strides=(1, 2, 3), dilations=(1, 1, 1))
    yield (1, 1, 9, 600), dict(window_size=(3, 200), dilations=(4, 3), start_padding=(1, 150), end_padding=(2, 150))
    yield (1, 2, 5), dict(window_size=(100000,), start_padding=(99990,), end_padding=(5,))   # mostly padding
    yield (1, 4, 64, 64), dict(window_size=(64, 64))


def _descriptions():
    for sizes, window in _windows():
        for data_type, layout in ((F32, None), (F16, None), (F16, "channels_last"), (I64, None)):
            strides = None if layout is None else kernels.grids.channels_last_desc(data_type, sizes).strides
            x = pg.TensorDesc(data_type, sizes, strides)
            yield pg.MaxPooling2Desc(x, output_indices="uint32", **window)
            if data_type == I64:
                continue
            yield pg.AveragePooling1Desc(x, include_padding=True, **window)
            yield pg.LpPooling1Desc(x, p=3, **window)
            out = pg.MaxPooling2Desc(x, **window).output.sizes
            dy = pg.TensorDesc(data_type, out, None if layout is None else
                               kernels.grids.channels_last_desc(data_type, out).strides)
            yield pg.MaxPoolingGradDesc(x, dy, x, **window)
            yield pg.AveragePoolingGradDesc(dy, x, **window)
            yield pg.LpPoolingGradDesc(x, dy, x, p=3, **window)
    for sizes, window in _windows():   # quantized average pooling: every rounding, packed and channels-last
        for layout, rounding in ((None, "directml"), ("channels_last", "onnxruntime"), (None, "pytorch"),
                                 ("channels_last", "pytorch")):
            strides = None if layout is None else kernels.grids.channels_last_desc(U8, sizes).strides
            scale = pg.TensorDesc(F32, (1,) * len(sizes))
            yield pg.QuantizedLinearAveragePoolingDesc(pg.TensorDesc(U8, sizes, strides), scale, output_scale=scale,
                                                       rounding=rounding, **window)
            if not any(window.get("start_padding", ()) + window.get("end_padding", ())):
                yield pg.QuantizedLinearAveragePoolingDesc(pg.TensorDesc("int8", sizes, strides), scale,
                                                           output_scale=scale, rounding="onnxruntime_global", **window)
    for sizes, out in (((2, 3, 12, 17), (5, 7)), ((1, 2, 100000), (1,)), ((1, 2, 3), (70000,)),
                       ((2, 2, 300, 300), (1, 1)), ((1, 1, 7, 9, 4), (30, 2, 50)), ((1, 2, 40, 30), (8, 10))):
        for data_type in (F32, U8):
            x = pg.TensorDesc(data_type, sizes)
            yield pg.AdaptiveMaxPoolingDesc(x, output_size=out, output_indices="uint64")
            dy = pg.TensorDesc(data_type, sizes[:2] + out)
            yield pg.AdaptiveAveragePoolingDesc(x, output_size=out)   # (uint8: PyTorch's quantized rule)
            if data_type == F32:
                yield pg.AdaptiveMaxPoolingGradDesc(x, dy)
                yield pg.AdaptiveAveragePoolingGradDesc(dy, x)
    for sizes in ((2, 8, 12, 16), (1, 2, 300, 300)):
        x = pg.TensorDesc(F32, sizes)
        yield pg.RoiPoolingDesc(x, pg.TensorDesc(F32, (1, 1, 3, 5)), spatial_scale=0.5, pooled_size=(2, 3))
    for rois, pooled in ((3, (2, 3)), (2000, (7, 7)), (30000, (1, 1))):   # (ROI gathers split over runs of ROIs)
        x = pg.TensorDesc(BF16, (2, 4, 30, 40))
        yield pg.RoiPoolingGradDesc(x, pg.TensorDesc(BF16, (1, 1, rois, 5)), pg.TensorDesc(BF16, (rois, 4) + pooled),
                                    spatial_scale=0.5, pooled_size=pooled)
    for rois, sizes, out, fields in ((3, (1, 2, 5, 2000), (1, 2), {}),   # (long bins: split walks and merges)
                                     (3, (1, 2, 5, 2000), (1, 2), dict(reduction_function="max")),
                                     (2000, (2, 4, 30, 40), (7, 7), {}),
                                     (40, (1, 2, 300, 400), (14, 14), dict(reduction_function="max"))):
        x = pg.TensorDesc(F32, sizes)
        roi, batch = pg.TensorDesc(F32, (1, 1, rois, 4)), pg.TensorDesc("uint32", (1, 1, rois))
        yield pg.RoiAlign1Desc(x, roi, batch, output_size=out, **fields)
        yield pg.RoiAlignGradDesc(x if fields else None, pg.TensorDesc(F32, (rois, sizes[1]) + out), roi, batch,
                                  input_sizes=sizes, **fields)
    for sizes, window, out in (((2, 3, 12, 17), (2, 3), (6, 8)), ((1, 2, 300, 300), (290, 250), (11, 51)),
                               ((1, 1, 9, 20, 30), (2, 3, 4), (8, 18, 27)), ((1, 1, 2000, 30), (2, 2), (1999, 29)),
                               ((1, 1, 70000, 1), (1, 1), (70000, 1)), ((1, 2, 12, 16), (3, 3), (6, 9)),
                               ((1, 2, 12, 16), (3, 3), (6, 8))):
        for samples in (F32, F16, BF16):   # (the gathers' covering bounds differ with the samples' rounding)
            x = pg.TensorDesc(F32, sizes)
            s = pg.TensorDesc(samples, sizes[:2] + (len(window),))
            yield pg.FractionalMaxPoolingDesc(x, s, output_indices="uint32", window_size=window, output_size=out)
            yield pg.FractionalMaxPoolingGradDesc(x, s, pg.TensorDesc(F32, sizes[:2] + out), window_size=window)
    out = pg.MaxPooling2Desc(pg.TensorDesc(F16, (2, 8, 12, 16)), window_size=(2, 2), strides=(2, 2)).output
    for indices in ("uint32", "uint64"):
        yield pg.MaxUnpoolingDesc(pg.TensorDesc(F16, out.sizes), pg.TensorDesc(indices, out.sizes),
                                  pg.TensorDesc(F16, (2, 8, 12, 16)))
        yield pg.MaxUnpoolingDesc(pg.TensorDesc(F16, out.sizes), pg.TensorDesc(indices, out.sizes),
                                  pg.TensorDesc(F16, (2, 8, 12, 16), (3072, 384, 32, 2)))
        yield pg.MaxUnpoolingGradDesc(pg.TensorDesc(F16, (2, 8, 12, 16)), pg.TensorDesc(indices, out.sizes))
        scattered = kernels.grids.channels_last_desc(indices, out.sizes)   # (runs of four channels)
        yield pg.MaxUnpoolingDesc(pg.TensorDesc(F16, out.sizes), scattered, pg.TensorDesc(F16, (2, 8, 12, 16)))
        spread = pg.TensorDesc(indices, out.sizes, tuple(3 * s for s in pg.TensorDesc(indices, out.sizes).strides))
        yield pg.MaxUnpoolingDesc(pg.TensorDesc(F16, out.sizes), spread, pg.TensorDesc(F16, (2, 8, 12, 16)))   # (one by one)
        rows = pg.TensorDesc(F16, (2, 8, 12, 16), (6144, 768, 32, 1))   # (rows with gaps between them)
        yield pg.MaxUnpoolingDesc(pg.TensorDesc(F16, out.sizes), pg.TensorDesc(indices, out.sizes), rows)
        last = kernels.grids.channels_last_desc(F16, (2, 8, 12, 16))   # (unpooling's gather along C)
        yield pg.MaxUnpoolingDesc(pg.TensorDesc(F16, out.sizes), pg.TensorDesc(indices, out.sizes), last)
        yield pg.MaxUnpoolingDesc(pg.TensorDesc(F16, out.sizes), scattered, last)


TUNINGS = {
    "cpu": pg.Tuning.for_cpu(), "gpu": pg.Tuning.for_gpu(),
    "cpu-256": dataclasses.replace(pg.Tuning.for_cpu(), loop_budget=256),
    "general-32768": dataclasses.replace(pg.Tuning.for_cpu(), walk="general", loop_budget=32768),
    # the GPU kernel variants (helpers.VARIANT_FIELDS) under both presets, taken and left
    "gpu-left-1000": without_variants("gpu", loop_budget=1000, plane_part=1024),
    "cpu-variants": with_variants("cpu"), "gpu-variants-1000": with_variants("gpu", loop_budget=1000, plane_part=1024),
    "cpu-workgroups-1000": with_variants("cpu", loop_budget=1000, plane_workgroups=PLANE_WORKGROUPS),
    "cpu-planes-256": dataclasses.replace(pg.Tuning.for_cpu(), loop_budget=256, plane_lane_chunks=4096),
}


def _passes(tuning, limit):
    for desc in _descriptions():
        try:
            program = kernels.program_for(desc, tuning, limit)
        except pg.DeviceError:  # (a plane, or its split walk's partial results, larger than `limit`)
            assert limit is not None
            continue
        while program is not None:
            for p in program.passes:
                yield desc, p
            program = program.fallback


@pytest.mark.parametrize("limit", [None, 1 << 22])
@pytest.mark.parametrize("name", list(TUNINGS))
def test_no_pass_loops_longer_than_its_budget(name, limit):
    tuning = TUNINGS[name]
    assert tuning.loop_budget <= LOOP_LIMIT
    for desc, p in _passes(tuning, limit):
        total = loop_total(p.kernel, p.constants, p.params)
        # (ROI align's mask pass is never split: it is refused where it would pass LOOP_LIMIT)
        budget = LOOP_LIMIT if p.kernel is kernels.roi_align.TILES else tuning.loop_budget
        assert total <= budget, (type(desc).__name__, desc, p.kernel.file, total)


def test_every_kernel_declares_the_loops_of_its_wgsl():
    declared = {}
    for tuning in TUNINGS.values():
        for _, p in _passes(tuning, None):
            declared.setdefault(p.kernel, set(p.kernel.loops(dict(p.constants), p.params)))
    for kernel in kernels.all_kernels():
        assert kernel.loops is not None, kernel.file
        assert kernel in declared, f"no program above runs {kernel.file} {kernel.library[-1:]}"
        assert declared[kernel] == _loop_variables(kernel), (kernel.file, kernel.library)


def test_roi_align_gradients_whose_unsplit_mask_pass_would_pass_the_limit_are_refused():
    def program(output_size):
        desc = pg.RoiAlignGradDesc(pg.TensorDesc("float32", (1, 1, 8, 8)),
                                   pg.TensorDesc("float32", (1, 1) + output_size),
                                   pg.TensorDesc("float32", (1, 1, 1, 4)), pg.TensorDesc("uint32", (1, 1, 1, 1)),
                                   minimum_samples_per_output=1, maximum_samples_per_output=1)
        return kernels.program_for(desc, pg.Tuning.for_cpu())

    widest = program((1022, 1022))   # (height + width at the limit: 2044)
    assert max(loop_total(p.kernel, dict(p.constants), p.params) for p in widest.passes[:2]) <= LOOP_LIMIT
    with pytest.raises(pg.ValidationError, match="output_size: .* add up to at most 2044"):
        program((1022, 1023))
