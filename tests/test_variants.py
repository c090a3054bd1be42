"""The GPU kernel variants: Tuning choices that both presets leave at the kernels they had
until a GPU measures them (docs/performance.md, "Kernel variants"), run on every adapter
under both presets against the NumPy reference, and where a variant promises it, with the
same bits as the kernels it replaces (sums included)."""

import dataclasses

import numpy as np
import pytest

import poolgpu as pg
import reference
from helpers import VARIANT_FIELDS, forward_walk, random_values, same_bits, with_variants

PRESETS = ("cpu", "gpu")


def outputs(device, desc, arrays, tuning) -> tuple:
    """``desc``'s outputs (NumPy) computed with the kernels ``tuning`` chooses."""
    op = pg.Op(device, desc, tuning)
    result = op(*(device.upload(a) for a in arrays))
    return tuple(t.numpy() for t in (result if isinstance(result, tuple) else (result,)))


def test_the_variants_are_tuning_fields_both_presets_leave_off():
    for preset in PRESETS:
        tuning = pg.Tuning.preset(preset)
        for field, value in VARIANT_FIELDS.items():
            assert getattr(tuning, field) != value, (preset, field)
    with pytest.raises(pg.ValidationError, match="plane_chunks"):
        pg.Tuning(plane_chunks=3)


# The plane walk, each lane loading 2 or 4 chunks per step: planes whose lanes take several
# steps and a ragged rest (under both presets' lanes: 8 and 256), planes starting between
# chunks (9003 elements) and split into runs merged by a second pass.
@pytest.mark.parametrize("preset, chunks", [("cpu", 4), ("gpu", 2)])
def test_the_plane_walk_in_steps_of_chunks(device, preset, chunks):
    base = pg.Tuning.preset(preset)
    rng = np.random.default_rng(chunks)
    for plane, part, desc_class in (((64, 80), 16384, pg.AveragePooling1Desc), ((9003,), 4096, pg.LpPooling1Desc)):
        tuning = dataclasses.replace(base, plane_chunks=chunks, plane_part=part)
        x = random_values(pg.DataType.FLOAT32, (2, 3) + plane, rng, specials=False)
        x_desc = pg.TensorDesc("float32", x.shape)
        max_desc = pg.MaxPooling2Desc(x_desc, output_indices="uint32", window_size=plane)
        assert forward_walk(max_desc, tuning) == "plane"
        y, idx = outputs(device, max_desc, (x,), tuning)
        y_ref, i_ref = reference.max_pool(x, plane)
        assert same_bits(y, y_ref)
        np.testing.assert_array_equal(idx, i_ref)
        # each lane feeds its chunks in the same order: the same bits as one chunk per step
        desc = desc_class(x_desc, window_size=plane, **({"p": 2} if desc_class is pg.LpPooling1Desc else {}))
        got, = outputs(device, desc, (x,), tuning)
        assert same_bits(got, outputs(device, desc, (x,), dataclasses.replace(tuning, plane_chunks=1))[0])
        expected = (reference.lp_pool(x, plane, p=2) if desc_class is pg.LpPooling1Desc else
                    reference.average_pool(x, plane))
        np.testing.assert_allclose(got, expected, rtol=1e-5)
