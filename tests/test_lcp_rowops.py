"""lcp/rowops.py: the vectorisable elimination row update gives numpy's elementwise bits."""

import numpy as np
from numba import njit

from mbsim.simcore.lcp.rowops import sub_scaled_row


@njit(cache=True)
def _update(A, i, k, f, start, stop):
    sub_scaled_row(A, i, k, f, start, stop)


def test_row_update_equals_numpys_product_then_difference_bit_for_bit():
    rng = np.random.default_rng(7)
    for n in (1, 3, 8, 17, 54, 121):  # below, at and past a SIMD register's width
        for _ in range(20):
            A = rng.standard_normal((n, n)) * 10.0 ** rng.integers(-8, 8, (n, n))
            i, k = rng.choice(n, 2, replace=n < 2) if n > 1 else (0, 0)
            if i == k:
                continue
            start = int(rng.integers(0, n + 1))
            stop = int(rng.integers(start, n + 1))
            f = float(rng.standard_normal() * 10.0 ** rng.integers(-5, 5))
            want = A.copy()
            want[i, start:stop] = A[i, start:stop] - f * A[k, start:stop]
            got = A.copy()
            _update(got, i, k, f, start, stop)
            assert np.array_equal(got, want)  # untouched outside row i's [start, stop)


def test_an_empty_range_changes_nothing():
    A = np.arange(12.0).reshape(3, 4)
    B = A.copy()
    _update(B, 0, 1, 2.0, 3, 3)
    assert np.array_equal(A, B)
