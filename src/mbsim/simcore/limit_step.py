"""The compiled joint-row step: a step whose only constraint rows are joint limit and friction rows.

A step of the OS stepper (stepper.py) with no contact and no bilateral row, in which some
revolute or prismatic joint is near a stop or some joint has Coulomb friction (joint_rows.py:
a (+e_k, -e_k) pair and a sigma per friction DoF, on every step), runs the general path's
pipeline on a handful of rows: ContactProblem, ``OS.prepare`` / ``OS.solve``, the LCP
chain, the impact phase and the report, some 25 Python calls. :func:`limit_step_kernel` does
the same arithmetic in one numba call. Its stages, each the general path's function it
mirrors (the operations and their order are the same, so the two agree bit for bit; the
BLAS products of the Python path, W p and the armature dot product, go through BLAS here too,
numba's ``np.dot``, which calls SciPy's BLAS where numpy's ``@`` calls numpy's: the same
OpenBLAS kernels on this project's platforms, tests/test_limit_step.py checks the bits; a
numpy and a SciPy on different BLAS libraries could differ in the last bit of those sums,
the rounding of a dot product of at most nv terms; the products with G, one +-1 entry a
row, are exact either way):

1. free motion (``OSStepper._general_step``): qdd = (M + diag(armature))^-1 (tau - C) by ABA
   (``aba_kernel``, 004 Eq. 0.31), v_f = v + dt qdd;
2. the limit rows (``JointLimits.rows``, the compiled ``_near_limits``): DoF k, side s, gap
   g and allowance g_v of every stop with g + dt min(0, s v_k, s v_f,k) < margin, and the cap
   row of a stop passed (joint_rows.py, "Recovery") in the other side's place; then the
   friction pairs (``joint_rows.friction_rows_into``), row nl + 2 j = +e_k and nl + 2 j + 1 =
   -e_k of the j-th friction DoF k, no allowance;
3. the joint Delassus matrix (``OS.prepare`` -> ``joint_row_delassus``): W = (M +
   diag(armature))^-1 G^T column by column, the two ABA sweeps with zero velocity and
   gravity and the row s e_k as joint force on the factorisation of step 1
   (``AbaDynamics.solve_joint``; both in one call, ``dynamics.joint_response_kernel``, for
   trees of revolute and prismatic bodies), and K = G W, i.e. K_ij = s_i W_(k_i, j); the
   joint LCP of ``assembly.delassus_lcp`` is M = T^T K T + E, q = T^T (G v + shift) + e
   (``joint_rows.joint_lcp_into``: unknowns [lambda; beta pairs; sigma], e the friction
   bound F dt on the sigma rows, 0 in an impulsive phase; without friction M = K);
4. the impact phase (``stepper.impact_phase``, 000 Eqs. 54-58), when a stop is approached
   faster than ``impact_velocity`` and would be closed within the step: the compression LCP
   (dt = 0, q = G v, Eq. 54) gives v_c = v + W lambda_c; with restitution eps the recovered
   impulse theta = eps lambda_c is applied, v_t = v_c + W theta, and the decompression LCP
   (q = G v_t, Eq. 57) gives v_c = v_t + W lambda_d; the impulse total is lambda_c +
   lambda_d + theta, and the kinetic energy the collision added in the metric M + armature
   (``energy_impacts``, energy_sources.py); then the free motion from v_c again (ABA);
5. the step's LCP (``OS.solve``, Eq. 53 with the joint rows only): w = M z + q >= 0 _|_
   z >= 0, v+ = v_f + W p with p = z[:nr] the row impulses (the friction rows' impulses are
   not reported, as in the general path's StepReport: only the limit rows');
6. the LCP solve (``lcp/chain.py``'s first attempt): with the stepper's ``lcp_selection``
   "least_norm" Lemke on K + delta I (delta = 1e-6 ||K||_inf) polished on K's active set by the
   least-change correction (``lemke_regularised``, ``lstsq.active_set_least_change``), with "vertex"
   lexicographic Lemke (``lemke``) -- one row (a joint on one stop, the usual case) by that path
   written out for one row (:func:`_solve_one`), two or three rows (least-norm) by lcp/small.py's
   ``solve_small_into`` (the same candidate on one flat buffer, the same bits), more rows by the
   general kernels in the step's work arrays (no allocation per LCP); the answer is verified
   on (K, q) by the acceptance test of lcp/problem.py (``evaluate``: relative residual
   ``lcp_tol_rel``, sign violation, verifiability);
   more rows first by the chain's first candidate alone (:func:`_solve_direct`: what the general
   kernels accept there, with the same bits), else as the chain solves them (:func:`_solve_general`,
   called by its address and compiled only when a step first needs it): an M that splits into
   islands (lcp/islands.py: a fixed-base robot's branches) block by block, each block by
   ``chain.lemke_regularised`` written out (:func:`lemke_regularised_into`, the contact step's too:
   the polish with the proximal iterations, the active-set corrections, the restricted LCP, the raw
   answer) and, where that fails as Python's does, the chain's second attempt ``lemke.lemke``
   (:func:`_lemke_full`, its other paths). Any other outcome -- a Lemke path longer than one
   budget chunk, the chain's later attempts (other regularisations, PGS) -- is not decided here:
   the kernel returns FALLBACK and the caller takes the step by the Python path, whose chain goes
   on from there (or raises the failure);
7. the energy share of the stops passed (``energy_sources.step_shares``): the rows with g <
   0 get p (G (v_f + v+)) / 2 (``energy_stabilisation``);
8. Euler: q+ = q (+) dt v+ (``integrate_kernel``); a non-finite state or |v+| > max_speed
   is returned as BAD, and the caller's Python path raises the usual error.

The effort bound of the implicit actuator forces (control/actuation.py) is the caller's:
``tau`` and ``armature`` come with the joints saturated at the free motion already
(``OSStepper._free_motion``), and a step whose limit impulses take an implicit joint's force
tau_e - g (v+ - v) across its effort is taken by the general path.

What it does not do (the caller's eligibility, :meth:`LimitStepper.eligible`): contacts,
bilateral rows, spherical-joint limits, RK4, other formulations than OS, the "pgs" solver, the
energy-consistent impact option, LCP dumps, the softened retries of a failed step and the
step's LCP time budget (the LCPs here have at most nv rows). Units: SI (s, rad or m, rad/s or
m/s, N m s or N s).
"""

from __future__ import annotations

import time as _time
from dataclasses import fields

import numpy as np
from numba import njit, types

from mbsim.simcore.contact_islands import verify_blocks
from mbsim.simcore.dynamics import (
    aba_accel_kernel,
    aba_bias_kernel,
    aba_kernel,
    articulated_kernel,
    energy_kernel,
    joint_response_kernel,
)
from mbsim.simcore.joint_rows import (
    JointLimits,
    _near_limits,
    friction_rows_into,
    joint_lcp_into,
    limit_rows_needed,
)
from mbsim.simcore.kinematics import (
    body_velocities_kernel,
    forward_kinematics_kernel,
    integrate_kernel,
)
from mbsim.simcore.lcp.budget import CHUNK_FLOPS
from mbsim.simcore.lcp.chain import ACTIVE_SET_FIXES, LSTSQ_RCOND, POLISH_ITERS
from mbsim.simcore.lcp.islands import _component_labels, block_order
from mbsim.simcore.lcp.lemke import (
    _CONTINUE,
    _PIVOT_LIMIT,
    _SOLVED,
    OTHER_PATHS,
    REFACTOR_EVERY,
    ZERO_REL,
    lemke_once_into,
    lemke_one,
)
from mbsim.simcore.lcp.lstsq import (
    active_set_error,
    active_set_least_change_into,
    active_set_least_change_one,
    active_set_work,
)
from mbsim.simcore.lcp.problem import (
    _inf_norm,
    _snap_kernel,
    _verify_kernel,
    accept_kernel,
    principal_kernel,
)
from mbsim.simcore.lcp.proximal import proximal_call
from mbsim.simcore.lcp.selection import LEAST_NORM_DELTA
from mbsim.simcore.lcp.small import SMALL_FLOATS, SMALL_MAX, solve_small_into
from mbsim.simcore.native_call import native
from mbsim.simcore.spatial import borrowed


@njit(cache=True)
def regularised(M):
    """M + delta I, delta = LEAST_NORM_DELTA ||M||_inf (||M||_inf taken as 1 when it is 0 or
    not finite): the matrix ``chain.lemke_regularised`` runs Lemke on (lcp/selection.py)."""
    Mr = np.empty_like(M)
    regularise_into(M, Mr)
    return Mr


