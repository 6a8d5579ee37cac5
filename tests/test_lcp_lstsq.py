"""The compiled minimum-norm least squares of lcp/lstsq.py (the chain's least-change polish)
against LAPACK's gelsd (scipy.linalg.lstsq, SVD), the dense reference.

Tolerance: 1e-10 relative to the solution's size, for well-conditioned and exactly
rank-deficient matrices (singular values of the kept part in [1, 10], so rounding of 1e-16
grows to at most ~1e-13 in either method)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from numba import njit, types

from mbsim.simcore.lcp import lstsq
from mbsim.simcore.lcp.lstsq import (
    SMALL_SET,
    cod_factor_into,
    cod_solve_into,
    least_change,
    least_change_kernel,
)

RCOND = 1e-12


def rank_deficient(rng, n, rank):
    """An n x n matrix of exactly the given rank, singular values in [1, 10]."""
    U, _ = np.linalg.qr(rng.normal(size=(n, n)))
    V, _ = np.linalg.qr(rng.normal(size=(n, n)))
    s = np.zeros(n)
    s[:rank] = rng.uniform(1.0, 10.0, rank)
    return (U * s) @ V.T


CASES = [(1, 1), (5, 5), (12, 6), (18, 9), (24, 24), (40, 17), (72, 6)]


@pytest.mark.parametrize(("n", "rank"), CASES)
def test_least_change_is_gelsd_minimum_norm(n, rank):
    rng = np.random.default_rng(100 + n)
    A = rank_deficient(rng, n, rank)
    rhs = rng.normal(size=n)
    z = rng.normal(size=n)
    got = least_change(A, rhs, z, RCOND, passes=1)
    dz = scipy.linalg.lstsq(A, rhs - A @ z, cond=RCOND, lapack_driver="gelsd")[0]
    want = z + dz
    np.testing.assert_allclose(got, want, atol=1e-10 * np.abs(want).max())


def test_least_change_of_zero_matrix_changes_nothing_and_refuses_nan():
    z = np.array([1.0, -2.0])
    np.testing.assert_array_equal(least_change(np.zeros((2, 2)), np.ones(2), z, RCOND), z)
    assert least_change(np.array([[np.nan, 0.0], [0.0, 1.0]]), np.ones(2), z, RCOND) is None


def test_least_change_of_a_non_square_block():
    rng = np.random.default_rng(7)
    A = rng.normal(size=(9, 4)) @ rng.normal(size=(4, 6))  # 9 x 6 of rank 4
    rhs, z = rng.normal(size=9), np.zeros(6)
    want = scipy.linalg.lstsq(A, rhs, cond=RCOND, lapack_driver="gelsd")[0]
    np.testing.assert_allclose(least_change(A, rhs, z, RCOND, passes=1), want, atol=1e-10)


@njit
def _vector_least_change(A, rhs, z, rcond, passes, out):
    """least_change_into's vectorised route (cod_factor_into, cod_solve_into) at any size."""
    m, n = A.shape
    k = min(m, n)
    R, perm = np.empty((m, n)), np.empty(n, dtype=np.int64)
    hv, hbeta, T, zv, zbeta = (
        np.empty((k, m)),
        np.empty(k),
        np.empty((n, k)),
        np.empty((k, n)),
        np.empty(k),
    )
    rank = cod_factor_into(A, rcond, R, perm, hv, hbeta, T, zv, zbeta, np.empty(n), np.empty(n))
    res, dz = np.empty(m), np.empty(n)
    for i in range(n):
        out[i] = z[i]
    for _ in range(passes):
        for i in range(m):
            acc = rhs[i]
            for j in range(n):
                acc -= A[i, j] * out[j]
            res[i] = acc
        cod_solve_into(rank, perm, hv, hbeta, R, T, zv, zbeta, res, dz, np.empty(m), np.empty(n))
        for i in range(n):
            out[i] += dz[i]


def test_small_systems_take_the_same_bits_as_the_vectorised_decomposition():
    """least_change_into's scalar route for small systems (lstsq.SMALL_SET) gives the same bits
    as the row-sliced vectorised one: square, rectangular, rank-deficient, zero rows."""
    rng = np.random.default_rng(7)
    for trial in range(600):
        m = int(rng.integers(1, SMALL_SET + 1))
        n = m if trial % 3 else int(rng.integers(1, SMALL_SET + 1))
        r = int(rng.integers(0, min(m, n) + 1))
        A = rng.standard_normal((m, r)) @ rng.standard_normal((r, n))
        if trial % 5 == 0:
            A[rng.integers(0, m)] = 0.0
        if trial % 7 == 0:
            A = A + A.T if m == n else A
        rhs, z = rng.standard_normal(m), rng.standard_normal(n) * (trial % 2)
        got = least_change_kernel(A, rhs, z, 1e-12, 2, out := np.empty(n))
        want = np.empty(n)
        _vector_least_change(A, rhs, z, 1e-12, 2, want)
        assert got
        assert np.array_equal(out, want), (trial, m, n, r)


def test_the_vector_route_is_called_by_address_with_its_exact_return_type():
    """Above SMALL_SET least_change_into calls _least_change_large by its address with the
    return type given (native_call.native): it must be the one numba infers, or the call
    would read a wrong value."""
    rng = np.random.default_rng(3)
    n = SMALL_SET + 4
    A = rank_deficient(rng, n, n - 3)
    rhs = A @ rng.standard_normal(n)
    out = least_change(A, rhs, np.zeros(n), RCOND)
    assert out is not None
    assert np.abs(A @ out - rhs).max() < 1e-9 * np.abs(rhs).max()
    sigs = lstsq._least_change_large.nopython_signatures
    assert sigs and all(s.return_type == types.boolean for s in sigs)
