"""Warm start of the LCP chain: the previous step's active set, tried before Lemke's pivots.

Resting contacts keep the same active set step after step, so the step's LCP (000 Eq. 53) is
usually solved by the complementary basis of the previous step's answer: with S the rows whose
z was positive, z_S solves the principal subsystem M_SS z_S = -q_S (w_S = 0), z = 0 and
w = M z + q >= 0 outside S. Guessing S costs one dense solve of |S| rows, where Lemke needs
about n pivots of O(n^2) each and a final O(n^3) refactorisation.

Matching rows between steps. A :class:`WarmStart` (one per stepper: the OS formulation holds
it, so two runs never share one and a run is reproducible) remembers, for each block of the
last LCPs it saw (lcp/islands.py), the rows with z > 0 (after an answer from a guess: the
set the guess ended with, its degenerate rows included), keyed by the whole LCP's size n and the
block's row indices. A block of the next step with the same n and the same rows takes that
set as its guess. Rows are identified by position only: a contact that appears, disappears or
moves in the contact list shifts the rows, the key or the meaning of a row changes, and the
guess then either is not found or fails its checks (Lemke runs, as without a warm start). The
guess is never trusted: it is accepted only by the tests below, so a wrong match costs one
failed solve, never a wrong answer.

The guess, by the chain's selection (selection.py), in one compiled call (:func:`guess_kernel`):

* ``least_norm`` (the stepper's default; the chain's first attempt is Lemke on
  M + delta I, delta = LEAST_NORM_DELTA ||M||_inf of the whole LCP, then the least-change
  polish on M, chain.lemke_regularised): y solves (M_SS + delta I) y_S = -q_S, y = 0 outside
  S (LU with partial pivoting, refined while the residual is above its rounding level, at
  most REFINEMENTS times; "Tolerance" below); it must solve the
  regularised LCP to the acceptance tolerance tol of problem.py for (M + delta I, q, y):
  y_i >= -tol in S (a y_i in [-tol, 0) is a degenerate zero and set to 0) and
  w_i = (M y + q)_i >= -tol outside S. Then the chain's polish
  (chain.lemke_regularised) gives z: the least-change correction on M_SS from y
  (lstsq.active_set_least_change, accepted at rounding level only, as the compiled
  joint-limit step does; computed from the LU factors when :func:`_fast_least_change`
  applies, "Tolerance" below), and while rows are on the wrong side on (M, q) (z_i < -tol in S,
  w_i < -tol outside) those rows swapped and the polish repeated from y, at most
  ACTIVE_SET_FIXES times. When no polish passes (M_SS z_S = -q_S inconsistent, or rows
  still on the wrong side after the swaps), the chain would solve the LCP restricted to its
  regularised set by Lemke (chain.py, "Restricted LCP"); the guess solves that restricted
  LCP too, from the remembered set, by block principal pivoting with least-squares solves
  (:func:`restricted_guess`). Without it, 18 % of the Panda's hand pressed on the table's
  LCPs (240 of 1347) fell back to Lemke; with it 7 (docs/results.md, "panda-table:
  warm-start misses").
* ``vertex``: the same with delta = 0 and no polish (Lemke's terminal basis is the
  complementary basis of S, whose matrix is nonsingular exactly when M_SS is).

Resting contacts keep their normal rows from step to step, but the friction rows of a
contact that barely sticks (tangential impulses near zero, their signs set by rounding and
by the pile's slow creep) enter and leave: measured on the 20-box pile, the remembered set
alone solved about 1 block in 5. So a set that fails is corrected, as block principal
pivoting does (Judice & Pires, Comput. Oper. Res. 21 (1994) 587-596): the rows of S with
y < 0 leave it, the rows outside with w < 0 join it, and the new set is solved again, at most
ROUNDS sets in all; when GUESS_SAFEGUARD rounds in a row do not reduce the number of wrong
rows, only the last wrong row is swapped (their safeguard; single swaps are Murty's method,
finite on P-matrices). Over the pile's first 300 steps (1,112 blocks tried) this solved 96% of
them, 37% with the remembered set itself, 3.3 sets on average (docs/results.md). The
safeguard waits GUESS_SAFEGUARD = 8 rounds (3 before branch bpile3): on the box pile's
landing steps the single swaps, one row a round, came too late for the 12 rounds (29 of 312
blocks failed and went to Lemke; 11 with 8, docs/results.md "bpile3").

The candidate is then verified on (M, q) by :func:`problem.evaluate`, the acceptance test of
every chain answer (tolerances in problem.py), and returned only if it passes; otherwise the
chain runs exactly as without a warm start. Accepted, it reports the solver whose answer it
stands for (``lemke_reg`` with the regularisation delta, or ``lemke``), ``pivots`` 0 and
``warm`` True (LcpResult), so the results file's solver and pivot columns say that no pivot
was made.

Same answer as Lemke's? When (M + delta I, q) has exactly one solution (as when M + delta I
is a P-matrix on the rows involved), the guess that passes is that solution and S is the set
Lemke's terminal basis holds, up to degenerate rows (basic with z_i = 0, or nonbasic with
w_i = 0): the least-change polish then starts from the same point up to rounding, and the
answers agree to the rounding of the two solves (tests/test_lcp_warm.py: random P-matrix LCPs,
the box pile's and the A1's recorded LCPs). The friction LCP's M is only copositive, so the
regularised LCP may have several solutions; then an accepted guess is a solution of the
regularised LCP polished and verified as the chain's would be, but possibly another vertex
than the one Lemke's path reaches: the one that keeps the previous step's active set, which
is the continuity the least-norm selection asks for (no chatter between vertices). In vertex
mode likewise (a degenerate LCP has several complementary bases). Not bitwise: an accepted
guess differs from the cold chain's answer by rounding, so runs with and without the warm
start are not bit-for-bit equal (``ENABLED = False`` turns it off). The compiled contact step
(contact_fused.py) tries the same guess with the same kernel, so it agrees with the Python
path bit for bit either way.

Tolerance (issue 15, branch lcptol; docs/results.md, "The LCP's warm guess within a
tolerance"). Two cuts make the guess's answers differ from the previous code's (main at
daaa187) by rounding instead of being the same bits; every answer still passes the unchanged
acceptance test (problem.py) and the selection's meaning is kept:

* a set's solve refines y only while its residual max |b - K y| is above the rounding level
  16 m eps (||K||_inf ||y||_inf + ||b||_inf) (the polish's bound, lstsq.active_set_error);
  before, two refinements were always made. A backward-stable y whose residual is already
  at that level usually takes none.
* the polish's least change is computed without the complete orthogonal decomposition when
  M_SS is symmetric to rounding (sticking contacts' normal and friction-direction rows,
  J_S A J_S^T; then the corrections c += K^-1 M_SS K^-1 (-q_S - M_SS c), K = M_SS + delta I
  with the regularised round's LU, from c = y_S stay in range(M_SS) = range(M_SS^T), whose
  limit is the minimum-norm change the decomposition gives) or when M_SS's LU has no pivot below
  FULL_RANK of the largest (nonsingular: the least change is its unique solution); it is
  accepted at the decomposition's own rounding bound, and otherwise the decomposition runs
  as before (:func:`_fast_least_change`).

Measured against main (docs/results.md, the lcptol section), the guess's outputs on the
recorded LCPs of a1-stand, panda-table and box-pile (benchmarks/bench_warm_guess.py --load):
the same codes and final sets on all 3,158, z within max |dz| / ||z||_inf 1.1e-15 (a1-stand,
panda-table) and 7e-10 (box-pile's rank-30 blocks of ~54 rows, where the minimum-norm answer
itself carries y's rounding along null(M_SS) amplified by 1 / delta). Whole runs (a1-stand
1 s, panda-table 1.5 s, gripper-lift 2 s, pendulum-12 3 s, box-pile 100 steps, every step
recorded) moved by at most |dq| 9.5e-14, |dv| 6.6e-12 (box-pile; 1e-12 on the others) and
contact impulses 2.1e-11 N s (gripper-lift's grasp; box-pile's aligned faces aside, whose
manifold points are picked by rounding-level tilts: the same steps' contact counts, other
points and impulse shares). The tolerance of this code against main's bits: the same codes
and sets, z within 1e-9 ||z||_inf, trajectories within 1e-12 in q and 1e-10 in v over
these runs; the cold chain is unchanged and test_lcp_warm's warm-against-cold bound (1e-9 of
the largest impulse) holds. The safeguard's GUESS_SAFEGUARD = 8 (branch bpile3) changes which
blocks a guess solves instead of Lemke (box-pile: 124 / 34 / 36 of its 132 / 36 / 36 120-, 96-
and 72-row guesses accepted against 115 / 28 / 32; panda-table's sample run one block fewer),
not the answers where both accept (the same bits, 3.6e-12 ||z|| on box-pile's 96-row blocks);
runs move within the same bounds (panda-table's sample run |dq| 4.6e-15, |dv| 1.2e-12; box-pile
2.3e-14 and 3.5e-11, its aligned faces' manifold corners aside; docs/results.md, bpile3).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

from mbsim.simcore.lcp.lstsq import EPS, active_set_least_change_into, active_set_work
from mbsim.simcore.lcp.problem import (
    _inf_norm,
    _max_abs,
    _snap_kernel,
    tolerance_kernel,
)
from mbsim.simcore.lcp.rowops import (
    gather_dot_into,
    matvec_into,
    sub_matvec_into,
    sub_scaled_row,
    unit_lower_solve,
)
from mbsim.simcore.native_call import native
from mbsim.simcore.spatial import borrowed, c_view

#: module switch: False makes :func:`chain.solve_lcp` ignore every WarmStart (cold chain)
ENABLED = True
#: sets tried per guess: the remembered one, then up to ROUNDS - 1 swaps of its wrong rows
ROUNDS = 12
#: rounds without fewer wrong rows before the swaps go one row at a time: the guess's
#: regularised rounds (GUESS_SAFEGUARD; 3 before branch bpile3, docs/results.md) and the
#: restricted LCP's (SAFEGUARD)
GUESS_SAFEGUARD = 8
SAFEGUARD = 3
#: sets tried by :func:`restricted_guess` (its working set may grow on the way; a set of the
#: ~10 rows it meets costs ~2 us against ~35 us for the chain's first attempt on
#: panda-table's 18-row LCP; measured: one of its LCPs needs 23)
RESTRICTED_ROUNDS = 24
#: iterative refinements of a set's solve at most, each only while the residual is above its
#: rounding level (:func:`_lu_solve`; main made two always)
REFINEMENTS = 2
#: refinement steps of the polish without the decomposition (:func:`_fast_least_change`)
POLISH_STEPS = 6
#: the smallest LU pivot, relative to the largest, for which :func:`_fast_least_change` takes
#: an unsymmetric M_SS as nonsingular (else the decomposition decides the rank)
FULL_RANK = 1e-6
#: the low-rank route (:func:`_lowrank_factor`): a set of at least LOWRANK_MIN rows whose
#: M_SS is a principal block of the symmetric positive semidefinite part of M (the rows with a
#: positive diagonal: sticking contacts' normal and friction-direction rows, J A J^T) is solved
#: through the rank-r factor of that part when r <= LOWRANK_SHARE |S|. A quarter: the Gram
#: matrix and its Cholesky factor (|S| r^2 + r^3 / 3 flops) then cost at most a tenth of the
#: LU's 2 |S|^3 / 3, what the refinements' |S|^2 products need to pay off; at r = 30 for
#: |S| ~ 54 (box-pile's 5-box islands) the route was measured no faster than the LU
#: (docs/results.md, bpile3), at r = 6 for |S| = 80-320 (a plate on 16-64 points) it is
#: 1.8-4x faster a step (section rankr)
LOWRANK_MIN = 24
LOWRANK_SHARE = 0.25
#: the factor's pivoted Cholesky stops at remaining diagonals below LOWRANK_TOL of the largest
#: (the part dropped is then below LOWRANK_TOL max M_ii entrywise, so it perturbs
#: K = M_SS + delta I by |S| LOWRANK_TOL max M_ii <= 1e-3 delta for delta = 1e-6 ||M||_inf and
#: |S| <= 1000: the refinement against the true K removes it)
LOWRANK_TOL = 1e-12
#: refinements of a low-rank solve against the true K; not at rounding level after them, the
#: round takes the LU (:func:`_solve_on`)
LOWRANK_REFINEMENTS = 4
#: blocks remembered per WarmStart (the oldest is dropped first): a few LCPs a step (the
#: impact phase's and the step's) of a few islands each
MAX_BLOCKS = 64

# guess_kernel's codes
CANDIDATE, SINGULAR, NEGATIVE_Z, NEGATIVE_W, NO_POLISH, NO_RESTRICTED = 0, 1, 2, 3, 4, 5
REASONS = {
    SINGULAR: "the guessed principal block is singular",
    NEGATIVE_Z: "a guessed z is negative",
    NEGATIVE_W: "a row outside the guess has w < 0",
    NO_POLISH: "the least-change polish is not at rounding level",
    NO_RESTRICTED: "the polish failed and the restricted LCP was not solved from the guess",
}


class WarmStart:
    """The active sets of the last LCP blocks one stepper solved (module docstring), and how
    often a guess was tried and accepted (``tried``, ``accepted``; per block)."""

    __slots__ = ("sets", "tried", "accepted")

    def __init__(self) -> None:
        self.sets: dict[tuple, np.ndarray] = {}
        self.tried = 0
        self.accepted = 0

    def guess(self, key: tuple) -> np.ndarray | None:
        """The sorted rows with z > 0 remembered under ``key``, or None."""
        return self.sets.get(key)

    def remember(self, key: tuple, z: np.ndarray, final: np.ndarray | None = None) -> None:
        """Remember under ``key`` the set ``final`` that a guess ended with (its degenerate
        rows, z_i = 0 in S, included), or else the rows of ``z`` (an accepted answer) with
        z > 0."""
        self.sets.pop(key, None)  # re-inserted last: the oldest entry is dropped first
        if len(self.sets) >= MAX_BLOCKS:
            del self.sets[next(iter(self.sets))]
        self.sets[key] = np.flatnonzero(z > 0.0) if final is None else final

    def forget(self, key: tuple) -> None:
        self.sets.pop(key, None)


@njit(cache=True)
def _lu_factor(LU, perm):
    """LU (m, m) overwritten by its LU factors with partial pivoting (unit lower L below the
    diagonal), perm (m,) by the row order; returns ok, False if a pivot is zero or not finite
    (own loops, as lemke.py's Gauss-Jordan: numba's LAPACK bindings take ~15 s to compile)."""
    m = LU.shape[0]
    for i in range(m):
        perm[i] = i
    for k in range(m):
        p = k
        for i in range(k + 1, m):
            if abs(LU[i, k]) > abs(LU[p, k]):
                p = i
        piv = LU[p, k]
        if piv == 0.0 or not np.isfinite(piv):
            return False
        if p != k:
            for j in range(m):
                t = LU[k, j]
                LU[k, j] = LU[p, j]
                LU[p, j] = t
            t2 = perm[k]
            perm[k] = perm[p]
            perm[p] = t2
        inv = 1.0 / piv
        for i in range(k + 1, m):
            f = LU[i, k] * inv
            LU[i, k] = f
            if f != 0.0:
                sub_scaled_row(LU, i, k, f, k + 1, m)
    return True


@njit(cache=True, inline="always")
def _lu_apply(LU, perm, r, t):
    """t = K^-1 r from K's factors (:func:`_lu_factor`)."""
    m = r.shape[0]
    for i in range(m):
        t[i] = r[perm[i]]
    unit_lower_solve(LU, t)
    for i in range(m - 1, -1, -1):
        s = t[i]
        for j in range(i + 1, m):
            s -= LU[i, j] * t[j]
        t[i] = s / LU[i, i]