@njit(cache=True)
def regularise_into(M, Mr):
    """Mr = :func:`regularised` (M), no allocation."""
    return regularise_delta_into(M, LEAST_NORM_DELTA * _mscale(M), Mr)


@njit(cache=True)
def _mscale(M):
    """||M||_inf, taken as 1 when it is 0 or not finite (``chain.solve_lcp``'s mscale)."""
    mscale = _inf_norm(M)
    if not (mscale > 0.0 and np.isfinite(mscale)):
        mscale = 1.0
    return mscale


@njit(cache=True)
def regularise_delta_into(M, delta, Mr):
    """Mr = M + delta I (delta absolute), no allocation."""
    n = M.shape[0]
    for i in range(n):
        for j in range(n):
            Mr[i, j] = M[i, j]
        Mr[i, i] = M[i, i] + delta
    return Mr


#: what :func:`limit_step_kernel` returns: the step is done (OK), needs the Python path
#: (FALLBACK: an LCP this kernel does not decide, module docstring step 6), has no limit row
#: after all (FREE: done, as the general path's unconstrained step), or a bad state (BAD)
OK, FALLBACK, FREE, BAD = 0, 1, 2, 3
#: the ``info`` slots of :func:`limit_step_kernel`
(
    I_ROWS, I_IMPACT, I_E_IMPACTS, I_E_STAB, I_PIVOTS, I_RESIDUAL, I_SOLVER, I_SIZE,
) = range(8)  # fmt: skip
#: the ``info`` slots of :func:`limit_step_kernel` (I_ROWS: the limit rows, whose dof, side
#: and impulse are reported; I_SIZE: the step LCP's unknowns, nl + 3 nf with nf friction joints)
N_INFO = 8
#: the solver names of the report, by the code in info[I_SOLVER]
SOLVER_NAMES = ("lemke", "lemke_reg")
#: the joint-row settings the kernel builds its rows from; a JointLimits with any other field
#: (a new kind of joint row) turns the kernel off (:meth:`LimitStepper.eligible`)
KNOWN_LIMIT_FIELDS = (
    "lower", "upper", "restitution", "friction", "margin", "spherical", "spherical_eps",
)  # fmt: skip
_KNOWN_ROWS = tuple(f.name for f in fields(JointLimits)) == KNOWN_LIMIT_FIELDS


@njit(cache=True)
def _np_sum(a, n):
    """sum(a[:n]) in numpy's order (``np.sum``: pairwise, eight accumulators from eight
    terms on), so the energy share is the general path's to the bit."""
    if n < 8:
        s = 0.0
        for i in range(n):
            s += a[i]
        return s
    r = np.empty(8)
    for j in range(8):
        r[j] = a[j]
    i = 8
    while i + 8 <= n:
        for j in range(8):
            r[j] += a[i + j]
        i += 8
    s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        s += a[i]
        i += 1
    return s


@njit(cache=True)
def evaluate_candidate(M, q, z, tol_rel, w):
    """(ok, worst residual, tol) of ``problem.evaluate`` with status solved and
    ``LcpResult.ok`` for a candidate z the solver calls solved; w = M z + q. An unverifiable
    candidate (``problem.verifiable``) is not ok. The limit and contact kernels' acceptance
    test."""
    n = q.shape[0]
    res, sv, _eq, mnorm, qn, zn, mv = _verify_kernel(M, q, z, 0, w)
    return accept_kernel(tol_rel, n, res, sv, mnorm, qn, zn, mv)


@njit(cache=True)
def lcp_work(n):
    """(float64, int64) work entries :func:`solve_limit_lcp_into` needs for n rows: M + delta I,
    the regularised answer and the polished one, then the Lemke path's work, which the
    polish reuses once the path is done (:func:`_lemke_path`,
    ``lstsq.active_set_least_change_into``); the islands labels, the path's and the
    polish's integers."""
    fa, ia = active_set_work(n)
    nf, ni = n * n + 2 * n + max(3 * n * n + 5 * n, fa), 4 * n + 4 + ia
    if n <= SMALL_MAX:  # lcp/small.py's buffer too
        nf = max(nf, SMALL_FLOATS)
    return nf, ni


#: the pivot settings of the joint-row step's Lemke paths: none from the caller, so
#: :func:`_pivot_settings` takes lemke's defaults (the contact step passes the table that
#: ``contact_fused.pivot_caps`` reads from the Python path's settings)
NO_CAPS = np.zeros((2, 0), dtype=np.int64)


