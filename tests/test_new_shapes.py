"""New input sizes without a pipeline build (docs/design.md, "New shapes"): an operator's
shape-generic form (``Tuning.shapes_in_params``) gives the specialised form's bits, and a
new size of an operator already used runs on pipelines already built for its first
``Tuning.generic_calls`` calls, then on its own specialised ones."""

import dataclasses

import numpy as np
import pytest

import poolgpu as pg

from helpers import same_bits


def _descriptions(device, x, rng):
    """Pooling on the kernels whose sizes travel in Params in the generic form, with the
    tensors they take: the rows walk (3x3 stride 2, padded, as resnet's stem: its line grid)
    and its gradient (the rows gather, or the block gather's row grid), the plane walk (global
    average with padding counted, global max with indices) and the gradients of global
    pooling."""
    def upload(sizes):
        return device.upload(rng.standard_normal(sizes).astype(np.float32))

    plane = x.desc.sizes[2:]
    stem = dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))
    forward = pg.MaxPooling2Desc(x.desc, output_indices="uint32", **stem)
    dy_stem, dy_global = upload(forward.output.sizes), upload(x.desc.sizes[:2] + (1, 1))
    return [
        (forward, (x,)),
        (pg.MaxPoolingGradDesc(x.desc, dy_stem.desc, **stem), (x, dy_stem)),
        (pg.AveragePoolingDesc(x.desc, window_size=plane, include_padding=True), (x,)),
        (pg.MaxPooling2Desc(x.desc, window_size=plane, output_indices="uint32"), (x,)),
        (pg.MaxPoolingGradDesc(x.desc, dy_global.desc, window_size=plane), (x, dy_global)),
        (pg.AveragePoolingGradDesc(dy_global.desc, x.desc, window_size=plane), (dy_global,)),
    ]


# (planes of 1440 elements: a workgroup each; of 81: two lanes each, several to a workgroup;
# stem outputs 5 wide: the general walk)
@pytest.mark.parametrize("sizes", [(2, 5, 40, 36), (1, 3, 9, 9)])
def test_the_generic_form_gives_the_specialised_bits(device, sizes):
    # (grids shaped to lines, which the generic form numbers flat: the CPU preset numbers
    # narrow lines flat too, and its specialised form would then be the generic one)
    specialised = dataclasses.replace(device.tuning, generic_calls=0, flat_lines_under=1)
    generic = device.tuning.shape_generic()
    rng = np.random.default_rng(sum(sizes))
    x = device.upload(rng.standard_normal(sizes).astype(np.float32))
    for desc, inputs in _descriptions(device, x, rng):
        keys = []
        results = []
        for tuning in (specialised, generic):
            op = pg.Op(device, desc, tuning)
            keys.append({p.constants for p in op._program.passes})
            result = op(*inputs)
            results.append([t.numpy() for t in (result if isinstance(result, tuple) else (result,))])
        assert keys[0] != keys[1], f"{desc}: no generic form"
        for a, b in zip(*results):
            assert same_bits(a, b), desc


def test_a_new_size_runs_on_built_pipelines_until_it_repeats(device):
    dev = pg.Device(backend=device.backend, adapter=device.name)
    assert dev.tuning.generic_calls == 2

    def stem(sizes):  # resnet's: 3x3 max pooling, stride 2, padded; then a global average
        x = pg.TensorDesc("float32", sizes)
        pool = pg.MaxPoolingDesc(x, window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))
        return pool, pg.AveragePoolingDesc(pool.output, window_size=pool.output.sizes[2:])

    def run(descs, x):
        for desc in descs:
            x = dev.compile(desc)(x)
        return x.numpy()

    rng = np.random.default_rng(7)
    run(stem((1, 4, 52, 60)), dev.upload(rng.standard_normal((1, 4, 52, 60)).astype(np.float32)))
    sizes = (1, 4, 44, 68)  # a new size (used by no other test: its specialised pipelines are new)
    x = dev.upload(rng.standard_normal(sizes).astype(np.float32))
    built = dev._pipelines_built
    first = [run(stem(sizes), x) for _ in range(dev.tuning.generic_calls)]
    assert dev._pipelines_built == built, "a new size built pipelines on its first calls"
    ops = [dev.compile(desc) for desc in stem(sizes)]
    assert all(op._generic_calls_left == 0 and op._specialised is None for op in ops)   # (not planned yet)
    again = run(stem(sizes), x)  # the size repeats: its specialised pipelines
    assert dev._pipelines_built > built and all(op._generic_calls_left is None for op in ops)
    assert all(op._program is op._specialised.program for op in ops)
    for result in first:
        assert same_bits(result, again)


def test_generic_calls_0_builds_the_specialised_pipelines_at_once(device):
    dev = pg.Device(backend=device.backend, adapter=device.name,
                    tuning=dataclasses.replace(device.tuning, generic_calls=0))
    # (outputs 35 wide: lines of 9 columns, which no preset numbers flat)
    op = dev.compile(pg.MaxPoolingDesc(pg.TensorDesc("float32", (1, 2, 29, 71)), window_size=(3, 3), strides=(2, 2)))
    assert op._generic_calls_left is None and not any(dict(p.constants).get("FLAT") for p in op._program.passes)
    with pytest.raises(pg.ValidationError, match="generic_calls"):
        pg.Tuning(generic_calls=-1)


def test_a_new_size_of_split_planes_builds_nothing(device):
    """Global pooling of planes larger than one workgroup's run (split into parts, then
    merged): the shape-generic walk and merges carry no window, so a new size cut into as
    many parts runs on the pipelines already built; the same bits as the specialised form."""
    dev = pg.Device(backend=device.backend, adapter=device.name)
    part = dev.tuning.plane_part
    rng = np.random.default_rng(11)

    def descs(x):
        plane = x.sizes[2:]
        return (pg.AveragePoolingDesc(x, window_size=plane), pg.AveragePoolingDesc(x, window_size=plane,
                                                                                 include_padding=True),
                pg.MaxPooling2Desc(x, window_size=plane, output_indices="uint32"),
                pg.LpPoolingDesc(x, window_size=plane, p=2))

    def parts(op):
        return max(dict(p.constants).get("PARTS", 1) for p in op._program.passes)

    side = int((1.5 * part) ** 0.5)  # planes of about 1.5 runs: two parts each
    first = [dev.compile(d) for d in descs(pg.TensorDesc("float32", (1, 3, side, side)))]
    assert all(op._generic_calls_left is not None and parts(op) == 2 for op in first)
    sizes = (1, 3, side + 1, side - 2)
    x = dev.upload(rng.standard_normal(sizes).astype(np.float32))
    built = dev._pipelines_built
    ops = [dev.compile(d) for d in descs(x.desc)]
    assert all(parts(op) == 2 for op in ops)
    results = [[t.numpy() for t in (r if isinstance(r, tuple) else (r,))] for r in (op(x) for op in ops)]
    assert dev._pipelines_built == built, "a new size of split planes built pipelines"
    specialised = dataclasses.replace(dev.tuning, generic_calls=0)
    for op, got in zip(ops, results):
        want = pg.Op(dev, op.desc, specialised)(x)
        for a, b in zip(got, want if isinstance(want, tuple) else (want,)):
            assert same_bits(a, b.numpy()), op.desc
