"""lcp/rowops.py: the vectorisable elimination row update gives numpy's elementwise bits."""

import numpy as np
from numba import njit

from mbsim.simcore.lcp.rowops import (
    gather_dot_into,
    inf_norm,
    matvec_into,
    sub_matvec_into,
    sub_scaled_row,
    unit_lower_solve,
)


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


# The row reductions run four rows' sums side by side; each row's additions must stay in the
# one-row loop's order. The references below are those loops, run by Python on floats
# (IEEE double, one rounding per operation, no fused multiply-add): independent of numba.


def _rows(rng, m, n):
    return rng.standard_normal((m, n)) * 10.0 ** rng.integers(-8, 8, (m, n))


def _inf_norm_ref(A):
    out = 0.0
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += abs(float(A[i, j]))
        out = max(out, s)
    return out


def _sub_matvec_ref(K, b, y):
    r = np.empty(K.shape[0])
    for i in range(K.shape[0]):
        s = float(b[i])
        for j in range(K.shape[1]):
            s -= float(K[i, j]) * float(y[j])
        r[i] = s
    return r


def _matvec_ref(A, x):
    u = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += float(A[i, j]) * float(x[j])
        u[i] = s
    return u


def _unit_lower_ref(LU, t):
    t = t.copy()
    for i in range(t.shape[0]):
        s = float(t[i])
        for j in range(i):
            s -= float(LU[i, j]) * float(t[j])
        t[i] = s
    return t


@njit(cache=True)
def _sub_matvec(K, b, y, r):
    sub_matvec_into(K, b, y, r)


@njit(cache=True)
def _matvec(A, x, u):
    matvec_into(A, x, u)


@njit(cache=True)
def _unit_lower(LU, t):
    unit_lower_solve(LU, t)


SIZES = ((1, 1), (3, 3), (4, 4), (5, 7), (8, 8), (9, 4), (17, 17), (54, 54), (121, 30))


def test_row_reductions_equal_the_one_row_loops_bit_for_bit():
    rng = np.random.default_rng(11)
    for m, n in SIZES:
        for _ in range(5):
            A = _rows(rng, m, n)
            x = _rows(rng, 1, n)[0]
            b = _rows(rng, 1, m)[0]
            assert inf_norm(A) == _inf_norm_ref(A)
            r = np.empty(m)
            _sub_matvec(A, b, x, r)
            assert np.array_equal(r, _sub_matvec_ref(A, b, x))
            u = np.empty(m)
            _matvec(A, x, u)
            assert np.array_equal(u, _matvec_ref(A, x))
            if m == n:
                t = b.copy()
                _unit_lower(A, t)
                assert np.array_equal(t, _unit_lower_ref(A, b))


def test_inf_norm_of_an_empty_matrix_and_nan():
    assert inf_norm(np.zeros((0, 3))) == 0.0
    assert inf_norm(np.zeros((3, 0))) == 0.0
    A = np.ones((6, 6))
    A[5, 2] = np.nan
    assert inf_norm(A) == _inf_norm_ref(A) == 6.0  # max(6.0, nan) keeps 6.0 (the loop's rule)


@njit(cache=True)
def _gather(M, rows, cols, x, base, out):
    gather_dot_into(M, rows, cols, x, base, out)


def test_gathered_rows_of_w_equal_the_one_row_loop_bit_for_bit():
    rng = np.random.default_rng(13)
    for n in (1, 4, 7, 30, 120):
        for _ in range(5):
            M = _rows(rng, n, n)
            x = _rows(rng, 1, n)[0]
            q = _rows(rng, 1, n)[0]
            inside = rng.random(n) < 0.5
            cols = np.flatnonzero(inside)
            rows = np.flatnonzero(~inside)
            want = np.full(n, -1.0)
            for i in rows:
                s = float(q[i])
                for c in cols:
                    s += float(M[i, c]) * float(x[c])
                want[i] = s
            got = np.full(n, -1.0)
            _gather(M, rows, cols, x, q, got)
            assert np.array_equal(got, want)  # rows in ``cols`` untouched
