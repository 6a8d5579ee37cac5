"""Minimum-norm least squares by a compiled complete orthogonal decomposition (the polish).

The least-change polish of the fallback chain (chain._polish) solves A dz = r in the
minimum-norm least-squares sense, A = M_SS the active-set block of a contact LCP: a few to a
few hundred rows, often exactly singular (redundant contacts: 16 contacts on one plate give a
72 x 72 block of rank 6).

Complete orthogonal decomposition (LAPACK's xGELSY route, Golub & Van Loan Sec. 5.4.2):

1. Householder QR with column pivoting, A P = Q [[R11, R12], [0, R22]], the column of largest
   remaining norm first; it stops at the rank r, the first step whose largest remaining
   column norm is <= rcond |R_00| (R22 counts as zero);
2. [R11 R12] = [R2^T 0] Z^T by a Householder QR of its transpose;
3. the minimum-norm solution x = P Z [R2^-T (Q^T r)_1:r; 0].

At full column rank (r = n: no R12, the usual active-set block of a few resting contacts)
the least-squares solution is unique and step 2 is skipped: x = P R11^-1 (Q^T r)_1:n by back
substitution, the same x as steps 2-3 (Z R2^-T = R11^-1 when R11 = R2^T Z^T) up to rounding,
at about 60 % of the cost (the A1's four feet, a 12 x 12 block: cod_factor 1.8 us instead
of 3.1, least_change_kernel 2.9 instead of 4.4, CPU on this machine). Only rank-deficient
blocks take Z.

The rank rule reads the pivoted R's diagonal instead of the singular values of gelsd (SVD,
rank = #{s_i > rcond s_max}); the two agree whenever the spectrum has a gap around the
threshold, as the blocks of redundant contacts have (rounding-level null singular values,
~1e-16 s_max, against rcond = 1e-12; tests/test_lcp_lstsq.py compares with gelsd). It costs
O(n^2 r), so a low-rank block is cheap, and it is written as loops that numba compiles in
about a second, where LAPACK through numba compiles its bindings for ~15 s on first use and
the OpenBLAS gelsd/gesdd calls it replaced took 80-300 us for the 6 x 6 to 20 x 20 blocks of
a step on this machine (docs/results.md "Contact step overhead").

The reflections and the column norms run row by row over A's rows (row-major), all columns
at once, on row slices: numba vectorises those loops, where the column-by-column loops read
A with a stride and indexed from k + 1 did not. Every entry still gets the same operations
in the same order (each column's sums over i ascending; no fused multiply-add), so the
factors are the same bits; the box pile's ~55-row active sets (rank 30) factor ~2.5x faster
(docs/results.md, "box-pile: the polish's factorisation vectorised"). The remaining columns'
norms after a reflection are summed in its update pass, as each row is done
(:func:`_reflect_norms`; same sums, same order: ~5 % of the factorisation, docs/results.md
"... (issue 15, branch wguess)").
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.lcp.rowops import sub_matvec_into

EPS = float(np.finfo(np.float64).eps)


@njit(cache=True, inline="always")
def _reflector_products(A, k, rows, cols, s, v, beta, d):
    """The Householder reflector H = I - beta_k v_k v_k^T that maps column k of A (rows x
    cols, entries k.. of it, s = their squared norm) to (alpha, 0, ...), alpha = -sign(A_kk)
    sqrt(s): stores v_k, beta_k and the column's image, and leaves in d[k+1:cols] the
    products d_j = beta_k v_k^T A_j of the columns to its right, summed row by row for all
    columns at once (A is row-major; each d_j adds the same terms in the same order, i
    ascending, as a column-by-column loop, so the same bits)."""
    norm = np.sqrt(s)
    x0 = A[k, k]
    alpha = -norm if x0 >= 0.0 else norm
    for i in range(rows):
        v[k, i] = 0.0
    v[k, k] = x0 - alpha
    for i in range(k + 1, rows):
        v[k, i] = A[i, k]
    vn = v[k, k] * v[k, k] + (s - x0 * x0)
    b = 2.0 / vn if vn > 0.0 else 0.0
    beta[k] = b
    A[k, k] = alpha
    for i in range(k + 1, rows):
        A[i, k] = 0.0
    # on row slices with 0-based indices: numba's loops over them vectorise (~3x faster on
    # a 55-row block than indexing A[i, j] from k + 1, whose negative-index checks stop LLVM)
    k1 = k + 1
    wd = cols - k1
    dk = d[k1:cols]
    for j in range(wd):
        dk[j] = 0.0
    for i in range(k, rows):
        vi = v[k, i]
        ai = A[i, k1:cols]
        for j in range(wd):
            dk[j] += vi * ai[j]
    for j in range(wd):
        dk[j] *= b


@njit(cache=True, inline="always")
def _reflect(A, k, rows, cols, s, v, beta, d):
    """Apply the reflector of :func:`_reflector_products` to column k and to columns
    k+1..cols-1 (A_j -= d_j v_k, d (cols,) work)."""
    _reflector_products(A, k, rows, cols, s, v, beta, d)
    k1 = k + 1
    wd = cols - k1
    dk = d[k1:cols]
    for i in range(k, rows):
        vi = v[k, i]
        ai = A[i, k1:cols]
        for j in range(wd):
            ai[j] -= dk[j] * vi


@njit(cache=True, inline="always")
def _reflect_norms(A, k, rows, cols, s, v, beta, d, nrm):
    """:func:`_reflect` that also leaves in nrm[k+1:cols] the squared norms of columns
    k+1.. over rows k+1.. of the image, each summed i ascending as the row pass it saves
    (the same bits): added as each row's update is done."""
    _reflector_products(A, k, rows, cols, s, v, beta, d)
    k1 = k + 1
    wd = cols - k1
    dk = d[k1:cols]
    nk = nrm[k1:cols]
    for j in range(wd):
        nk[j] = 0.0
    ak = A[k, k1:cols]
    vk = v[k, k]
    for j in range(wd):
        ak[j] -= dk[j] * vk
    for i in range(k1, rows):
        vi = v[k, i]
        ai = A[i, k1:cols]
        for j in range(wd):
            x = ai[j] - dk[j] * vi
            ai[j] = x
            nk[j] += x * x


