"""The least-norm first candidate of a two- or three-row LCP on one flat work buffer.

The joint-limit step (limit_step.py) solves, on most of its steps with two or three rows
(a robot on two or three stops), the first candidate of ``chain.lemke_regularised``:
lexicographic Lemke on M + delta I (delta = LEAST_NORM_DELTA ||M||_inf), the least-change
polish on M's active set, the answer verified on (M, q). limit_step's ``_solve_direct`` does
it with the general kernels of lemke.py and lstsq.py, each on views of the step's work arrays
(~20 calls, ~15 reshaped views with their reference counts): ~3.3 us for a 2 x 2 against the
~0.1 us of arithmetic in it (docs/results.md, "pfplan" and "lim3"). :func:`solve_small_into`
is that same candidate written out for n <= SMALL_MAX rows on indices into one flat buffer:

* the Lemke path (``lemke.lemke_once_into``: ``lemke_start``, ``_pivot``, ``_column``,
  ``_ratio_test`` with ``_lexmin``, ``lemke_finish``'s ``_refactor`` without inversion) and
  the polish (``lstsq.active_set_least_change_into``: ``cod_factor_into``'s pivoted
  Householder QR, two passes of ``cod_solve_into``, ``active_set_error``) with the same
  operations in the same order (none of them is compiled with fastmath, so the same bits);
* the three kernels compiled with fastmath (reassociation and contraction:
  ``lemke._entering_column``, ``lemke._refine``, ``problem._verify_kernel``) are not written
  out but called, on C-contiguous views (``spatial.c_view``) of the same types as the general
  path's, so the same compiled code runs on the same numbers;
* every array borrowed (``spatial.borrowed``): no reference counts, no allocation.

It decides only the usual case and hands everything else back (``False``; the caller then
runs the general path from the start): an M that splits into islands, a path that does not
end solved within REFACTOR_EVERY pivots (a ray, a singular basis, refinement that does not
converge), an active set the pivoted QR finds rank deficient, a polish off rounding level,
a candidate the acceptance test rejects. What it accepts is what ``_solve_direct`` accepts,
with the same z, w, pivots and worst residual (tests/test_lcp_small.py checks the bits on
random LCPs, degenerate ones included)."""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.lcp.lemke import (
    COND_MAX,
    LEX_REL,
    PIV_REL,
    REFACTOR_EVERY,
    TIE_REL,
    ZERO_REL,
    _entering_column,
    _refine,
)
from mbsim.simcore.lcp.problem import (
    EPS,
    _inf_norm,
    _snap_kernel,
    _verify_kernel,
    accept_kernel,
)
from mbsim.simcore.lcp.selection import LEAST_NORM_DELTA
from mbsim.simcore.spatial import borrowed, c_view

#: the largest LCP :func:`solve_small_into` takes
SMALL_MAX = 3
_NN = SMALL_MAX * SMALL_MAX
_N = SMALL_MAX
# the float buffer's parts: five n x n blocks, then seventeen n-vectors (offsets for n = 3)
(_MR, _BINV, _BMAT, _A, _R, _HV) = (0, _NN, 2 * _NN, 3 * _NN, 4 * _NN, 5 * _NN)
_V = 6 * _NN
(
    _ZR, _X, _COL, _AC, _NOISE, _DIV, _RHS, _ZS, _HB, _D, _NORMS, _RES, _OUT, _C, _Y, _DZ,
    _BASIS, _CAND, _S, _PERM,
) = (_V + k * _N for k in range(20))  # fmt: skip
#: float64 work entries of :func:`solve_small_into` (its few integers -- the basis, the
#: ratio test's candidates, the active set, the QR's column order -- kept as floats there,
#: exact, so the caller needs no int64 work)
SMALL_FLOATS = _V + 20 * _N


@njit(cache=True)
def solve_small_into(M, q, tol_rel, rcond, z, w, fw):
    """The least-norm first candidate (module docstring) of the LCP (M, q) of 2 <= n <=
    SMALL_MAX rows, polished with ``rcond`` (chain.LSTSQ_RCOND). Returns (accepted, pivots,
    worst residual); accepted, z and w = M z + q hold the answer. fw: SMALL_FLOATS entries at
    least, any content. A straight-line call of the body with every
    array borrowed, so numba's reference counts of them return at once (the caller keeps
    them alive for the call)."""
    b = borrowed
    return _small_body(b(M), b(q), tol_rel, rcond, b(z), b(w), b(fw))


