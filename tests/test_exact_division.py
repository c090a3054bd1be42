"""common/exact_f32.wgsl's correctly rounded division, transcribed step for step into NumPy's
u32 and i32 arithmetic, against IEEE division (NumPy's float32): normal, subnormal, huge and
tiny quotients, zeros, infinities and NaN, with the f32 estimate it starts from off by up to
six units (WGSL allows 2.5 ulp, GPUs divide by a reciprocal; the software adapters the tests
run on divide exactly, so on them the corrections never act).  The quantized averages'
results on the adapters (tests/test_quantized.py) check the WGSL itself."""

import re
from pathlib import Path

import numpy as np
import pytest

import poolgpu

WGSL = Path(poolgpu.__file__).parent / "wgsl" / "common" / "exact_f32.wgsl"
U32 = np.uint32


def _unpacked(magnitude):
    field = (magnitude >> U32(23)).astype(np.int64)
    bits = magnitude & U32(0x7FFFFF)
    leading = np.where(bits == 0, 32, 31 - np.floor(np.log2(np.maximum(bits, 1))).astype(np.int64))
    shift = np.where(field == 0, leading - 8, 0)
    significand = np.where(field == 0, (bits.astype(np.uint64) << shift.astype(np.uint64)).astype(U32),
                           bits | U32(0x800000))
    return significand, np.where(field == 0, 1 - shift, field)


def divide_rn(a, b, estimate_error=0):
    """divide_rn of exact_f32.wgsl, lane by lane (u32 arithmetic wraps as WGSL's)."""
    ua, ub = a.view(U32), b.view(U32)
    sign = (ua ^ ub) & U32(0x80000000)
    ma, mb = ua & U32(0x7FFFFFFF), ub & U32(0x7FFFFFFF)
    xs, xe = _unpacked(ma)
    ys, ye = _unpacked(mb)
    d = ys
    shorter = xs < d
    n = (xs << shorter.astype(U32)).astype(U32)
    exponent = xe - ye + 127 - shorter
    with np.errstate(all="ignore"):
        q = (n.astype(np.float32) / d.astype(np.float32) * np.float32(16777216)).astype(np.int64)
    q = (q + estimate_error).astype(U32)   # (the estimate as a GPU's division may leave it)
    r = ((n << U32(24)) - q * d).view(np.int32).astype(np.int64)
    with np.errstate(all="ignore"):
        step = np.floor(r.astype(np.float32) / d.astype(np.float32)).astype(np.int64)
    q = (q.astype(np.int64) + step).astype(U32)
    r = r - step * d.astype(np.int64)
    q = q - (r < 0).astype(U32) + (r >= d.astype(np.int64)).astype(U32)
    r = r + np.where(r < 0, d.astype(np.int64), 0) - np.where(r >= d.astype(np.int64), d.astype(np.int64), 0)
    sticky = r != 0
    kept = q >> U32(1)
    up = ((q & U32(1)) == 1) & (sticky | ((kept & U32(1)) == 1))
    normal = np.minimum((np.maximum(exponent, 1).astype(U32) << U32(23)) + (kept - U32(0x800000)) + up.astype(U32),
                        U32(0x7F800000))
    shift = np.clip(2 - exponent, 1, 26).astype(U32)
    low = q >> shift
    rest = q & ((U32(1) << shift) - U32(1))
    half = U32(1) << (shift - U32(1))
    low_up = (rest > half) | ((rest == half) & (sticky | ((low & U32(1)) == 1)))
    bits = np.where(exponent >= 1, normal, low + low_up.astype(U32))
    bits = np.where((exponent >= 255) | (ma == 0x7F800000) | (mb == 0), U32(0x7F800000), bits)
    bits = np.where((ma == 0) | (mb == 0x7F800000), U32(0), bits)
    nan = (ma > 0x7F800000) | (mb > 0x7F800000) | ((ma == 0) & (mb == 0)) | ((ma == 0x7F800000) & (mb == 0x7F800000))
    return np.where(nan, U32(0x7FC00000), sign | bits).astype(U32).view(np.float32)


def _expected(a, b):
    with np.errstate(all="ignore"):
        q = a / b
    return np.where(np.isnan(q), np.float32(np.nan), q).astype(np.float32).view(U32)


def _pairs(rng, count):
    """Random bit patterns (every exponent, subnormals among them), quotients near the
    edges of float32's range, the quantized averages' kind (sums over small counts), and
    zeros, infinities and NaN."""
    a = rng.integers(0, 2**32, count, dtype=np.uint64).astype(U32).view(np.float32)
    b = rng.integers(0, 2**32, count, dtype=np.uint64).astype(U32).view(np.float32)
    b[: count // 4] = rng.integers(1, 100000, count // 4).astype(np.float32)   # divisors that are counts
    a[count // 4: count // 2] = (rng.standard_normal(count // 4) * 3e-39).astype(np.float32)   # subnormal a
    b[count // 2: 5 * count // 8] = np.float32(3e38) * rng.random(count // 8).astype(np.float32)   # tiny quotients
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 1e-45, 3.4e38], np.float32)
    a[-64:] = np.repeat(specials, 8)
    b[-64:] = np.tile(specials, 8)
    return a, b


def test_the_transcription_follows_the_wgsl():
    # (the steps above as they read in the shader: a change there must change this file too)
    source = re.sub(r"//[^\n]*", "", WGSL.read_text())
    for step in ("var q = u32(f32(n) / f32(d) * 16777216.0);", "var r = bitcast<i32>((n << 24u) - q * d);",
                 "let step = i32(floor(f32(r) / f32(d)));", "q = q - u32(r < 0) + u32(r >= i32(d));",
                 "let shift = u32(clamp(2 - exponent, 1, 26));"):
        assert step in source, step


@pytest.mark.parametrize("estimate_error", [0, 1, -1, 6, -6])
def test_division_is_correctly_rounded_whatever_the_estimate(estimate_error):
    a, b = _pairs(np.random.default_rng(abs(estimate_error) * 2 + (estimate_error < 0)), 400000)
    got = divide_rn(a, b, estimate_error).view(U32)
    want = _expected(a, b)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(a[i], b[i], hex(got[i]), hex(want[i])) for i in bad[:5]]
