"""The long fuzzing mode: every operator's randomized test against the NumPy reference, with
many more examples, and chunked execution (tests/test_scale.py) likewise.  Off by default;
``POOLGPU_FUZZ=1`` turns it on and ``POOLGPU_FUZZ_EXAMPLES`` (default 2000) sets the
examples per test and adapter:

    POOLGPU_FUZZ=1 POOLGPU_FUZZ_EXAMPLES=5000 bash scripts/test.sh tests/test_fuzz.py tests/test_scale.py

Each test draws from the operator tests' own strategies (all data types, layouts, window
geometries, index types) and runs their checks, so a fuzz failure reproduces as a failure
of the operator test with hypothesis' printed example."""

import os

import pytest
from hypothesis import HealthCheck, given, settings

import test_adaptive
import test_average_lp
import test_fractional
import test_grad
import test_grad_lp_roi
import test_long_windows
import test_max_pool
import test_quantized
import test_roi
import test_unpool
from helpers import ALL_TYPES, FLOAT_TYPES

FUZZ = os.environ.get("POOLGPU_FUZZ") == "1"
pytestmark = pytest.mark.skipif(not FUZZ, reason="the long fuzzing mode: set POOLGPU_FUZZ=1")
FUZZ_SETTINGS = settings(
    max_examples=int(os.environ.get("POOLGPU_FUZZ_EXAMPLES", 2000)), deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# (operator test, its strategy): the test's body runs on each drawn case
TESTS = {
    "max_pool": (test_max_pool.test_max_pool_every_type_matches_reference, test_max_pool.pooling_cases()),
    "average_lp": (test_average_lp.test_average_and_lp_match_the_reference, test_average_lp.cases()),
    "max_pool_grad": (test_grad.test_max_pool_grad_matches_reference, test_grad.gradient_cases()),
    "average_pool_grad": (test_grad.test_average_pool_grad_matches_reference, test_grad.gradient_cases()),
    "max_unpool": (test_unpool.test_max_unpool_matches_reference, test_unpool.unpool_cases()),
    "adaptive_max": (test_adaptive.test_adaptive_max_pool_matches_reference, test_adaptive.adaptive_cases(ALL_TYPES)),
    "adaptive_average": (test_adaptive.test_adaptive_average_pool_matches_reference,
                         test_adaptive.adaptive_cases(FLOAT_TYPES)),
    "roi": (test_roi.test_roi_pool_matches_reference, test_roi.roi_cases()),
    "fractional_max": (test_fractional.test_fractional_max_pool_matches_reference, test_fractional.fractional_cases()),
    "fractional_max_grad": (test_fractional.test_fractional_max_pool_grad_matches_reference,
                            test_fractional.fractional_grad_cases()),
    "lp_pool_grad": (test_grad_lp_roi.test_lp_pool_grad_matches_reference, test_grad_lp_roi.lp_grad_cases()),
    "roi_pool_grad": (test_grad_lp_roi.test_roi_pool_grad_matches_reference, test_grad_lp_roi.roi_grad_cases()),
    "quantized_average": (test_quantized.test_quantized_average_pooling_matches_the_reference, test_quantized.cases()),
    # long windows, bins and planes, split and merged (tests/test_long_windows.py)
    "long_max_pool": (test_long_windows.test_long_max_pooling, test_long_windows.long_max_cases()),
    "long_average_lp": (test_long_windows.test_long_average_and_lp_pooling, test_long_windows.long_average_cases()),
    "long_gradients": (test_long_windows.test_long_gradients, test_long_windows.long_gradient_cases()),
    "long_adaptive": (test_long_windows.test_long_adaptive_pooling, test_long_windows.long_bins()),
    "long_adaptive_gradients": (test_long_windows.test_long_adaptive_gradients, test_long_windows.long_bins()),
    "long_roi": (test_long_windows.test_roi_pooling_over_large_bins, test_long_windows.long_roi_cases()),
}


def _fuzz(name):
    test, strategy = TESTS[name]

    @FUZZ_SETTINGS
    @given(case=strategy)
    def fuzz(device, case):
        test.hypothesis.inner_test(device, case)

    fuzz.__name__ = f"test_fuzz_{name}"
    return fuzz


for _name in TESTS:
    globals()[f"test_fuzz_{_name}"] = _fuzz(_name)
