"""The descriptor layer: data types, tensor descriptions, output sizes and validation.
No GPU is needed here."""

import subprocess
import sys

import numpy as np
import pytest

import poolgpu as pg

F32 = pg.DataType.FLOAT32


def field_of(excinfo):
    return excinfo.value.field


# -- DataType ------------------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    ("float16", pg.DataType.FLOAT16), ("FLOAT32", F32), (np.uint8, pg.DataType.UINT8),
    (np.dtype("int64"), pg.DataType.INT64), (pg.DataType.UINT64, pg.DataType.UINT64), ("int8", pg.DataType.INT8),
])
def test_data_type_accepts_names_numpy_types_and_members(value, expected):
    assert pg.DataType.of(value) is expected


@pytest.mark.parametrize("value", ["float64", np.bool_, "complex64", "nope", 3.5])
def test_data_type_rejects_unsupported_types(value):
    with pytest.raises(pg.ValidationError) as e:
        pg.DataType.of(value)
    assert field_of(e) == "data_type"


def test_data_type_has_exactly_the_ten_directml_members_and_bfloat16():
    assert {t.name for t in pg.DataType} == {
        "FLOAT32", "FLOAT16", "INT64", "INT32", "INT16", "INT8", "UINT64", "UINT32", "UINT16", "UINT8", "BFLOAT16"}
    assert {t: int(t) for t in pg.DataType if t.name != "BFLOAT16"} == {   # DML_TENSOR_DATA_TYPE's numbers
        pg.DataType.FLOAT32: 1, pg.DataType.FLOAT16: 2, pg.DataType.UINT32: 3, pg.DataType.UINT16: 4,
        pg.DataType.UINT8: 5, pg.DataType.INT32: 6, pg.DataType.INT16: 7, pg.DataType.INT8: 8,
        pg.DataType.UINT64: 10, pg.DataType.INT64: 11}
    assert pg.DataType.BFLOAT16 == 16   # ONNX's TensorProto number (DirectML has none)


# -- TensorDesc ----------------------------------------------------------------------------


def test_tensor_desc_defaults_to_packed_strides_and_directml_size():
    d = pg.TensorDesc("float16", (2, 3, 4, 5))
    assert d.strides == (60, 20, 5, 1)
    assert d.total_size_in_bytes == 2 * 3 * 4 * 5 * 2
    # (1 + sum (size - 1) * stride) * element size, rounded up to a multiple of 4
    assert pg.TensorDesc("uint8", (1, 1, 3)).total_size_in_bytes == 4
    assert pg.TensorDesc("float16", (1, 1, 3)).total_size_in_bytes == 8
    nhwc = pg.TensorDesc(F32, (2, 3, 4, 5), strides=(60, 1, 15, 3))
    assert nhwc.total_size_in_bytes == (1 + 1 * 60 + 2 * 1 + 3 * 15 + 4 * 3) * 4
    broadcast = pg.TensorDesc(F32, (2, 3, 4, 5), strides=(0, 0, 5, 1))
    assert broadcast.total_size_in_bytes == 20 * 4


@pytest.mark.parametrize("kwargs, field", [
    (dict(sizes=(2, 3)), "sizes"),
    (dict(sizes=(1, 1, 1, 1, 1, 1)), "sizes"),
    (dict(sizes=(1, 0, 3)), "sizes"),
    (dict(sizes=(1, 1, 2.0)), "sizes"),
    (dict(sizes=(65536, 65536, 2)), "sizes"),
    (dict(sizes=(1, 2, 3), strides=(6, 3)), "strides"),
    (dict(sizes=(1, 2, 3), strides=(6, -3, 1)), "strides"),
    (dict(sizes=(1, 2, 3), total_size_in_bytes=23), "total_size_in_bytes"),
])
def test_tensor_desc_validation(kwargs, field):
    with pytest.raises(pg.ValidationError) as e:
        pg.TensorDesc(F32, **kwargs)
    assert field_of(e) == field