@njit(cache=True)
def _lexmin(Binv, n, cand, ncand, div):
    """``lemke._lexmin`` on the flat B^-1 (row-major, n x n)."""
    scale = 0.0
    for t in range(ncand):
        i = int(cand[t])
        for k in range(n):
            v = abs(Binv[i * n + k]) / div[i]
            if v > scale:
                scale = v
    eq = LEX_REL * scale
    for k in range(n):
        if ncand <= 1:
            break
        vmin = np.inf
        for t in range(ncand):
            i = int(cand[t])
            v = Binv[i * n + k] / div[i]
            if v < vmin:
                vmin = v
        m = 0
        for t in range(ncand):
            i = int(cand[t])
            if Binv[i * n + k] / div[i] <= vmin + eq:
                cand[m] = i
                m += 1
        ncand = m
    best = int(cand[0])
    for t in range(1, ncand):
        if div[int(cand[t])] > div[best]:
            best = int(cand[t])
    return best


@njit(cache=True)
def _column(Mr, n, var, out):
    """``lemke._column``: the column of variable ``var`` in [I, -Mr, -d] (Mr flat)."""
    if var < n:
        for i in range(n):
            out[i] = 0.0
        out[var] = 1.0
    elif var < 2 * n:
        j = var - n
        for i in range(n):
            out[i] = -Mr[i * n + j]
    else:
        for i in range(n):
            out[i] = -1.0