@njit(cache=True, inline="always")
def _pivot_settings(caps, n):
    """(pivot cap, pivots of one budget chunk) of a Lemke path on n rows: caps[0, n] and
    caps[1, n] when the table has that size (``contact_fused.pivot_caps``), else
    ``lemke.default_max_pivots`` and ``budget.chunk_pivots`` (CHUNK_FLOPS as imported) with
    the chunk clamped to cap + 1 (the cap ends a path first either way: the same path)."""
    if n < caps.shape[1]:
        return caps[0, n], caps[1, n]
    max_pivots = 50 * n + 100  # lemke.default_max_pivots
    # budget.chunk_pivots: a path longer than one chunk is Python's (it polls the step's time
    # budget after each chunk); larger than the cap up to some 20 rows, so one chunk there
    chunk = int(max(1.0, min(100_000.0, CHUNK_FLOPS // max(1, 2 * n * n))))
    return max_pivots, min(max_pivots + 1, chunk)


@njit(cache=True)
def _lemke_path(M, q, z, fw, iw, caps):
    """``lemke.run_lemke`` (lexicographic, ZERO_REL) without the budget poll: (solved?,
    pivots, basic z indices, a view of iw); z gets the snapped answer (:func:`_lemke_run`)."""
    code, pivots, basic = _lemke_run(M, q, True, ZERO_REL, z, fw, iw, caps)
    return code == _SOLVED, pivots, basic


@njit(cache=True, inline="always")
def _lemke_run(M, q, lexicographic, zero_rel, z, fw, iw, caps):
    """``lemke.run_lemke`` on the path (lexicographic, zero_rel) without the budget poll:
    (status code, pivots, basic z indices, a view of iw); z gets the snapped answer. The
    pivot chunk of run_lemke is larger than the pivot cap for the LCP sizes up to some 70
    rows, so it runs as one chunk there too (``lemke._lemke_once``, the compiled call
    run_lemke makes then, here in the work arrays fw (3 n^2 + 5 n floats) and iw (3 n + 4
    ints): ``lemke.lemke_once_into``); a longer path stops at the end of the first chunk
    (code ``_CONTINUE``), where the Python path polls the step's time budget. The pivot cap
    and chunk: :func:`_pivot_settings` (caps)."""
    n = q.shape[0]
    nn = n * n
    max_pivots, chunk = _pivot_settings(caps, n)
    Binv = fw[0:nn].reshape((n, n))
    Bmat = fw[nn : 2 * nn].reshape((n, n))
    work = fw[2 * nn : 3 * nn].reshape((n, n))
    o = 3 * nn
    x, col, a = fw[o : o + n], fw[o + n : o + 2 * n], fw[o + 2 * n : o + 3 * n]
    noise, div = fw[o + 3 * n : o + 4 * n], fw[o + 4 * n : o + 5 * n]
    basis, cand, basic = iw[0:n], iw[n : 2 * n], iw[2 * n : 3 * n]
    ist = iw[3 * n : 3 * n + 4]
    code, pivots, nb = lemke_once_into(
        M, q, max_pivots, max(REFACTOR_EVERY, n), chunk, lexicographic,
        zero_rel, z, Binv, Bmat, work, x, basis, col, a, noise, div, cand, ist, basic,
    )  # fmt: skip
    return code, int(pivots), basic[:nb]


@njit(cache=True)
def _lemke_full(M, q, tol_rel, z, w, fw, iw, caps):
    """``lemke.lemke`` on (M, q): the lexicographic path, and when it ends without a verified
    answer (not at the pivot limit) the paths of ``lemke.OTHER_PATHS`` in turn (on
    M + shift ||M||_inf I for a shift), each verified on (M, q). Returns (ACCEPT, REJECT or
    UNDECIDED: a path cut by the budget chunk, pivots of all the paths followed, worst
    residual); z and w = M z + q the answer; fw, iw: the work of :func:`_lemke_run`."""
    code, pivots, _b = _lemke_run(M, q, True, ZERO_REL, z, fw, iw, caps)
    if code == _CONTINUE:
        return UNDECIDED, pivots, np.inf
    # any end of a path is verified: a verified z is a solution (``problem.evaluate``)
    ok, worst, _t = evaluate_candidate(M, q, z, tol_rel, w)
    if ok:
        return ACCEPT, pivots, worst
    if code == _PIVOT_LIMIT:
        return REJECT, pivots, np.inf
    n = q.shape[0]
    total = pivots
    mnorm = _inf_norm(M)
    Ms = np.empty((n, n))
    for k in range(len(OTHER_PATHS)):
        lex, zero_rel, shift = OTHER_PATHS[k]
        for i in range(n):
            for j in range(n):
                Ms[i, j] = M[i, j] + ((shift * mnorm) if i == j else 0.0) if shift else M[i, j]
        code2, piv2, _b = _lemke_run(Ms, q, lex, zero_rel, z, fw, iw, caps)
        total += piv2
        if code2 == _CONTINUE:
            return UNDECIDED, total, np.inf
        ok, worst, _t = evaluate_candidate(M, q, z, tol_rel, w)
        if ok:
            return ACCEPT, total, worst
    return REJECT, total, np.inf


#: what :func:`_lemke_full` returns (ACCEPT, REJECT or UNDECIDED, pivots, worst residual)
LEMKE_RESULT = types.Tuple((types.int64, types.int64, types.float64))
#: :func:`_lemke_full` called by its address from :func:`_restricted` (native_call.py,
#: typing compiles nothing): compiling a caller does not compile the restricted LCP's other
#: Lemke paths; the first restricted LCP that needs them (joint-row or contact step) compiles
#: (or loads) it then
_lemke_full_call = native(_lemke_full, LEMKE_RESULT)


@njit(cache=True)
def solve_limit_lcp(M, q, least_norm, tol_rel, z, w):
    """:func:`solve_limit_lcp_into` in work arrays of its own."""
    nf, ni = lcp_work(q.shape[0])
    return solve_limit_lcp_into(
        M, q, least_norm, tol_rel, z, w, np.empty(nf), np.empty(ni, dtype=np.int64)
    )


@njit(cache=True)
def _solve_one(M, q, least_norm, tol_rel, z, w, fw):
    """:func:`solve_limit_lcp_into` on one row (the usual LCP of a joint on one stop): the
    same steps with the one-row Lemke path and polish written out (``lemke.lemke_one``,
    ``lstsq.active_set_least_change_one``: the same operations, so the same bits and
    statuses); fw: at least 6 floats of work."""
    Bmat = fw[0:1].reshape((1, 1))
    Binv = fw[1:2].reshape((1, 1))
    x, r = fw[2:3], fw[3:4]
    if not least_norm:
        code, pivots = lemke_one(M, q, ZERO_REL, z, Bmat, Binv, x, r)
        if code != _SOLVED:
            return False, pivots, np.inf, 0
        ok, worst, _tol = evaluate_candidate(M, q, z, tol_rel, w)
        return ok, pivots, worst, 0
    Mr = regularise_into(M, fw[4:5].reshape((1, 1)))
    z_reg = fw[5:6]
    code, pivots = lemke_one(Mr, q, ZERO_REL, z_reg, Bmat, Binv, x, r)
    if code != _SOLVED:
        return False, pivots, np.inf, 1
    z[0] = 0.0
    if pivots:  # z_0 basic (two pivots): chain._polish on the active set {0}
        ok, err, bound, c = active_set_least_change_one(M, q, z_reg, LSTSQ_RCOND)
        if not (ok and err <= bound):
            return False, pivots, np.inf, 1  # the proximal iterations: Python's
        z[0] = c
        _snap_kernel(z)
    ok, worst, _tol = evaluate_candidate(M, q, z, tol_rel, w)
    return ok, pivots, worst, 1


@njit(cache=True)
def solve_limit_lcp_into(M, q, least_norm, tol_rel, z, w, fw, iw):
    """The first attempt of ``chain.solve_lcp`` on (M, q) (module docstring, step 6). Returns
    (accepted, pivots, worst residual, solver code: 0 lemke, 1 lemke_reg); z and w = M z + q
    hold the answer. Not accepted: the caller hands the step to the Python chain. fw, iw:
    work arrays of at least :func:`lcp_work` (n) entries, any content (no allocation here
    but the islands test's of n > 2 rows)."""
    n = q.shape[0]
    if n == 1:
        return _solve_one(M, q, least_norm, tol_rel, z, w, fw)
    if least_norm and n <= SMALL_MAX:  # _solve_direct's usual answer on one flat buffer
        ok, pivots, worst = solve_small_into(M, q, tol_rel, LSTSQ_RCOND, z, w, fw)
        if ok:
            return ok, pivots, worst, 1
    return _solve_more_call(M, q, least_norm, tol_rel, z, w, fw, iw)


@njit(cache=True)
def _solve_more(M, q, least_norm, tol_rel, z, w, fw, iw):
    """:func:`solve_limit_lcp_into` on n > 1 rows past lcp/small.py's candidate: the direct
    candidate (:func:`_solve_direct`), else the general path (:func:`_solve_general`)."""
    ok, pivots, worst, solver = _solve_direct(M, q, least_norm, tol_rel, z, w, fw, iw)
    if ok:
        return ok, pivots, worst, solver
    return _solve_general_call(M, q, least_norm, tol_rel, z, w, fw, iw)


@njit(cache=True)
def _step_lcp(M, q, least_norm, tol_rel, z, w, fw, ni):
    """:func:`solve_limit_lcp_into` for the joint-row step, its int64 work (ni entries)
    allocated only when lcp/small.py's candidate does not decide (n > 1; one row and the
    small candidate need none)."""
    n = q.shape[0]
    if n == 1:
        return _solve_one(M, q, least_norm, tol_rel, z, w, fw)
    if least_norm and n <= SMALL_MAX:
        ok, pivots, worst = solve_small_into(M, q, tol_rel, LSTSQ_RCOND, z, w, fw)
        if ok:
            return ok, pivots, worst, 1
    return _solve_more_call(M, q, least_norm, tol_rel, z, w, fw, np.empty(ni, dtype=np.int64))


@njit(cache=True)
def _islands(M, label):
    """Whether M (n x n, n > 1) splits into independent blocks (``_component_labels``);
    label (n,) work."""
    n = M.shape[0]
    if n == 2:  # the one pair: what _component_labels finds, without its work arrays
        return M[0, 1] == 0.0 and M[1, 0] == 0.0
    return _component_labels(M, label) > 1


@njit(cache=True)
def _solve_direct(M, q, least_norm, tol_rel, z, w, fw, iw):
    """The first candidate of :func:`_solve_general` on an M of n > 1 rows that does not
    split, and nothing else: "vertex", the lexicographic Lemke path verified on (M, q);
    "least_norm", Lemke on M + delta I, the least-change polish on M's active set when it is
    at rounding level, verified on (M, q) -- the joint-limit LCP's usual answer, as cheap as
    before joint friction (no islands labels for two rows, no work of the later attempts).
    Accepted only where :func:`_solve_general` accepts this same candidate (the same
    operations on the same work layout, so the same z, w, pivots and residual, bit for bit);
    anything else -- islands, a path without a solution, a polish off rounding level (the
    proximal iterations), a candidate not accepted (the active-set corrections, the
    restricted LCP, the chain's second attempt) -- is not accepted here, and the caller runs
    :func:`_solve_general` from the start. Returns (accepted, pivots, worst residual,
    solver code)."""
    n = q.shape[0]
    nn = n * n
    if _islands(M, iw[0:n]):
        return False, 0, np.inf, 0
    iwb = iw[n:]  # past the islands labels, as _solve_general's
    if not least_norm:  # _lemke_full's first path
        solved, pivots, _b = _lemke_path(M, q, z, fw, iwb, NO_CAPS)
        if not solved:
            return False, pivots, np.inf, 0
        ok, worst, _t = evaluate_candidate(M, q, z, tol_rel, w)
        return ok, pivots, worst, 0
    # lemke_regularised_into's first candidate (its _polish_into without the proximal branch)
    delta = LEAST_NORM_DELTA * _mscale(M)
    Mr = regularise_delta_into(M, delta, fw[0:nn].reshape((n, n)))
    z_reg = fw[nn : nn + n]
    c = fw[nn + n : nn + 2 * n]
    lw = fw[nn + 2 * n :]
    solved, pivots, S = _lemke_path(Mr, q, z_reg, lw, iwb, NO_CAPS)
    if not solved:
        return False, pivots, np.inf, 1
    for i in range(n):
        z[i] = 0.0
    ns = S.shape[0]
    if ns:
        ok, err, bound = active_set_least_change_into(
            M, q, z_reg, S, LSTSQ_RCOND, c[:ns], lw, iwb[3 * n + 4 :]
        )
        if not (ok and err <= bound):
            return False, pivots, np.inf, 1
        for a in range(ns):
            z[S[a]] = c[a]
        _snap_kernel(z)
    ok, worst, _t = evaluate_candidate(M, q, z, tol_rel, w)
    return ok, pivots, worst, 1


@njit(cache=True)
def _solve_general(M, q, least_norm, tol_rel, z, w, fw, iw):
    """:func:`solve_limit_lcp_into` by the general kernels, any number of rows: an M that
    splits into independent blocks (lcp/islands.py: a fixed-base robot's branches, each
    joint's friction triple) block by block, as ``islands.solve_blocks`` takes them
    (:func:`_solve_blocks`), else whole (:func:`_solve_block`)."""
    n = q.shape[0]
    delta = LEAST_NORM_DELTA * _mscale(M) if least_norm else 0.0
    if n > 1:
        label = iw[0:n]
        count = _component_labels(M, label)
        if count > 1:
            return _solve_blocks(M, q, least_norm, tol_rel, z, w, fw, iw[n:], label, count, delta)
    return _solve_block(M, q, delta, least_norm, tol_rel, z, w, fw, iw[n:])


#: what :func:`_solve_general` returns (accepted, pivots, worst residual, solver code)
SOLVE_RESULT = types.Tuple((types.boolean, types.int64, types.float64, types.int64))
#: :func:`_solve_general` called by its address (native_call.py), compiled only when a step
#: first needs it (typing the call compiles nothing: ``native`` with its return type): not
#: inside the joint-row step's compilations (the step's loop and :func:`limit_step_kernel`),
#: which link only :func:`_solve_direct`, and not at all by a run whose limit LCPs the direct
#: candidate decides (no friction rows, no islands)
_solve_general_call = native(_solve_general, SOLVE_RESULT)
#: :func:`_solve_more` called by its address (native_call.py, compiled when first needed):
#: not linked into the joint-row step and the loops above it, where lcp/small.py decides
#: nearly every LCP of two or three rows (linked, it made panda-free's first run ~14 s CPU
#: longer, docs/results.md "lim3")
_solve_more_call = native(_solve_more, SOLVE_RESULT)


@njit(cache=True)
def _solve_blocks(M, q, least_norm, tol_rel, z, w, fw, iw, label, count, delta):
    """``islands.solve_blocks`` up to the first attempt of the chain on each block: the blocks
    of ``label`` (``_component_labels``; ``count`` of them) in the order of their first row
    (``islands.block_order``), each (M_bb, q_b) solved by :func:`_solve_block` with the whole
    LCP's regularisation delta (``chain._solve_chain``'s mscale: the whole M's), z assembled
    and verified on the whole from its blocks (``contact_islands.verify_blocks``, the test
    ``problem.evaluate`` makes with ``parts``). The pivots are summed over the blocks. A block
    or an assembled z not accepted: not accepted (the Python chain's unsplit solve)."""
    n = q.shape[0]
    order, starts = block_order(label, count)
    Ms = []
    qs = []
    zs = []
    ws = []
    pivots = 0
    solver = 0
    for b in range(count):
        rows = order[starts[b] : starts[b + 1]]
        m = rows.shape[0]
        Mb, qb = principal_kernel(M, q, rows)
        zb = np.empty(m)
        wb = np.empty(m)
        ok, piv, _worst, code = _solve_block(Mb, qb, delta, least_norm, tol_rel, zb, wb, fw, iw)
        if not ok:
            return False, pivots + piv, np.inf, code
        solver = max(solver, code)  # the last resort any block needed (SOLVER_ORDER)
        for a in range(m):
            z[rows[a]] = zb[a]
        pivots += piv
        Ms.append(Mb)
        qs.append(qb)
        zs.append(zb)
        ws.append(wb)
    ok, worst, _tol = verify_blocks(n, tol_rel, Ms, qs, zs, ws)
    for b in range(count):
        rows = order[starts[b] : starts[b + 1]]
        for a in range(rows.shape[0]):
            w[rows[a]] = ws[b][a]
    return ok, pivots, worst if ok else np.inf, solver


@njit(cache=True)
def _solve_block(M, q, delta, least_norm, tol_rel, z, w, fw, iw):
    """``chain._solve_chain`` on one LCP (M, q) that is solved whole (or one block of one),
    its first attempts: "vertex", lexicographic Lemke; "least_norm", Lemke on M + delta I
    polished on M's active set (``chain.lemke_regularised``: :func:`lemke_regularised_into`)
    and, when that attempt fails where the Python chain's fails too, the chain's second
    attempt, lexicographic Lemke (``lemke.lemke``'s first path); each verified on (M, q).
    Returns (accepted, pivots, worst residual, solver code: 0 lemke, 1 lemke_reg); not
    accepted where the chain goes on (other Lemke paths, other regularisations, PGS) or
    may decide otherwise. fw, iw: :func:`lcp_work` (n) entries at least (iw past the
    islands labels)."""
    if not least_norm:
        state, pivots, worst = _lemke_full(M, q, tol_rel, z, w, fw, iw, NO_CAPS)
        return state == ACCEPT, pivots, worst, 0
    state, pivots, worst = lemke_regularised_into(M, q, delta, tol_rel, NO_CAPS, True, z, w, fw, iw)
    if state == ACCEPT:
        return True, pivots, worst, 1
    if state == UNDECIDED:
        return False, pivots, np.inf, 1
    # the chain's second attempt (``run_lemke_plain``): ``lemke.lemke`` on (M, q); not
    # accepted: the chain's further regularisations and PGS (Python's)
    state, pivots, worst = _lemke_full(M, q, tol_rel, z, w, fw, iw, NO_CAPS)
    return state == ACCEPT, pivots, worst, 0


#: what :func:`lemke_regularised_into` and :func:`_restricted` conclude: an accepted answer, a
#: failure the Python chain concludes too (its next attempt follows), or undecided (the
#: Python chain may still find an answer by a way not compiled here)
ACCEPT, REJECT, UNDECIDED = 0, 1, 2


@njit(cache=True, inline="always")
def _one_chunk(caps, n):
    """Whether a Lemke path of n rows always ends within one budget chunk (the chunk of
    :func:`_pivot_settings` above its pivot cap), as :func:`_lemke_path` runs it: a path it
    did not end then ends unsolved in the Python path too."""
    max_pivots, chunk = _pivot_settings(caps, n)
    return chunk > max_pivots


@njit(cache=True, inline="always")
def lemke_regularised_into(M, q, delta, tol_rel, caps, chain, z, w, fw, iw):
    """``chain.lemke_regularised`` on (M, q) with the regularisation delta (absolute), the
    one compiled version both compiled steps run: Lemke on M + delta I (pivot cap and budget
    chunk from caps, :func:`_pivot_settings`), the polish on M's active set
    (:func:`_polish_into`), the active-set corrections (rows the polish leaves on the wrong
    side swapped, at most ACTIVE_SET_FIXES times), the restricted LCP (:func:`_restricted`);
    every candidate verified on (M, q). ``chain`` True (both compiled steps) follows the
    Python chain further: the end of a regularised path without a solution verified as it is
    (when one chunk always ends the path), the restricted LCP by ``lemke.lemke``'s other
    paths too, else the better of the raw regularised answer and the polished one: REJECT
    then means the Python chain's first attempt fails too. ``chain`` False (no caller since
    the contact step takes the whole attempt, docs/results.md "anyA") stops there: not
    accepted (REJECT, which then says nothing of the Python chain's attempt). Returns
    (ACCEPT, REJECT or UNDECIDED, pivots, worst residual); z and w = M z + q the answer.
    fw, iw: :func:`lcp_work` (n) entries (iw past the islands labels), any content. Inlined
    into its callers (``inline="always"``, with :func:`_restricted`): a caller passing
    ``chain`` as a constant compiles only its side (numba prunes the other branches), and the
    contact step's least-norm attempt is one library, as its own copy was."""
    n = q.shape[0]
    nn = n * n
    Mr = regularise_delta_into(M, delta, fw[0:nn].reshape((n, n)))
    z_reg = fw[nn : nn + n]
    c = fw[nn + n : nn + 2 * n]
    lw = fw[nn + 2 * n :]
    solved, pivots, basic = _lemke_path(Mr, q, z_reg, lw, iw, caps)
    if not solved:
        if not chain or not _one_chunk(caps, n):  # a path cut by the budget chunk: Python's
            return UNDECIDED, pivots, np.inf
        # the path's end verified on (M, q) all the same (``problem.evaluate``)
        for i in range(n):
            z[i] = z_reg[i]
        ok, worst, _t = evaluate_candidate(M, q, z, tol_rel, w)
        return ACCEPT if ok else REJECT, pivots, worst if ok else np.inf
    # chain.lemke_regularised from here: the polish on the active set, the active-set
    # corrections, the restricted LCP, else the better of the raw and polished answers
    S0 = basic.copy()
    S = S0
    piw = iw[3 * n + 4 :]
    best_set = False
    best_ok = False
    best_worst = np.inf
    z_best = np.empty(n)
    w_tmp = np.empty(n)
    inside = np.zeros(n, dtype=np.bool_)
    for _ in range(ACTIVE_SET_FIXES + 1):
        if not _polish_into(M, q, z_reg, S, delta, z, c, lw, piw):
            break
        ok, worst, tol = evaluate_candidate(M, q, z, tol_rel, w)
        if ok:
            return ACCEPT, pivots, worst
        if chain:  # the better of the raw and the polished answers (chain only)
            if not best_set:  # the raw regularised answer, verified on (M, q)
                best_set = True
                best_ok, best_worst, _t = evaluate_candidate(M, q, z_reg, tol_rel, w_tmp)
                best_worst = best_worst if np.isfinite(best_worst) else np.inf
                for i in range(n):
                    z_best[i] = z_reg[i]
            pol_worst = worst if np.isfinite(worst) else np.inf
            if not best_ok and pol_worst <= best_worst:
                best_worst = pol_worst
                for i in range(n):
                    z_best[i] = z[i]
        # the rows on the wrong side swapped, polished again
        for i in range(n):
            inside[i] = False
        for a in range(S.shape[0]):
            inside[S[a]] = True
        flips = 0
        for i in range(n):
            if (inside[i] and z[i] < -tol) or (not inside[i] and w[i] < -tol):
                inside[i] = not inside[i]
                flips += 1
        if flips == 0:
            break
        S = np.flatnonzero(inside)
    state, sub_pivots, worst = _restricted(M, q, S0, tol_rel, caps, chain, z, w, lw, iw)
    if state == ACCEPT:
        return ACCEPT, pivots + sub_pivots, worst
    if state == UNDECIDED or not chain:
        return state, pivots, np.inf
    if not best_set:
        best_ok, best_worst, _t = evaluate_candidate(M, q, z_reg, tol_rel, w)
        for i in range(n):
            z_best[i] = z_reg[i]
    if not best_ok:
        return REJECT, pivots, np.inf
    for i in range(n):
        z[i] = z_best[i]
    ok, worst, _t = evaluate_candidate(M, q, z, tol_rel, w)
    return ACCEPT if ok else REJECT, pivots, worst


@njit(cache=True, inline="always")
def _polish_into(M, q, z_reg, S, delta, z, c, fw, iw):
    """``chain._polish``: z = the regularised answer z_reg refined on M's active-set system
    M_SS z_S = -q_S (zero outside S; snapped, ``snap_rounding_negatives``): the least-change
    correction (``lstsq.active_set_least_change_into``, in the work arrays fw, iw), and when
    that is not at rounding level the proximal-point iterations (lcp/proximal.py), the
    first at rounding level winning, else the smaller error. Returns False when neither
    gives a candidate (``_polish`` None); c: (n,) work."""
    n = q.shape[0]
    for i in range(n):
        z[i] = 0.0
    ns = S.shape[0]
    if ns == 0:
        return True
    cs = c[:ns]
    ok, err, bound = active_set_least_change_into(M, q, z_reg, S, LSTSQ_RCOND, cs, fw, iw)
    have = ok
    best_err = err if ok else np.inf
    if not err <= bound:
        MSS, rhs = principal_kernel(M, q, S)
        for a in range(ns):
            rhs[a] = -rhs[a]
        zS = np.empty(ns)
        for a in range(ns):
            zS[a] = z_reg[S[a]]
        p = np.empty(ns)
        if proximal_call(MSS, rhs, zS, delta, np.int64(POLISH_ITERS), p):
            e, bound_p = active_set_error(MSS, rhs, p)
            if e <= bound_p or e < best_err:
                have = True
                for a in range(ns):
                    cs[a] = p[a]
    if not have:
        return False
    for a in range(ns):
        z[S[a]] = cs[a]
    _snap_kernel(z)
    return True


@njit(cache=True, inline="always")
def _restricted(M, q, S0, tol_rel, caps, chain, z, w, fw, iw):
    """``chain._restricted``: the LCP restricted to the working set S0 (z = 0 outside) by
    lexicographic Lemke (:func:`_lemke_path`), S grown by the rows outside it with
    w < -tol, at most ACTIVE_SET_FIXES times; ACCEPT with z, w the first answer accepted on
    (M, q). A sub-problem the lexicographic path does not solve and verify: with ``chain``
    ``lemke.lemke``'s other paths (:func:`_lemke_full`, called by its address), without it
    not accepted (REJECT: the Python chain may still find an answer there). Returns
    (ACCEPT, REJECT or UNDECIDED, the sub-problem's pivots, worst residual); fw, iw: the
    Lemke path's work for n rows (:func:`_lemke_path`)."""
    n = q.shape[0]
    inside = np.zeros(n, dtype=np.bool_)
    for a in range(S0.shape[0]):
        inside[S0[a]] = True
    for _ in range(ACTIVE_SET_FIXES + 1):
        idx = np.flatnonzero(inside)
        m = idx.shape[0]
        if m == 0:
            return REJECT, 0, np.inf
        Ms, qs = principal_kernel(M, q, idx)
        zs = np.empty(m)
        ws = np.empty(m)
        if chain:
            state, piv, _worst = _lemke_full_call(Ms, qs, tol_rel, zs, ws, fw, iw, caps)
        else:  # the lexicographic path alone, solved and verified
            solved, piv, _b = _lemke_path(Ms, qs, zs, fw, iw, caps)
            state = REJECT
            if solved:
                sub_ok, _worst, _t = evaluate_candidate(Ms, qs, zs, tol_rel, ws)
                if sub_ok:
                    state = ACCEPT
        if state != ACCEPT:  # UNDECIDED, or REJECT: chain._restricted's None
            return state, 0, np.inf
        for i in range(n):
            z[i] = 0.0
        for a in range(m):
            z[idx[a]] = zs[a]
        ok, worst, tol = evaluate_candidate(M, q, z, tol_rel, w)
        if ok:
            return ACCEPT, piv, worst
        grow = False
        for i in range(n):
            if not inside[i] and w[i] < -tol:
                inside[i] = True
                grow = True
        if not grow:
            return REJECT, 0, np.inf
    return REJECT, 0, np.inf


@njit(cache=True)
def _kinetic(parent, vi, nvj, S, E, r, inertia, mass, com, gravity, R_world, p_world, v, bv):
    """T(v) (J) at the configuration in (E, r, R_world, p_world): ``OSStepper._kinetic``."""
    body_velocities_kernel(parent, vi, nvj, S, E, r, v, bv)
    out = np.empty(3)
    energy_kernel(inertia, mass, com, gravity, R_world, p_world, bv, out)
    return out[0]


@njit(cache=True)
def _armature_energy(armature, v):
    """1/2 sum_k A_k v_k^2 (J), as ``energy_sources.armature_energy`` (BLAS dot)."""
    return 0.5 * np.dot(armature * v, v)


@njit(cache=True)
def _respond(v, W, p, out, dv):
    """out = (v + 0) + W p: ``OS.solve``'s v_f + dv + W_m p with the node response dv of no
    node (exact zeros) and W p by BLAS, as numpy's ``@`` computes it. One row: W p is the
    column times p_0, each entry one rounded product whichever way it is summed (BLAS's
    y = 0 + (1 p_0) W_i0, fused or not), so it is formed here without BLAS's call. More rows:
    W p into dv (nv,) work, numba's ``np.dot`` with an output (the same gemv call as without
    one, no allocation)."""
    if p.shape[0] == 1:
        p0 = p[0]
        for i in range(v.shape[0]):
            out[i] = (v[i] + 0.0) + (0.0 + W[i, 0] * p0)
        return
    np.dot(W, p, dv)
    for i in range(v.shape[0]):
        out[i] = (v[i] + 0.0) + dv[i]


@njit(cache=True)
def _row_lcp(dof, side, vel, shift, q):
    """q = G vel + shift of the joint rows (``delassus_lcp``; G has one entry s per row)."""
    for i in range(q.shape[0]):
        q[i] = (side[i] * vel[dof[i]] + shift[i]) + 0.0


#: the floats of :func:`limit_step_from`'s one-row LCP (K, q, z, w and _solve_one's 6)
ONE_ROW_WORK = 10


@njit(cache=True)
def step_work(nv):
    """The floats of the joint-row step's one allocation for nv DoFs: its own 10 nv + 12 +
    ONE_ROW_WORK, then the LCP part of a step of at most SMALL_MAX unknowns (W nv x 3, K and
    M 3 x 3, the rates, friction bounds, W p and lcp_work), so such a step allocates nothing
    more (a larger one allocates its LCP part)."""
    lcp = max(lcp_work(2)[0], lcp_work(SMALL_MAX)[0])
    return 10 * nv + 12 + ONE_ROW_WORK + 4 * nv + 9 + 9 + 12 + 9 + 2 * SMALL_MAX + lcp


#: what the caller of :func:`limit_step_from` already computed in the step's Data from (q, v,
#: tau, armature): nothing, the kinematics (``forward_kinematics_kernel``), or the whole free
#: motion (kinematics, ``articulated_kernel``, ``aba_bias_kernel``, ``aba_accel_kernel``:
#: qdd), as ``aba_kernel`` computes them
NOTHING_DONE, KINEMATICS_DONE, FREE_MOTION_DONE = 0, 1, 2


@njit(cache=True)
def limit_step_kernel(
    parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, mass, com,
    E, r, R_world, p_world, vel, cbias, IA, U, Dinv, pivots, pA, u, acc, scratch, qdd, armature,
    wpA, wu, wacc, zero6, bv, lower, upper, restitution, q_of_v_qi, q_of_v_vi, margin,
    fr_dof, fr_force, dt, stabilization, max_recovery_speed, impact_velocity, tol_rel,
    least_norm, max_speed, q, v, tau, q_new, v_new, v_start, dof, side, impulse, info,
):  # fmt: skip
    """One joint-limit step from (q, v) under the joint forces tau (module docstring, steps
    1-8). Writes q_new, v_new (v+), v_start (the velocity after the impact phase), the rows'
    dof, side and total impulse (first info[I_ROWS] entries), and info: row count, impact
    (0/1), energy_impacts and energy_stabilisation (J), the step LCP's pivots, worst residual
    and solver code. Returns OK, FREE (no row: a free step, q_new and v_new written), FALLBACK
    or BAD (module docstring). :func:`limit_step_from` with nothing computed yet."""
    return limit_step_from(
        parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, mass, com,
        E, r, R_world, p_world, vel, cbias, IA, U, Dinv, pivots, pA, u, acc, scratch, qdd,
        armature, wpA, wu, wacc, zero6, bv, lower, upper, restitution, q_of_v_qi, q_of_v_vi,
        margin, fr_dof, fr_force, dt, stabilization, max_recovery_speed, impact_velocity,
        tol_rel, least_norm, max_speed, q, v, tau, q_new, v_new, v_start, dof, side, impulse, info,
        np.int64(NOTHING_DONE),  # not a literal: the compiled loop's compilation serves
    )  # fmt: skip


@njit(cache=True, forceinline=True)
def _response_column(
    parent, vi, nvj, S, inertia, E, r, IA, U, Dinv, zero6, wpA, wu, wacc, g, a0, k, s, col
):  # fmt: skip
    """col = (M + armature)^-1 s e_k (rad/s or m/s per N s or N m s of the row's impulse) on
    the factorisation in Data: the two sweeps on the force s e_k in one call
    (``joint_response_kernel``), else (bodies of more DoFs) ABA's bias and acceleration sweeps
    each, on g = s e_k and a0 = 0 (work arrays, written here)."""
    if not joint_response_kernel(parent, vi, nvj, S, E, r, U, Dinv, k, s, wu, wacc, col):
        for i in range(g.shape[0]):
            g[i] = 0.0
        for i in range(6):
            a0[i] = 0.0
        g[k] = s
        aba_bias_kernel(parent, vi, nvj, S, inertia, E, r, zero6, zero6, IA, U, Dinv, g, wpA, wu)
        aba_accel_kernel(parent, vi, nvj, S, E, r, zero6, U, Dinv, wu, a0, wacc, col)


@njit(cache=True)
def limit_step_from(
    parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, mass, com,
    E, r, R_world, p_world, vel, cbias, IA, U, Dinv, pivots, pA, u, acc, scratch, qdd, armature,
    wpA, wu, wacc, zero6, bv, lower, upper, restitution, q_of_v_qi, q_of_v_vi, margin,
    fr_dof, fr_force, dt, stabilization, max_recovery_speed, impact_velocity, tol_rel,
    least_norm, max_speed, q, v, tau, q_new, v_new, v_start, dof, side, impulse, info, done,
):  # fmt: skip
    """:func:`limit_step_kernel`, with the part of step 1 the caller already computed in
    the Data arrays from the same (q, v, tau, armature) skipped (``done``: NOTHING_DONE,
    KINEMATICS_DONE or FREE_MOTION_DONE; the compiled loop of free steps has them,
    free_loop.py): the same operations on the same numbers, so the same bits.
    :func:`limit_step_body` in a work buffer of its own (one allocation a step), every array
    borrowed (passed on owned, their reference counts cost ~0.45 us a step)."""
    work = np.empty(step_work(v.shape[0]))
    b = borrowed
    return _kept(
        limit_step_body(
            b(parent), b(jtype), b(qi), b(vi), b(nvj), b(S), b(tree_E), b(tree_r), b(axis),
            b(inertia), b(gravity), b(mass), b(com), b(E), b(r), b(R_world), b(p_world),
            b(vel), b(cbias), b(IA), b(U), b(Dinv), b(pivots), b(pA), b(u), b(acc), b(scratch),
            b(qdd), b(armature), b(wpA), b(wu), b(wacc), b(zero6), b(bv), b(lower), b(upper),
            b(restitution), b(q_of_v_qi), b(q_of_v_vi), margin, b(fr_dof), b(fr_force), dt,
            stabilization, max_recovery_speed, impact_velocity, tol_rel, least_norm,
            max_speed, b(q), b(v), b(tau), b(q_new), b(v_new), b(v_start), b(dof), b(side),
            b(impulse), b(info), done, b(work),
        ),
        work,
    )  # fmt: skip


@njit(cache=True)
def limit_step_body(
    parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, mass, com,
    E, r, R_world, p_world, vel, cbias, IA, U, Dinv, pivots, pA, u, acc, scratch, qdd, armature,
    wpA, wu, wacc, zero6, bv, lower, upper, restitution, q_of_v_qi, q_of_v_vi, margin,
    fr_dof, fr_force, dt, stabilization, max_recovery_speed, impact_velocity, tol_rel,
    least_norm, max_speed, q, v, tau, q_new, v_new, v_start, dof, side, impulse, info, done,
    fw,
):  # fmt: skip
    """:func:`limit_step_from` in the caller's work buffer ``fw`` (at least :func:`step_work`
    (nv) floats, any content; overwritten), on borrowed arrays (``spatial.borrowed``: no
    owner, so numba's reference counts of them return at once; owned ones work too, at
    ~0.45 us of reference counts a step: the body's loops and early returns keep numba from
    pruning its argument reference counts, docs/results.md "pfree"). The compiled loop
    (free_loop.py), whose arrays are all borrowed already, calls it directly and passes one
    buffer for all its limit steps, so a step allocates nothing (a step of more than
    SMALL_MAX unknowns, or with an impact, allocates its LCP part or the impact's vectors).
    The caller keeps the arrays alive for the call, and the body keeps none of them."""
    nv = v.shape[0]
    # the step's work arrays carved from fw (the LCP part once the rows are known; fw's
    # tail up to SMALL_MAX unknowns, else one allocation): the one-row LCP's work,
    # ONE_ROW_WORK floats, and that of two or three rows (step_work)
    v_free, qv, g, col = fw[0:nv], fw[nv : 2 * nv], fw[2 * nv : 3 * nv], fw[3 * nv : 4 * nv]
    gap, allowance = fw[4 * nv : 6 * nv], fw[6 * nv : 10 * nv]
    g0, a0 = fw[10 * nv : 10 * nv + 6], fw[10 * nv + 6 : 10 * nv + 12]
    # 1. free motion (aba_kernel, or the part of it not done yet)
    if done == NOTHING_DONE:
        forward_kinematics_kernel(
            parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, q, v, E, r, R_world, p_world,
            vel, cbias,
        )  # fmt: skip
    if done != FREE_MOTION_DONE:
        articulated_kernel(
            parent, vi, nvj, S, inertia, E, r, IA, U, Dinv, pivots, scratch, armature
        )
        aba_bias_kernel(parent, vi, nvj, S, inertia, E, r, vel, cbias, IA, U, Dinv, tau, pA, u)
        for k in range(3):
            g0[k] = 0.0
            g0[3 + k] = -gravity[k]
        aba_accel_kernel(parent, vi, nvj, S, E, r, cbias, U, Dinv, u, g0, acc, qdd)
    for i in range(nv):
        v_free[i] = v[i] + dt * qdd[i]
    # 2. the rows
    for i in range(nv):
        qv[i] = np.nan
    for j in range(q_of_v_qi.shape[0]):
        qv[q_of_v_vi[j]] = q[q_of_v_qi[j]]
    nl = _near_limits(
        lower, upper, qv, v, v_free, dt, margin, stabilization, max_recovery_speed, dof, side,
        gap, allowance,
    )  # fmt: skip
    info[I_ROWS] = nl
    # the friction pairs after the limit rows (joint_rows.py, "Row layout"), no allowance
    nf = fr_dof.shape[0]
    nr = nl
    if nf:
        nr = friction_rows_into(nl, fr_dof, dof, side)
        for i in range(nl, nr):
            allowance[i] = 0.0
    info[I_SIZE] = nr + nf
    info[I_IMPACT] = 0.0
    info[I_E_IMPACTS] = 0.0
    info[I_E_STAB] = 0.0
    for i in range(nv):
        v_start[i] = v[i]
    if nr == 0:
        for i in range(nv):
            v_new[i] = v_free[i]
        integrate_kernel(jtype, qi, vi, q, v_new, dt, q_new)
        return _state_code(q_new, v_new, max_speed, FREE)
    impacting = False
    for i in range(nl):
        sv = side[i] * v[dof[i]]
        if sv < -impact_velocity and gap[i] + sv * dt <= 0.0:
            impacting = True
    if nr == 1 and not impacting:
        # the usual step, one row and no impact: steps 3 and 5-7 below on one row, the same
        # operations in the same order (W is the column col, K its entry at the row's DoF,
        # the LCP by _solve_one in fw's tail), without the general path's two allocations
        # and its views (docs/results.md, "pfree")
        k1 = dof[0]
        s1 = side[0]
        o1 = 10 * nv + 12
        K1 = fw[o1 : o1 + 1].reshape((1, 1))
        qk1, z1, w1 = fw[o1 + 1 : o1 + 2], fw[o1 + 2 : o1 + 3], fw[o1 + 3 : o1 + 4]
        fl1 = fw[o1 + 4 : o1 + ONE_ROW_WORK]
        _response_column(
            parent, vi, nvj, S, inertia, E, r, IA, U, Dinv, zero6, wpA, wu, wacc, g, a0, k1, s1,
            col,
        )  # fmt: skip
        K1[0, 0] = 0.0 + s1 * col[k1]
        qk1[0] = (s1 * v_free[k1] + allowance[0]) + 0.0
        ok, npiv, worst, solver = _solve_one(K1, qk1, least_norm, tol_rel, z1, w1, fl1)
        if not ok:
            return FALLBACK
        p1 = z1[0]
        for i in range(nv):
            v_new[i] = (v_free[i] + 0.0) + (0.0 + col[i] * p1)
        impulse[0] = 0.0 + p1
        info[I_PIVOTS] = npiv
        info[I_RESIDUAL] = worst
        info[I_SOLVER] = solver
        if gap[0] < 0.0:  # _np_sum of the one share
            info[I_E_STAB] = 0.0 + (0.0 + (0.5 * p1) * (s1 * (v_free[k1] + v_new[k1])))
        integrate_kernel(jtype, qi, vi, q, v_new, dt, q_new)
        return _state_code(q_new, v_new, max_speed, OK)
    n = nr + nf  # the LCP's unknowns [lambda; beta pairs; sigma]
    nfw, ni = lcp_work(n)
    o = nv * nr + nr * nr + n * n
    nlw = o + 4 * nr + 3 * n + 2 * nf + nv + nfw
    head = 10 * nv + 12 + ONE_ROW_WORK
    if n <= SMALL_MAX and head + nlw <= fw.shape[0]:
        lw = fw[head : head + nlw]  # fw's tail (step_work): no allocation
    else:
        lw = np.empty(nlw)
    W = lw[0 : nv * nr].reshape((nv, nr))
    K = lw[nv * nr : nv * nr + nr * nr].reshape((nr, nr))
    M = lw[nv * nr + nr * nr : o].reshape((n, n))
    zero, rate, total, share = (
        lw[o : o + nr], lw[o + nr : o + 2 * nr], lw[o + 2 * nr : o + 3 * nr],
        lw[o + 3 * nr : o + 4 * nr],
    )  # fmt: skip
    o += 4 * nr
    qk, z, w = lw[o : o + n], lw[o + n : o + 2 * n], lw[o + 2 * n : o + 3 * n]
    o += 3 * n
    bound, no_bound = lw[o : o + nf], lw[o + nf : o + 2 * nf]
    dv = lw[o + 2 * nf : o + 2 * nf + nv]  # _respond's W p
    fl = lw[o + 2 * nf + nv :]
    p = z[:nr]  # the row impulses (JointRows.row_map: the first nr unknowns)
    # the LCP (M, q): joint_lcp_into's, and without friction rows K and the rates themselves
    # (joint_lcp_into adds 0.0 to each entry; K's entries and the rates are sums with 0.0
    # already, never -0.0, so the same bits) with no copy
    Ml = M
    ql = qk
    if nf == 0:
        Ml = K
        ql = rate
    for j in range(nf):
        bound[j] = fr_force[j] * dt  # JointRows.block: the friction bound F dt
        no_bound[j] = 0.0  # an impulsive phase's (dt = 0)
    # 3. W = (M + armature)^-1 G^T and K = G W
    for j in range(nr):
        _response_column(
            parent, vi, nvj, S, inertia, E, r, IA, U, Dinv, zero6, wpA, wu, wacc, g, a0, dof[j],
            side[j], col,
        )  # fmt: skip
        for i in range(nv):
            W[i, j] = col[i]
    for i in range(nr):
        zero[i] = 0.0
        total[i] = 0.0
        for j in range(nr):
            K[i, j] = 0.0 + side[i] * W[dof[i], j]
    v_now = v_start
    # 4. the impact phase (``impacting``: above)
    if impacting:
        ke_before = _kinetic(
            parent, vi, nvj, S, E, r, inertia, mass, com, gravity, R_world, p_world, v, bv
        )
        _row_lcp(dof, side, v, zero, rate)
        if nf:
            joint_lcp_into(K, rate, nl, no_bound, M, qk)
        ok, _p, _w, _s = _step_lcp(Ml, ql, least_norm, tol_rel, z, w, fl, ni)
        if not ok:
            return FALLBACK
        v_c = np.empty(nv)
        _respond(v, W, p, v_c, dv)
        for i in range(nr):
            total[i] = p[i]
        theta = np.zeros(nr)  # the friction rows recover nothing (eps 0)
        any_eps = False
        any_theta = False
        for i in range(nl):
            e = restitution[dof[i]]
            any_eps = any_eps or e > 0.0
            theta[i] = e * total[i]
            any_theta = any_theta or theta[i] != 0.0
        if any_eps:
            v_t = np.empty(nv)
            for i in range(nv):
                v_t[i] = v_c[i] + 0.0
            if any_theta:
                dv = np.dot(W, theta)
                for i in range(nv):
                    v_t[i] = v_t[i] + dv[i]
            _row_lcp(dof, side, v_t, zero, rate)
            if nf:
                joint_lcp_into(K, rate, nl, no_bound, M, qk)
            ok, _p, _w, _s = _step_lcp(Ml, ql, least_norm, tol_rel, z, w, fl, ni)
            if not ok:
                return FALLBACK
            _respond(v_t, W, p, v_c, dv)
            for i in range(nr):
                total[i] = (total[i] + p[i]) + theta[i]
        for i in range(nr):
            total[i] = 0.0 + total[i]
        ke_after = _kinetic(
            parent, vi, nvj, S, E, r, inertia, mass, com, gravity, R_world, p_world, v_c, bv
        )
        info[I_IMPACT] = 1.0
        info[I_E_IMPACTS] = (
            ke_after - ke_before + _armature_energy(armature, v_c) - _armature_energy(armature, v)
        )
        for i in range(nv):
            v_start[i] = v_c[i]
        v_now = v_start
        # the free motion from v_c (OS.solve with accel None after an impact)
        aba_kernel(
            parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, q, v_now,
            tau, E, r, R_world, p_world, vel, cbias, IA, U, Dinv, pivots, pA, u, acc, scratch,
            qdd, armature,
        )  # fmt: skip
        for i in range(nv):
            v_free[i] = v_now[i] + dt * qdd[i]
    # 5.-6. the step's LCP
    _row_lcp(dof, side, v_free, allowance, rate)
    if nf:
        joint_lcp_into(K, rate, nl, bound, M, qk)
    ok, npiv, worst, solver = _step_lcp(Ml, ql, least_norm, tol_rel, z, w, fl, ni)
    if not ok:
        return FALLBACK
    _respond(v_free, W, p, v_new, dv)
    for i in range(nr):
        impulse[i] = total[i] + p[i]
    info[I_PIVOTS] = npiv
    info[I_RESIDUAL] = worst
    info[I_SOLVER] = solver
    # 7. the energy share of the stops passed
    past = 0
    for i in range(nl):
        if gap[i] < 0.0:
            k = dof[i]
            share[past] = (0.5 * z[i]) * (side[i] * (v_free[k] + v_new[k]))
            past += 1
    if past:
        info[I_E_STAB] = 0.0 + _np_sum(share, past)
    # 8. Euler
    integrate_kernel(jtype, qi, vi, q, v_new, dt, q_new)
    return _state_code(q_new, v_new, max_speed, OK)


@njit(cache=True)
def _kept(code, buf):
    """code: the return of :func:`limit_step_body`, with its work buffer's owner buf used
    there, so numba releases buf only after the step is done (the step works on
    ``borrowed(buf)``, whose views count no references)."""
    return code


@njit(cache=True)
def _state_code(q_new, v_new, max_speed, good):
    """``good`` when the new state is finite with every |v+| <= max_speed, else BAD."""
    for i in range(q_new.shape[0]):
        if not np.isfinite(q_new[i]):
            return BAD
    for i in range(v_new.shape[0]):
        if not np.isfinite(v_new[i]) or abs(v_new[i]) > max_speed:
            return BAD
    return good


def friction_args(jl):
    """(DoFs, F) of the joints with Coulomb friction (``JointRows.friction_dof`` and
    ``friction_force``; int64 and float64 arrays, empty for none) of the JointLimits jl."""
    k = np.flatnonzero(jl.friction > 0).astype(np.int64)
    return k, np.ascontiguousarray(jl.friction[k], dtype=np.float64)


class LimitStepper:
    """The compiled joint-limit step of one :class:`~mbsim.simcore.stepper.OSStepper`
    (module docstring): :meth:`step` is the ``general`` callable the stepper hands its free
    step (fast_step.FreeStepper), so every step FreeStepper does not take itself comes here
    and is taken by :func:`limit_step_kernel` when it can be, else by the general path."""

    def __init__(self, stepper):
        self.s = stepper
        self._model = self._data = self._jl = None
        self.steps = 0  # steps taken by the kernel (for profiles and tests)

    @staticmethod
    def eligible(stepper) -> bool:
        """Whether the kernel may take a step of ``stepper`` at all: the compiled free step's
        conditions (Euler, ABA, no bilateral rows, a formulation that solves no LCP without
        contacts), the OS formulation, the Lemke solver, no energy-consistent impact option,
        no LCP dumps, and joint rows to enforce (a JointLimits with the fields the kernel
        knows, KNOWN_LIMIT_FIELDS: limits and Coulomb joint friction, and no spherical-joint
        limits: their rows are built by simcore/spherical_limits.py in Python). Any new kind
        of joint row must turn it off here until the kernel builds its rows."""
        o = stepper.opt
        return (
            _KNOWN_ROWS
            and type(stepper.joint_limits) is JointLimits
            and not stepper.joint_limits.spherical
            and stepper._fast.eligible(stepper)
            and stepper.formulation.name == "os"
            and o.solver == "lemke"
            and not o.energy_consistent_impacts
            and stepper._dump is None
        )

    def _bind(self) -> None:
        s = self.s
        m, d, jl = s.model, s.data, s.joint_limits
        one = np.flatnonzero(m.nvj == 1)
        nb = m.nb
        self._args = (
            m.parent, m.jtype, m.qi, m.vi, m.nvj, d.S, m.tree_E, m.tree_r, m.axis, m.inertia,
            m.gravity, m.mass, m.com, d.E, d.r, d.R_world, d.p_world, d.vel, d.cbias, d.IA,
            d.U, d.Dinv, d.pivots, d.pA, d.u, d.acc, d.scratch66, d.qdd, d.armature,
            np.zeros((nb, 6)), np.zeros((nb, 6)), np.zeros((nb, 6)), np.zeros((nb, 6)),
            np.zeros((nb, 6)),
            np.ascontiguousarray(jl.lower, dtype=np.float64),
            np.ascontiguousarray(jl.upper, dtype=np.float64),
            np.ascontiguousarray(jl.restitution, dtype=np.float64),
            np.ascontiguousarray(np.asarray(m.qi)[one], dtype=np.int64),
            np.ascontiguousarray(np.asarray(m.vi)[one], dtype=np.int64), float(jl.margin),
            *friction_args(jl),
        )  # fmt: skip
        self._friction = bool(self._args[-2].shape[0])
        self._near = (
            np.ascontiguousarray(np.asarray(m.qi)[one], dtype=np.int64),
            np.ascontiguousarray(np.asarray(m.vi)[one], dtype=np.int64),
            self._args[-8], self._args[-7], float(jl.margin),
        )  # fmt: skip
        nv = m.nv
        self._dof = np.zeros(4 * nv, dtype=np.int64)
        self._side = np.zeros(4 * nv)
        self._impulse = np.zeros(4 * nv)
        self._info = np.zeros(N_INFO)
        self._model, self._data, self._jl = m, d, jl

    def step(self, q, v, t, tau=None):
        """(q+, v+, StepReport) of one step that FreeStepper handed on: by the kernel when
        the step's only rows are joint-limit rows and its LCPs pass the acceptance test, else
        by ``OSStepper._general_step`` (given the joint forces once they were asked for, so a
        controller is called once a step). FreeStepper hands a step on without ``tau`` when a
        stop is near at v, before its collision detection, or after a contact step; with
        ``tau`` after it found no contact."""
        from mbsim.simcore.stepper import StepReport

        s = self.s
        general = s._general_step
        if not self.eligible(s):
            return general(q, v, t, tau)
        t0 = _time.perf_counter()
        m, d, o = s.model, s.data, s.opt
        if m is not self._model or d is not self._data or s.joint_limits is not self._jl:
            self._bind()
        q = np.ascontiguousarray(q, dtype=np.float64)
        v = np.ascontiguousarray(v, dtype=np.float64)
        dt = float(o.dt)
        if tau is None:
            if s._fast._last_had_contact or not (
                self._friction or limit_rows_needed(*self._near, q, v, v, dt)
            ):
                return general(q, v, t)  # a contact step (or its follow-up): not ours
            tau = s._joint_forces(t, q, v)
            if s.effort is not None:  # the effort bound at the free motion (stepper.py)
                tau = s._free_motion(q, v, tau)[0]
            if s.collision is not None:  # FreeStepper has not looked for contacts yet
                forward_kinematics_kernel(
                    m.parent, m.jtype, m.qi, m.vi, m.nvj, d.S, m.tree_E, m.tree_r, m.axis, q,
                    v, d.E, d.r, d.R_world, d.p_world, d.vel, d.cbias,
                )  # fmt: skip
                c = s.collision.detect(d.R_world, d.p_world)
                if c is not None and len(c.gap):
                    return general(q, v, t, tau)
        q_new = np.empty(m.nq)
        v_new = np.empty(m.nv)
        v_start = np.empty(m.nv)
        info = self._info
        code = limit_step_kernel(
            *self._args, dt, float(o.stabilization), float(o.max_recovery_speed),
            float(o.impact_velocity), float(o.lcp_tol_rel), o.lcp_selection == "least_norm",
            float(o.max_speed), q, v, np.ascontiguousarray(tau, dtype=np.float64), q_new,
            v_new, v_start, self._dof, self._side, self._impulse, info,
        )  # fmt: skip
        if code == FALLBACK or code == BAD:
            return general(q, v, t, tau)  # the Python chain decides, or raises the error
        if code == OK and s.effort is not None and not s.effort.settled(v, v_new):
            # a stop's impulse moved an implicit joint's force across its effort: the
            # general path takes the step (stepper._general_step), from the same forces
            return general(q, v, t, tau)
        s.step_index += 1
        self.steps += 1
        report = StepReport()
        if code == OK:
            nl = int(info[I_ROWS])
            s._soft_from = 0  # solved at full recovery (OSStepper._softened_step)
            report.limit_dof = self._dof[:nl].copy()
            report.limit_side = self._side[:nl].copy()
            report.limit_impulse = self._impulse[:nl].copy()
            report.limit_impact = bool(info[I_IMPACT])
            report.energy_impacts = float(info[I_E_IMPACTS])
            report.energy_stabilisation = float(info[I_E_STAB])
            report.lcp_size = int(info[I_SIZE])
            report.lcp_pivots = int(info[I_PIVOTS])
            report.lcp_residual = float(info[I_RESIDUAL])
            report.solver = SOLVER_NAMES[int(info[I_SOLVER])]
            report.v_new = v_new
            report.v_start = v_start
        report.step_seconds = _time.perf_counter() - t0
        return q_new, v_new, report
