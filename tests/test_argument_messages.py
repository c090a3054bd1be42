"""Small argument mistakes with clear answers: ints as windows, how a DataType prints, and
the messages for types poolgpu does not take."""

import numpy as np
import pytest

import poolgpu as pg
import reference


def test_an_int_window_means_every_dimension(device):
    x = np.random.default_rng(1).standard_normal((1, 2, 7, 6)).astype(np.float32)
    y, i = pg.max_pool(x, 3, strides=2, start_padding=1, end_padding=1, dilations=1, return_indices=True,
                       device=device)
    expected, indices = reference.max_pool(x, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1))
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(i, indices)
    np.testing.assert_allclose(pg.average_pool(x, 2, strides=np.int64(2), device=device),
                               reference.average_pool(x, (2, 2), (2, 2)), rtol=1e-6)
    np.testing.assert_allclose(pg.lp_pool(x, 2, device=device), reference.lp_pool(x, (2, 2)), rtol=1e-5)
    dy = np.ones(y.shape, np.float32)
    np.testing.assert_allclose(pg.max_pool_grad(x, dy, 3, 2, 1, 1, device=device),
                               reference.max_pool_grad(x, dy, (3, 3), (2, 2), (1, 1), (1, 1)))
    np.testing.assert_allclose(pg.average_pool_grad(dy, x.shape, 3, 2, 1, 1, device=device),
                               reference.average_pool_grad(dy, x.shape, (3, 3), (2, 2), (1, 1), (1, 1)), rtol=1e-6)
    for window in (True, 2.0, 0):  # a bool or a float is no size; 0 is out of range
        with pytest.raises(pg.ValidationError, match="^window_size"):
            pg.max_pool(x, window, device=device)


def test_a_data_type_prints_its_name():
    assert str(pg.DataType.FLOAT32) == "FLOAT32" and f"{pg.DataType.UINT8}" == "UINT8"
    assert f"{pg.DataType.UINT8:d}" == "5" and pg.DataType.FLOAT16 == 2  # still DirectML's number


def test_a_list_of_python_floats_says_where_float64_came_from():
    with pytest.raises(pg.ValidationError, match=r"^x: a list of Python floats reads as float64.*np\.asarray\(x, "
                                                 r"np\.float32\)"):
        pg.max_pool([[[1.0, 2.0, 3.0]]], 2)


def test_a_torch_dtype_says_what_to_pass():
    torch = pytest.importorskip("torch")
    with pytest.raises(pg.ValidationError, match=r"^data_type: a torch dtype \(torch.float32\) is not taken here; "
                                                 r"pass the NumPy dtype or its name, e.g. np.float32 or 'float32'"):
        pg.TensorDesc(torch.float32, (1, 1, 4))
    with pytest.raises(pg.ValidationError, match="float64 is none of poolgpu's types"):
        pg.TensorDesc(torch.float64, (1, 1, 4))