@njit(cache=True)
def _small_body(M, q, tol_rel, rcond, z, w, fw):
    """:func:`solve_small_into` on borrowed arrays."""
    n = q.shape[0]
    nn = n * n
    # _solve_direct's islands test (limit_step._islands, islands._component_labels)
    if n == 2:
        if M[0, 1] == 0.0 and M[1, 0] == 0.0:
            return False, 0, np.inf
    else:
        e01 = M[0, 1] != 0.0 or M[1, 0] != 0.0
        e02 = M[0, 2] != 0.0 or M[2, 0] != 0.0
        e12 = M[1, 2] != 0.0 or M[2, 1] != 0.0
        if int(e01) + int(e02) + int(e12) <= 1:
            return False, 0, np.inf
    Mr = fw[_MR : _MR + nn]
    Binv = fw[_BINV : _BINV + nn]
    Bmat = fw[_BMAT : _BMAT + nn]
    zr = fw[_ZR : _ZR + n]
    x = fw[_X : _X + n]
    col = fw[_COL : _COL + n]
    a = fw[_AC : _AC + n]
    noise = fw[_NOISE : _NOISE + n]
    div = fw[_DIV : _DIV + n]
    basis = fw[_BASIS : _BASIS + n]  # integers, as floats
    cand = fw[_CAND : _CAND + n]
    S = fw[_S : _S + n]
    perm = fw[_PERM : _PERM + n]
    # regularise_delta_into(M, LEAST_NORM_DELTA _mscale(M)) (limit_step)
    mscale = _inf_norm(M)
    if not (mscale > 0.0 and np.isfinite(mscale)):
        mscale = 1.0
    delta = LEAST_NORM_DELTA * mscale
    for i in range(n):
        for j in range(n):
            Mr[i * n + j] = M[i, j]
        Mr[i * n + i] = M[i, i] + delta
    # lemke_once_into on (Mr, q): lexicographic, ZERO_REL
    for i in range(n):
        zr[i] = 0.0
    for i in range(n):  # _all_finite
        if not np.isfinite(q[i]):
            return False, 0, np.inf
        for j in range(n):
            if not np.isfinite(Mr[i * n + j]):
                return False, 0, np.inf
    pivots = 0
    ns = 0
    # lemke_start
    for i in range(n):
        basis[i] = i
        x[i] = q[i]
    qmin = np.inf
    for i in range(n):
        qmin = min(qmin, q[i])
    if not qmin >= 0.0:  # else q >= 0: z = 0, no pivot
        for i in range(n):
            for k in range(n):
                Binv[i * n + k] = 0.0
            Binv[i * n + i] = 1.0
        z0 = 2 * n
        tie = TIE_REL * abs(qmin)
        m = 0
        for i in range(n):
            div[i] = 1.0
            if x[i] <= qmin + tie:
                cand[m] = i
                m += 1
        r = _lexmin(Binv, n, cand, m, div)
        entering = z0
        _column(Mr, n, z0, col)
        Binv2 = c_view(fw, _BINV, (n, n))
        nfac = 4.0 * n * EPS
        # lemke_steps
        while True:
            # _pivot
            p = col[r]
            for k in range(n):
                Binv[r * n + k] /= p
            x[r] /= p
            for i in range(n):
                if i != r:
                    f = col[i]
                    if f != 0.0:
                        for k in range(n):
                            Binv[i * n + k] -= f * Binv[r * n + k]
                        x[i] -= f * x[r]
            leaving = int(basis[r])
            basis[r] = entering
            pivots += 1
            if leaving == z0:
                break
            if pivots >= REFACTOR_EVERY:  # the pivot cap or a refactorisation: general
                return False, pivots, np.inf
            entering = leaving + n if leaving < n else leaving - n
            _column(Mr, n, entering, a)
            _entering_column(Binv2, a, col, noise)
            # _ratio_test (lexicographic, ZERO_REL)
            cmax = 0.0
            xscale = 0.0
            for i in range(n):
                cmax = max(cmax, abs(col[i]))
                xscale = max(xscale, abs(x[i]))
            xzero = ZERO_REL * xscale
            ptol = PIV_REL * cmax
            rmin = np.inf
            for i in range(n):
                if col[i] > max(ptol, nfac * noise[i]):
                    xi = x[i] if x[i] > xzero else 0.0
                    rmin = min(rmin, xi / col[i])
            if rmin == np.inf:
                return False, pivots, np.inf  # a ray: lemke_finish's degenerate end, general
            tie = TIE_REL * rmin
            m = 0
            r = -1
            for i in range(n):
                if col[i] > max(ptol, nfac * noise[i]):
                    xi = x[i] if x[i] > xzero else 0.0
                    if xi / col[i] <= rmin + tie:
                        if basis[i] == z0:
                            r = i  # z0 can leave: the path ends at a solution
                            break
                        cand[m] = i
                        m += 1
                        div[i] = col[i]
            if r < 0:
                r = _lexmin(Binv, n, cand, m, div)
        # lemke_finish (solved): _refactor without inversion
        for c in range(n):  # _basis_matrix
            _column(Mr, n, int(basis[c]), col)
            for i in range(n):
                Bmat[i * n + c] = col[i]
        bn = 0.0  # _norms_inf
        bi = 0.0
        for i in range(n):
            s = 0.0
            t = 0.0
            for k in range(n):
                s += abs(Bmat[i * n + k])
                t += abs(Binv[i * n + k])
            bn = max(bn, s)
            bi = max(bi, t)
        cond = bn * bi
        if not np.isfinite(cond):
            return False, pivots, np.inf
        for i in range(n):
            s = 0.0
            for k in range(n):
                s += Binv[i * n + k] * q[k]
            x[i] = s
        Bmat2 = c_view(fw, _BMAT, (n, n))
        r0 = _refine(Bmat2, Binv2, q, x, col)
        _refine(Bmat2, Binv2, q, x, col)
        r2 = _refine(Bmat2, Binv2, q, x, col)
        xn = 0.0
        qn = 0.0
        for i in range(n):
            xn = max(xn, abs(x[i]))
            qn = max(qn, abs(q[i]))
        floor = 16.0 * n * EPS * (bn * xn + qn)
        if not np.isfinite(r2) or (r2 > floor and r2 > 0.5 * r0) or cond > COND_MAX:
            return False, pivots, np.inf
        for i in range(n):
            v = int(basis[i])
            if n <= v < 2 * n:
                zr[v - n] = x[i]
        _snap_kernel(zr)
        for j in range(n):  # _basic_z_into: the basic z, ascending
            cand[j] = 0
        for i in range(n):
            if n <= basis[i] < 2 * n:
                cand[int(basis[i]) - n] = 1
        for j in range(n):
            if cand[j]:
                S[ns] = j
                ns += 1
    for i in range(n):
        z[i] = 0.0
    if ns:
        if not _polish(M, q, zr, S, ns, rcond, fw, perm):
            return False, pivots, np.inf
        out = fw[_OUT : _OUT + ns]
        for k in range(ns):
            z[int(S[k])] = out[k]
        _snap_kernel(z)
    res, sv, _eq, mnorm, qn, zn, mv = _verify_kernel(M, q, z, 0, w)
    ok, worst, _tol = accept_kernel(tol_rel, n, res, sv, mnorm, qn, zn, mv)
    return ok, pivots, worst


