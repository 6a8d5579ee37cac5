"""The compiled contact step: from the step's contact set to v+ in one numba call (issue 15).

A contact step of the OS stepper (stepper.py, ``OSStepper._contact_step``) runs some forty
Python functions between small kernels: the curvature term, the gap allowance, the slip
reference, ContactProblem.build, ``OS.prepare`` (Lambda by Upsilon, W), the impact test, the
LCP assembly, the fallback chain's first attempt (islands, Lemke on M + delta I, the polish,
the verification), the impulse response, the energy shares and the report's impulse split.
:func:`contact_step_kernel` does the same arithmetic in one call. Its stages, each the
Python path's function it mirrors (the same kernels, or the same operations in the same
order, so the two agree bit for bit; tests/test_contact_fused.py compares whole runs):

1. the impact test (``normal_velocity``, ``contact_stages.impacting``): n . v_u at the
   step's start velocity v; a contact approaching faster than ``impact_velocity`` that would
   close its gap within the step makes the step a collision (000 Sec. 7);
2. the curvature term (``contact.curvature_drift``: 1/2 dt^2 n . J-dot v at the core points)
   and the gap allowance g_v (``contact_stages.gap_allowance``; stepper docstring, "Gap
   stabilisation");
3. the slip reference (``relative_velocities`` at v_f = v + dt qdd; without a collision
   also the step LCP's velocities) and the friction matrices D (``contact.friction_matrix``,
   Eq. 7);
4. the nodes and their transforms (``contact.contact_nodes``, ``kinematics.node_transforms``),
   Upsilon and Lambda on the factorisation ABA left in Data (``delassus.upsilon_after_aba``,
   000 Eqs. 64-69; only Lambda's linear-linear blocks, all that W reads),
   W = Q_u Lambda Q_u^T (``contact.relative_compliance``, Eq. 49), both per contact island
   (contact_islands.py: zero between islands, never built; the same entries);
5. with a collision, the impact phase (``stepper.impact_phase``, 000 Eqs. 54-58): the
   compression LCP (dt = 0, no gap allowance) from v; with restitution eps the recovered
   impulse theta = eps (n . P_c) n applied by the impulse response and the decompression LCP
   (its sigma rows' friction budget mu n . theta with ``impact_friction = "total"``); the
   kinetic energy before and after (``energy_impacts`` in the metric M + armature); then the
   free motion from v_c by ABA, as ``OS.solve`` recomputes it; the step's LCP of Eq. 53
   (``contact.contact_lcp``): q = D^T (v_u(v_f) + g_v n);
6. its solve, as ``lcp.chain.solve_lcp`` solves it (:func:`_solve_rows`): an M that splits
   into independent blocks (islands, lcp/islands.py: the same ``_component_labels`` and
   ``block_order``) block by block as ``islands.solve_blocks`` does, each with the whole LCP's
   ||M||_inf for its regularisation, the assembled z verified on the whole (M, q) from its
   blocks (``contact_islands.verify_blocks``; M built per island, never whole); each block
   (or the unsplit LCP, :func:`_solve_block`): with the warm start on (lcp/warm.py, the OS
   formulation's store) the active set remembered under its key first ((n, None) unsplit,
   (n, rows) for a block; ``chain._warm_attempt``: ``warm.guess_kernel``, the same acceptance
   test; the wrapper hands the store in as a lcp/warm_table.py table and takes it back only
   when the step is kept, so the store ends as the Python path leaves it); else the whole
   first attempt of the chain (:func:`_least_norm_solve` for the "least_norm" selection:
   ``chain.lemke_regularised``'s Lemke on M + delta I, the polish (least change, else the
   proximal iterations of lcp/proximal.py), the active-set corrections, the restricted
   LCP by ``lemke.lemke``'s paths and the raw answer, all of it; :func:`_vertex_solve` for
   "vertex": lexicographic Lemke's first path), every candidate verified
   by the acceptance test of lcp/problem.py; the Lemke paths take the Python path's pivot
   cap and budget chunk (``lemke.default_max_pivots``, ``budget.chunk_pivots``, read by
   :func:`pivot_caps`);
7. the impulses F = D beta (``ContactProblem.impulses``: numpy's einsum sums the k terms in
   two interleaved lanes, even and odd k, then adds them; checked for k <= 7, MAX_K), the
   impulse response v+ = v_f + M^-1 J^T Q_u^T F (``dynamics.impulse_response_kernel``);
8. the stabilisation share of the kinetic energy (``energy_sources.step_shares``: the normal
   rows of penetrating contacts, fn (n . u_f + n . u+) / 2, BLAS dot as there; u_f the slip
   reference's rows when no collision changed v_f) and the report's split of the impulses
   (``contact_stages.split_impulses``).

n . x is numpy's ``einsum("ij,ij->i")`` order, (x0 y0 + x2 y2) + x1 y1, as everywhere in the
Python path; the Impact records of the report are built by the wrapper from the kernel's
numbers with the Python path's own expressions. What the kernel does not decide is returned
to the caller, which then takes the step by the Python path from the start (nothing the
kernel wrote is kept: Data's scratch arrays are rewritten there, and after a collision's
second ABA the kernel runs ABA at (q, v) again so the Python path starts from the same
Data): a collision with ``energy_consistent_impacts`` (IMPACT: its halving loop stays in
Python), and an LCP (or a block of one) the first attempt does not settle (FALLBACK: a Lemke
path not ended by its first budget chunk, after which the Python path polls the step's time
budget; a rejected answer, also of the assembled blocks). The Python chain then goes on from
its first attempt, which gives the same unaccepted answer, to the next ones, or raises the
failure; when the step LCP (no collision, no joint rows: the same LCP bit for bit) does not
split and its whole first attempt ran to its end here and was rejected, the info slot
I_FIRST_FAILED says so (``ContactFuser.first_failed``) and the stepper's Python path starts
the chain at its second attempt without the warm guess (``chain.solve_lcp``'s
``skip_first``): the first attempt is not run twice.

Joint rows (joint_rows.py: limits near a stop, joint friction; 1-DoF rows only) join the
step's LCP in front of the contact rows as ``OS.prepare`` puts them (:func:`_joint_columns`,
:func:`_solve_joint_rows`): each row's response M^-1 G_a^T by the factorisation and the
contacts' relative velocities it causes, M = T^T K T + E entry by entry, v+ += M^-1 G_j^T p_j,
and the stops passed get their energy share. The Python path forms K and M by BLAS
products, so with joint rows the two agree to rounding (tests/test_contact_joint_rows.py),
not bit for bit; a collision or a stop's impact in a step with joint rows is the Python
path's (FALLBACK).

What the caller does not hand it (:meth:`ContactFuser.eligible`, and the stepper's test for
joint rows): spherical joint-limit rows, bilateral rows, RK4, another
formulation than OS, another Delassus algorithm than Upsilon, the CRBA dynamics, the "pgs"
solver, nf > 6, LCP dumps, and LCPs of more than MAX_ROWS rows.
Softened retries of a failed step stay in Python: the kernel takes a step only at full
recovery, and when it accepts one, so would the Python path's first attempt.

Units: SI (s, m, m/s, N s, J).
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import numpy as np
from numba import njit, typeof, types
from numba.core import cgutils
from numba.experimental import structref
from numba.extending import intrinsic

from mbsim.simcore import warmup
from mbsim.simcore.contact import (
    _contact_lcp_kernel,
    _contact_nodes_kernel,
    _curvature_kernel,
    _edge_angles,
    _friction_kernel,
    _node_impulses_kernel,
)
from mbsim.simcore.contact_islands import (
    compliance_starts,
    compliance_work,
    contact_islands_into,
    global_rows,
    island_compliance_into,
    verify_blocks,
)
from mbsim.simcore.contact_stages import _gap_allowance_kernel, _impacting_kernel, _split_kernel
from mbsim.simcore.delassus.upsilon_body import upsilon_kernel
from mbsim.simcore.dynamics import aba_kernel, impulse_response_kernel
from mbsim.simcore.joint_rows import joint_lcp_into
from mbsim.simcore.kinematics import (
    node_transforms_kernel,
    propagate_bias,
    relative_velocities_into,
)
from mbsim.simcore.lcp import budget
from mbsim.simcore.lcp import warm as warm_start
from mbsim.simcore.lcp.chain import ACTIVE_SET_FIXES, LSTSQ_RCOND
from mbsim.simcore.lcp.islands import (
    _component_labels,
    block_order,
    block_order_into,
    component_labels_into,
)
from mbsim.simcore.lcp.problem import _inf_norm, principal_kernel
from mbsim.simcore.lcp.selection import LEAST_NORM_DELTA
from mbsim.simcore.lcp.warm import CANDIDATE, guess_normed
from mbsim.simcore.lcp.warm import ROUNDS as WARM_ROUNDS
from mbsim.simcore.lcp.warm_table import ACCEPTED, TRIED, WarmTable
from mbsim.simcore.lcp.warm_table import find as warm_find
from mbsim.simcore.lcp.warm_table import remember as warm_remember
from mbsim.simcore.limit_step import (
    ACCEPT,
    REJECT,
    SOLVER_NAMES,
    UNDECIDED,
    _armature_energy,
    _kinetic,
    _lemke_path,
    _response_column,
    evaluate_candidate,
    lcp_work,
    lemke_regularised_into,
)
from mbsim.simcore.native_call import EMPTY, address_table, native, native_caller
from mbsim.simcore.spatial import _borrowed_value, borrowed, c_view

#: what :func:`contact_step_kernel` returns: the step is done (OK), its LCP needs the Python
#: chain (FALLBACK), or it is a collision with the energy-consistent impact option, which the
#: Python path's impact phase takes (IMPACT)
OK, FALLBACK, IMPACT = 0, 1, 2
#: the ``info`` slots of :func:`contact_step_kernel`; I_FIRST_FAILED (1.0 or 0.0): a FALLBACK
#: whose step LCP (no collision, no joint rows) did not split and whose first attempt of the
#: chain ran to its end and was rejected (:func:`_solve_block`'s REJECT), written only when
#: ``info`` has that slot (the compiled loop's stage holds the first ten: a FALLBACK ends the
#: loop there and ``ContactFuser.step`` takes the step again)
(
    I_DEMANDS, I_DEEPEST, I_PIVOTS, I_RESIDUAL, I_SOLVER, I_E_STAB, I_IMPACT, I_E_IMPACTS,
    I_KE_BEFORE, I_KE_AFTER, I_FIRST_FAILED,
) = range(11)  # fmt: skip
#: the info slots ``ContactFuser.step`` hands the kernel
N_INFO = 11
#: the largest nf + 1 whose F = D beta the kernel sums in numpy einsum's order (checked)
MAX_K = 7
#: the most LCP rows the kernel takes (the Lemke settings of :func:`pivot_caps` cover them):
#: 256 contacts of nf + 1 = MAX_K + 1 rows
MAX_ROWS = 256 * (MAX_K + 1)

_NO_F = np.zeros(0)
_NO_I = np.zeros(0, np.int64)
#: the module (the package's ``lemke`` is the solver function of that name)
lemke_module = importlib.import_module("mbsim.simcore.lcp.lemke")


def _f64(a) -> np.ndarray:
    """``a`` as a contiguous float64 array (itself when it is one already)."""
    if type(a) is np.ndarray and a.dtype == np.float64 and a.flags.c_contiguous:
        return a
    return np.ascontiguousarray(a, dtype=np.float64)


def _i64(a) -> np.ndarray:
    """``a`` as a contiguous int64 array (itself when it is one already)."""
    if type(a) is np.ndarray and a.dtype == np.int64 and a.flags.c_contiguous:
        return a
    return np.ascontiguousarray(a, dtype=np.int64)


#: the joint-row fields of a step without joint rows (:func:`joint_row_fields`)
_NO_ROWS = (np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))


def joint_row_fields(joint, dt: float) -> tuple:
    """The step record's joint-row fields (j_dof, j_sign, j_shift, j_bound, j_gap) of the
    1-DoF rows ``joint`` (joint_rows.JointRows, ``limit_G`` None): each velocity row's DoF
    and sign (the limits' s e_k, then +e_k and -e_k per friction joint, ``JointRows.G``), its
    allowance g_v (``row_shift``: the limits', rad/s or m/s; 0 for the friction rows), each
    friction joint's bound F dt (``block``; N m s or N s) and each limit's gap (rad or m)."""
    nl, nfr = joint.n_limits, joint.n_friction
    dof = np.empty(nl + 2 * nfr, np.int64)
    sign = np.empty(nl + 2 * nfr)
    dof[:nl] = joint.limit_dof
    sign[:nl] = joint.limit_side
    dof[nl::2] = joint.friction_dof
    dof[nl + 1 :: 2] = joint.friction_dof
    sign[nl::2] = 1.0
    sign[nl + 1 :: 2] = -1.0
    shift = joint.row_shift(True)
    bound = np.asarray(joint.friction_force, dtype=np.float64) * dt
    return dof, sign, _f64(shift), _f64(bound), _f64(joint.limit_gap)


def pivot_caps() -> tuple[int, np.ndarray]:
    """(MAX_ROWS, caps): caps[0, n] the Lemke pivot cap ``lemke.default_max_pivots`` and
    caps[1, n] the pivots of one budget chunk ``budget.chunk_pivots`` of every LCP size
    0 .. MAX_ROWS: what the kernel's Lemke paths take from the Python path's settings (read
    now, so a changed setting is followed; the table is shared: read only)."""
    settings = (budget.CHUNK_FLOPS, lemke_module.default_max_pivots, budget.chunk_pivots)
    if _caps_read[0] != settings:  # ~3 ms of Python: once per process and settings
        sizes = range(MAX_ROWS + 1)
        caps = [lemke_module.default_max_pivots(m) for m in sizes]
        table = np.array([caps, [budget.chunk_pivots(m) for m in sizes]], np.int64)
        _caps_read[:] = settings, table
    return MAX_ROWS, _caps_read[1]


#: the settings :func:`pivot_caps` last read, and its table of them
_caps_read: list = [None, None]


@njit(cache=True, inline="always")
def _ndot(x, i, y, j):
    """x[i] . y[j] of two (n, 3) arrays in numpy einsum's order: (x0 y0 + x2 y2) + x1 y1."""
    return (x[i, 0] * y[j, 0] + x[i, 2] * y[j, 2]) + x[i, 1] * y[j, 1]


@njit(cache=True, inline="always")
def _impulses(D, z, F):
    """F[i] = D[i] beta_i (``ContactProblem.impulses``' einsum "ijk,ik->ij"): the k products
    summed in two lanes, even k and odd k, each in order, then added, as numpy does."""
    nu, _, k = D.shape
    for i in range(nu):
        for r in range(3):
            even = D[i, r, 0] * z[k * i]
            odd = D[i, r, 1] * z[k * i + 1]
            for a in range(2, k, 2):
                even += D[i, r, a] * z[k * i + a]
            for a in range(3, k, 2):
                odd += D[i, r, a] * z[k * i + a]
            F[i, r] = even + odd


@njit(cache=True, inline="always")
def _mscale(M):
    """||M||_inf, taken as 1 when it is 0 or not finite (``chain.solve_lcp``'s mscale)."""
    mscale = _inf_norm(M)
    if not (mscale > 0.0 and np.isfinite(mscale)):
        mscale = 1.0
    return mscale


@njit(cache=True)
def _least_norm_solve(M, q, delta, tol_rel, caps, z, w):
    """``chain.lemke_regularised`` on (M, q) with the regularisation delta (absolute), the
    whole first attempt of the chain: ``limit_step.lemke_regularised_into`` with ``chain``
    True (Lemke on M + delta I with the pivot caps ``caps``, the polish, the active-set
    corrections, the restricted LCP by ``lemke.lemke``'s paths, the raw answer; every
    candidate verified on (M, q)), in work arrays of its own. Returns (ACCEPT, REJECT or
    UNDECIDED, pivots, worst residual); z and w = M z + q hold the accepted answer. REJECT:
    the Python chain's first attempt on (M, q) is not accepted either (the chain goes on to its
    second); UNDECIDED: a Lemke path the first budget chunk did not end (or, below one chunk's
    pivot cap, a regularised path without a solution: ``limit_step._one_chunk``), which the
    Python path follows on, polling the step's time budget. Either way the caller hands the
    step back."""
    nf, ni = lcp_work(q.shape[0])
    return lemke_regularised_into(
        M, q, delta, tol_rel, caps, True, z, w, np.empty(nf), np.empty(ni, dtype=np.int64)
    )


@njit(cache=True)
def _vertex_solve(M, q, tol_rel, caps, z, w):
    """The first attempt of the chain with the "vertex" selection: lexicographic Lemke on
    (M, q) (``lemke.lemke``'s first path: ``limit_step._lemke_path`` with the pivot caps
    ``caps``, as the least-norm attempt's paths), verified on (M, q). Returns (accepted, pivots,
    worst residual). Not accepted: a path without a verified solution or longer than one
    budget chunk (the Python chain follows the other paths and attempts)."""
    n = q.shape[0]
    solved, pivots, _basic = _lemke_path(
        M, q, z, np.empty(3 * n * n + 5 * n), np.empty(3 * n + 4, dtype=np.int64), caps
    )
    if not solved:
        return False, pivots, np.inf
    ok, worst, _tol = evaluate_candidate(M, q, z, tol_rel, w)
    return ok, pivots, worst


#: the calls of the contact step's large kernels through their addresses (native_call.py): each
#: is compiled once, on its own; a linked call compiles it again inside every kernel above it,
#: which made the contact step most of a first run's compile time (docs/results.md)
_least_norm_solve_call = native(_least_norm_solve)
#: (accepted, pivots, worst residual): what :func:`_vertex_solve` returns; given, typing the
#: call compiles nothing, so a run with the default "least_norm" selection never compiles the
#: vertex attempt (its first call compiles or loads it: native_call.py, ``native``)
VERTEX_RESULT = types.Tuple((types.boolean, types.int64, types.float64))
_vertex_solve_call = native(_vertex_solve, VERTEX_RESULT)
guess_normed_call = native(guess_normed)


@njit(cache=True)
def least_norm_attempt(M, q, tol_rel, caps, z, w):
    """The first attempt of ``chain.solve_lcp`` with the "least_norm" selection on an LCP
    that does not split (:func:`_least_norm_solve` with delta = LEAST_NORM_DELTA
    ||M||_inf): (ACCEPT, REJECT or UNDECIDED, pivots, worst residual); UNDECIDED for an M
    that splits into islands."""
    n = q.shape[0]
    if n > 1 and _component_labels(M, np.empty(n, dtype=np.int64)) > 1:
        return UNDECIDED, 0, np.inf  # islands: _solve_rows solves them block by block
    return _least_norm_solve(M, q, LEAST_NORM_DELTA * _mscale(M), tol_rel, caps, z, w)


@njit(cache=True)
def vertex_attempt(M, q, tol_rel, caps, z, w):
    """The first attempt of ``chain.solve_lcp`` with the "vertex" selection on an LCP that
    does not split (:func:`_vertex_solve`); not accepted for an M that splits."""
    n = q.shape[0]
    if n > 1 and _component_labels(M, np.empty(n, dtype=np.int64)) > 1:
        return False, 0, np.inf
    return _vertex_solve(M, q, tol_rel, caps, z, w)


@njit(cache=True)
def _solve_block(
    M, q, mscale, mraw, n_all, whole, rows, least_norm, tol_rel, caps, warm, tab, z, w, iw
):
    """One block (M, q) of an LCP of n_all rows, or the whole of one that does not split
    (``whole``), solved as ``chain._solve_warm`` / ``chain.solve_lcp`` solve it, up to the
    first attempt of the chain: with ``warm``, the set the warm table holds under the key
    (n_all, None) or (n_all, rows) first (``chain._warm_attempt``: ``warm.guess_kernel`` with
    the chain's delta, LEAST_NORM_DELTA times the whole LCP's mscale in the least-norm
    selection, 0 in the vertex one; the same acceptance test, on the block), else the
    chain's first attempt with the same regularisation. Returns (state, pivots, worst
    residual, the set to remember: the guess's final set, else the rows with z > 0), the
    state ACCEPT, REJECT (the chain's first attempt ran to its end and was rejected: the
    Python chain's is too; "least_norm" only) or UNDECIDED (:func:`_least_norm_solve`); the
    table's TRIED and ACCEPTED counters go up as the store's ``tried`` and ``accepted``.
    ``mraw``: ||M||_inf of this block when the caller has it (the whole LCP's, or an
    island's that is one block), else < 0 (a block of a split island: the guess takes its
    own, as ``guess_kernel`` does). ``iw``:
    int64 work of at least 2 n (the set's copy, then the returned set: a view of it, which
    the caller reads before it uses ``iw`` again)."""
    n = q.shape[0]
    delta = LEAST_NORM_DELTA * mscale if least_norm else 0.0
    if warm:
        e = warm_find(tab, n_all, whole, rows)
        if e >= 0:
            meta = tab[6]
            meta[TRIED] += 1
            ne = tab[3][e]
            S = iw[:ne]
            stored = tab[4]
            for a in range(ne):
                S[a] = stored[e, a]
            final = iw[n : 2 * n]
            code, ns, _rounds = guess_normed_call(
                M, q, S, delta, least_norm, tol_rel, LSTSQ_RCOND, WARM_ROUNDS,
                ACTIVE_SET_FIXES, z, final, mraw if mraw >= 0.0 else _inf_norm(M),
            )  # fmt: skip
            if code == CANDIDATE:
                ok, worst, _tol = evaluate_candidate(M, q, z, tol_rel, w)
                if ok:
                    meta[ACCEPTED] += 1
                    return ACCEPT, 0, worst, final[:ns]
    if least_norm:
        state, pivots, worst = _least_norm_solve_call(M, q, delta, tol_rel, caps, z, w)
    else:
        ok, pivots, worst = _vertex_solve_call(M, q, tol_rel, caps, z, w)
        state = ACCEPT if ok else UNDECIDED  # the Python chain follows lemke.lemke's other paths
    pos = iw[n : 2 * n]  # np.flatnonzero(z > 0.0)
    npos = 0
    for i in range(n):
        if z[i] > 0.0:
            pos[npos] = i
            npos += 1
    return state, pivots, worst, pos[:npos]


_solve_block_call = native(_solve_block)


@njit(cache=True, inline="always")
def _solve_whole(M, q, least_norm, tol_rel, caps, warm, tab, und, z, w, iw):
    """An LCP that does not split into blocks, solved whole as ``chain.solve_lcp`` solves it
    up to its first attempt (:func:`_solve_block` with ||M||_inf its mscale; w (n) and iw
    (2 n) its work), its set then remembered under the key (n, None). Returns (state,
    pivots, worst residual): ACCEPT, REJECT or UNDECIDED (:func:`_solve_block`)."""
    n = q.shape[0]
    mraw = _inf_norm(M)
    mscale = mraw if mraw > 0.0 and np.isfinite(mraw) else 1.0  # _mscale's rule
    none = iw[:0]
    state, pivots, worst, S = _solve_block_call(
        M, q, mscale, mraw, n, True, none, least_norm, tol_rel, caps, warm, tab, z, w, iw
    )
    if state == ACCEPT and warm:
        warm_remember(tab, und, n, True, none, S)
    return state, pivots, worst


@njit(cache=True)
def _solve_rows(W, wstart, corder, cstarts, D, mu, vu, budget, least_norm, tol_rel, caps, warm,
                tab, und, z, fw, iw):  # fmt: skip
    """The contact LCP of Eq. 53 (``contact.contact_lcp``; the sigma rows' q the friction
    budget, empty for none) for row velocities vu (nu, 3), solved as ``chain.solve_lcp``
    solves it up to the first attempt of its chain. It is built per contact island
    (contact_islands.py: island I's contacts corder[cstarts[I]:cstarts[I + 1]], its W in
    W[wstart[I]:wstart[I + 1]]), each island's M split further into independent blocks
    (lcp/islands.py: ``_component_labels``, ``block_order``): the whole M's blocks, entry for
    entry, never assembled. One block in all: :func:`_solve_block` on the whole. Else the
    blocks in the order of their first row, as ``islands.solve_blocks`` takes them, each by
    :func:`_solve_block` with the whole LCP's mscale (the largest island's ||M||_inf), the
    assembled z verified on the whole from its blocks (``contact_islands.verify_blocks``).
    With ``warm`` the answer's sets then go to the warm table (``WarmStart.remember`` of
    every key, in block order; ``und`` the table's undo log, lcp/warm_table.py). Returns
    (state, pivots (summed over the blocks), worst residual, solver code); z gets
    [beta; sigma]. The state: ACCEPT; REJECT, an LCP that does not split whose first
    attempt ran to its end and was rejected (:func:`_solve_block`: the Python chain goes on
    from its second attempt); UNDECIDED, the Python chain goes on from its first (a path cut
    by the budget chunk; a block or the assembled z of a split LCP not accepted: the unsplit
    solve, the next attempts). ``fw`` and ``iw``: the caller's work
    (float64, at least n (n + 2) with one island; int64, at least 3 n; :func:`rows_work`),
    where the one-island LCP is built and solved."""
    nu, _, k = D.shape
    n = nu * (k + 1)
    code = 1 if least_norm else 0
    count = cstarts.shape[0] - 1
    if count == 1:
        # one island: all contacts in order (corder 0 .. nu - 1, its rows the whole LCP's),
        # its M the whole M, from the step's own arrays (the same entries as below)
        for i in range(n * (n + 1)):  # M and q zeroed, as np.zeros made them
            fw[i] = 0.0
        M = c_view(fw, 0, (n, n))
        q = fw[n * n : n * (n + 1)]
        _contact_lcp_kernel(c_view(W, 0, (3 * nu, 3 * nu)), D, mu, vu, M, q)
        if budget.shape[0]:
            for a in range(nu):
                q[nu * k + a] = budget[a]
        label = iw[:n]
        if n <= 1 or component_labels_into(M, label, iw[n : 3 * n]) == 1:  # one block: whole
            state, pivots, worst = _solve_whole(
                M, q, least_norm, tol_rel, caps, warm, tab, und, z, fw[n * (n + 1) : n * (n + 2)],
                iw[n : 3 * n],
            )  # fmt: skip
            return state, pivots, worst, code
    Ms = []
    qs = []
    gs = []
    norms = np.empty(count)  # each island's ||M||_inf, taken once
    for g in range(count):
        contacts = corder[cstarts[g] : cstarts[g + 1]]
        m = contacts.shape[0]
        ng = m * (k + 1)
        Dg = np.empty((m, 3, k))
        mug = np.empty(m)
        vug = np.empty((m, 3))
        for a in range(m):
            c = contacts[a]
            mug[a] = mu[c]
            for x in range(3):
                vug[a, x] = vu[c, x]
                for y in range(k):
                    Dg[a, x, y] = D[c, x, y]
        Mg = np.zeros((ng, ng))
        qg = np.zeros(ng)
        _contact_lcp_kernel(W[wstart[g] : wstart[g + 1]].reshape((3 * m, 3 * m)), Dg, mug, vug,
                            Mg, qg)  # fmt: skip
        if budget.shape[0]:
            for a in range(m):
                qg[m * k + a] = budget[contacts[a]]
        rows = np.empty(ng, dtype=np.int64)
        global_rows(contacts, nu, k, rows)
        norms[g] = _inf_norm(Mg)
        Ms.append(Mg)
        qs.append(qg)
        gs.append(rows)
    return _solve_islands(Ms, qs, gs, n, norms, least_norm, tol_rel, caps, warm, tab, und, z)


@njit(cache=True, inline="always")
def _solve_islands(Ms, qs, gs, n, norms, least_norm, tol_rel, caps, warm, tab, und, z):
    """The LCP of n rows given as islands (Ms[g], qs[g]: island g's M and q, gs[g] its rows
    in the whole LCP; zero between islands; norms[g] its ||M||_inf), each split further into
    independent blocks, solved as ``islands.solve_blocks`` solves them (:func:`_solve_rows`,
    from its islands on): the blocks in the order of their first row, each by
    :func:`_solve_block` with the whole LCP's mscale (from the largest island's ||M||_inf),
    the assembled z verified on the whole; one block in all: solved whole. An island that is
    one block is solved on its own arrays (its rows in order: the principal block is the
    island's M entry for entry), its norm handed to the guess. Returns (state, pivots, worst
    residual, solver code): REJECT only for one block in all (:func:`_solve_rows`)."""
    code = 1 if least_norm else 0
    count = len(Ms)
    mraw = 0.0  # ||M||_inf of the whole LCP: the largest island's
    for g in range(count):
        mraw = max(mraw, norms[g])
    mscale = mraw if mraw > 0.0 and np.isfinite(mraw) else 1.0  # _mscale's rule
    # the blocks of every island, in the order of their first (global) row
    bisl = np.empty(n, dtype=np.int64)
    bloc = []
    first = np.empty(n, dtype=np.int64)
    single = np.empty(count, dtype=np.bool_)  # island g is one block
    nblk = 0
    for g in range(count):
        ng = Ms[g].shape[0]
        label = np.empty(ng, dtype=np.int64)
        cnt = _component_labels(Ms[g], label) if ng > 1 else 1
        single[g] = cnt == 1
        if cnt == 1:
            label[:] = 0
        order, starts = block_order(label, cnt)
        for b in range(cnt):
            local = order[starts[b] : starts[b + 1]]
            bisl[nblk] = g
            first[nblk] = gs[g][local[0]]
            bloc.append(local)
            nblk += 1
    if nblk == 1:  # one island (all contacts, in the whole LCP's row order) that does not split
        none = np.empty(0, dtype=np.int64)
        w = np.empty(n)
        state, pivots, worst, S = _solve_block_call(
            Ms[0], qs[0], mscale, mraw, n, True, none, least_norm, tol_rel, caps, warm, tab, z, w,
            np.empty(2 * n, dtype=np.int64),
        )  # fmt: skip
        if state == ACCEPT and warm:
            warm_remember(tab, und, n, True, none, S)
        return state, pivots, worst, code
    seq = np.argsort(first[:nblk])
    sets = []
    keys = []
    Mbs = []
    qbs = []
    zbs = []
    wbs = []
    pivots = 0
    for t in range(nblk):
        b = seq[t]
        g = bisl[b]
        local = bloc[b]
        rows = gs[g][local]
        m = rows.shape[0]
        if single[g]:  # local = 0 .. m - 1: the island's own M and q (read only)
            Mb, qb, braw = Ms[g], qs[g], norms[g]
        else:
            Mb, qb = principal_kernel(Ms[g], qs[g], local)
            braw = -1.0  # the guess takes the block's own norm
        zb = np.empty(m)
        wb = np.empty(m)
        state, piv, _worst, S = _solve_block_call(
            Mb, qb, mscale, braw, n, False, rows, least_norm, tol_rel, caps, warm, tab, zb, wb,
            np.empty(2 * m, dtype=np.int64),
        )  # fmt: skip
        if state != ACCEPT:  # the Python chain solves every block, then the unsplit LCP
            return UNDECIDED, 0, np.inf, code
        for a in range(m):
            z[rows[a]] = zb[a]
        pivots += piv
        sets.append(S)
        keys.append(rows)
        Mbs.append(Mb)
        qbs.append(qb)
        zbs.append(zb)
        wbs.append(wb)
    ok, worst, _tol = verify_blocks(n, tol_rel, Mbs, qbs, zbs, wbs)
    if not ok:
        return UNDECIDED, 0, np.inf, code
    if warm:
        for t in range(nblk):
            warm_remember(tab, und, n, False, keys[t], sets[t])
    return ACCEPT, pivots, worst, code


_solve_rows_call = native(_solve_rows)


@njit(cache=True)
def _joint_columns(parent, vi, nvj, S, inertia, E, r, R_world, IA, U, Dinv, body_a, local_a,
                   body_b, local_b, j_dof, j_sign, Wj, Kcj):  # fmt: skip
    """The joint rows' part of the step's Delassus matrix (``formulations.minimal.
    joint_row_delassus``): Wj[a] = (M + armature)^-1 G_a^T, the joint-space response to a
    unit impulse of joint row a (G_a = s_a e_(k_a); rad/s or m/s per N m s or N s), on the
    factorisation ABA left in the Data arrays (``limit_step._response_column``, as
    ``AbaDynamics.solve_joint``; the -e_k row of a friction pair is its +e_k row's column
    negated: the sweeps are linear, and negation is exact), and Kcj[a] (nu, 3) the contacts'
    relative linear velocities that response causes, Q_u V_nodes(Wj[a]) (C's column of
    joint_row_delassus, by ``kinematics.relative_velocities_into``; m/s per N s)."""
    nb = parent.shape[0]
    nv = Wj.shape[1]
    zero6 = np.zeros((nb, 6))
    wk = np.empty((4, nb, 6))
    g = np.empty(nv)
    a0 = np.empty(6)
    for a in range(j_dof.shape[0]):
        col = Wj[a]
        if a > 0 and j_dof[a] == j_dof[a - 1] and j_sign[a] == -j_sign[a - 1]:
            for i in range(nv):
                col[i] = -Wj[a - 1, i]
        else:
            _response_column(parent, vi, nvj, S, inertia, E, r, IA, U, Dinv, zero6, wk[0],
                             wk[1], wk[2], g, a0, j_dof[a], j_sign[a], col)  # fmt: skip
        relative_velocities_into(parent, vi, nvj, S, E, r, R_world, col, body_a, local_a, body_b,
                                 local_b, wk[3], Kcj[a])  # fmt: skip


@njit(cache=True)
def _solve_joint_rows(W, wstart, corder, cstarts, D, mu, vu, Wj, Kcj, j_dof, j_sign, j_shift,
                      j_bound, v_free, least_norm, tol_rel, caps, warm, tab, und, z):  # fmt: skip
    """The step's LCP with joint rows in front of the contact rows (``OS.prepare`` /
    ``OS.solve`` with joint rows, ``assembly.delassus_lcp``), solved as ``chain.solve_lcp``
    solves it up to the first attempt of its chain (:func:`_solve_islands`). The unknowns
    z = [p_j (nr row impulses: the limits' lambda, then each friction joint's beta+, beta-);
    sigma_j (one per friction joint); beta; sigma], M = T^T K T + E:

        M[a, b] = s_a Wj[b, k_a]            (G_j M^-1 G_j^T, rad/s per N m s)
        M[a, beta_i] = Kcj[a, i] . D_i      (and its transpose: C^T D, D^T C)
        M[beta, beta], E-hat, E-bar         (``contact.contact_lcp``'s, from the whole W)
        M[pair rows, sigma_j] = 1, M[sigma_j, pair rows] = -1   (``JointRows.block``)
        q = [s_a v_f,k_a + g_v,a; F_j dt; D^T (vu + g_v n); 0]

    with ``vu`` the contacts' rows at v_f with their gap allowance already added. W is given
    per contact island (:func:`_solve_rows`); the whole W is zero between them. Returns
    (accepted, pivots, worst residual, solver code). The same LCP as the Python path's up to
    the rounding of its BLAS products (T^T K T, R Lambda R^T: tests/test_contact_joint_rows.py
    states the tolerance)."""
    nu, _, k = D.shape
    nr = j_dof.shape[0]
    nfr = j_bound.shape[0]
    nju = nr + nfr
    nc = nu * (k + 1)
    n = nju + nc
    Wf = np.zeros((3 * nu, 3 * nu))
    for g in range(cstarts.shape[0] - 1):
        contacts = corder[cstarts[g] : cstarts[g + 1]]
        m = contacts.shape[0]
        Wg = W[wstart[g] : wstart[g + 1]].reshape((3 * m, 3 * m))
        for a in range(m):
            for b in range(m):
                for x in range(3):
                    for y in range(3):
                        Wf[3 * contacts[a] + x, 3 * contacts[b] + y] = Wg[3 * a + x, 3 * b + y]
    M = np.zeros((n, n))
    q = np.zeros(n)
    Mc = np.zeros((nc, nc))
    qc = np.zeros(nc)
    _contact_lcp_kernel(Wf, D, mu, vu, Mc, qc)
    for i in range(nc):
        q[nju + i] = qc[i]
        for j in range(nc):
            M[nju + i, nju + j] = Mc[i, j]
    nl = nr - 2 * nfr
    # the joint block (joint_rows.joint_lcp_into): K_jj = G_j M^-1 G_j^T, the rows' rates
    # G_j v_f + g_v, E and e of the friction pairs
    Kj = np.empty((nr, nr))
    rate = np.empty(nr)
    for a in range(nr):
        rate[a] = j_sign[a] * v_free[j_dof[a]] + j_shift[a]
        for b in range(nr):
            Kj[a, b] = j_sign[a] * Wj[b, j_dof[a]]
    joint_lcp_into(Kj, rate, nl, j_bound, M[:nju, :nju], q[:nju])
    for a in range(nr):
        for i in range(nu):
            for c in range(k):
                x = Kcj[a, i, 0] * D[i, 0, c] + Kcj[a, i, 1] * D[i, 1, c]
                x += Kcj[a, i, 2] * D[i, 2, c]
                M[a, nju + k * i + c] = x
                M[nju + k * i + c, a] = x
    code = 1 if least_norm else 0
    label = np.empty(n, dtype=np.int64)
    if n <= 1 or _component_labels(M, label) == 1:  # one block: solved whole
        state, pivots, worst = _solve_whole(
            M, q, least_norm, tol_rel, caps, warm, tab, und, z, np.empty(n),
            np.empty(2 * n, dtype=np.int64),
        )  # fmt: skip
        return state == ACCEPT, pivots, worst, code
    Ms = [M]
    qs = [q]
    gs = [np.arange(n)]
    norms = np.empty(1)
    norms[0] = _inf_norm(M)
    state, pivots, worst, code = _solve_islands(
        Ms, qs, gs, n, norms, least_norm, tol_rel, caps, warm, tab, und, z
    )
    return state == ACCEPT, pivots, worst, code


@njit(cache=True)
def joint_rows_solve(s, W, wstart, corder, cstarts, D, vu, v_free, jv):
    """The joint rows' part of the contact step (:func:`contact_step_kernel`, stages 4-7 with
    joint rows) on its record ``s``: the columns (:func:`_joint_columns`), the LCP of [joint;
    contact] rows into s.z (:func:`_solve_joint_rows`), and jv = M^-1 G_j^T p_j, the joint
    impulses' velocity change (rad/s or m/s). Returns (accepted, pivots, worst residual,
    solver code). The contact step calls it through its address (``s.jtab``,
    :func:`joint_rows_table`): compiled only for a run whose contact steps have joint rows,
    not by every first run's compile-ahead helper (docs/results.md, branch jcontact)."""
    nr = s.j_dof.shape[0]
    nv = jv.shape[0]
    nu = D.shape[0]
    Wj = np.empty((nr, nv))
    Kcj = np.empty((nr, nu, 3))
    _joint_columns(
        s.parent, s.vi, s.nvj, s.S, s.inertia, s.E, s.r, s.R_world, s.IA, s.U, s.Dinv,
        s.body_a, s.local_a, s.body_b, s.local_b, s.j_dof, s.j_sign, Wj, Kcj,
    )  # fmt: skip
    res = _solve_joint_rows(
        W, wstart, corder, cstarts, D, s.mu, vu, Wj, Kcj, s.j_dof, s.j_sign, s.j_shift,
        s.j_bound, v_free, s.least_norm, s.tol_rel, s.caps, s.warm, s.tab, s.und, s.z,
    )  # fmt: skip
    for i in range(nv):
        jv[i] = 0.0
    for a in range(nr):
        p = s.z[a]
        for i in range(nv):
            jv[i] += Wj[a, i] * p
    return res


#: what :func:`joint_rows_solve` returns, the type its callers' address lookup keys on
JOINT_RESULT = types.Tuple((types.boolean, types.int64, types.float64, types.int64))
_joint_rows_call = native_caller(JOINT_RESULT)


def joint_rows_table() -> np.ndarray:
    """The address table (native_call.py) of :func:`joint_rows_solve` compiled (or loaded
    from numba's cache) for the contact step's record type and the arrays it passes: what
    ``ContactFuser.step`` puts in the record's ``jtab`` for a step with joint rows (once a
    process; ~2-7 s of compilation on a cold cache)."""
    if _joint_table[0] is None:
        f1 = types.Array(types.float64, 1, "C")
        i1 = types.Array(types.int64, 1, "C")
        sig = (
            contact_signature()[0], f1, i1, i1, i1, types.Array(types.float64, 3, "C"),
            types.Array(types.float64, 2, "C"), f1, f1,
        )  # fmt: skip
        joint_rows_solve.compile(sig)
        _joint_table[0] = address_table(joint_rows_solve)
    return _joint_table[0]


_joint_table: list = [None]


@njit(cache=True, inline="always")
def _respond(parent, vi, nvj, S, E, r, U, Dinv, pA, u, acc, node_body, node_X, ia, ib, F, v0,
             out, node_f, dv):  # fmt: skip
    """out = v0 + M^-1 J^T Q_u^T F (``OS.respond``: node impulses, then the impulse response
    on the articulated factorisation in the Data arrays); ``node_f`` ((nn, 6)) and ``dv``
    ((nv,)) are work arrays, zeroed here."""
    for a in range(node_f.shape[0]):
        for c in range(6):
            node_f[a, c] = 0.0
    _node_impulses_kernel(F, ia, ib, node_f)
    for i in range(dv.shape[0]):
        dv[i] = 0.0
    impulse_response_kernel(parent, vi, nvj, S, E, r, U, Dinv, node_body, node_X, node_f, pA, u,
                            acc, dv)  # fmt: skip
    for i in range(v0.shape[0]):
        out[i] = v0[i] + dv[i]


#: the fields of the contact step's record (:class:`StepType`), in the order :func:`make_step`
#: takes them: the Model and Data arrays (data.py; ``pivots_ws``, ``qdd_ws`` Data's pivots
#: and qdd as ABA's scratch, ``bv`` a (nb, 6) scratch), the step's contacts (``radius_a``,
#: ``radius_b`` empty unless the curvature term takes the core points), the pair
#: parameters of each contact, the friction polyhedron's edge angles, the step's 1-DoF joint
#: rows (joint_rows.JointRows, empty for none: each velocity row's DoF and sign, its
#: allowance g_v, each friction joint's bound F dt, each limit's gap) and the address table
#: of :func:`joint_rows_solve` (empty for none), the state (q, v), the
#: joint forces and the free acceleration, the options (floats and bools), the Lemke pivot
#: caps (:func:`pivot_caps`), the warm start's flag, table and undo log (lcp/warm_table.py),
#: then the outputs (written by the kernel: v+, the velocity after the impact phase, the
#: LCP's z (the joint unknowns first), the report's impulses and sliding flags, the impact
#: test's mask and normal velocities, the impact phase's impulses, the I_* info slots)
STEP_FIELDS = (
    "parent", "jtype", "qi", "vi", "nvj", "S", "tree_E", "tree_r", "axis", "inertia", "gravity",
    "mass", "com", "E", "r", "R_world", "p_world", "vel", "cbias", "IA", "U", "Dinv",
    "pivots_ws", "pA", "u", "acc", "scratch66", "qdd_ws", "armature", "ups", "bv", "body_a",
    "local_a", "body_b", "local_b", "normal", "gap", "radius_a", "radius_b", "mu", "eps",
    "cos_a", "sin_a", "j_dof", "j_sign", "j_shift", "j_bound", "j_gap", "jtab", "q_pos", "v",
    "tau", "qdd", "dt", "stabilization", "max_recovery_speed",
    "use_floor", "gap_floor", "curvature", "slip", "impact_velocity", "impacts_ok",
    "friction_total", "least_norm", "tol_rel", "caps", "warm", "tab", "und", "wf", "wi", "v_new",
    "v_start",
    "z", "fn", "tangent", "sliding", "hit", "vn_before", "vn_after", "p_impact", "info",
)  # fmt: skip


@structref.register
class StepType(types.StructRef):
    """numba type of the contact step's record: one reference to the arrays and options of
    :func:`contact_step_kernel` (:data:`STEP_FIELDS`), the arrays held borrowed
    (:func:`borrowed`: no owner, so no reference counts when the kernel reads them; the
    record's maker keeps them alive: :meth:`ContactFuser.step` for its call,
    contact_loop.ContactStage for the loop's). Passed as 75 arguments, numba counted a
    reference of every one on each call (the loops and fallible calls before their last
    uses keep numba from pruning the counts, and an owned field read passed to a fallible
    call is counted too), and the callers unpacked and passed them all (docs/results.md,
    "The compiled contact step's arguments as one record")."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class StepRef(structref.StructRefProxy):
    """A contact step record (:class:`StepType`) held in Python: made by :func:`make_step`,
    read and written only by compiled code (Python keeps its own references to the arrays:
    :meth:`ContactFuser.step` reads the outputs from them)."""


structref.define_boxing(StepType, StepRef)


def step_type(values) -> StepType:
    """The record type :func:`make_step` makes of ``values`` (Python values of the fields,
    in :data:`STEP_FIELDS` order), found without compiling anything."""
    return StepType(list(zip(STEP_FIELDS, (typeof(a) for a in values), strict=True)))


@intrinsic
def _new_step(typingctx, *fields):
    """The record (:class:`StepType`) of ``fields`` (:data:`STEP_FIELDS` order), the arrays
    borrowed: allocated and filled in one go (as ``structref.new`` allocates, without a
    setattr, and so without a reference count, per field: the constructor's compile time)."""
    from numba.experimental.jitclass.base import imp_dtor

    fields = tuple(types.unliteral(t) for t in fields)
    record_type = StepType(list(zip(STEP_FIELDS, fields, strict=True)))

    def codegen(context, builder, signature, llargs):
        values = cgutils.unpack_tuple(builder, llargs[0], len(fields))
        data_type = record_type.get_data_type()
        alloc_type = context.data_model_manager[data_type].get_value_type()
        meminfo = context.nrt.meminfo_alloc_dtor(
            builder,
            context.get_constant(types.uintp, context.get_abi_sizeof(alloc_type)),
            imp_dtor(context, builder.module, record_type),
        )
        data_pointer = context.nrt.meminfo_data(builder, meminfo)
        data_pointer = builder.bitcast(data_pointer, alloc_type.as_pointer())
        builder.store(cgutils.get_null_value(alloc_type), data_pointer)
        data = cgutils.create_struct_proxy(data_type)(context, builder, ref=data_pointer)
        argtys = signature.args[0]
        for name, t, at, v in zip(STEP_FIELDS, fields, argtys, values, strict=True):
            value = context.cast(builder, v, at, t)
            setattr(data, name, _borrowed_value(context, builder, t, value))
        record = context.make_helper(builder, record_type)
        record.meminfo = meminfo
        return record._getvalue()

    return record_type(types.StarArgTuple.from_types(fields)), codegen


@njit(cache=True)
def make_step(
    parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, mass, com, E, r,
    R_world, p_world, vel, cbias, IA, U, Dinv, pivots_ws, pA, u, acc, scratch66, qdd_ws,
    armature, ups, bv, body_a, local_a, body_b, local_b, normal, gap, radius_a, radius_b, mu,
    eps, cos_a, sin_a, j_dof, j_sign, j_shift, j_bound, j_gap, jtab, q_pos, v, tau, qdd, dt,
    stabilization, max_recovery_speed, use_floor, gap_floor, curvature, slip, impact_velocity,
    impacts_ok, friction_total, least_norm, tol_rel, caps, warm, tab, und, wf, wi, v_new, v_start,
    z, fn, tangent, sliding, hit, vn_before, vn_after, p_impact, info,
):  # fmt: skip
    """The contact step record (:class:`StepType`) of these fields (:data:`STEP_FIELDS`): the
    arrays borrowed (:func:`borrowed`: the same data, not copies, and not owned: the caller
    keeps every array alive while the record is used)."""
    return _new_step(
        parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, mass, com, E, r,
        R_world, p_world, vel, cbias, IA, U, Dinv, pivots_ws, pA, u, acc, scratch66, qdd_ws,
        armature, ups, bv, body_a, local_a, body_b, local_b, normal, gap, radius_a, radius_b,
        mu, eps, cos_a, sin_a, j_dof, j_sign, j_shift, j_bound, j_gap, jtab, q_pos, v, tau, qdd,
        dt,
        stabilization, max_recovery_speed, use_floor, gap_floor, curvature, slip, impact_velocity,
        impacts_ok, friction_total, least_norm, tol_rel, caps, warm, tab, und, wf, wi, v_new,
        v_start, z, fn, tangent, sliding, hit, vn_before, vn_after, p_impact, info,
    )  # fmt: skip


@njit(cache=True)
def contact_step_kernel(s):
    """One contact step from the contact set to v+ (module docstring, stages 1-8), at the
    kinematics and articulated factorisation of q that ABA at (q_pos, v) under the joint
    forces tau left in the Data arrays, qdd its free acceleration. Writes v_new (v+), v_start
    (the velocity after the impact phase, else v), z (the step LCP's [beta; sigma]), the
    report's normal impulses fn, tangential impulses and sliding flags, the impact test's
    mask ``hit`` and normal velocities before (and, after a collision, after) the impact
    phase, the impact phase's total impulses on A (N s), and info (the I_* slots). Returns
    OK, FALLBACK or IMPACT (module docstring)."""
    # the options (scalars: no reference counts) once; the arrays read where they are used
    dt = s.dt
    stabilization = s.stabilization
    max_recovery_speed = s.max_recovery_speed
    use_floor = s.use_floor
    gap_floor = s.gap_floor
    curvature = s.curvature
    slip = s.slip
    impact_velocity = s.impact_velocity
    impacts_ok = s.impacts_ok
    friction_total = s.friction_total
    least_norm = s.least_norm
    tol_rel = s.tol_rel
    warm = s.warm
    nv = s.v.shape[0]
    nu = s.gap.shape[0]
    nb = s.parent.shape[0]
    k = s.cos_a.shape[0] + 1
    # the step's work arrays as views of one float and one int array (each filled before it
    # is read, as the arrays of their own were; zeroed where np.zeros made them): the
    # record's buffers ``wf`` and ``wi`` when they hold them (the loop's stage: no allocation
    # a step), else arrays of the step's own (:func:`step_work`)
    nd = nu if curvature else 0
    ns = nu if slip else 0
    o_drift = 3 * nu
    o_chat = o_drift + nd
    o_gv = o_chat + (6 * nb if curvature else 0)
    o_vf = o_gv + nu
    o_ref = o_vf + nv
    o_d = o_ref + 3 * ns
    o_np = o_d + 3 * nu * k
    o_x = o_np + 6 * nu
    o_f = o_x + 72 * nu
    o_p = o_f + 3 * nu
    o_nf = o_p + 3 * nu
    o_dv = o_nf + 12 * nu
    o_u2 = o_dv + nv
    o_fr = o_u2 + 3 * nu
    o_un = o_fr + nu
    f1 = o_un + nu
    nc = nu * (k + 1)  # the contact LCP's rows
    # ints: 6 a contact (nodes, islands, the deep rows), then the islands' work
    # (contact_islands_into, 3 nb), corder, cstarts, wstart, island_compliance_into's work
    # (2 (nn + nu) <= 6 nu, then 7 nb) and _solve_rows' (3 nc)
    o_isl = 6 * nu
    o_ord = o_isl + 3 * nb
    o_cst = o_ord + nu
    o_wst = o_cst + nu + 1
    o_cw = o_wst + nu + 1
    o_sw = o_cw + 6 * nu + 7 * nb
    i1 = o_sw + 3 * nc
    fw = s.wf[:f1] if s.wf.shape[0] >= f1 else np.empty(f1)
    iw = s.wi[:i1] if s.wi.shape[0] >= i1 else np.empty(i1, dtype=np.int64)
    # 1. the impact test at v
    vu = c_view(fw, 0, (nu, 3))
    relative_velocities_into(
        s.parent, s.vi, s.nvj, s.S, s.E, s.r, s.R_world, s.v, s.body_a, s.local_a, s.body_b,
        s.local_b, s.bv, vu,
    )  # fmt: skip
    for i in range(nu):
        s.vn_before[i] = _ndot(vu, i, s.normal, i)
    colliding = _impacting_kernel(s.vn_before, s.gap, impact_velocity, dt, s.hit)
    if colliding and not impacts_ok:
        return IMPACT
    nr = s.j_dof.shape[0]  # joint rows (limits, then friction pairs)
    nl = s.j_gap.shape[0]
    nju = nr + s.j_bound.shape[0]  # their unknowns: the row impulses and one sigma a pair
    if nr:
        # a collision, or a stop approached fast enough for the impact phase (the same rule
        # on the joint gap, stepper._contact_step): the Python path's impact phase
        if colliding:
            return FALLBACK
        for a in range(nl):
            sv = s.j_sign[a] * s.v[s.j_dof[a]]
            if sv < -impact_velocity and s.j_gap[a] + sv * dt <= 0.0:
                return FALLBACK
    # 2. the curvature term and the gap allowance
    drift = fw[o_drift:o_chat]
    if curvature:
        chat = c_view(fw, o_chat, (nb, 6))
        propagate_bias(s.parent, s.E, s.r, s.cbias, chat)
        _curvature_kernel(
            s.R_world, s.vel, chat, s.body_a, s.local_a, s.body_b, s.local_b, s.normal, s.radius_a,
            s.radius_b, 0.5 * dt * dt, drift,
        )  # fmt: skip
    gv = fw[o_gv:o_vf]
    demands, deepest = _gap_allowance_kernel(
        s.gap, drift, stabilization, -max_recovery_speed * dt, use_floor, gap_floor, 1.0, dt, gv
    )
    s.info[I_DEMANDS] = 1.0 if demands else 0.0
    s.info[I_DEEPEST] = deepest
    # 3. the slip reference and D
    v_free = fw[o_vf:o_ref]
    for i in range(nv):
        v_free[i] = s.v[i] + dt * s.qdd[i]
    ref = c_view(fw, o_ref, (ns, 3))
    if slip:
        relative_velocities_into(
            s.parent, s.vi, s.nvj, s.S, s.E, s.r, s.R_world, v_free, s.body_a, s.local_a, s.body_b,
            s.local_b, s.bv, ref,
        )  # fmt: skip
    D = c_view(fw, o_d, (nu, 3, k))
    _friction_kernel(s.normal, s.cos_a, s.sin_a, ref, D)
    # 4. nodes, Lambda, W
    nb_all = iw[: 2 * nu]
    np_all = c_view(fw, o_np, (2 * nu, 3))
    ia = iw[2 * nu : 3 * nu]
    ib = iw[3 * nu : 4 * nu]
    nn = _contact_nodes_kernel(s.body_a, s.body_b, s.local_a, s.local_b, nb_all, np_all, ia, ib)
    node_body = nb_all[:nn]  # not written again: views, not copies
    node_point = np_all[:nn]
    node_X = c_view(fw, o_x, (nn, 6, 6))
    node_f = c_view(fw, o_nf, (nn, 6))
    dv = fw[o_dv:o_u2]
    node_transforms_kernel(node_body, node_point, s.R_world, node_X)
    upsilon_kernel(s.parent, s.nvj, s.S, s.E, s.r, s.U, s.Dinv, s.ups, s.scratch66)
    # Lambda and W per contact island (contact_islands.py: zero between islands, never built);
    # W reads only Lambda's linear-linear blocks: the same entries, bit for bit
    cisl = iw[4 * nu : 5 * nu]
    count = contact_islands_into(s.parent, s.body_a, s.body_b, cisl, iw[o_isl:o_ord])
    corder = iw[o_ord : o_ord + nu]
    cstarts = iw[o_cst : o_cst + count + 1]
    block_order_into(cisl, count, corder, cstarts)
    wstart = iw[o_wst : o_wst + count + 1]
    wsize = compliance_starts(cstarts, wstart)
    # the second float part: W, then Lambda's work (island_compliance_into), which the
    # one-island LCP (_solve_rows) takes over after it
    if count == 1:
        need = max(compliance_work(nb, nn, True), nc * (nc + 2))
    else:
        need = 0
        for g in range(count):
            kg = 0  # the island's nodes: one a contact side on a moving body
            for a in range(cstarts[g], cstarts[g + 1]):
                c = corder[a]
                kg += (1 if ia[c] >= 0 else 0) + (1 if ib[c] >= 0 else 0)
            need = max(need, compliance_work(nb, kg, False))
    f2 = wsize + need
    if s.wf.shape[0] >= f1 + f2:
        fw2 = s.wf[f1 : f1 + f2]
    else:
        fw2 = np.empty(f2)
    W = fw2[:wsize]
    lw = fw2[wsize:]
    sw = iw[o_sw:i1]
    island_compliance_into(
        s.parent, s.nvj, s.S, s.E, s.r, s.U, s.Dinv, s.ups, node_body, node_X, ia, ib, corder,
        cstarts, wstart, W, lw, iw[o_cw:o_sw],
    )  # fmt: skip
    no_budget = fw[:0]
    s.info[I_IMPACT] = 0.0
    s.info[I_E_IMPACTS] = 0.0
    for i in range(nv):
        s.v_start[i] = s.v[i]
    # the impact phase (stepper.impact_phase, 000 Eqs. 54-58): compression from v, then with
    # restitution the recovered impulse theta and decompression; then the free motion at v_c
    if colliding:
        ke_before = _kinetic(
            s.parent, s.vi, s.nvj, s.S, s.E, s.r, s.inertia, s.mass, s.com, s.gravity, s.R_world,
            s.p_world, s.v, s.bv,
        )  # fmt: skip
        zc = np.empty(nu * (k + 1))
        state, _p, _w, _s = _solve_rows_call(
            W, wstart, corder, cstarts, D, s.mu, vu, no_budget, least_norm, tol_rel, s.caps,
            warm, s.tab, s.und, zc, lw, sw,
        )  # fmt: skip
        if state != ACCEPT:
            return FALLBACK
        Fc = np.empty((nu, 3))
        _impulses(D, zc, Fc)
        v_c = np.empty(nv)
        _respond(
            s.parent, s.vi, s.nvj, s.S, s.E, s.r, s.U, s.Dinv, s.pA, s.u, s.acc, node_body, node_X,
            ia, ib, Fc, s.v, v_c, node_f, dv,
        )  # fmt: skip
        for i in range(nu):
            for c in range(3):
                s.p_impact[i, c] = Fc[i, c]
        any_eps = False
        for i in range(nu):
            any_eps = any_eps or s.eps[i] > 0.0
        if any_eps:
            theta = np.empty((nu, 3))
            for i in range(nu):
                e = s.eps[i] * _ndot(Fc, i, s.normal, i)
                for c in range(3):
                    theta[i, c] = e * s.normal[i, c]
            v_t = np.empty(nv)
            _respond(
                s.parent, s.vi, s.nvj, s.S, s.E, s.r, s.U, s.Dinv, s.pA, s.u, s.acc, node_body,
                node_X, ia, ib, theta, v_c, v_t, node_f, dv,
            )  # fmt: skip
            budget = np.empty(nu if friction_total else 0)
            for i in range(budget.shape[0]):
                budget[i] = (s.mu[i] * 1.0) * _ndot(theta, i, s.normal, i)
            relative_velocities_into(
                s.parent, s.vi, s.nvj, s.S, s.E, s.r, s.R_world, v_t, s.body_a, s.local_a, s.body_b,
                s.local_b, s.bv, vu,
            )  # fmt: skip
            zd = np.empty(nu * (k + 1))
            state, _p, _w, _s = _solve_rows_call(
                W, wstart, corder, cstarts, D, s.mu, vu, budget, least_norm, tol_rel, s.caps,
                warm, s.tab, s.und, zd, lw, sw,
            )  # fmt: skip
            if state != ACCEPT:
                return FALLBACK
            Fd = np.empty((nu, 3))
            _impulses(D, zd, Fd)
            _respond(
                s.parent, s.vi, s.nvj, s.S, s.E, s.r, s.U, s.Dinv, s.pA, s.u, s.acc, node_body,
                node_X, ia, ib, Fd, v_t, v_c, node_f, dv,
            )  # fmt: skip
            for i in range(nu):
                for c in range(3):
                    s.p_impact[i, c] = s.p_impact[i, c] + (Fd[i, c] + 1.0 * theta[i, c])
        for i in range(nu):
            for c in range(3):
                s.p_impact[i, c] = 0.0 + s.p_impact[i, c]  # impulse_total += impulse
        ke_after = _kinetic(
            s.parent, s.vi, s.nvj, s.S, s.E, s.r, s.inertia, s.mass, s.com, s.gravity, s.R_world,
            s.p_world, v_c, s.bv,
        )  # fmt: skip
        s.info[I_IMPACT] = 1.0
        s.info[I_KE_BEFORE] = ke_before
        s.info[I_KE_AFTER] = ke_after
        s.info[I_E_IMPACTS] = (
            ke_after - ke_before + _armature_energy(s.armature, v_c)
            - _armature_energy(s.armature, s.v)
        )  # fmt: skip
        relative_velocities_into(
            s.parent, s.vi, s.nvj, s.S, s.E, s.r, s.R_world, v_c, s.body_a, s.local_a, s.body_b,
            s.local_b, s.bv, vu,
        )  # fmt: skip
        for i in range(nu):
            s.vn_after[i] = _ndot(vu, i, s.normal, i)
        for i in range(nv):
            s.v_start[i] = v_c[i]
        # the step LCP's free motion from v_c (OS.solve with accel None: ABA again)
        aba_kernel(
            s.parent, s.jtype, s.qi, s.vi, s.nvj, s.S, s.tree_E, s.tree_r, s.axis, s.inertia,
            s.gravity, s.q_pos, s.v_start, s.tau, s.E, s.r, s.R_world, s.p_world, s.vel, s.cbias,
            s.IA, s.U, s.Dinv, s.pivots_ws, s.pA, s.u, s.acc, s.scratch66, s.qdd_ws, s.armature,
        )  # fmt: skip
        for i in range(nv):
            v_free[i] = s.v_start[i] + dt * s.qdd_ws[i]
    # 5.-6. the step's LCP at v_f, with the gap allowance on the normal rows (without a
    # collision v_f is the slip reference's: its velocities, the same numbers)
    if slip and not colliding:
        for i in range(nu):
            for c in range(3):
                vu[i, c] = ref[i, c]
    else:
        relative_velocities_into(
            s.parent, s.vi, s.nvj, s.S, s.E, s.r, s.R_world, v_free, s.body_a, s.local_a, s.body_b,
            s.local_b, s.bv, vu,
        )  # fmt: skip
    for i in range(nu):
        for c in range(3):
            vu[i, c] = vu[i, c] + gv[i] * s.normal[i, c]
    jv = c_view(fw, 0, (0,))  # no joint rows: empty (a C array, as np.empty's)
    if nr:
        # the LCP of [joint; contact] rows (OS.prepare, OS.solve) and the joint impulses'
        # velocity change, by address: none compiled (jtab empty) hands the step back
        jv = np.empty(nv)
        linked, res = _joint_rows_call(
            s.jtab, s, W, wstart, corder, cstarts, D, vu, c_view(fw, o_vf, (nv,)), jv
        )
        if not linked:
            return FALLBACK
        ok, pivots, worst, solver = res
    else:
        state, pivots, worst, solver = _solve_rows_call(
            W, wstart, corder, cstarts, D, s.mu, vu, no_budget, least_norm, tol_rel, s.caps,
            warm, s.tab, s.und, s.z, lw, sw,
        )  # fmt: skip
        ok = state == ACCEPT
        if state == REJECT and not colliding and s.info.shape[0] > I_FIRST_FAILED:
            # the same LCP as the Python path's, bit for bit (no joint rows, no impact
            # phase), unsplit, its first attempt ended and rejected: the Python chain may
            # start at its second (OS.solve's skip_first)
            s.info[I_FIRST_FAILED] = 1.0
    if not ok:
        if colliding:  # the Data arrays back at (q, v), as the Python path starts from them
            aba_kernel(
                s.parent, s.jtype, s.qi, s.vi, s.nvj, s.S, s.tree_E, s.tree_r, s.axis, s.inertia,
                s.gravity, s.q_pos, s.v, s.tau, s.E, s.r, s.R_world, s.p_world, s.vel, s.cbias,
                s.IA, s.U, s.Dinv, s.pivots_ws, s.pA, s.u, s.acc, s.scratch66, s.qdd_ws, s.armature,
            )  # fmt: skip
        return FALLBACK
    s.info[I_PIVOTS] = pivots
    s.info[I_RESIDUAL] = worst
    s.info[I_SOLVER] = solver
    # 7. impulses and the impulse response
    F = c_view(fw, o_f, (nu, 3))
    zc = s.z[nju:]  # [beta; sigma]
    _impulses(D, zc, F)
    _respond(
        s.parent, s.vi, s.nvj, s.S, s.E, s.r, s.U, s.Dinv, s.pA, s.u, s.acc, node_body, node_X, ia,
        ib, F, v_free, s.v_new, node_f, dv,
    )  # fmt: skip
    s.info[I_E_STAB] = 0.0
    if nr:
        # + M^-1 G_j^T p_j (OS.solve: v_f + dv + W p); the stabilisation share of the stops
        # passed, p (G_j (v_f + v+)) / 2 (energy_sources.step_shares, summed first)
        for i in range(nv):
            s.v_new[i] = s.v_new[i] + jv[i]
        jstab = 0.0
        for a in range(nl):
            if s.j_gap[a] < 0.0:
                kk = s.j_dof[a]
                jstab += 0.5 * s.z[a] * (s.j_sign[a] * (v_free[kk] + s.v_new[kk]))
        s.info[I_E_STAB] = jstab
    # 8. the stabilisation share and the report's split (impulse_total += F)
    P = c_view(fw, o_p, (nu, 3))
    for i in range(nu):
        for c in range(3):
            P[i, c] = (s.p_impact[i, c] if colliding else 0.0) + F[i, c]
    any_deep = False
    for i in range(nu):
        any_deep = any_deep or s.gap[i] < 0.0
    if any_deep:
        rec = iw[5 * nu :]
        nr = 0
        for i in range(nu):
            if s.gap[i] < 0.0 and _ndot(F, i, s.normal, i) > 0.0:
                rec[nr] = i
                nr += 1
        if nr:
            # u(v_f) + u(v+) of the rows, each u computed on its own and then added as
            # ``relative_velocity_sums`` does. A row's u depends on that row alone (the body
            # velocities at v, then its own points), so the slip reference's rows at the same
            # v_f (no collision changed v_f) are the same numbers and are reused.
            uf = ref
            if not (slip and not colliding):
                uf = np.empty((nu, 3))
                relative_velocities_into(
                    s.parent, s.vi, s.nvj, s.S, s.E, s.r, s.R_world, v_free, s.body_a, s.local_a,
                    s.body_b, s.local_b, s.bv, uf,
                )  # fmt: skip
            u2 = c_view(fw, o_u2, (nu, 3))
            relative_velocities_into(
                s.parent, s.vi, s.nvj, s.S, s.E, s.r, s.R_world, s.v_new, s.body_a, s.local_a,
                s.body_b, s.local_b, s.bv, u2,
            )  # fmt: skip
            fr = fw[o_fr : o_fr + nr]
            un = fw[o_un : o_un + nr]
            for a in range(nr):
                i = rec[a]
                fr[a] = _ndot(F, i, s.normal, i)
                x0 = uf[i, 0] + u2[i, 0]
                x1 = uf[i, 1] + u2[i, 1]
                x2 = uf[i, 2] + u2[i, 2]
                un[a] = (x0 * s.normal[i, 0] + x2 * s.normal[i, 2]) + x1 * s.normal[i, 1]
            s.info[I_E_STAB] = s.info[I_E_STAB] + 0.5 * np.dot(fr, un)
    for i in range(nu):
        s.fn[i] = _ndot(P, i, s.normal, i)
    _split_kernel(P, s.normal, zc[nu * k :], s.fn, s.tangent, s.sliding)
    return OK


def step_work(nu: int, nb: int, nv: int, k: int) -> tuple[int, int]:
    """(floats, ints): the sizes of the work buffers ``wf`` and ``wi`` of the step record
    that hold all of :func:`contact_step_kernel`'s work arrays for a step of up to ``nu``
    contacts (nb bodies, nv DoF, k = nf + 1), with the curvature term and the slip
    reference on, whatever its islands (an island's Lambda and its work at most those of
    nn = 2 nu nodes, ``contact_islands.compliance_work``): the loop's stage
    (contact_loop.ContactStage) holds them; a larger step makes its own."""
    nn = 2 * nu
    nc = nu * (k + 1)
    f1 = 3 * nu + nu + 6 * nb + nu + nv + 3 * nu + 3 * nu * k + 6 * nu + 72 * nu + 3 * nu
    f1 += 3 * nu + 12 * nu + nv + 3 * nu + nu + nu
    lam = 36 * nn * (nn + 1) + 36 * nb + 84 + 73 * nn * max(nb, 1)  # compliance_work's
    f2 = 9 * nu * nu + max(lam, nc * (nc + 2))
    i1 = 6 * nu + 3 * nb + nu + 2 * (nu + 1) + 6 * nu + 7 * nb + 3 * nc
    return f1 + f2, i1


def contact_signature() -> tuple:
    """The numba argument types :meth:`ContactFuser.step` calls :func:`contact_step_kernel`
    with, for any model and options (the arrays' dtypes and dimensions, the options' Python
    types): :meth:`ContactFuser.signature` of an empty model, which takes no compilation
    (tests/test_warmup.py checks it against real runs)."""
    from mbsim.simcore.data import Data
    from mbsim.simcore.model import build_model
    from mbsim.simcore.stepper import StepOptions

    model = build_model([])
    stepper = SimpleNamespace(model=model, data=Data(model), opt=StepOptions(dt=1e-3))
    return ContactFuser(stepper).signature()


class ContactFuser:
    """The compiled contact step of one :class:`~mbsim.simcore.stepper.OSStepper` (module
    docstring): ``OSStepper._softened_step`` asks :meth:`step` first and takes the Python
    path when it answers None."""

    def __init__(self, stepper):
        self.s = stepper
        self.steps = 0  # steps taken by the kernel (for profiles and tests)
        self.fallbacks = 0  # steps it handed back (collisions, LCPs it did not settle)
        #: whether the last step handed back was one whose LCP's first attempt the kernel
        #: ran to its end and rejected (I_FIRST_FAILED): the stepper's Python path then
        #: starts the chain at its second attempt (OS.solve's ``skip_first``)
        self.first_failed = False
        self._model = self._data = None
        self._settings = None  # (chunk size rule, pivot cap rule) the caps were read from

    def _bind(self) -> None:
        """The kernel's Model and Data arguments and the options it reads: arrays updated in
        place, never replaced (data.py), and options fixed while the stepper holds them
        (``OSStepper.configure`` builds a new ContactFuser); a new Model or Data is bound
        again."""
        s = self.s
        m, d, o = s.model, s.data, s.opt
        self._head = (
            m.parent, m.jtype, m.qi, m.vi, m.nvj, d.S, m.tree_E, m.tree_r, m.axis, m.inertia,
            m.gravity, m.mass, m.com, d.E, d.r, d.R_world, d.p_world, d.vel, d.cbias, d.IA, d.U,
            d.Dinv, d.pivots, d.pA, d.u, d.acc, d.scratch66, d.qdd, d.armature, d.ups,
            np.zeros((m.nb, 6)),
        )  # fmt: skip
        cos_a, sin_a = _edge_angles(o.nf)
        self._angles = (np.ascontiguousarray(cos_a), np.ascontiguousarray(sin_a))
        self._opts = (
            float(o.dt), float(o.stabilization), float(o.max_recovery_speed),
            o.gap_floor is not None, 0.0 if o.gap_floor is None else float(o.gap_floor),
            bool(o.curvature_correction), o.friction_axes == "slip", float(o.impact_velocity),
            not o.energy_consistent_impacts, o.impact_friction == "total",
            o.lcp_selection == "least_norm", float(o.lcp_tol_rel),
        )  # fmt: skip
        self._core = o.curvature_point == "core"
        self._k = o.nf + 1
        self._model, self._data, self._opt = m, d, o

    def _read_settings(self) -> None:
        """The Lemke pivot caps and the largest LCP the kernel takes (:func:`pivot_caps`),
        read again when the Python path's settings changed."""
        settings = (budget.CHUNK_FLOPS, lemke_module.default_max_pivots)
        if settings != self._settings:
            self._max_rows, self._caps = pivot_caps()
            self._settings = settings

    def _arguments(
        self, q, v, tau, c, qdd, mu, eps, warm, table, rows=_NO_ROWS, jtab=EMPTY
    ) -> tuple:
        """The fields of :func:`contact_step_kernel`'s record (:func:`make_step`) for the
        contacts ``c`` (pair parameters mu, eps; the warm start's flag and table,
        lcp/warm_table.py) and the joint rows ``rows`` (:func:`joint_row_fields`; ``jtab``
        :func:`joint_rows_table` when there are any), its eleven outputs last (fresh
        arrays); the work buffers wf, wi empty (the kernel makes its own each call)."""
        nu = len(c.gap)
        k = self._k
        ra, rb = getattr(c, "radius_a", None), getattr(c, "radius_b", None)
        if not self._core or ra is None:
            ra = rb = _NO_F
        nv = self.s.model.nv
        v_new, v_start = np.empty(nv), np.empty(nv)
        z = np.empty(rows[2].shape[0] + rows[3].shape[0] + nu * (k + 1))
        fn, vn_before, vn_after = np.empty(nu), np.empty(nu), np.empty(nu)
        tangent, p_impact = np.empty((nu, 3)), np.empty((nu, 3))
        sliding, hit = np.empty(nu, dtype=np.bool_), np.empty(nu, dtype=np.bool_)
        info = np.zeros(N_INFO)
        return (
            *self._head, _i64(c.body_a), _f64(c.local_a), _i64(c.body_b), _f64(c.local_b),
            _f64(c.normal), _f64(c.gap), _f64(ra), _f64(rb), _f64(mu), _f64(eps), *self._angles,
            *rows, jtab, _f64(q), _f64(v), _f64(tau), _f64(qdd), *self._opts, self._caps, warm,
            table.tab, table.und, _NO_F, _NO_I,
            v_new, v_start, z, fn, tangent, sliding, hit, vn_before, vn_after, p_impact, info,
        )  # fmt: skip

    def signature(self) -> tuple:
        """The numba argument types :meth:`step` calls :func:`contact_step_kernel` with: its
        record's type (:func:`step_type`, for one contact; the types do not depend on the
        sizes): what a helper process compiles ahead (simcore/warmup.py)."""
        self._bind()
        self._read_settings()
        nv = self.s.model.nv
        one = SimpleNamespace(
            body_a=np.zeros(1, np.int64), local_a=np.zeros((1, 3)), body_b=np.zeros(1, np.int64),
            local_b=np.zeros((1, 3)), normal=np.zeros((1, 3)), gap=np.zeros(1),
        )  # fmt: skip
        q, v = np.zeros(self.s.model.nq), np.zeros(nv)
        args = self._arguments(
            q, v, np.zeros(nv), one, np.zeros(nv), np.zeros(1), np.zeros(1), False,
            WarmTable(1, 0),
        )  # fmt: skip
        self._model = None  # bound again at the first step, which waits for the helper first
        return (step_type(args),)

    @staticmethod
    def eligible(stepper) -> bool:
        """Whether the kernel may take the stepper's contact steps at all (module docstring):
        Euler, ABA, no bilateral rows, OS with Upsilon, Lemke, nf + 1 <= MAX_K, no LCP
        dumps. The step's joint rows are the caller's test (a step with any goes to Python)."""
        o = stepper.opt
        f = stepper.formulation
        return (
            not stepper.rk4
            and stepper.dynamics.name == "aba"
            and stepper.bilateral is None
            and f.name == "os"
            and getattr(f, "delassus", None) == "upsilon"
            and o.solver == "lemke"
            and o.nf + 1 <= MAX_K
            and stepper._dump is None
        )

    def step(self, q, v, tau, c, qdd, joint=None):
        """The StepReport of the contact step of contacts ``c`` from (q, v) under the joint
        forces tau (free acceleration qdd, ABA's factorisation of q in the stepper's Data)
        with the joint rows ``joint`` (joint_rows.JointRows of 1-DoF rows, or None), or None
        when the Python path must take it (module docstring); then :attr:`first_failed` says
        whether the step LCP's first attempt was run and rejected here."""
        from mbsim.simcore.stepper import Impact, StepReport

        self.first_failed = False
        s = self.s
        if s.model is not self._model or s.data is not self._data or s.opt is not self._opt:
            warmup.wait()  # the first contact step: a helper may be compiling the kernel
            self._bind()
        self._read_settings()
        nu = len(c.gap)
        k = self._k
        rows = _NO_ROWS if not joint else joint_row_fields(joint, self._opt.dt)
        nju = rows[2].shape[0] + rows[3].shape[0]
        if not nu or nju + nu * (k + 1) > self._max_rows:
            return None
        mu, eps = s._pair_params(c)
        v = _f64(v)
        # the OS formulation's warm store (lcp/warm.py): every LCP of the step has the same
        # n, so the table holds the keys of that n (chain._solve_warm); it goes back to the
        # store only if the step is kept
        store = getattr(s.formulation, "warm", None)
        warm = store is not None and warm_start.ENABLED
        n = nju + nu * (k + 1)
        table = WarmTable(n if warm else 0, None if warm else 0)
        if warm:
            table.load(store, n)
        jtab = EMPTY if not joint else joint_rows_table()
        args = self._arguments(q, v, tau, c, qdd, mu, eps, warm, table, rows, jtab)
        # the record borrows the arrays of args (contact_fused.StepType), alive for the call
        code = contact_step_kernel(make_step(*args))
        v_new, v_start, z, fn, tangent, sliding, hit, vn_before, vn_after, p_impact, info = args[
            -11:
        ]  # fmt: skip
        if code != OK:
            self.fallbacks += 1
            self.first_failed = code == FALLBACK and info[I_FIRST_FAILED] != 0.0
            return None
        self.steps += 1
        if warm:  # what chain._solve_warm did to the store over the step's LCPs
            table.save(store)
        s._contacts = c  # as the Python path leaves it (the rows of a failure message)
        report = StepReport(contacts=c, n_contacts=nu)
        report.max_penetration = float(max(0.0, -info[I_DEEPEST]))
        if info[I_IMPACT]:
            # stepper._contact_step's records, from the same numbers by the same expressions
            report.energy_impacts = float(info[I_E_IMPACTS])
            ke_before, ke_after = float(info[I_KE_BEFORE]), float(info[I_KE_AFTER])
            report.impacts += Impact.records(
                np.flatnonzero(hit), p_impact, c.normal, vn_before, vn_after, ke_before,
                ke_after,
            )  # fmt: skip
            report.v_start = v_start
        else:
            report.v_start = v
        report.v_new = v_new
        report.energy_stabilisation = float(info[I_E_STAB])
        report.normal_impulse = fn
        report.tangent_impulse = tangent
        report.sliding = sliding
        if joint:  # stepper._contact_step's limit report (no impact phase here)
            report.limit_dof = joint.limit_dof
            report.limit_side = joint.limit_side
            report.limit_impulse = z[: joint.n_limits].copy()
        report.lcp_size = int(z.shape[0])
        report.lcp_pivots = int(info[I_PIVOTS])
        report.lcp_residual = float(info[I_RESIDUAL])
        report.solver = SOLVER_NAMES[int(info[I_SOLVER])]
        return report


__all__ = [
    "FALLBACK", "IMPACT", "MAX_K", "MAX_ROWS", "N_INFO", "OK", "STEP_FIELDS", "ContactFuser",
    "StepRef", "StepType", "borrowed", "contact_signature", "contact_step_kernel",
    "least_norm_attempt", "make_step", "pivot_caps", "step_work", "step_type", "vertex_attempt",
]  # fmt: skip
