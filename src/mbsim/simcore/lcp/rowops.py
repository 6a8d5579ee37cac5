"""Row operations of the dense LCP kernels, written so that LLVM vectorises them.

numba reads a signed index ``j`` of an array as ``j if j >= 0 else j + n`` (negative indices
count from the end). Where LLVM cannot prove ``j >= 0`` -- a loop that starts at ``k + 1``
rather than at 0, as every elimination step's does -- that select stays in the loop and stops
the loop vectoriser: the Gaussian elimination's row update then runs one double at a time.
Unsigned indices (``np.uint64``) carry no such select, and the same loop runs on SIMD
registers (measured, /tmp: a 54 x 54 LU 25.9 -> 12.1 us, 120 x 120 252 -> 104 us).

Bit for bit: each element still gets one product and one difference, in the same order as the
scalar loop (numba's default floating-point flags allow no contraction into a fused
multiply-add and no reassociation; a packed product or difference rounds each lane exactly as
the scalar instruction does).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def sub_scaled_row(A, i, k, f, start, stop):
    """A[i, j] -= f * A[k, j] for start <= j < stop (0 <= start; rows i != k of a 2-D array):
    the row update of one elimination step."""
    ui = np.uint64(i)
    uk = np.uint64(k)
    for j in range(np.uint64(start), np.uint64(stop)):
        A[ui, j] -= f * A[uk, j]


# Row reductions (sums over a row's columns, j ascending) are one dependency chain each: every
# addition waits for the one before it (~3-4 cycles), and the sum cannot be split into lanes
# without reordering its additions (other bits). Rows are independent, though: the functions
# below run four rows' chains side by side (each row's additions in its own order: the same
# bits), so the additions of four rows overlap in the pipeline and each loaded x[j] serves
# four rows. Measured (/tmp, docs/results.md "bpile4"): ||M||_inf of a 120 x 120 block
# 16.1 -> 7.0 us.


@njit(cache=True)
def inf_norm(A):
    """max_i sum_j |A[i, j]| (the induced infinity norm), each row summed j ascending from 0.0
    and the rows' maximum taken i ascending, as the one-row-at-a-time loop does."""
    n, m = A.shape
    out = 0.0
    i = 0
    while i + 4 <= n:
        s0 = s1 = s2 = s3 = 0.0
        for j in range(m):
            s0 += abs(A[i, j])
            s1 += abs(A[i + 1, j])
            s2 += abs(A[i + 2, j])
            s3 += abs(A[i + 3, j])
        out = max(out, s0)
        out = max(out, s1)
        out = max(out, s2)
        out = max(out, s3)
        i += 4
    while i < n:
        s = 0.0
        for j in range(m):
            s += abs(A[i, j])
        out = max(out, s)
        i += 1
    return out


@njit(cache=True, inline="always")
def sub_matvec_into(K, b, y, r):
    """r = b - K y for K (m, n): r_i = b_i, then r_i -= K_ij y_j for j ascending (each row's
    chain as the one-row loop's; four rows at once)."""
    m, n = K.shape
    i = 0
    while i + 4 <= m:
        s0 = b[i]
        s1 = b[i + 1]
        s2 = b[i + 2]
        s3 = b[i + 3]
        for j in range(n):
            yj = y[j]
            s0 -= K[i, j] * yj
            s1 -= K[i + 1, j] * yj
            s2 -= K[i + 2, j] * yj
            s3 -= K[i + 3, j] * yj
        r[i] = s0
        r[i + 1] = s1
        r[i + 2] = s2
        r[i + 3] = s3
        i += 4
    while i < m:
        s = b[i]
        for j in range(n):
            s -= K[i, j] * y[j]
        r[i] = s
        i += 1


@njit(cache=True, inline="always")
def matvec_into(A, x, u):
    """u = A x for A (m, n): u_i = 0.0, then u_i += A_ij x_j for j ascending (four rows at
    once)."""
    m, n = A.shape
    i = 0
    while i + 4 <= m:
        s0 = s1 = s2 = s3 = 0.0
        for j in range(n):
            xj = x[j]
            s0 += A[i, j] * xj
            s1 += A[i + 1, j] * xj
            s2 += A[i + 2, j] * xj
            s3 += A[i + 3, j] * xj
        u[i] = s0
        u[i + 1] = s1
        u[i + 2] = s2
        u[i + 3] = s3
        i += 4
    while i < m:
        s = 0.0
        for j in range(n):
            s += A[i, j] * x[j]
        u[i] = s
        i += 1


@njit(cache=True, inline="always")
def unit_lower_solve(LU, t):
    """t <- L^-1 t in place, L the unit lower triangle of LU (m, m): t_i -= L_ij t_j for j
    ascending, as the row-by-row forward substitution does; four rows at once (their common
    columns j < i first, then the triangle among them in order)."""
    m = t.shape[0]
    i = 0
    while i + 4 <= m:
        s0 = t[i]
        s1 = t[i + 1]
        s2 = t[i + 2]
        s3 = t[i + 3]
        for j in range(i):
            tj = t[j]
            s0 -= LU[i, j] * tj
            s1 -= LU[i + 1, j] * tj
            s2 -= LU[i + 2, j] * tj
            s3 -= LU[i + 3, j] * tj
        t[i] = s0
        s1 -= LU[i + 1, i] * s0
        s2 -= LU[i + 2, i] * s0
        s3 -= LU[i + 3, i] * s0
        t[i + 1] = s1
        s2 -= LU[i + 2, i + 1] * s1
        s3 -= LU[i + 3, i + 1] * s1
        t[i + 2] = s2
        s3 -= LU[i + 3, i + 2] * s2
        t[i + 3] = s3
        i += 4
    while i < m:
        s = t[i]
        for j in range(i):
            s -= LU[i, j] * t[j]
        t[i] = s
        i += 1


@njit(cache=True, inline="always")
def gather_dot_into(M, rows, cols, x, base, out):
    """out[i] = base[i] + sum_a M[i, cols[a]] x[cols[a]] for each i in ``rows``, the sum from
    base[i] with a ascending (the rows of w = M z + q outside a set whose z is held on
    ``cols``); four rows at once, each row's chain as the one-row loop's. ``out`` must not be
    ``x``."""
    nr = rows.shape[0]
    nc = cols.shape[0]
    t = 0
    while t + 4 <= nr:
        i0 = rows[t]
        i1 = rows[t + 1]
        i2 = rows[t + 2]
        i3 = rows[t + 3]
        s0 = base[i0]
        s1 = base[i1]
        s2 = base[i2]
        s3 = base[i3]
        for a in range(nc):
            c = cols[a]
            xc = x[c]
            s0 += M[i0, c] * xc
            s1 += M[i1, c] * xc
            s2 += M[i2, c] * xc
            s3 += M[i3, c] * xc
        out[i0] = s0
        out[i1] = s1
        out[i2] = s2
        out[i3] = s3
        t += 4
    while t < nr:
        i = rows[t]
        s = base[i]
        for a in range(nc):
            s += M[i, cols[a]] * x[cols[a]]
        out[i] = s
        t += 1