def test_tensor_desc_accepts_larger_total_size_and_is_a_hashable_value():
    a = pg.TensorDesc(F32, (1, 2, 3), total_size_in_bytes=100)
    assert a.total_size_in_bytes == 100
    assert a == pg.TensorDesc("float32", [1, 2, 3], None, 100)
    assert len({a, pg.TensorDesc("float32", (1, 2, 3), total_size_in_bytes=100)}) == 1


# -- output sizes --------------------------------------------------------------------------


@pytest.mark.parametrize("args, expected", [
    (((8, 64, 112, 112), (3, 3), (2, 2), (1, 1), (1, 1)), (8, 64, 56, 56)),
    (((1, 1, 10), (3,), (1,), (0,), (0,), (2,)), (1, 1, 6)),       # dilated extent 5
    (((1, 1, 5, 5), (2, 2), (2, 2), (0, 0), (1, 1)), (1, 1, 3, 3)),  # asymmetric padding
    (((1, 2, 4, 5, 6), (2, 2, 2)), (1, 2, 3, 4, 5)),
])
def test_pooling_output_sizes(args, expected):
    assert pg.pooling_output_sizes(*args) == expected


def test_pooling_output_sizes_rejects_a_window_larger_than_the_padded_input():
    with pytest.raises(pg.ValidationError) as e:
        pg.pooling_output_sizes((1, 1, 4), (3,), dilations=(2,))
    assert field_of(e) == "window_size"


@pytest.mark.parametrize("sizes, window, start", [
    ((1, 1, 4), dict(window_size=(2,), start_padding=(2,), end_padding=(0,)), -2),     # the first window
    ((1, 1, 4), dict(window_size=(2,), start_padding=(0,), end_padding=(2,)), 4),      # the last
    ((1, 1, 5, 4), dict(window_size=(1, 2), start_padding=(0, 3), end_padding=(0, 0), dilations=(1, 2)), -3),
    ((1, 1, 2), dict(window_size=(2,), dilations=(3,), start_padding=(1,), end_padding=(1,)), -1),  # taps past the input
])
def test_a_window_of_padding_alone_is_refused(sizes, window, start):
    with pytest.raises(pg.ValidationError, match=f"starting at {start}, .* covers only padding") as e:
        pg.MaxPooling2Desc(pg.TensorDesc(F32, sizes), **window)
    assert field_of(e) == "window_size"
    ok = dict(window, window_size=tuple(k + 1 for k in window["window_size"]))   # a wider window reaches the input
    if "dilations" not in window:
        pg.MaxPooling2Desc(pg.TensorDesc(F32, sizes), **ok)


# -- max pooling descriptions --------------------------------------------------------------

X = pg.TensorDesc(F32, (2, 3, 8, 8))


def max2(**kwargs):
    kwargs.setdefault("window_size", (2, 2))
    return pg.MaxPooling2Desc(kwargs.pop("input", X), **kwargs)


def test_max_pooling_fills_in_defaults_and_the_output():
    d = pg.MaxPooling2Desc(X, window_size=[3, 3], strides=[2, 2], start_padding=[1, 1], end_padding=[1, 1])
    assert d.strides == (2, 2) and d.dilations == (1, 1) and d.dimension_count == 2
    assert d.output == pg.TensorDesc(F32, (2, 3, 4, 4))
    assert d.output_indices is None
    assert d == pg.MaxPooling2Desc(X, window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1))
    assert hash(d) == hash(pg.MaxPooling2Desc(X, window_size=(3, 3), strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1)))
    with pytest.raises(AttributeError):
        d.strides = (1, 1)


def test_max_pooling_output_indices_may_be_given_as_a_type():
    d = pg.MaxPooling1Desc(X, output_indices="uint64", window_size=(2, 2))
    assert d.output_indices == pg.TensorDesc(pg.DataType.UINT64, (2, 3, 7, 7))