@njit(cache=True)
def cod_factor(A, rcond, R, perm, hv, hbeta, T, zv, zbeta):
    """Steps 1-2 of the module docstring. R (m x n) gets the pivoted triangular factor,
    perm (n,) the column order, hv/hbeta (min(m, n) x m, (min(m, n),)) the Householder
    vectors of Q, T (n x r) work, zv/zbeta the Householder vectors of Z and R2 (in T's
    upper triangle; untouched at full column rank r = n, where :func:`cod_solve` solves
    with R11 itself). Returns the rank r."""
    n = A.shape[1]
    return cod_factor_into(A, rcond, R, perm, hv, hbeta, T, zv, zbeta, np.empty(n), np.empty(n))


@njit(cache=True)
def cod_factor_into(A, rcond, R, perm, hv, hbeta, T, zv, zbeta, norms, dwork):
    """:func:`cod_factor` with its work arrays given (no allocation; the compiled
    joint-limit step's workspace, limit_step.py, and the warm guess's, warm.py): ``norms``
    (n,) the column norms, ``dwork`` (n,) the reflections' products."""
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            R[i, j] = A[i, j]
    for j in range(n):
        perm[j] = j
        norms[j] = 0.0
    for i in range(m):  # row by row, each column's sum i ascending
        ri = R[i]
        for j in range(n):
            norms[j] += ri[j] * ri[j]
    kmax = min(m, n)
    rank = 0
    r00 = 0.0
    for k in range(kmax):
        p = k
        for j in range(k + 1, n):
            if norms[j] > norms[p]:
                p = j
        if p != k:
            for i in range(m):
                t = R[i, k]
                R[i, k] = R[i, p]
                R[i, p] = t
            t = norms[k]
            norms[k] = norms[p]
            norms[p] = t
            ti = perm[k]
            perm[k] = perm[p]
            perm[p] = ti
        s = 0.0  # the exact norm of the pivot column (norms[] may carry downdate rounding)
        for i in range(k, m):
            s += R[i, k] * R[i, k]
        norm = np.sqrt(s)
        if k == 0:
            r00 = norm
        if not norm > rcond * r00 or norm == 0.0:
            break
        # the reflection, and the remaining columns' norms over rows k+1.. summed as each
        # row is updated (each sum i ascending as a column loop's: same bits)
        _reflect_norms(R, k, m, n, s, hv, hbeta, dwork, norms)
        rank = k + 1
    r = rank
    if r == n:
        return r  # full column rank: no step 2 (module docstring)
    # step 2: T = [R11 R12]^T (n x r) = Z [R2; 0]
    for j in range(n):
        for i in range(r):
            T[j, i] = R[i, j]
    for k in range(r):
        s = 0.0
        for i in range(k, n):
            s += T[i, k] * T[i, k]
        _reflect(T, k, n, r, s, zv, zbeta, norms)  # norms: free after step 1
    return r


@njit(cache=True, inline="always")
def _reflect_vector(v, beta, k, rows, x):
    """x <- (I - beta_k v_k v_k^T) x, the k-th stored reflector on entries k..rows-1 of x."""
    d = 0.0
    for i in range(k, rows):
        d += v[k, i] * x[i]
    d *= beta[k]
    for i in range(k, rows):
        x[i] -= d * v[k, i]