@njit(cache=True, inline="always")
def _residual(K, b, y, r, knorm):
    """r = b - K y; returns (max |r|, its rounding level 16 m eps (||K||_inf ||y||_inf +
    ||b||_inf)), the bound of lstsq.active_set_error (``knorm`` = ||K||_inf given)."""
    m = b.shape[0]
    sub_matvec_into(K, b, y, r)
    e = 0.0
    yn = 0.0
    bn = 0.0
    for i in range(m):
        e = max(e, abs(r[i]))
        yn = max(yn, abs(y[i]))
        bn = max(bn, abs(b[i]))
    return e, 16.0 * m * EPS * (knorm * yn + bn)


@njit(cache=True)
def _lu_solve(K, b, y, LU, perm, tr):
    """y = K^-1 b by Gaussian elimination with partial pivoting (LU and perm get the
    factors), then iterative refinement against K (y += K^-1 (b - K y)) while the residual is
    above its rounding level (:func:`_residual`), at most REFINEMENTS times; returns ok,
    False if a pivot is zero or not finite or y is not finite. tr: (2 m,) work."""
    m = b.shape[0]
    for i in range(m):
        for j in range(m):
            LU[i, j] = K[i, j]
    if not _lu_factor(LU, perm):
        return False
    knorm = _inf_norm(K)
    t = tr[:m]
    r = tr[m : 2 * m]
    _lu_apply(LU, perm, b, y)
    for _ in range(REFINEMENTS):
        e, bound = _residual(K, b, y, r, knorm)
        if e <= bound:
            break
        _lu_apply(LU, perm, r, t)
        for i in range(m):
            y[i] += t[i]
    for i in range(m):
        if not np.isfinite(y[i]):
            return False
    return True


