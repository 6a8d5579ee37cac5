"""Lemke's complementary pivoting method with lexicographic degeneracy resolution.

Standard LCP: find z >= 0 with w = M z + q >= 0, w' z = 0 (see problem.py). Lemke adds an
artificial variable z0 >= 0 on the covering vector d = (1, ..., 1):

    I w - M z - d z0 = q.

Variables are numbered w_0..w_{n-1} (0..n-1), z_0..z_{n-1} (n..2n-1) and z0 (2n); their
columns in the system above are e_i, -M[:, j] and -d. Starting from the basis {w} (B = I), z0
enters and the row of the most negative q leaves, making the basis feasible; then the
complement of the variable that just left enters, and the minimum ratio test picks who leaves,
until z0 leaves (solved: the basis is complementary and feasible) or the entering column has no
positive entry (ray termination: for copositive-plus M this proves (M, q) infeasible). A ray
(or the pivot cap) met while z0 is still basic but already zero (<= ZERO_REL ||x_B||, a
degenerate end of the path) is a solution too: with z0 = 0 the basis is complementary.

Degeneracy rule (why it cannot cycle). Ties in the ratio test are broken lexicographically as
if q were perturbed to q + (eps, eps^2, ..., eps^n): among the rows i tied at the minimum of
x_i / c_i (c = B^-1 a, the entering column), take the lexicographic minimum of the rows
B^-1[i, :] / c_i. Rows of B^-1 are linearly independent, so exactly one row wins and the
perturbed problem is nondegenerate: every almost-complementary basis is visited at most once,
hence no cycling. Exception, also standard: if z0 is among the rows tied at the minimum ratio it
leaves at once, which ends the path at a solution.

Numerics. B^-1 is held explicitly and updated by the rank-1 (Gauss-Jordan) pivot in O(n^2); it
is recomputed from the basis columns (Gauss-Jordan, partial pivoting) every max(50, n) pivots,
and after a recomputation and at termination x_B = B^-1 q is improved by iterative refinement
against the explicit basis matrix B, so the answer's accuracy does not depend on rounding
accumulated in the updates. Tolerances, all relative:

* pivot: an entry c_i may pivot only if c_i > max(PIV_REL * ||c||_inf, 4 n eps (|B^-1||a|)_i).
  The first bound caps the growth of B^-1 per pivot at 1/PIV_REL; the second is the forward
  rounding-error bound of c_i itself, so no entry that is zero up to rounding is used as pivot.
* zero: basic values x_i <= ZERO_REL * ||x||_inf are treated as 0 in the ratio test (degenerate
  rows), so rounding noise neither blocks nor drives the ratio test.
* ties: ratios within TIE_REL (relative) of the minimum count as tied; lexicographic entries
  within LEX_REL of the largest entry among the tied rows count as equal.
* conditioning: after every recomputation and at termination, ||B||_inf ||B^-1||_inf > COND_MAX
  (1e14) stops the solve with status ``numerical`` (x_B would carry no correct digits), as does
  iterative refinement that fails to reduce the residual.

Other paths. The friction LCP's M is copositive but not copositive-plus (docs/lcp.md), so a
ray does not prove that (M, q) has no solution, and on a degenerate problem which path Lemke
follows decides whether it reaches one. Redundant contacts make contact LCPs massively
degenerate: a quadruped lying on the floor with 20 contacts on 18 DoF (pybullet_data's
spirit40newer, issue 19) has rank(D^T W D) = 18 for 100 friction unknowns, and the normal
rows' gap and curvature terms make q inconsistent with that range at the 1e-9 m/s level, so
a solution must let some contacts separate at that speed. On the LCP recorded at t = 0.14 s
(tests/data/spirit40newer_lcp_ray.npz) the lexicographic path, whose ratio test treats those
values as 0 (ZERO_REL) and breaks the resulting ties by the perturbation of q, ends in a
genuine secondary ray (the entering column has no positive entry), while the path that keeps
them (``zero_rel = 0``) and breaks ties by the largest pivot (the numerically safest choice)
reaches an exact solution (residual 4e-18). When the standard path ends in a ray or a
singular basis, :func:`lemke` therefore follows the paths of OTHER_PATHS in turn: the
largest-pivot and lexicographic rules with and without the zero threshold, then the same on
M + 1e-12 ||M||_inf I (whose solutions violate (M, q) by 1e-12 ||M|| ||z||, 1000 times below
the acceptance tolerance). None of these has an anti-cycling guarantee: the pivot cap bounds
each, each answer must pass the same verification on (M, q) or is not used, and they cost
time only on steps whose standard path failed. On spirit40newer's later LCPs (t = 0.158 to
0.188 s) some of these paths end in rays too; chain.py's restricted LCP covers those
(docs/results.md, "Real robots").

Basic z that come out of the final solve as rounding-level negatives (>= -10 n eps ||z||, a
degenerate zero) are set to 0; the answer is then verified on the original (M, q) by
:func:`problem.evaluate`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.lcp import budget
from mbsim.simcore.lcp.problem import (
    DEFAULT_TOL_REL,
    EPS,
    LcpResult,
    Status,
    _snap_kernel,
    evaluate,
    inf_norm,
    snap_rounding_negatives,
)
from mbsim.simcore.lcp.rowops import sub_scaled_row

PIV_REL = 1e-10
ZERO_REL = 1e-12
TIE_REL = 1e-11
LEX_REL = 1e-11
COND_MAX = 1e14
REFACTOR_EVERY = 50  # minimum; the default is max(50, n)
#: (lexicographic?, zero_rel, shift) of the paths :func:`lemke` follows after the standard one
#: fails (module docstring, "Other paths"), in order; shift: Lemke on M + shift ||M||_inf I
OTHER_PATHS = (
    (False, 0.0, 0.0),
    (True, 0.0, 0.0),
    (False, ZERO_REL, 0.0),
    (True, 0.0, 1e-12),
    (False, 0.0, 1e-12),
)

# kernel status codes (_CONTINUE: a chunk of pivots ended, the path goes on)
_SOLVED, _RAY, _PIVOT_LIMIT, _NUMERICAL, _CONTINUE, _TIME_LIMIT = 0, 1, 2, 3, 4, 5
_STATUS = {
    _SOLVED: Status.SOLVED,
    _RAY: Status.RAY_TERMINATION,
    _PIVOT_LIMIT: Status.PIVOT_LIMIT,
    _NUMERICAL: Status.NUMERICAL,
    _TIME_LIMIT: Status.TIME_LIMIT,
}


def default_max_pivots(n: int) -> int:
    """Pivot cap: 50 n + 100. Lemke typically needs about n to 2n pivots on contact LCPs."""
    return 50 * n + 100


@njit(cache=True)
def _column(M, n, var, out):
    """Column of variable ``var`` in [I, -M, -d] (d = ones)."""
    if var < n:
        for i in range(n):
            out[i] = 0.0
        out[var] = 1.0
    elif var < 2 * n:
        j = var - n
        for i in range(n):
            out[i] = -M[i, j]
    else:
        for i in range(n):
            out[i] = -1.0


@njit(cache=True)
def _lexmin(Binv, cand, ncand, div):
    """Row among cand[:ncand] with the lexicographically least Binv[i, :] / div[i].

    Entries within LEX_REL of the largest entry among the candidates count as equal. If rounding
    leaves several rows indistinguishable, the one with the largest divisor (pivot) wins.
    """
    n = Binv.shape[0]
    scale = 0.0
    for t in range(ncand):
        i = cand[t]
        for k in range(n):
            v = abs(Binv[i, k]) / div[i]
            if v > scale:
                scale = v
    eq = LEX_REL * scale
    for k in range(n):
        if ncand <= 1:
            break
        vmin = np.inf
        for t in range(ncand):
            i = cand[t]
            v = Binv[i, k] / div[i]
            if v < vmin:
                vmin = v
        m = 0
        for t in range(ncand):
            i = cand[t]
            if Binv[i, k] / div[i] <= vmin + eq:
                cand[m] = i
                m += 1
        ncand = m
    best = cand[0]
    for t in range(1, ncand):
        if div[cand[t]] > div[best]:
            best = cand[t]
    return best


@njit(cache=True)
def _basis_matrix(M, basis, Bmat, col):
    n = basis.shape[0]
    for r in range(n):
        _column(M, n, basis[r], col)
        for i in range(n):
            Bmat[i, r] = col[i]


@njit(cache=True, fastmath={"reassoc", "contract"})
def _entering_column(Binv, a, col, noise):
    """col = B^-1 a and its rounding bound noise = |B^-1| |a| (reassociated: SIMD sums)."""
    n = a.shape[0]
    for i in range(n):
        s = 0.0
        t = 0.0
        for k in range(n):
            s += Binv[i, k] * a[k]
            t += abs(Binv[i, k]) * abs(a[k])
        col[i] = s
        noise[i] = t


@njit(cache=True)
def _unit_column(Binv, var, col, noise):
    """:func:`_entering_column` for w_var entering (a = e_var, :func:`_column`): col = column
    var of B^-1 and noise its absolute values, without the n^2 products. The same numbers:
    each of those sums adds one product B^-1_ik * 1 to products with exact zeros, so it is
    B^-1_ik itself (its absolute value), in whatever order the lanes add. Two cases aside: a
    -0.0 entry may come out of the sums as +0.0 (a zero col_i is never a pivot, a ratio or
    an update: the same path), and a row of B^-1 with an inf or nan elsewhere gives nan in
    the sums, its own entry here (B^-1 overflowed: the path's next refactorisation fails its
    condition test, and no answer is accepted unverified)."""
    n = Binv.shape[0]
    for i in range(n):
        v = Binv[i, var]
        col[i] = v
        noise[i] = abs(v)


@njit(cache=True)
def _norms_inf(Bmat, Binv):
    """(||B||_inf, ||B^-1||_inf)."""
    n = Bmat.shape[0]
    bn = 0.0
    bi = 0.0
    for i in range(n):
        s = 0.0
        t = 0.0
        for k in range(n):
            s += abs(Bmat[i, k])
            t += abs(Binv[i, k])
        bn = max(bn, s)
        bi = max(bi, t)
    return bn, bi


@njit(cache=True)
def _gauss_jordan_inverse(B, Binv, work):
    """Binv = B^-1 by Gauss-Jordan with partial pivoting; False if a pivot column is all zero.

    Own loops rather than np.linalg.inv: numba's LAPACK bindings take ~15 s to compile and
    this runs only every max(50, n) pivots.
    """
    n = B.shape[0]
    for i in range(n):
        for j in range(n):
            work[i, j] = B[i, j]
            Binv[i, j] = 0.0
        Binv[i, i] = 1.0
    for k in range(n):
        p = k
        for i in range(k + 1, n):
            if abs(work[i, k]) > abs(work[p, k]):
                p = i
        piv = work[p, k]
        if piv == 0.0 or not np.isfinite(piv):
            return False
        if p != k:
            for j in range(n):
                t = work[k, j]
                work[k, j] = work[p, j]
                work[p, j] = t
                t = Binv[k, j]
                Binv[k, j] = Binv[p, j]
                Binv[p, j] = t
        inv = 1.0 / piv
        for j in range(n):
            work[k, j] *= inv
            Binv[k, j] *= inv
        for i in range(n):
            if i != k:
                f = work[i, k]
                if f != 0.0:
                    sub_scaled_row(work, i, k, f, k, n)
                    for j in range(n):
                        Binv[i, j] -= f * Binv[k, j]
    return True


@njit(cache=True, fastmath={"reassoc", "contract"})
def _refine(Bmat, Binv, q, x, r):
    """x <- x + B^-1 (q - B x): one step of iterative refinement; returns ||q - B x||_inf before."""
    n = q.shape[0]
    rn = 0.0
    for i in range(n):
        s = q[i]
        for k in range(n):
            s -= Bmat[i, k] * x[k]
        r[i] = s
        rn = max(rn, abs(s))
    for i in range(n):
        s = 0.0
        for k in range(n):
            s += Binv[i, k] * r[k]
        x[i] += s
    return rn


@njit(cache=True)
def _refactor(M, q, basis, Bmat, Binv, x, col, work, invert):
    """Rebuild x_B = B^-1 q (and B^-1 itself if ``invert``) from the basis columns.

    x_B gets two steps of iterative refinement against the explicit B, so its accuracy does not
    depend on rounding accumulated in B^-1 by the updates. Returns cond_inf(B) (inf if singular
    or if refinement does not converge).
    """
    n = q.shape[0]
    _basis_matrix(M, basis, Bmat, col)
    if invert and not _gauss_jordan_inverse(Bmat, Binv, work):
        return np.inf
    bn, bi = _norms_inf(Bmat, Binv)
    cond = bn * bi
    if not np.isfinite(cond):
        return np.inf
    for i in range(n):
        s = 0.0
        for k in range(n):
            s += Binv[i, k] * q[k]
        x[i] = s
    r0 = _refine(Bmat, Binv, q, x, col)
    _refine(Bmat, Binv, q, x, col)
    r2 = _refine(Bmat, Binv, q, x, col)  # mostly measures; applies a last tiny correction
    # converged if at rounding level, or at least clearly reduced (else B^-1 is too inaccurate)
    xn = 0.0
    qn = 0.0
    for i in range(n):
        xn = max(xn, abs(x[i]))
        qn = max(qn, abs(q[i]))
    floor = 16.0 * n * EPS * (bn * xn + qn)
    if not np.isfinite(r2) or (r2 > floor and r2 > 0.5 * r0):
        return np.inf
    return cond


@njit(cache=True)
def _pivot(Binv, x, col, r):
    """Rank-1 update of B^-1 and x_B = B^-1 q when column ``col`` = B^-1 a replaces row r."""
    n = x.shape[0]
    p = col[r]
    for k in range(n):
        Binv[r, k] /= p
    x[r] /= p
    for i in range(n):
        if i != r:
            f = col[i]
            if f != 0.0:
                for k in range(n):
                    Binv[i, k] -= f * Binv[r, k]
                x[i] -= f * x[r]


@njit(cache=True)
def _ratio_test(Binv, x, col, noise, basis, z0, cand, div, lex, zero_rel):
    """Leaving row for the entering column col = B^-1 a (noise = |B^-1||a|), or -1 for a ray.

    Minimum of x_i / col_i over rows with a safe positive pivot (module docstring); z0's row
    wins a tie, otherwise ties go to the lexicographic rule (``lex``) or to the largest pivot.
    Basic values <= ``zero_rel`` ||x||_inf count as 0.
    """
    n = x.shape[0]
    cmax = 0.0
    xscale = 0.0
    for i in range(n):
        cmax = max(cmax, abs(col[i]))
        xscale = max(xscale, abs(x[i]))
    xzero = zero_rel * xscale
    ptol = PIV_REL * cmax
    nfac = 4.0 * n * EPS
    rmin = np.inf
    for i in range(n):
        if col[i] > max(ptol, nfac * noise[i]):
            xi = x[i] if x[i] > xzero else 0.0
            rmin = min(rmin, xi / col[i])
    if rmin == np.inf:
        return -1
    tie = TIE_REL * rmin
    m = 0
    for i in range(n):
        if col[i] > max(ptol, nfac * noise[i]):
            xi = x[i] if x[i] > xzero else 0.0
            if xi / col[i] <= rmin + tie:
                if basis[i] == z0:
                    return i  # z0 can leave: take it, the path ends at a solution
                cand[m] = i
                m += 1
                div[i] = col[i]
    if not lex:  # the second path's rule (module docstring): the largest pivot
        best = cand[0]
        for t in range(1, m):
            if col[cand[t]] > col[best]:
                best = cand[t]
        return best
    return _lexmin(Binv, cand, m, div)


@njit(cache=True)
def lemke_start(M, q, Binv, x, basis, col, div, cand, ist):
    """Initial basis {w} and the first pivot's choice (z0 enters). Returns _SOLVED when q >= 0
    (z = 0) else _CONTINUE with the loop state in ``ist`` = [entering, r, pivots, since
    refactor]. Workspace is allocated by the caller (:func:`run_lemke`)."""
    n = q.shape[0]
    for i in range(n):
        basis[i] = i
        x[i] = q[i]
    if n == 0:
        return _SOLVED
    qmin = np.inf
    for i in range(n):
        qmin = min(qmin, q[i])
    if qmin >= 0.0:
        return _SOLVED  # z = 0, w = q is the solution
    # 2-D slice assignment and np.eye are avoided in the kernels: they cost seconds to compile
    for i in range(n):
        for k in range(n):
            Binv[i, k] = 0.0
        Binv[i, i] = 1.0
    z0 = 2 * n
    # first pivot: z0 enters on column -d; the row with the lexicographically most negative
    # (perturbed) q leaves: lexmin over the tied rows of (q_i, e_i) with divisor d_i = 1
    tie = TIE_REL * abs(qmin)
    m = 0
    for i in range(n):
        div[i] = 1.0
        if x[i] <= qmin + tie:
            cand[m] = i
            m += 1
    ist[1] = _lexmin(Binv, cand, m, div)
    ist[0] = z0
    _column(M, n, z0, col)  # B = I so B^-1 a = a
    ist[2] = 0
    ist[3] = 0
    return _CONTINUE


@njit(cache=True)
def lemke_steps(
    M, q, max_pivots, refactor_every, chunk, Binv, Bmat, work, x, basis, col, a, noise, div,
    cand, ist, lex, zero_rel,
):  # fmt: skip
    """At most ``chunk`` pivots of the complementary path from the state in ``ist`` (see
    :func:`lemke_start`). Returns _CONTINUE (state saved) or a terminal status code."""
    n = q.shape[0]
    z0 = 2 * n
    entering, r, pivots, since_refactor = ist[0], ist[1], ist[2], ist[3]
    done = 0
    while True:
        _pivot(Binv, x, col, r)  # B^-1 and x_B for the basis with `entering` in row r
        leaving = basis[r]
        basis[r] = entering
        pivots += 1
        since_refactor += 1
        done += 1
        ist[2] = pivots
        if leaving == z0:
            return _SOLVED
        if pivots >= max_pivots:
            return _PIVOT_LIMIT
        if since_refactor >= refactor_every:
            since_refactor = 0
            if _refactor(M, q, basis, Bmat, Binv, x, col, work, True) > COND_MAX:
                return _NUMERICAL

        # ---- the complement of the leaving variable enters
        entering = leaving + n if leaving < n else leaving - n
        if entering < n:
            _unit_column(Binv, entering, col, noise)
        else:
            _column(M, n, entering, a)
            _entering_column(Binv, a, col, noise)
        r = _ratio_test(Binv, x, col, noise, basis, z0, cand, div, lex, zero_rel)
        if r < 0:
            return _RAY
        if done >= chunk:
            ist[0], ist[1], ist[3] = entering, r, since_refactor
            return _CONTINUE


@njit(cache=True)
def lemke_finish(M, q, status, Binv, Bmat, work, x, basis, col, z_out):
    """Terminal status (degenerate ends of the path count as solved), final refinement of x_B
    against the basis matrix with its condition check, and z_out from the basic z."""
    n = q.shape[0]
    z0 = 2 * n
    for i in range(n):
        z_out[i] = 0.0
    if status == _RAY or status == _PIVOT_LIMIT:
        # a degenerate end: z0 still basic but already zero means (w, z) solves the LCP as is
        xscale = 0.0
        z0row = -1
        for i in range(n):
            xscale = max(xscale, abs(x[i]))
            if basis[i] == z0:
                z0row = i
        if z0row >= 0 and x[z0row] <= ZERO_REL * xscale:
            status = _SOLVED
    if status == _SOLVED and n > 0:
        # final x_B: iterative refinement against the terminal basis matrix, with a cond check
        if _refactor(M, q, basis, Bmat, Binv, x, col, work, False) > COND_MAX:
            status = _NUMERICAL
    for i in range(n):
        v = basis[i]
        if n <= v < 2 * n:
            z_out[v - n] = x[i]
    return status


def lemke(
    M: np.ndarray,
    q: np.ndarray,
    max_pivots: int | None = None,
    tol_rel: float = DEFAULT_TOL_REL,
    refactor_every: int | None = None,
) -> LcpResult:
    """Solve the standard LCP (M, q) by lexicographic Lemke, and when that path ends in a ray
    or a singular basis along the paths of OTHER_PATHS (module docstring, "Other paths");
    verify on (M, q). The first verified answer is returned, else the standard path's.

    ``max_pivots`` defaults to :func:`default_max_pivots`, ``refactor_every`` to max(50, n).
    The status is ``solved`` only if the residuals recomputed from (M, q) are within the
    tolerance of problem.py (``tol_rel`` times the problem scale).
    """
    M, q = as_problem(M, q)
    status, pivots, z, _ = run_lemke(M, q, max_pivots, refactor_every)
    first = evaluate(M, q, z, status, pivots, "lemke", 0.0, tol_rel, _message(status, pivots))
    if first.ok or status in (Status.TIME_LIMIT, Status.PIVOT_LIMIT):
        return first
    # the lexicographic path ended without a solution (a ray, a singular basis): follow the
    # other paths (module docstring, "Other paths"), each verified the same way
    total = pivots
    mnorm = inf_norm(M)
    for lex, zero_rel, shift in OTHER_PATHS:
        Ms = M + (shift * mnorm) * np.eye(M.shape[0]) if shift else M
        status2, pivots2, z2, _ = run_lemke(
            Ms, q, max_pivots, refactor_every, lexicographic=lex, zero_rel=zero_rel
        )
        total += pivots2
        if status2 == Status.TIME_LIMIT:
            break
        other = evaluate(
            M, q, z2, status2, total, "lemke", 0.0, tol_rel,
            f"lexicographic path: {status} after {pivots} pivots; solved on the "
            f"{'lexicographic' if lex else 'largest-pivot'} path with zero_rel {zero_rel:g}"
            + (f" on M + {shift:g} ||M|| I" if shift else ""),
        )  # fmt: skip
        if other.ok:
            return other
    return first


def _message(status: Status, pivots: int) -> str:
    """Why a Lemke path ended without a solution ("" when it did not say)."""
    message = ""
    if status == Status.NUMERICAL:
        message = f"singular or ill-conditioned basis (cond_inf > {COND_MAX:.0e})"
    elif status == Status.PIVOT_LIMIT:
        message = f"stopped after {pivots} pivots"
    elif status == Status.RAY_TERMINATION:
        message = "no blocking row (secondary ray): the LCP is likely infeasible"
    elif status == Status.TIME_LIMIT:
        message = f"time budget exhausted after {pivots} pivots"
    return message


def run_lemke(
    M: np.ndarray,
    q: np.ndarray,
    max_pivots: int | None = None,
    refactor_every: int | None = None,
    lexicographic: bool = True,
    zero_rel: float = ZERO_REL,
) -> tuple[Status, int, np.ndarray, np.ndarray]:
    """Kernel call without verification: (status, pivots, z, sorted indices of basic z).

    ``lexicographic=False, zero_rel=0`` follows the second path of the module docstring.

    ``M`` and ``q`` must already be contiguous float64 (see :func:`as_problem`).
    """
    n = q.shape[0]
    if max_pivots is None:
        max_pivots = default_max_pivots(n)
    if refactor_every is None:
        refactor_every = max(REFACTOR_EVERY, n)
    chunk = budget.chunk_pivots(n)
    if n and chunk >= max_pivots:
        # one chunk ends the path (its pivot cap comes first), so the loop below would make
        # one kernel call and never poll the budget: the same path in one compiled call
        z = np.empty(n)
        code, pivots, zb = _lemke_once(
            M, q, int(max_pivots), int(refactor_every), chunk, lexicographic, zero_rel, z
        )
        return _STATUS[int(code)], int(pivots), z, zb
    z = np.zeros(n)
    if not _all_finite(M, q):
        return Status.NUMERICAL, 0, z, np.zeros(0, dtype=np.int64)
    Binv, Bmat, work, x, basis, col, a, noise, div, cand, ist = _workspace(n)
    if lemke_start(M, q, Binv, x, basis, col, div, cand, ist) == _SOLVED:
        return Status.SOLVED, 0, z, np.zeros(0, dtype=np.int64)  # q >= 0: z = 0
    while True:
        code = lemke_steps(
            M, q, int(max_pivots), int(refactor_every), chunk, Binv, Bmat, work, x, basis, col,
            a, noise, div, cand, ist, lexicographic, zero_rel,
        )  # fmt: skip
        if code != _CONTINUE:
            break
        if budget.poll() is not None:  # raises if a stop was requested
            code = _TIME_LIMIT
            break
    code = lemke_finish(M, q, code, Binv, Bmat, work, x, basis, col, z)
    zb = _basic_z(basis)
    return _STATUS[int(code)], int(ist[2]), snap_rounding_negatives(z), zb


@njit(cache=True)
def _lemke_once(M, q, max_pivots, refactor_every, chunk, lexicographic, zero_rel, z):
    """:func:`run_lemke`'s kernel calls in one, for a path that one chunk ends: fills z
    (snapped as snap_rounding_negatives does) and returns (status code, pivots, basic z)."""
    n = q.shape[0]
    for i in range(n):
        z[i] = 0.0
    if not _all_finite(M, q):
        return _NUMERICAL, 0, np.zeros(0, dtype=np.int64)
    Binv, Bmat, work, x, basis, col, a, noise, div, cand, ist = _workspace(n)
    basic = np.empty(n, dtype=np.int64)
    code, pivots, nb = lemke_once_into(
        M, q, max_pivots, refactor_every, chunk, lexicographic, zero_rel, z, Binv, Bmat, work,
        x, basis, col, a, noise, div, cand, ist, basic,
    )  # fmt: skip
    return code, pivots, basic[:nb]


@njit(cache=True)
def lemke_once_into(
    M, q, max_pivots, refactor_every, chunk, lexicographic, zero_rel, z, Binv, Bmat, work, x,
    basis, col, a, noise, div, cand, ist, basic,
):  # fmt: skip
    """:func:`_lemke_once` in the caller's workspace (the arrays of :func:`_workspace` for
    n rows, any content, and basic (n,) int): no allocation, so a compiled caller solving
    many small LCPs (the joint-limit step, limit_step.py) pays for none. Returns (status
    code, pivots, count of basic z); basic[:count] gets their sorted indices (cand is
    overwritten)."""
    n = q.shape[0]
    for i in range(n):
        z[i] = 0.0
    for i in range(4):
        ist[i] = 0
    if not _all_finite(M, q):
        return _NUMERICAL, 0, 0
    if lemke_start(M, q, Binv, x, basis, col, div, cand, ist) == _SOLVED:
        return _SOLVED, 0, 0  # q >= 0: z = 0
    code = lemke_steps(
        M, q, max_pivots, refactor_every, chunk, Binv, Bmat, work, x, basis, col, a, noise,
        div, cand, ist, lexicographic, zero_rel,
    )  # fmt: skip
    code = lemke_finish(M, q, code, Binv, Bmat, work, x, basis, col, z)
    _snap_kernel(z)
    return code, ist[2], _basic_z_into(basis, cand, basic)


@njit(cache=True)
def lemke_one(M, q, zero_rel, z, Bmat, Binv, x, r):
    """:func:`lemke_once_into` on a one-row LCP (M (1, 1), q (1,)) with the default pivot cap,
    written out: the path has at most two pivots (z0 enters on row 0; z_0 enters and z0
    leaves, or no safe pivot: a ray), whose operations are those of :func:`lemke_start`,
    :func:`_pivot`, :func:`_entering_column` (one product, exact: (-1)(-m)), :func:`_ratio_test`
    and :func:`lemke_finish` on one row, in the same order, with the final x_B refined by
    :func:`_refine` itself; so z, the status and the pivots are the general path's to the
    bit (tests/test_limit_lcp.py compares the two), without its ~20 calls and 13 work
    arrays (the limit step's one-row solve with the polish: 1.7 us -> 0.36 us on this
    machine, docs/results.md). The lexicographic rule has nothing to break on one row.
    Bmat, Binv (1, 1) and x, r (1,): work. Returns (status code, pivots); z (1,) gets the
    snapped answer."""
    m = M[0, 0]
    q0 = q[0]
    z[0] = 0.0
    if not (np.isfinite(q0) and np.isfinite(m)):
        return _NUMERICAL, 0
    if min(np.inf, q0) >= 0.0:
        return _SOLVED, 0  # z = 0
    # pivot 1: z0 enters on column -d = (-1), row 0 leaves (the one candidate)
    b = 1.0 / -1.0
    xb = q0 / -1.0
    # z_0 enters: its column B^-1 (-m), the pivot test and ratio test of _ratio_test
    c = b * -m
    noise = abs(b) * abs(-m)
    xscale = max(0.0, abs(xb))
    if not c > max(PIV_REL * max(0.0, abs(c)), 4.0 * 1 * EPS * noise):
        status = _RAY  # no safe pivot
    else:
        xi = xb if xb > zero_rel * xscale else 0.0
        if min(np.inf, xi / c) == np.inf:
            status = _RAY
        else:  # pivot 2 on row 0, where z0 is: z0 leaves, the path ends
            b /= c
            xb /= c
            status = _SOLVED
    if status == _RAY:
        # lemke_finish calls a ray with z0 basic at <= ZERO_REL ||x_B|| solved; here z0 = -q0
        # > 0 is its whole x_B, so the path ends unsolved with z = 0
        return _RAY, 1
    # lemke_finish: _refactor without inversion on the basis {z_0}
    Bmat[0, 0] = -m
    Binv[0, 0] = b
    bn = max(0.0, 0.0 + abs(-m))
    bi = max(0.0, 0.0 + abs(b))
    cond = bn * bi
    if not np.isfinite(cond):
        return _NUMERICAL, 2
    x[0] = 0.0 + b * q0
    r0 = _refine(Bmat, Binv, q, x, r)
    _refine(Bmat, Binv, q, x, r)
    r2 = _refine(Bmat, Binv, q, x, r)
    floor = 16.0 * 1 * EPS * (bn * max(0.0, abs(x[0])) + max(0.0, abs(q0)))
    if not np.isfinite(r2) or (r2 > floor and r2 > 0.5 * r0) or cond > COND_MAX:
        z[0] = x[0]
        _snap_kernel(z)
        return _NUMERICAL, 2
    z[0] = x[0]
    _snap_kernel(z)
    return _SOLVED, 2


@njit(cache=True)
def _workspace(n):
    """The arrays a Lemke path of n rows works in: (Binv, Bmat, work (n, n); x, col, a, noise,
    div (n,); basis, cand (n,) int; ist (4,) int zeros: the path's counters)."""
    Binv, Bmat, work = np.empty((n, n)), np.empty((n, n)), np.empty((n, n))
    x, col, a, noise, div = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    basis, cand = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    return Binv, Bmat, work, x, basis, col, a, noise, div, cand, np.zeros(4, dtype=np.int64)


@njit(cache=True)
def _all_finite(M, q):
    for i in range(q.shape[0]):
        if not np.isfinite(q[i]):
            return False
        for j in range(M.shape[1]):
            if not np.isfinite(M[i, j]):
                return False
    return True


@njit(cache=True)
def _basic_z_into(basis, mark, out):
    """:func:`_basic_z` into out (n,) with mark (n,) int as work; returns their count."""
    n = basis.shape[0]
    for j in range(n):
        mark[j] = 0
    for i in range(n):
        if n <= basis[i] < 2 * n:
            mark[basis[i] - n] = 1
    m = 0
    for j in range(n):
        if mark[j]:
            out[m] = j
            m += 1
    return m


@njit(cache=True)
def _basic_z(basis):
    """Sorted indices j of the basic z_j (variables n .. 2n-1 of ``basis``)."""
    n = basis.shape[0]
    mark = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        if n <= basis[i] < 2 * n:
            mark[basis[i] - n] = True
    return np.flatnonzero(mark)


def as_problem(M, q) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous float64 copies-if-needed of (M, q), with shapes checked."""
    M = np.ascontiguousarray(M, dtype=np.float64)
    q = np.ascontiguousarray(q, dtype=np.float64).reshape(-1)
    n = q.shape[0]
    if M.shape != (n, n):
        raise ValueError(f"LCP matrix has shape {M.shape}, expected ({n}, {n}) to match q")
    return M, q