@njit(cache=True)
def _polish(M, q, zr, S, ns, rcond, fw, perm):
    """``lstsq.active_set_least_change_into`` on the active set S[:ns] with the candidate in
    fw[_OUT:], at full column rank only; True when it is finite and at rounding level
    (``chain._polish``'s err <= bound), else False (the proximal iterations, a rank-deficient
    block: the general path's)."""
    A = fw[_A : _A + ns * ns]
    R = fw[_R : _R + ns * ns]
    hv = fw[_HV : _HV + ns * ns]
    rhs, zs, hbeta, d = (
        fw[_RHS : _RHS + ns],
        fw[_ZS : _ZS + ns],
        fw[_HB : _HB + ns],
        fw[_D : _D + ns],
    )
    norms, res, out = fw[_NORMS : _NORMS + ns], fw[_RES : _RES + ns], fw[_OUT : _OUT + ns]
    c, y, dz = fw[_C : _C + ns], fw[_Y : _Y + ns], fw[_DZ : _DZ + ns]
    for a in range(ns):
        sa = int(S[a])
        rhs[a] = -q[sa]
        zs[a] = zr[sa]
        for b in range(ns):
            A[a * ns + b] = M[sa, int(S[b])]
    # least_change_into
    for i in range(ns * ns):
        if not np.isfinite(A[i]):
            return False
    # cod_factor_into (m = n = ns)
    for i in range(ns * ns):
        R[i] = A[i]
    for j in range(ns):
        perm[j] = j
        norms[j] = 0.0
    for i in range(ns):
        for j in range(ns):
            norms[j] += R[i * ns + j] * R[i * ns + j]
    rank = 0
    r00 = 0.0
    for k in range(ns):
        p = k
        for j in range(k + 1, ns):
            if norms[j] > norms[p]:
                p = j
        if p != k:
            for i in range(ns):
                t = R[i * ns + k]
                R[i * ns + k] = R[i * ns + p]
                R[i * ns + p] = t
            t = norms[k]
            norms[k] = norms[p]
            norms[p] = t
            tp = perm[k]
            perm[k] = perm[p]
            perm[p] = tp
        s = 0.0
        for i in range(k, ns):
            s += R[i * ns + k] * R[i * ns + k]
        norm = np.sqrt(s)
        if k == 0:
            r00 = norm
        if not norm > rcond * r00 or norm == 0.0:
            break
        # _reflect_norms: _reflector_products, then the update with the norms
        x0 = R[k * ns + k]
        alpha = -norm if x0 >= 0.0 else norm
        for i in range(ns):
            hv[k * ns + i] = 0.0
        hv[k * ns + k] = x0 - alpha
        for i in range(k + 1, ns):
            hv[k * ns + i] = R[i * ns + k]
        vn = hv[k * ns + k] * hv[k * ns + k] + (s - x0 * x0)
        beta = 2.0 / vn if vn > 0.0 else 0.0
        hbeta[k] = beta
        R[k * ns + k] = alpha
        for i in range(k + 1, ns):
            R[i * ns + k] = 0.0
        for j in range(k + 1, ns):
            d[j] = 0.0
        for i in range(k, ns):
            vi = hv[k * ns + i]
            for j in range(k + 1, ns):
                d[j] += vi * R[i * ns + j]
        for j in range(k + 1, ns):
            d[j] *= beta
        for j in range(k + 1, ns):
            norms[j] = 0.0
        vk = hv[k * ns + k]
        for j in range(k + 1, ns):
            R[k * ns + j] -= d[j] * vk
        for i in range(k + 1, ns):
            vi = hv[k * ns + i]
            for j in range(k + 1, ns):
                xx = R[i * ns + j] - d[j] * vi
                R[i * ns + j] = xx
                norms[j] += xx * xx
        rank = k + 1
    if rank < ns:
        return False  # rank deficient: the complete orthogonal decomposition's step 2
    for i in range(ns):
        out[i] = zs[i]
    for _ in range(2):
        for i in range(ns):
            acc = rhs[i]
            for k in range(ns):
                acc -= A[i * ns + k] * out[k]
            res[i] = acc
        # cod_solve_into at full rank: c = Q^T res, R11 y = c, dz = P y
        for i in range(ns):
            c[i] = res[i]
        for k in range(ns):
            dd = 0.0
            for i in range(k, ns):
                dd += hv[k * ns + i] * c[i]
            dd *= hbeta[k]
            for i in range(k, ns):
                c[i] -= dd * hv[k * ns + i]
        for i in range(ns):
            y[i] = 0.0
        for i in range(ns - 1, -1, -1):
            s = c[i]
            for k in range(i + 1, ns):
                s -= R[i * ns + k] * y[k]
            y[i] = s / R[i * ns + i]
        for j in range(ns):
            dz[int(perm[j])] = y[j]
        for i in range(ns):
            out[i] += dz[i]
    for i in range(ns):
        if not np.isfinite(out[i]):
            return False
    # active_set_error
    e = 0.0
    anorm = 0.0
    for i in range(ns):
        s = -rhs[i]
        a = 0.0
        for k in range(ns):
            s += A[i * ns + k] * out[k]
            a += abs(A[i * ns + k])
        e = max(e, abs(s))
        anorm = max(anorm, a)
    cn = 0.0
    for k in range(ns):
        cn = max(cn, abs(out[k]))
    rn = 0.0
    for i in range(ns):
        rn = max(rn, abs(rhs[i]))
    bound = 16.0 * ns * EPS * (anorm * cn + rn)
    return e <= bound