@njit(cache=True, inline="always")
def _pool(n):
    """The float64 entries at the head of a guess's work array (:func:`_work`) for an LCP of
    n rows: a set's solve (:func:`_solve_on`: its factors LU at 0, K at n^2, b, y and
    _lu_solve's t, r at 3 n^2), then the polish's (:func:`_fast_least_change`: M_SS at 2 n^2,
    its own factors at n^2, five vectors at 3 n^2), then lstsq's decomposition
    (active_set_least_change_into, from 0): each phase's arrays are dead when the next
    writes over them (the regularised round's factors are read only by the polish's first
    fast attempt, before any decomposition)."""
    return max(3 * n * n + 5 * n, active_set_work(n)[0])


@njit(cache=True, inline="always")
def _work(n):
    """(float64, int64, bool) entries of one guess's work for an LCP of n rows (every set has
    at most n rows): floats the pool (:func:`_pool`) then the polish's y and w, the least
    change's c and the restricted LCP's zero start (n each; the polish's w also holds the
    rounds' and the restricted LCP's w outside their sets); ints the factors' row order, the
    polish's own, the guess's set, the polish's (also the restricted LCP's rows outside its
    set), the restricted LCP's (also the rounds' and the polish's rows outside their sets),
    then lstsq's (n each, lstsq's active_set_work); bools the guess's inside and flip marks
    and the restricted LCP's inr, inside, flip (n each)."""
    return _pool(n) + 5 * n + _lowrank_size(n), 5 * n + active_set_work(n)[1], 7 * n