@njit(cache=True)
def cod_solve(r, perm, hv, hbeta, R, T, zv, zbeta, b, out):
    """Step 3: out = the minimum-norm least-squares solution for right-hand side b (m,); at
    full column rank (r = n) the back substitution with R11 (R the pivoted factor)."""
    cod_solve_into(r, perm, hv, hbeta, R, T, zv, zbeta, b, out, np.empty(b.shape[0]),
                   np.empty(out.shape[0]))  # fmt: skip


@njit(cache=True)
def cod_solve_into(r, perm, hv, hbeta, R, T, zv, zbeta, b, out, c, y):
    """:func:`cod_solve` with its work arrays c (m,) and y (n,) given (no allocation)."""
    m = b.shape[0]
    n = out.shape[0]
    for i in range(m):
        c[i] = b[i]
    for k in range(r):  # c = Q^T b
        _reflect_vector(hv, hbeta, k, m, c)
    for i in range(n):
        y[i] = 0.0
    if r == n:  # R11 y = c[:n], R11 upper triangular
        for i in range(n - 1, -1, -1):
            s = c[i]
            for k in range(i + 1, n):
                s -= R[i, k] * y[k]
            y[i] = s / R[i, i]
    else:
        for i in range(r):  # R2^T w = c[:r], R2^T lower triangular (R2 in T's upper triangle)
            s = c[i]
            for k in range(i):
                s -= T[k, i] * y[k]
            y[i] = s / T[i, i]
        for k in range(r - 1, -1, -1):  # y = Z [w; 0]
            _reflect_vector(zv, zbeta, k, n, y)
    for j in range(n):
        out[perm[j]] = y[j]


@njit(cache=True)
def least_change_kernel(A, rhs, z, rcond, passes, out):
    """out = z + dz, ``passes`` times: dz the minimum-norm least-squares solution of
    A dz = rhs - A z (module docstring). Returns False if the input or result is not finite."""
    m, n = A.shape
    kmax = min(m, n)
    return least_change_into(
        A, rhs, z, rcond, passes, out, np.empty((m, n)), np.empty(n, dtype=np.int64),
        np.empty((kmax, m)), np.empty(kmax), np.empty((n, kmax)), np.empty((kmax, n)),
        np.empty(kmax), np.empty(m), np.empty(n), np.empty(n), np.empty(m), np.empty(n),
        np.empty(n),
    )  # fmt: skip


@njit(cache=True)
def least_change_into(
    A, rhs, z, rcond, passes, out, R, perm, hv, hbeta, T, zv, zbeta, res, dz, norms, c, y, dwork
):  # fmt: skip
    """:func:`least_change_kernel` in the caller's work arrays (no allocation): R (m, n),
    perm (n,) int, hv (k, m), hbeta (k,), T (n, k), zv (k, n), zbeta (k,) with k = min(m,
    n), res (m,), dz (n,), norms (n,), c (m,), y (n,), dwork (n,)."""
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            if not np.isfinite(A[i, j]):
                return False
    rank = cod_factor_into(A, rcond, R, perm, hv, hbeta, T, zv, zbeta, norms, dwork)
    for i in range(n):
        out[i] = z[i]
    for _ in range(passes):
        sub_matvec_into(A, rhs, out, res)  # res = rhs - A out
        cod_solve_into(rank, perm, hv, hbeta, R, T, zv, zbeta, res, dz, c, y)
        for i in range(n):
            out[i] += dz[i]
    for i in range(n):
        if not np.isfinite(out[i]):
            return False
    return True


