"""The proximal-point iterations of the polish (chain._polish), compiled.

When the least-change correction of a regularised Lemke answer is not at rounding level
(lcp/lstsq.py; an active-set block whose system is inconsistent at that level, e.g. the
contacts of a wheel that cannot move along their normals), the polish tries the
proximal-point iterations on the active set's system M_SS z_S = -q_S:

    (M_SS + delta I) z^(j+1) = -q_S + delta z^(j),   z^(0) the regularised answer's z_S,

at most ``iters`` times (chain.POLISH_ITERS), stopping once the step max |z^(j+1) - z^(j)|
is at most 4 eps max(1, ||z^(j+1)||_inf). delta is the regularisation the Lemke path took
(chain.lemke_regularised), so each iteration is a damped Newton step whose fixed points are
the solutions of the system nearest the start.

One factorisation serves every iteration: LU with partial pivoting of M_SS + delta I (row
pivots, the first entry of largest magnitude in the column; Doolittle order, each entry's
update in k ascending), then a forward and a back substitution per iteration. The Python
chain and the compiled contact step (contact_fused.py) both call :func:`proximal_kernel`, so
the two agree bit for bit. A zero pivot or a non-finite iterate answers False: the polish
then has no proximal candidate (as scipy's LU answered None on a singular matrix).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.lcp.rowops import sub_scaled_row
from mbsim.simcore.native_call import native

EPS = float(np.finfo(np.float64).eps)


@njit(cache=True)
def proximal_kernel(A, rhs, z0, delta, iters, out):
    """out = the proximal-point iterate of (A, rhs) from z0 (module docstring); A (m, m),
    rhs and z0 (m,): the active set's M_SS, -q_S and the regularised z_S. Returns False
    (out undefined) when A + delta I has a zero pivot or an iterate is not finite."""
    m = A.shape[0]
    lu = np.empty((m, m))
    piv = np.empty(m, dtype=np.int64)
    for i in range(m):
        for j in range(m):
            lu[i, j] = A[i, j]
        lu[i, i] = A[i, i] + delta
    for k in range(m):
        p = k
        big = abs(lu[k, k])
        for i in range(k + 1, m):
            if abs(lu[i, k]) > big:
                p = i
                big = abs(lu[i, k])
        piv[k] = p
        if not big > 0.0:
            return False  # singular (or NaN): no proximal candidate
        if p != k:
            for j in range(m):
                t = lu[k, j]
                lu[k, j] = lu[p, j]
                lu[p, j] = t
        d = lu[k, k]
        for i in range(k + 1, m):
            f = lu[i, k] / d
            lu[i, k] = f
            sub_scaled_row(lu, i, k, f, k + 1, m)
    z = np.empty(m)
    x = np.empty(m)
    for i in range(m):
        z[i] = z0[i]
    for _ in range(iters):
        for i in range(m):
            x[i] = rhs[i] + delta * z[i]
        for k in range(m):
            p = piv[k]
            if p != k:
                t = x[k]
                x[k] = x[p]
                x[p] = t
        for i in range(m):
            s = x[i]
            for j in range(i):
                s -= lu[i, j] * x[j]
            x[i] = s
        for i in range(m - 1, -1, -1):
            s = x[i]
            for j in range(i + 1, m):
                s -= lu[i, j] * x[j]
            x[i] = s / lu[i, i]
        step = 0.0
        big = 0.0
        for i in range(m):
            if not np.isfinite(x[i]):
                return False
            step = max(step, abs(x[i] - z[i]))
            big = max(big, abs(x[i]))
            z[i] = x[i]
        if step <= 4.0 * EPS * max(1.0, big):
            break
    for i in range(m):
        out[i] = z[i]
    return True


#: :func:`proximal_kernel` called from compiled code by its address (native_call.py): compiled
#: once, on its own (as the Python chain's call compiles it), not again inside each caller
proximal_call = native(proximal_kernel)