@pytest.mark.parametrize("make, field", [
    (lambda: max2(window_size=(2, 2, 2)), "window_size"),
    (lambda: max2(window_size=(2,)), "window_size"),
    (lambda: max2(window_size=(0, 2)), "window_size"),
    (lambda: max2(strides=(1,)), "strides"),
    (lambda: max2(strides=(1, 0)), "strides"),
    (lambda: max2(dilations=(0, 1)), "dilations"),
    (lambda: max2(dilations=(1, 1, 1)), "dilations"),
    (lambda: max2(start_padding=(-1, 0)), "start_padding"),
    (lambda: max2(end_padding=(0, 0, 0)), "end_padding"),
    (lambda: max2(window_size=(9, 2)), "window_size"),
    (lambda: max2(output=pg.TensorDesc(F32, (2, 3, 4, 5))), "output.sizes"),
    (lambda: max2(output=pg.TensorDesc("float16", (2, 3, 7, 7))), "output.data_type"),
    (lambda: max2(output=pg.TensorDesc(F32, (2, 3, 7, 7), strides=(49, 49, 7, 1))), "output.strides"),
    (lambda: max2(output=pg.TensorDesc(F32, (2, 3, 7, 7), strides=(49, 7, 7, 1))), "output.strides"),
    (lambda: max2(output_indices=pg.TensorDesc("uint16", (2, 3, 7, 7))), "output_indices.data_type"),
    (lambda: max2(output_indices=pg.TensorDesc("int64", (2, 3, 7, 7))), "output_indices.data_type"),
    (lambda: max2(output_indices=pg.TensorDesc("uint32", (2, 3, 7, 8))), "output_indices.sizes"),
    (lambda: max2(output_indices=pg.TensorDesc("uint32", (2, 3, 7, 7), strides=(0, 49, 7, 1))), "output_indices.strides"),
    (lambda: max2(output_indices="float32"), "output_indices.data_type"),
    (lambda: max2(input="not a tensor"), "input"),
    # a last window wholly in the end padding
    (lambda: max2(window_size=(2, 2), strides=(3, 3), end_padding=(3, 3)), "window_size"),
    # a dilated window whose taps straddle the input without touching it
    (lambda: max2(input=pg.TensorDesc(F32, (1, 1, 2)), window_size=(2,), dilations=(5,),
                  start_padding=(3,), end_padding=(3,)), "window_size"),
])
def test_max_pooling_validation_names_the_field(make, field):
    with pytest.raises(pg.ValidationError) as e:
        make()
    assert field_of(e) == field
    assert str(e.value).startswith(field)


def test_max_pooling_v0_and_v1_have_no_dilations_and_v0_no_indices():
    assert not hasattr(pg.MaxPoolingDesc(X, window_size=(2, 2)), "dilations")
    assert not hasattr(pg.MaxPoolingDesc(X, window_size=(2, 2)), "output_indices")
    with pytest.raises(TypeError):
        pg.MaxPooling1Desc(X, window_size=(2, 2), dilations=(1, 1))


def test_alias_free_interleaved_output_strides_are_accepted():
    # offsets 2*i + 3*j for i, j < 3 are all distinct although the strides interleave
    y = pg.TensorDesc(F32, (1, 1, 3, 3), strides=(9, 9, 2, 3))
    assert pg.MaxPooling2Desc(pg.TensorDesc(F32, (1, 1, 4, 4)), y, window_size=(2, 2)).output == y


def test_importing_poolgpu_and_describing_touches_no_gpu():
    code = """
import wgpu
def refuse(*args, **kwargs):
    raise AssertionError("touched the GPU")
wgpu.gpu.enumerate_adapters_sync = wgpu.gpu.request_adapter_sync = refuse
import poolgpu as pg
d = pg.MaxPooling2Desc(pg.TensorDesc("float16", (1, 2, 9, 9)), window_size=(3, 3), dilations=(2, 2))
assert d.output.sizes == (1, 2, 5, 5)
assert pg.pooling_output_sizes((1, 1, 9), (3,)) == (1, 1, 7)
"""
    subprocess.run([sys.executable, "-c", code], check=True)