def least_change(A: np.ndarray, rhs: np.ndarray, z: np.ndarray, rcond: float, passes: int = 2):
    """z + the minimum-norm dz with A dz = rhs - A z, ``passes`` times (the second pass
    removes the rounding of the first); None if A or the result is not finite."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    out = np.empty(A.shape[1])
    ok = least_change_kernel(
        A, np.ascontiguousarray(rhs, dtype=np.float64), np.ascontiguousarray(z, dtype=np.float64),
        float(rcond), int(passes), out,
    )  # fmt: skip
    return out if ok else None


@njit(cache=True)
def active_set_error(A, rhs, c):
    """(e, bound): e = max |A c - rhs| and the rounding level it is judged against,
    16 n eps (||A||_inf ||c||_inf + ||rhs||_inf) (chain._polish)."""
    m, n = A.shape
    e = 0.0
    anorm = 0.0
    for i in range(m):
        s = -rhs[i]
        a = 0.0
        for k in range(n):
            s += A[i, k] * c[k]
            a += abs(A[i, k])
        e = max(e, abs(s))
        anorm = max(anorm, a)
    cn = 0.0
    for k in range(n):
        cn = max(cn, abs(c[k]))
    rn = 0.0
    for i in range(m):
        rn = max(rn, abs(rhs[i]))
    return e, 16.0 * n * EPS * (anorm * cn + rn)


@njit(cache=True)
def active_set_work(ns):
    """(float64, int64) work entries :func:`active_set_least_change_into` needs for an active
    set of ns rows."""
    return 5 * ns * ns + 10 * ns, ns


@njit(cache=True)
def active_set_least_change(M, q, z, S, rcond, out):
    """The least-change candidate of chain._polish on the active set S (sorted indices):
    out = z_S + the minimum-norm dz of M_SS dz = -q_S - M_SS z_S, two passes. Returns
    (ok, e, bound) of :func:`active_set_error`; ok False when the candidate is not finite."""
    ns = S.shape[0]
    nf, ni = active_set_work(ns)
    return active_set_least_change_into(
        M, q, z, S, rcond, out, np.empty(nf), np.empty(ni, dtype=np.int64)
    )


@njit(cache=True)
def active_set_least_change_into(M, q, z, S, rcond, out, buf, ibuf):
    """:func:`active_set_least_change` in the caller's work buffers (no allocation): buf
    (float64) and ibuf (int64) of at least :func:`active_set_work` (len(S)) entries."""
    ns = S.shape[0]
    nn = ns * ns
    A = buf[0:nn].reshape((ns, ns))
    R = buf[nn : 2 * nn].reshape((ns, ns))
    hv = buf[2 * nn : 3 * nn].reshape((ns, ns))
    T = buf[3 * nn : 4 * nn].reshape((ns, ns))
    zv = buf[4 * nn : 5 * nn].reshape((ns, ns))
    o = 5 * nn
    rhs, zs, hbeta, zbeta = (
        buf[o : o + ns],
        buf[o + ns : o + 2 * ns],
        buf[o + 2 * ns : o + 3 * ns],
        buf[o + 3 * ns : o + 4 * ns],
    )
    o += 4 * ns
    res, dz, norms, c, y, dwork = (
        buf[o : o + ns],
        buf[o + ns : o + 2 * ns],
        buf[o + 2 * ns : o + 3 * ns],
        buf[o + 3 * ns : o + 4 * ns],
        buf[o + 4 * ns : o + 5 * ns],
        buf[o + 5 * ns : o + 6 * ns],
    )
    perm = ibuf[0:ns]
    for a in range(ns):
        rhs[a] = -q[S[a]]
        zs[a] = z[S[a]]
        for b in range(ns):
            A[a, b] = M[S[a], S[b]]
    if not least_change_into(
        A, rhs, zs, rcond, 2, out, R, perm, hv, hbeta, T, zv, zbeta, res, dz, norms, c, y, dwork
    ):
        return False, np.inf, 0.0
    e, bound = active_set_error(A, rhs, out)
    return True, e, bound


@njit(cache=True)
def active_set_least_change_one(M, q, z, rcond):
    """:func:`active_set_least_change` on the active set {0} of a one-row LCP (M (1, 1), q
    (1,), z (1,)), written out: the reflector of :func:`cod_factor_into` on one entry a (H =
    -1 up to rounding, R = -sign(a) |a|), two passes of dz = H r / R with r = -q - a z, and
    the error of :func:`active_set_error`, with the operations of those functions in their
    order (no fused multiply-add in this module), so the same bits without their ~15 calls
    and 15 work arrays. Returns (ok, e, bound, the candidate z_0)."""
    a = M[0, 0]
    rhs = -q[0]
    if not np.isfinite(a):
        return False, np.inf, 0.0, 0.0
    s = 0.0 + a * a
    norm = np.sqrt(s)
    rank = 0
    alpha = vv = beta = 0.0
    if not (not norm > rcond * norm or norm == 0.0):  # the rank test with r00 = norm
        alpha = -norm if a >= 0.0 else norm  # _reflect on column 0
        vv = a - alpha
        vn = vv * vv + (s - a * a)
        beta = 2.0 / vn if vn > 0.0 else 0.0
        rank = 1
    out = z[0]
    for _ in range(2):
        c = rhs - a * out
        dz = 0.0
        if rank == 1:  # cod_solve_into: c = H c, then R11 y = c
            d = 0.0 + vv * c
            d *= beta
            c -= d * vv
            dz = c / alpha
        out += dz
    if not np.isfinite(out):
        return False, np.inf, 0.0, out
    e = max(0.0, abs(-rhs + a * out))
    bound = 16.0 * 1 * EPS * (max(0.0, 0.0 + abs(a)) * max(0.0, abs(out)) + max(0.0, abs(rhs)))
    return True, e, bound, out