@njit(cache=True, inline="always")
def _lowrank_size(n):
    """The float64 entries of the low-rank route's work (:func:`_lowrank_views`): the factor
    L (n, n), the reduced matrix G and its Cholesky factor (n, n), two vectors."""
    return 2 * n * n + 2 * n


@njit(cache=True, inline="always")
def _lowrank_views(fw, bw, n):
    """(L, G, g, dg, inP, free): the low-rank route's work, after the guess's other floats
    (:func:`_work`) and bools (the rows of P, the pivoted Cholesky's free rows)."""
    o = _pool(n) + 5 * n
    L = c_view(fw, o, (n, n))
    G = c_view(fw, o + n * n, (n, n))
    g = fw[o + 2 * n * n : o + 2 * n * n + n]
    dg = fw[o + 2 * n * n + n : o + 2 * n * n + 2 * n]
    return L, G, g, dg, bw[5 * n : 6 * n], bw[6 * n : 7 * n]


@njit(cache=True)
def _work_size(n):
    """The float64 entries of the one array that holds a guess's work (:func:`_work`; its ints
    and bools as views of its tail, :func:`_carve`)."""
    nf, ni, nb = _work(n)
    return nf + ni + (nb + 7) // 8


@njit(cache=True, inline="always")
def _carve(work, n):
    """(fw, iw, bw): the float64, int64 and bool work of :func:`_work` as views of ``work``
    (:func:`_work_size` entries; the ints and bools reinterpret its tail)."""
    nf, ni, nb = _work(n)
    fw = work[0:nf]
    iw = work[nf : nf + ni].view(np.int64)
    bw = work[nf + ni : nf + ni + (nb + 7) // 8].view(np.bool_)[0:nb]
    return fw, iw, bw


@njit(cache=True, inline="always")
def _outside_into(mask, out):
    """np.flatnonzero(~mask) written into out: the view out[:k]."""
    k = 0
    for i in range(mask.shape[0]):
        if not mask[i]:
            out[k] = i
            k += 1
    return out[:k]


@njit(cache=True, inline="always")
def _nonzero_into(mask, out):
    """np.flatnonzero(mask) written into out: the view out[:k]."""
    k = 0
    for i in range(mask.shape[0]):
        if mask[i]:
            out[k] = i
            k += 1
    return out[:k]


@njit(cache=True)
def _solve_on(M, q, S, shift, z, fw, iw):
    """z = the solution of (M_SS + shift I) z_S = -q_S, z = 0 outside S (sorted rows); returns
    (ok, LU, perm) with the block's factors (views of the guess's work arrays fw, iw:
    :func:`_pool`), ok False if the block is singular."""
    n = q.shape[0]
    ns = S.shape[0]
    for i in range(n):
        z[i] = 0.0
    LU = c_view(fw, 0, (ns, ns))
    perm = iw[0:ns]
    if ns == 0:
        return True, LU, perm
    K = c_view(fw, n * n, (ns, ns))
    o = 3 * n * n
    b = fw[o : o + ns]
    y = fw[o + ns : o + 2 * ns]
    for a in range(ns):
        b[a] = -q[S[a]]
        for c in range(ns):
            K[a, c] = M[S[a], S[c]]
        K[a, a] += shift
    if not _lu_solve(K, b, y, LU, perm, fw[o + 2 * ns : o + 4 * ns]):
        return False, LU, perm
    for a in range(ns):
        z[S[a]] = y[a]
    return True, LU, perm


@njit(cache=True)
def _lowrank_factor(M, inP, L, Lt, dg, free, cap):
    """The rank-r factor of M_PP, P the rows with M_ii > 0 (marked in ``inP`` here): a
    pivoted Cholesky (outer-product form, the largest remaining diagonal first; Higham,
    Accuracy and Stability, 2nd ed., Sec. 10.3) L (n, r) with M_PP = L_P L_P^T + E, stopped
    when every remaining diagonal is at most LOWRANK_TOL max M_ii (PSD: |E_ij| <= that too).
    Row i of L (zero outside P) is the coordinates of row i in the r-dimensional range, so
    M_SS = L_S L_S^T + E_SS for every S in P: the sticking contacts' rows J_S A J_S^T of an
    island of d degrees of freedom have r <= d (box-pile: 30 for 5 boxes, where |S| ~ 54).
    Built column by column in Lt (its transpose, so each column's update is a vector loop
    over the rows), then copied to L. It reads M_PP's lower triangle only: an M_PP that is
    not symmetric positive semidefinite gives a factor whose solves do not reach rounding
    level against the true M_SS + delta I (:func:`_solve_lowrank` then refuses, the round
    takes the LU), and the polish takes it only for a set symmetric to rounding
    (:func:`_fast_least_change`). Returns r, or -1 (the route does not apply) when r would
    pass ``cap``."""
    n = M.shape[0]
    dmax = 0.0
    for i in range(n):
        inP[i] = M[i, i] > 0.0
        free[i] = inP[i]
        dg[i] = M[i, i] if inP[i] else 0.0
        if inP[i]:
            dmax = max(dmax, M[i, i])
    r = 0
    while True:
        p = -1
        best = LOWRANK_TOL * dmax
        for i in range(n):
            if free[i] and dg[i] > best:
                best = dg[i]
                p = i
        if p < 0:
            break
        if r >= cap:
            return -1
        s = np.sqrt(dg[p])
        free[p] = False
        col = Lt[r]
        for i in range(n):
            col[i] = M[i, p] if free[i] else 0.0
        for c in range(r):
            f = Lt[c, p]
            lc = Lt[c]
            for i in range(n):
                col[i] -= lc[i] * f
        inv = 1.0 / s
        for i in range(n):
            v = col[i] * inv if free[i] else 0.0
            col[i] = v
            dg[i] -= v * v
        col[p] = s
        r += 1
    for i in range(n):
        for c in range(r):
            L[i, c] = Lt[c, i]
    return r


@njit(cache=True)
def _gram_cholesky(L, r, S, shift, G):
    """G (r, r) = the lower Cholesky factor of shift I + B^T B, B = L[S, :r] (the Woodbury
    form of K = B B^T + shift I, :func:`_lowrank_apply`); False if a pivot is not positive
    and finite."""
    for i in range(r):
        for j in range(i + 1):
            G[i, j] = shift if i == j else 0.0
    for a in range(S.shape[0]):
        la = L[S[a]]
        for i in range(r):
            f = la[i]
            if f != 0.0:
                for j in range(i + 1):
                    G[i, j] += f * la[j]
    for k in range(r):
        d = G[k, k]
        for c in range(k):
            d -= G[k, c] * G[k, c]
        if not (d > 0.0 and np.isfinite(d)):
            return False
        d = np.sqrt(d)
        G[k, k] = d
        for i in range(k + 1, r):
            v = G[i, k]
            for c in range(k):
                v -= G[i, c] * G[k, c]
            G[i, k] = v / d
    return True


@njit(cache=True, inline="always")
def _lowrank_apply(L, r, S, shift, G, x, t, g):
    """t = K^-1 x for K = B B^T + shift I, B = L[S, :r], G the Cholesky factor of
    shift I + B^T B (:func:`_gram_cholesky`): Woodbury's identity
    K^-1 = (I - B (shift I + B^T B)^-1 B^T) / shift, an O(|S| r) apply. Exact for the
    factor's K; the callers refine against the true M_SS + shift I."""
    ns = S.shape[0]
    for i in range(r):
        g[i] = 0.0
    for a in range(ns):
        la = L[S[a]]
        xa = x[a]
        for i in range(r):
            g[i] += la[i] * xa
    for i in range(r):
        v = g[i]
        for c in range(i):
            v -= G[i, c] * g[c]
        g[i] = v / G[i, i]
    for i in range(r - 1, -1, -1):
        v = g[i]
        for c in range(i + 1, r):
            v -= G[c, i] * g[c]
        g[i] = v / G[i, i]
    for a in range(ns):
        la = L[S[a]]
        v = x[a]
        for i in range(r):
            v -= la[i] * g[i]
        t[a] = v / shift


@njit(cache=True)
def _solve_lowrank(M, q, S, shift, z, fw, L, r, G, g):
    """:func:`_solve_on` by the rank-r factor L (:func:`_lowrank_factor`; S in its rows P):
    y = K^-1 b by Woodbury (:func:`_lowrank_apply`), then refined against the true
    K = M_SS + shift I while its residual is above the rounding level of :func:`_residual`,
    at most LOWRANK_REFINEMENTS times. Returns False, z then undefined, if G is not positive
    definite or y is not at rounding level (the caller then takes the LU). G keeps its
    factor for the polish (:func:`_fast_least_change`). Work: fw's head, as _solve_on."""
    n = q.shape[0]
    ns = S.shape[0]
    if not _gram_cholesky(L, r, S, shift, G):
        return False
    K = c_view(fw, n * n, (ns, ns))
    o = 3 * n * n
    b = fw[o : o + ns]
    y = fw[o + ns : o + 2 * ns]
    t = fw[o + 2 * ns : o + 3 * ns]
    res = fw[o + 3 * ns : o + 4 * ns]
    for a in range(ns):
        b[a] = -q[S[a]]
        for c in range(ns):
            K[a, c] = M[S[a], S[c]]
        K[a, a] += shift
    knorm = _inf_norm(K)
    _lowrank_apply(L, r, S, shift, G, b, y, g)
    ok = False
    for _ in range(LOWRANK_REFINEMENTS + 1):
        e, bound = _residual(K, b, y, res, knorm)
        if e <= bound:
            ok = True
            break
        _lowrank_apply(L, r, S, shift, G, res, t, g)
        for a in range(ns):
            y[a] += t[a]
    if not ok:
        return False
    for a in range(ns):
        if not np.isfinite(y[a]):
            return False
    for i in range(n):
        z[i] = 0.0
    for a in range(ns):
        z[S[a]] = y[a]
    return True


@njit(cache=True)
def _lowrank_round(M, q, S, shift, z, fw, rank, L, G, g, dg, inP, free):
    """One round of the guess by the low-rank route: the factor made first if ``rank`` is 0
    (:func:`_lowrank_factor`, its cap a quarter of this first set), then the set solved by
    it (:func:`_solve_lowrank`) when it fits. Returns (rank, 1 if solved else 0)."""
    if rank == 0:
        rank = _lowrank_factor(M, inP, L, G, dg, free, int(LOWRANK_SHARE * S.shape[0]))
    if rank > 0 and _lowrank_fits(M, S, rank):
        if _solve_lowrank(M, q, S, shift, z, fw, L, rank, G, g):
            return rank, 1
    return rank, 0


@njit(cache=True)
def _lowrank_apply_into(L, r, S, shift, G, x, t, g):
    """:func:`_lowrank_apply` as a kernel of its own (called by address from the polish)."""
    _lowrank_apply(L, r, S, shift, G, x, t, g)


#: the low-rank route's kernels called by their addresses (native_call.py), compiled only
#: when a guess first takes the route (typing the calls compiles nothing): linked, they were
#: optimised again inside every kernel the guess is linked into, and a first run that never
#: takes the route (the README's pendulum) compiled ~7 s CPU more (docs/results.md, "rankr")
LOWRANK_ROUND = types.UniTuple(types.int64, 2)
_lowrank_round_call = native(_lowrank_round, LOWRANK_ROUND)
_gram_cholesky_call = native(_gram_cholesky, types.boolean)
_lowrank_apply_call = native(_lowrank_apply_into, types.none)


@njit(cache=True, inline="always")
def _lowrank_fits(M, S, r):
    """Whether the set S may take the low-rank route: at least LOWRANK_MIN rows, all in P
    (M_ii > 0), and the factor's rank r (0: not made yet) at most LOWRANK_SHARE |S|, where
    forming and factoring G (|S| r^2 + r^3 / 3 flops) is below a tenth of the LU's
    2 |S|^3 / 3."""
    ns = S.shape[0]
    if ns < LOWRANK_MIN or r < 0 or r > LOWRANK_SHARE * ns:
        return False
    for a in range(ns):
        if not M[S[a], S[a]] > 0.0:
            return False
    return True


@njit(cache=True, inline="always")
def _copy_into(A, out):
    """out[:] = A (same shape); returns out."""
    for a in range(A.shape[0]):
        for b in range(A.shape[1]):
            out[a, b] = A[a, b]
    return out


@njit(cache=True)
def _fast_least_change(M, q, y, S, shift, LU, perm, have, z, fw, iw, lowrank, rank, Lr, G, g):
    """The least-change answer of lstsq.active_set_least_change from y on the set S (z = 0
    outside S) without its complete orthogonal decomposition, when one of two cases makes it
    the solution of an LU-factored system (module docstring, "Tolerance"); False when neither
    applies or the answer is not at the same rounding level (e <= bound of
    lstsq.active_set_error), the caller then takes the decomposition.

    * M_SS symmetric to rounding (|M_ab - M_ba| <= 16 |S| eps ||M_SS||_inf; the rows of
      sticking contacts: J_S A J_S^T, possibly rank-deficient) and ``shift`` > 0: with K =
      M_SS + shift I, c = y_S, then c += K^-1 M_SS K^-1 r, r = -q_S - M_SS c, until the
      residual is at rounding level. Each correction lies in range(M_SS) = range(M_SS^T),
      the least change's space, so the limit is the minimum-norm change (a singular
      direction keeps y's component, as the decomposition's rank rule does). On an
      eigenvalue l of M_SS a step leaves 1 - (l / (l + shift))^2 of the error (~2 shift / l);
      on a singular direction the middle M_SS removes r's component (the rounding of q_S,
      which K^-1 alone would add again each step, amplified by 1 / shift: the whole runs'
      impulses moved 1e-9 that way on box-pile). A direction whose eigenvalue is near
      ``shift`` or below converges slowly, and a step that does not halve the residual
      gives up. K's factors are the regularised round's when ``have`` (same S).
    * otherwise M_SS is factored (no shift) and kept only if every pivot is at least
      FULL_RANK |largest pivot| (far above the decomposition's rank rule, rcond 1e-12): M_SS
      nonsingular, the least change is its solution, reached from c = y_S by the same
      refinement.

    Work in the guess's arrays fw, iw (:func:`_pool`): M_SS, its own factors and five
    vectors; the given factors are read only when ``have``."""
    n = q.shape[0]
    ns = S.shape[0]
    for i in range(n):
        z[i] = 0.0
    if ns == 0:
        return True
    A = c_view(fw, 2 * n * n, (ns, ns))
    o = 3 * n * n
    rhs = fw[o : o + ns]
    c = fw[o + ns : o + 2 * ns]
    r = fw[o + 2 * ns : o + 3 * ns]
    t = fw[o + 3 * ns : o + 4 * ns]
    u = fw[o + 4 * ns : o + 5 * ns]
    for a in range(ns):
        rhs[a] = -q[S[a]]
        c[a] = y[S[a]]
        for b in range(ns):
            A[a, b] = M[S[a], S[b]]
    anorm = _inf_norm(A)
    asym = 16.0 * ns * EPS * anorm
    sym = shift > 0.0
    for a in range(ns):
        if not sym:
            break
        for b in range(a):
            if abs(A[a, b] - A[b, a]) > asym:
                sym = False
                break
    wood = sym and lowrank  # K^-1 by Woodbury from the regularised round's G
    if sym and not have and rank > 0 and _lowrank_fits(M, S, rank):
        wood = _gram_cholesky_call(Lr, rank, S, shift, G)
    if wood:
        pass
    elif sym and (not have or lowrank):
        LU = _copy_into(A, c_view(fw, n * n, (ns, ns)))
        for a in range(ns):
            LU[a, a] += shift
        perm = iw[n : n + ns]
        if not _lu_factor(LU, perm):
            return False
    elif not sym:
        LU = _copy_into(A, c_view(fw, n * n, (ns, ns)))
        perm = iw[n : n + ns]
        if not _lu_factor(LU, perm):
            return False
        umax = 0.0
        for a in range(ns):
            umax = max(umax, abs(LU[a, a]))
        for a in range(ns):
            if not abs(LU[a, a]) >= FULL_RANK * umax:
                return False
    prev = np.inf
    for _ in range(POLISH_STEPS + 1):
        e, bound = _residual(A, rhs, c, r, anorm)
        if e <= bound:
            for a in range(ns):
                if not np.isfinite(c[a]):
                    return False
                z[S[a]] = c[a]
            return True
        if not e <= 0.5 * prev:
            return False
        prev = e
        if wood:
            _lowrank_apply_call(Lr, rank, S, shift, G, r, t, g)
        else:
            _lu_apply(LU, perm, r, t)
        if sym:  # t = K^-1 M_SS K^-1 r: filters r's component along null(M_SS)
            matvec_into(A, t, u)
            if wood:
                _lowrank_apply_call(Lr, rank, S, shift, G, u, t, g)
            else:
                _lu_apply(LU, perm, u, t)
        for a in range(ns):
            c[a] += t[a]
    return False


@njit(cache=True)
def _pivot_step(flip, nflip, inside, best, tries, safeguard):
    """One block principal pivoting step: the rows marked in ``flip`` (``nflip`` of them)
    change sides of ``inside``; a round that does not lower the fewest wrong rows seen
    (``best``) spends one of ``safeguard`` ``tries``, and with none left only the last marked
    row changes side (Murty's least-index rule counted from the end, Judice & Pires'
    safeguard). Returns the new (best, tries)."""
    if nflip < best:
        best, tries = nflip, safeguard
    else:
        tries -= 1
    if tries <= 0:
        last = -1
        for i in range(flip.shape[0]):
            if flip[i]:
                last = i
        for i in range(flip.shape[0]):
            flip[i] = i == last
    for i in range(flip.shape[0]):
        if flip[i]:
            inside[i] = not inside[i]
    return best, tries


@njit(cache=True)
def guess_kernel(M, q, S, delta, least_norm, tol_rel, rcond, rounds, fixes, z, out_S):
    """The candidate of the guess S (sorted rows) for (M, q) (module docstring): z gets it,
    out_S[:k] the final set, and (CANDIDATE, k, rounds used) is returned, else the code of
    the check that failed last. ``delta`` the regularisation of the least-norm selection
    (absolute), ``rcond`` the polish's rank rule (chain.LSTSQ_RCOND), ``rounds`` how many
    sets are tried: after a set whose z_S has negatives or whose w has negatives outside
    it, the next swaps those rows (the block principal pivoting step); ``fixes`` the
    polish's active-set corrections (chain.ACTIVE_SET_FIXES, :func:`_polish`) and the
    restricted LCP's growths (:func:`restricted_guess`, which takes the least-norm guess
    whose polish fails: the code NO_RESTRICTED when it fails too)."""
    return guess_normed(
        M, q, S, delta, least_norm, tol_rel, rcond, rounds, fixes, z, out_S, _inf_norm(M)
    )


@njit(cache=True)
def guess_normed(M, q, S, delta, least_norm, tol_rel, rcond, rounds, fixes, z, out_S, mraw):
    """:func:`guess_kernel` with ``mraw`` = ||M||_inf given (the compiled contact step has
    it: its LCP's norm is taken once, for the regularisation and for this). The guess's work
    is one float64 array (:func:`_work_size`), made here and used through borrowed views
    (spatial.borrowed) by the functions it calls: one allocation a guess. The body is called
    by address (native_call.native): linked, LLVM would optimise it again inside this
    wrapper's compilation (~5 s more of a cold first run's compiles)."""
    return _guess_into_call(
        M, q, S, delta, least_norm, tol_rel, rcond, rounds, fixes, z, out_S, mraw,
        np.empty(_work_size(q.shape[0])),
    )  # fmt: skip


@njit(cache=True)
def _guess_into(
    M, q, S, delta, least_norm, tol_rel, rcond, rounds, fixes, z, out_S, mraw, work
):  # fmt: skip
    """:func:`guess_normed` in the work array ``work`` of :func:`_work_size` entries (held by
    the caller for the call, so borrowed here: its views count no references)."""
    n = q.shape[0]
    fw, iw, bw = _carve(borrowed(work), n)
    shift = delta if least_norm else 0.0
    inside = bw[0:n]
    for i in range(n):
        inside[i] = False
    for a in range(S.shape[0]):
        inside[S[a]] = True
    mnorm = mraw + shift
    qn = _max_abs(q)
    code = SINGULAR
    cur = S  # read only: rebound, never written
    r = 0
    best = n + 1  # the fewest wrong rows seen
    tries = GUESS_SAFEGUARD  # rounds left before the single-row swaps
    LU = c_view(fw, 0, (0, 0))  # the last set's factors
    perm = iw[0:0]
    flip = bw[n : 2 * n]
    wout = fw[_pool(n) + n : _pool(n) + 2 * n]  # w outside the set (the polish's w, free here)
    Lr, G, g, dg, inP, free = _lowrank_views(fw, bw, n)
    rank = 0  # the low-rank factor's rank: 0 not made yet, -1 the route does not apply
    lowrank = False  # whether the last set was solved by it (G then holds its factor)
    for r in range(rounds):
        lowrank = False
        if shift > 0.0 and _lowrank_fits(M, cur, rank):
            rank, routed = _lowrank_round_call(
                M, q, cur, shift, z, fw, rank, Lr, G, g, dg, inP, free
            )
            lowrank = routed != 0
        if not lowrank:
            ok, LU, perm = _solve_on(M, q, cur, shift, z, fw, iw)
            if not ok:
                return SINGULAR, 0, r + 1
        for i in range(n):
            flip[i] = False
        nflip = 0
        # the acceptance tolerance of problem.py for (M + shift I, q, z): a z_i of S above
        # -tol is a degenerate zero (set to 0), below it the row leaves S
        tol = tolerance_kernel(tol_rel, n, mnorm, qn, _max_abs(z))
        for a in range(cur.shape[0]):
            i = cur[a]
            if z[i] < -tol:
                flip[i] = True
                nflip += 1
            elif z[i] < 0.0:
                z[i] = 0.0
        code = NEGATIVE_Z if nflip else CANDIDATE
        # w = (M + shift I) z + q outside S (z_i = 0 there, so the shift does not enter)
        out = _outside_into(inside, iw[4 * n : 5 * n])
        gather_dot_into(M, out, cur, z, q, wout)
        for t in range(out.shape[0]):
            i = out[t]
            if not wout[i] >= -tol:
                flip[i] = True
                nflip += 1
                if code == CANDIDATE:
                    code = NEGATIVE_W
        if nflip == 0:
            break
        best, tries = _pivot_step(flip, nflip, inside, best, tries, GUESS_SAFEGUARD)
        cur = _nonzero_into(inside, iw[2 * n : 3 * n])
    else:
        return code, 0, rounds
    if least_norm:
        # ``inside`` marks cur's rows here (the rounds stopped without a swap)
        ok, fin = _polish(
            M, q, z, cur, inside, rcond, tol_rel, fixes, mraw, qn, shift, LU, perm, fw, iw,
            lowrank, rank, Lr, G, g,
        )  # fmt: skip
        if not ok:
            # the chain's restricted LCP on the regularised set, from the remembered one
            return _restricted_into(
                M, q, cur, S, tol_rel, rcond, RESTRICTED_ROUNDS, fixes, mraw, qn, z, out_S, r + 1,
                work,
            )  # fmt: skip
        cur = fin
    else:
        _snap_kernel(z)
    ns = cur.shape[0]
    for a in range(ns):
        out_S[a] = cur[a]
    return CANDIDATE, ns, r + 1


_guess_into_call = native(_guess_into)


@njit(cache=True, inline="always")
def _least_change_on(M, q, y, S, rcond, z, fw, iw):
    """z = the least-change answer of lstsq.active_set_least_change from y on the set S
    (zero outside S); False, z then undefined, if it is not at rounding level. In the
    guess's work arrays (:func:`_work`: the pool and c, lstsq's ints)."""
    n = q.shape[0]
    for i in range(n):
        z[i] = 0.0
    ns = S.shape[0]
    if ns:
        o = _pool(n)
        c = fw[o + 2 * n : o + 2 * n + ns]
        ok, err, bound = active_set_least_change_into(
            M, q, y, S, rcond, c, fw[0:o], iw[5 * n : iw.shape[0]]
        )
        if not (ok and err <= bound):
            return False
        for a in range(ns):
            z[S[a]] = c[a]
    return True


@njit(cache=True)
def _polish(
    M, q, z, S, inside, rcond, tol_rel, fixes, mnorm, qn, shift, LU, perm, fw, iw, lowrank, rank,
    Lr, G, g,
):  # fmt: skip
    """chain.lemke_regularised's polish of the regularised answer z on the set S, in place:
    the least-change correction on M_SS (at rounding level only; by
    :func:`_fast_least_change` when it applies, LU and perm the factors of
    M_SS + shift I that gave z, else lstsq's decomposition), then, while rows are on
    the wrong side on (M, q) (z_i < -tol in S, w_i < -tol outside; tol of problem.py), those
    rows swapped and the polish repeated from the same regularised answer, at most ``fixes``
    times. ``mnorm`` = ||M||_inf and ``qn`` = ||q||_inf (the caller's). Returns (True, the
    final set), or (False, _) if no polish passes (z then undefined). ``inside`` marks S's
    rows on entry (the caller's, overwritten). fw, iw: the guess's work (:func:`_work`)."""
    n = q.shape[0]
    o = _pool(n)
    y = fw[o : o + n]
    w = fw[o + n : o + 2 * n]
    for i in range(n):
        y[i] = z[i]
    for f in range(fixes + 1):
        if not _fast_least_change(
            M, q, y, S, shift, LU, perm, f == 0, z, fw, iw, f == 0 and lowrank, rank, Lr, G, g
        ):
            if not _least_change_on(M, q, y, S, rcond, z, fw, iw):
                return False, S
        _snap_kernel(z)
        tol = tolerance_kernel(tol_rel, n, mnorm, qn, _max_abs(z))
        # w = M z + q outside S (only those rows of w are read)
        gather_dot_into(M, _outside_into(inside, iw[4 * n : 5 * n]), S, z, q, w)
        nflip = 0
        for i in range(n):
            if (inside[i] and z[i] < -tol) or (not inside[i] and w[i] < -tol):
                nflip += 1
        if nflip == 0:
            return True, S
        for i in range(n):
            if (inside[i] and z[i] < -tol) or (not inside[i] and w[i] < -tol):
                inside[i] = not inside[i]
        S = _nonzero_into(inside, iw[3 * n : 4 * n])
    return False, S


@njit(cache=True)
def restricted_guess(M, q, R, T, tol_rel, rcond, rounds, fixes, mnorm, qn, z, out_S, used):
    """chain.lemke_regularised's restricted LCP (chain docstring, "Restricted LCP"), solved
    from a guess instead of by Lemke: the regularised set R (sorted rows) whose polish on M
    failed (inconsistent, or rows left on the wrong side after the swaps) is the working
    set, T (sorted rows, the remembered set) the start. On the LCP restricted to R (z = 0
    outside R) block principal pivoting as in :func:`guess_kernel` (rows of the set S with
    z_i < -tol leave it, rows of R outside S with w_i < -tol join it, one row at a time
    after SAFEGUARD rounds without fewer wrong rows) from S = T n R, each set solved by the
    minimum-norm least squares solution of M_SS z_S = -q_S (lcp/lstsq.py, rank rule
    ``rcond``: M_SS is often singular here, the sigma row of a contact with no beta row in
    S is zero; a set whose system is not consistent to rounding,
    ||M_SS z_S + q_S|| > 16 |S| eps (||M_SS|| ||z_S|| + ||q_S||), is refused). z_i in
    [-tol, 0) in S is a degenerate zero, set to 0. When the restricted answer leaves rows
    outside R with w_i < -tol they join R and S and the pivoting goes on, at most ``fixes``
    times (chain._restricted's working-set growth); ``rounds`` sets in all. tol is
    problem.py's acceptance tolerance for (M, q, z) (``mnorm`` = ||M||_inf, ``qn`` =
    ||q||_inf). Returns (CANDIDATE, k, rounds used) with z the answer and out_S[:k] its
    final set (degenerate rows included), else (NO_RESTRICTED, 0, rounds used); ``used``
    rounds were spent before. The caller verifies the answer on (M, q) as every guess.

    Why: on the Panda's hand pressed on the table (docs/results.md, "panda-table: warm-start
    misses") one contact carries the load and two others, open within the margin, have
    beta = 0 and a free sigma (any sigma at or above their tangential speed solves the LCP);
    the regularised set holds their rows, its polish fails, and the chain's answer is the
    restricted LCP's vertex. Same answer: when the restricted LCP has one solution, the one
    that passes is it; otherwise it is a vertex of the restricted LCP as Lemke's is,
    possibly another one (the one keeping the remembered set), verified the same way."""
    return _restricted_into(
        M, q, R, T, tol_rel, rcond, rounds, fixes, mnorm, qn, z, out_S, used,
        np.empty(_work_size(q.shape[0])),
    )  # fmt: skip


@njit(cache=True)
def _restricted_into(
    M, q, R, T, tol_rel, rcond, rounds, fixes, mnorm, qn, z, out_S, used, work
):  # fmt: skip
    """:func:`restricted_guess` in the work array ``work`` of :func:`_work_size` entries (held
    by the caller for the call, so borrowed here). R and T may be views of the guess's sets
    (the ints' [2 n, 3 n)), not of the entries this writes (the ints from 3 n)."""
    n = q.shape[0]
    fw, iw, bw = _carve(borrowed(work), n)
    inr = bw[2 * n : 3 * n]
    inside = bw[3 * n : 4 * n]
    flip = bw[4 * n : 5 * n]
    o = _pool(n)
    zero = fw[o + 3 * n : o + 4 * n]
    wout = fw[o + n : o + 2 * n]  # w outside the set (the polish's w: the polish is done)
    for i in range(n):
        inr[i] = False
        inside[i] = False
        flip[i] = False
        zero[i] = 0.0
    for a in range(R.shape[0]):
        inr[R[a]] = True
    for a in range(T.shape[0]):
        inside[T[a]] = inr[T[a]]
    grown = 0
    best = n + 1
    tries = SAFEGUARD
    for r in range(rounds):
        cur = _nonzero_into(inside, iw[4 * n : 5 * n])
        ns = cur.shape[0]
        if not _least_change_on(M, q, zero, cur, rcond, z, fw, iw):
            return NO_RESTRICTED, 0, used + r + 1
        tol = tolerance_kernel(tol_rel, n, mnorm, qn, _max_abs(z))
        nflip = 0
        for a in range(ns):
            i = cur[a]
            flip[i] = z[i] < -tol
            if flip[i]:
                nflip += 1
            elif z[i] < 0.0:
                z[i] = 0.0
        # w = M z + q outside S: rows of R join S, rows outside R grow R once S is settled
        outrows = _outside_into(inside, iw[3 * n : 4 * n])
        gather_dot_into(M, outrows, cur, z, q, wout)
        outside = 0
        for t in range(outrows.shape[0]):
            i = outrows[t]
            wrong = not wout[i] >= -tol
            flip[i] = wrong and inr[i]
            if flip[i]:
                nflip += 1
            elif wrong:
                outside += 1
        if nflip == 0:
            if outside == 0:
                for a in range(ns):
                    out_S[a] = cur[a]
                return CANDIDATE, ns, used + r + 1
            if grown == fixes:
                return NO_RESTRICTED, 0, used + r + 1
            grown += 1
            for t in range(outrows.shape[0]):  # w as above: z has not changed
                i = outrows[t]
                if not inr[i] and not wout[i] >= -tol:
                    inr[i] = True
                    inside[i] = True
            best, tries = n + 1, SAFEGUARD
            continue
        best, tries = _pivot_step(flip, nflip, inside, best, tries, SAFEGUARD)
    return NO_RESTRICTED, 0, used + rounds
