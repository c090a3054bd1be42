"""NumPy and PyTorch habits of the core: Tensor.shape/.dtype/np.asarray, objects read through
__array__ / __dlpack__, and types DirectML lacks refused with how to convert."""

import numpy as np
import pytest

import poolgpu as pg

# The adapter is this file's subject: every case runs on every adapter (conftest.py).
pytestmark = pytest.mark.every_adapter


def test_tensor_shape_dtype_and_asarray(device):
    x = np.arange(24, dtype=np.float16).reshape(1, 2, 3, 4)
    t = device.upload(x)
    assert t.shape == (1, 2, 3, 4) and t.dtype == np.float16
    a = np.asarray(t)
    assert a.dtype == np.float16 and np.array_equal(a, x)
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError):
        np.array(t, copy=False)


class OnlyDlpack:
    def __init__(self, array):
        self._array = array
        self.dtype = array.dtype

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_objects_with_array_or_dlpack_are_read(device):
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    want = pg.max_pool(x, (2, 2), strides=(2, 2), device=device)
    np.testing.assert_array_equal(pg.max_pool(OnlyDlpack(x), (2, 2), strides=(2, 2), device=device), want)
    torch = pytest.importorskip("torch")
    got = pg.max_pool(torch.from_numpy(x), (2, 2), strides=(2, 2), device=device)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype, hint", [(np.float64, "astype(np.float32)"), (np.bool_, "astype(np.uint8)"),
                                         (np.complex64, "astype(np.float32)")])
def test_types_directml_lacks_say_how_to_convert(dtype, hint):
    with pytest.raises(pg.ValidationError) as e:
        pg.max_pool(np.zeros((1, 1, 8, 8), dtype), (2, 2))
    message = str(e.value)
    assert e.value.field == "x" and np.dtype(dtype).name in message and hint in message


def test_torch_types_are_named_before_numpy_reads_them():
    torch = pytest.importorskip("torch")
    with pytest.raises(pg.ValidationError) as e:
        pg.average_pool(torch.zeros(1, 1, 4, 4, dtype=torch.float64), (2, 2))
    assert "float64" in str(e.value) and "float32" in str(e.value)
    # torch's bfloat16, which NumPy cannot read: what to pass instead
    with pytest.raises(pg.ValidationError) as e:
        pg.average_pool(torch.zeros(1, 1, 4, 4, dtype=torch.bfloat16), (2, 2))
    assert "ml_dtypes.bfloat16" in str(e.value) and "poolgpu.torch" in str(e.value)
