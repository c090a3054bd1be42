"""descs.made: a description made once per distinct set of arguments (the front ends' host
path), and afresh wherever arguments could be mistaken for others."""

import numpy as np
import pytest

import poolgpu as pg
from poolgpu.descs import made


class Counted:
    """Stands for a description class: counts what it makes (a new one per test: the cache
    outlives tests)."""

    made = 0

    @classmethod
    def fresh(cls):
        return type("Counted", (cls,), {"made": 0})

    def __init__(self, *args, **fields):
        if fields.get("bad"):
            raise pg.ValidationError("bad", "refused")
        type(self).made += 1
        self.args, self.fields = args, fields


def test_the_same_arguments_give_the_same_description():
    x = pg.TensorDesc("float32", (1, 2, 9, 9))
    first = made(pg.MaxPooling2Desc, x, window_size=(3, 3), strides=(2, 2))
    again = made(pg.MaxPooling2Desc, pg.TensorDesc("float32", (1, 2, 9, 9)), window_size=[3, 3], strides=(2, 2))
    assert first == pg.MaxPooling2Desc(x, window_size=(3, 3), strides=(2, 2))
    assert made(pg.MaxPooling2Desc, x, window_size=(3, 3), strides=(2, 2)) is first
    assert again == first  # (a list is not a tuple: made again, equal)
    other = made(pg.MaxPooling2Desc, x, window_size=(3, 3), strides=(1, 1))
    assert other.output.sizes == (1, 2, 7, 7) and first.output.sizes == (1, 2, 4, 4)


@pytest.mark.parametrize("one, other", [
    (1, True), (0.0, -0.0), (1, 1.0), (2, np.int64(2)), ((1, 2), [1, 2]),
    (pg.DataType.FLOAT32, int(pg.DataType.FLOAT32)),
    ({"a": 1}, {"a": True}), (pg.TensorDesc("float32", (1, 1, 2)), pg.TensorDesc("float16", (1, 1, 2))),
])
def test_arguments_equal_in_python_but_not_alike_make_their_own(one, other):
    counted = Counted.fresh()
    a, b = made(counted, one, field=one), made(counted, other, field=other)
    assert a is not b and counted.made == 2
    assert made(counted, one, field=one) is a and made(counted, other, field=other) is b and counted.made == 2


def test_refused_arguments_are_checked_every_time_and_arrays_never_kept():
    counted = Counted.fresh()
    for _ in range(2):
        with pytest.raises(pg.ValidationError):
            made(counted, 1, bad=True)
    values = np.arange(3)
    first = made(counted, values)
    values[0] = 7  # an array may change between calls: never a key
    assert made(counted, values) is not first and counted.made == 2


def test_a_list_changed_after_a_call_gives_the_new_description():
    x = pg.TensorDesc("float32", (1, 1, 8, 8))
    window = [2, 2]
    first = made(pg.AveragePooling1Desc, x, window_size=window)
    window[0] = 4
    assert made(pg.AveragePooling1Desc, x, window_size=window).output.sizes == (1, 1, 5, 7)
    assert first.output.sizes == (1, 1, 7, 7)


def test_packed_tensor_descs_are_made_once_and_refusals_every_time():
    from poolgpu.tensor_desc import packed_desc

    first = packed_desc(pg.DataType.FLOAT16, (1, 3, 5, 7))
    assert first == pg.TensorDesc("float16", (1, 3, 5, 7)) and first.strides == (105, 35, 7, 1)
    assert packed_desc(pg.DataType.FLOAT16, (1, 3, 5, 7)) is first
    assert packed_desc(pg.DataType.FLOAT32, (1, 3, 5, 7)).total_size_in_bytes == 4 * 105 != first.total_size_in_bytes
    for _ in range(2):
        with pytest.raises(pg.ValidationError, match="sizes"):
            packed_desc(pg.DataType.FLOAT32, (3, 4))


def test_int_tuples_keep_their_keys_apart_from_tuples_of_other_numbers():
    counted = Counted.fresh()
    plain = made(counted, (1, 2), strides=[3, 4])
    assert made(counted, (1, 2), strides=[3, 4]) is plain
    for other in [((True, 2), [3, 4]), ((1, 2), (3, 4)), ((np.int64(1), 2), [3, 4]), ((1.0, 2), [3, 4])]:
        assert made(counted, other[0], strides=other[1]) is not plain


def test_data_types_of_numpy_dtypes_are_remembered_and_refusals_repeated():
    for _ in range(2):
        assert pg.DataType.of(np.dtype(np.float16)) is pg.DataType.FLOAT16
        assert pg.DataType.of(np.dtype(">i2")) is pg.DataType.INT16
        assert pg.DataType.of(np.dtype(np.uint8), "x") is pg.DataType.UINT8
        with pytest.raises(pg.ValidationError, match="x"):
            pg.DataType.of(np.dtype(np.float64), "x")
