"""The solver entry point and its fallback chain for hard steps.

``solve_lcp(M, q, solver="lemke", chain=True)`` first splits (M, q) into its independent
blocks (islands.py; an M that does not split is one block) and runs the chain on each; the
chain tries, in order, until one is accepted:

1. ``lemke``: lexicographic Lemke on (M, q);
2. ``lemke_reg``: Lemke on M + delta I for delta = c ||M||_inf, c in DEFAULT_DELTAS =
   (1e-10, 1e-8, 1e-6), each followed by a polish on the original M (below);
3. ``pgs``: projected Gauss-Seidel.

With ``solver="pgs"`` PGS goes first and the Lemke attempts follow. With the selection
``"least_norm"`` (selection.py; the stepper's default) ``lemke_reg`` with delta =
selection.LEAST_NORM_DELTA goes first, then ``lemke``, the other deltas and ``pgs``. With
``chain=False`` only the first solver runs. An attempt is accepted on its verified residuals
alone (problem.py), whichever solver produced it. Inside a :func:`budget.limits` context an
attempt that runs out of the step's time ends the chain (status ``failed``, the message says
so), and a stop request raises :class:`budget.SolveInterrupted`. Every attempt is recorded in
``result.attempts``; the returned result is the accepted one (``solver`` and ``delta`` say
which), or, if none is accepted, the attempt with the smallest residual with status ``failed``
and a message naming every attempt (use ``result.describe(step, time)`` or
:func:`problem.ensure` to stop a run with it).

Warm start. With a ``warm`` store (lcp/warm.py; the OS formulation passes one per stepper)
each block first tries the active set of the previous answer for the same rows, solved and
polished as the first attempt of the plan would have been, and accepted by the same test;
the plan above runs only when the guess fails (:func:`_solve_warm`).

Regularisation and polish. Adding delta I makes every principal minor of a PSD or copositive
matrix positive-ish, which removes the singular bases that make plain Lemke fail on duplicated
or redundant contacts. But the solution of (M + delta I, q) violates the original problem by
up to delta ||z||, more than the acceptance tolerance (1e-9 relative) once c > 1e-9. So the
active set S (the basic z of Lemke's terminal basis) is kept and z_S is refined on the original
M so that ``M_SS z_S = -q_S``: first by the least-change correction (minimum-norm least
squares, compiled, lcp/lstsq.py; exact when M_SS is singular but consistent, as with redundant
contacts), else
by proximal-point iterations ``(M_SS + delta I) z_S <- -q_S + delta z_S`` (compiled,
lcp/proximal.py, which the compiled contact step calls too). Rows that the
polish leaves on the wrong side (z_i < -tol in S, w_i < -tol outside) are swapped and the
polish repeated, at most ACTIVE_SET_FIXES times. The polished z is verified on (M, q) like any
other result: regularisation never loosens the acceptance test.

Restricted LCP. When the active-set system is inconsistent (q_S outside the range of M_SS:
redundant contacts whose gap and curvature targets disagree, e.g. a quadruped lying on the
floor with 20 contacts on 18 DoF), no polish of the regularised active set S solves (M, q):
the exact solutions let some of the contacts in S separate. Then the LCP restricted to S
(z = 0 outside S) is solved by :func:`lemke.lemke`, which may leave rows of S at zero; rows
outside S that the answer leaves with w < -tol join S and the restricted LCP is solved again,
at most ACTIVE_SET_FIXES times (a working-set method). Measured on the four spirit40newer LCPs
that failed every attempt (n = 120, docs/results.md, "Real robots"): with delta = 1e-8
||M|| each is solved after at most one growth of S (57-59 of 120 rows), with delta = 1e-6
three of four after 2-3 growths. The answer is a vertex of the restricted problem, not the
least-norm point; it is verified on (M, q) like every other.
"""

from __future__ import annotations

import numpy as np

from mbsim.simcore.lcp import budget, islands, selection
from mbsim.simcore.lcp import warm as warm_start
from mbsim.simcore.lcp.lemke import as_problem, lemke, run_lemke
from mbsim.simcore.lcp.lstsq import active_set_error, active_set_least_change
from mbsim.simcore.lcp.pgs import DEFAULT_MAX_ITER, pgs
from mbsim.simcore.lcp.problem import (
    DEFAULT_TOL_REL,
    Attempt,
    LcpResult,
    Status,
    evaluate,
    inf_norm,
    snap_rounding_negatives,
)
from mbsim.simcore.lcp.proximal import proximal_kernel
from mbsim.simcore.options import LCP_SOLVERS

DEFAULT_DELTAS = (1e-10, 1e-8, 1e-6)
POLISH_ITERS = 30
#: the rank rule of the least-change polish (lcp/lstsq.py): a pivot of M_SS's column-pivoted
#: QR below this fraction of the first counts as zero, as singular values below it do in
#: LAPACK's gelsd (redundant contacts make M_SS exactly singular; computed, its null part
#: comes out at ~1e-16 relative)
LSTSQ_RCOND = 1e-12
#: rounds of active-set correction after the polish (swap the rows whose sign is wrong,
#: polish again); degenerate rows of redundant contacts need one or two
ACTIVE_SET_FIXES = 5
SOLVERS = LCP_SOLVERS


def lemke_regularised(
    M: np.ndarray,
    q: np.ndarray,
    delta: float,
    max_pivots: int | None = None,
    tol_rel: float = DEFAULT_TOL_REL,
) -> LcpResult:
    """Lemke on (M + delta I, q), polished on M's active-set system, verified on (M, q)."""
    M, q = as_problem(M, q)
    n = q.shape[0]
    status, pivots, z_reg, S = run_lemke(M + delta * np.eye(n), q, max_pivots)
    if status != Status.SOLVED:
        return evaluate(M, q, z_reg, status, pivots, "lemke_reg", delta, tol_rel)
    # the unpolished answer is verified only when no polish is accepted: it is then the
    # candidate a failed polish is compared with (an accepted polish is returned whatever
    # the raw answer's verification says, so skipping it then changes nothing)
    best = None
    S0 = S
    for _ in range(ACTIVE_SET_FIXES + 1):
        z_pol = _polish(M, q, z_reg, S, delta)
        if z_pol is None:
            break
        pol = evaluate(M, q, z_pol, Status.SOLVED, pivots, "lemke_reg", delta, tol_rel)
        if pol.ok:
            return pol
        if best is None:
            best = evaluate(M, q, z_reg, Status.SOLVED, pivots, "lemke_reg", delta, tol_rel)
        if not best.ok and _worst(pol) <= _worst(best):
            best = pol
        # the regularised active set was off by a few degenerate rows (a basic z polished
        # below zero, a non-basic row with w < 0): swap them and polish again
        inside = np.zeros(n, dtype=bool)
        inside[S] = True
        flip = (inside & (pol.z < -pol.tol)) | (~inside & (pol.w < -pol.tol))
        if not flip.any():
            break
        S = np.flatnonzero(inside ^ flip)
    restricted = _restricted(M, q, S0, pivots, delta, max_pivots, tol_rel)
    if restricted is not None:
        return restricted
    if best is None:
        best = evaluate(M, q, z_reg, Status.SOLVED, pivots, "lemke_reg", delta, tol_rel)
    return best


def _restricted(M, q, S, pivots, delta, max_pivots, tol_rel) -> LcpResult | None:
    """The LCP restricted to the working set S (z = 0 outside), solved by :func:`lemke`,
    with S grown by the rows outside it whose w < -tol, at most ACTIVE_SET_FIXES times;
    the first answer accepted on (M, q), else None (chain docstring, "Restricted LCP")."""
    n = q.shape[0]
    inside = np.zeros(n, dtype=bool)
    inside[S] = True
    for _ in range(ACTIVE_SET_FIXES + 1):
        idx = np.flatnonzero(inside)
        sub = lemke(M[np.ix_(idx, idx)], q[idx], max_pivots=max_pivots, tol_rel=tol_rel)
        if sub.status != Status.SOLVED:
            return None
        z = np.zeros(n)
        z[idx] = sub.z
        r = evaluate(
            M, q, z, Status.SOLVED, pivots + sub.pivots, "lemke_reg", delta, tol_rel,
            f"solved as the LCP restricted to {idx.size} of {n} rows",
        )  # fmt: skip
        if r.ok:
            return r
        grow = ~inside & (r.w < -r.tol)
        if not grow.any():
            return None
        inside |= grow
    return None


def _polish(M, q, z_reg, S, delta) -> np.ndarray | None:
    """z_S refined on M_SS z_S = -q_S (chain docstring); None if no refinement worked.

    Two candidates: the least-change correction z_S + dz with dz the minimum-norm
    least-squares solution of M_SS dz = -q_S - M_SS z_S (lcp/lstsq.py, LSTSQ_RCOND; exact for a
    singular but consistent M_SS, the redundant-contact case, and it keeps the regularised
    selection's
    spread of the load), refined once; then the proximal-point iterations. The first whose
    residual on the active-set system is at rounding level wins, else the smaller one."""
    n = q.shape[0]
    z = np.zeros(n)
    if S.size == 0:
        return z
    c = np.empty(S.size)
    ok, err, bound = active_set_least_change(M, q, z_reg, S, LSTSQ_RCOND, c)
    best, best_err = (c, err) if ok else (None, np.inf)
    if not err <= bound:
        # the proximal iterations only when the least-change correction is not at rounding
        # level; the first candidate at rounding level wins, else the smaller error
        MSS = M[np.ix_(S, S)]
        rhs = -q[S]
        p = _proximal(MSS, rhs, z_reg[S], delta)
        if p is not None:
            e, bound_p = active_set_error(MSS, rhs, p)
            if e <= bound_p or e < best_err:
                best = p
    if best is None:
        return None
    z[S] = best
    return snap_rounding_negatives(z)


def _proximal(MSS, rhs, zS, delta) -> np.ndarray | None:
    """Proximal-point iterations (MSS + delta I) zS <- rhs + delta zS (lcp/proximal.py);
    None if MSS + delta I is singular or an iterate is not finite."""
    out = np.empty(rhs.shape[0])
    ok = proximal_kernel(
        np.ascontiguousarray(MSS, dtype=np.float64), np.ascontiguousarray(rhs, dtype=np.float64),
        np.ascontiguousarray(zS, dtype=np.float64), float(delta), POLISH_ITERS, out,
    )  # fmt: skip
    return out if ok else None


def _attempt(r: LcpResult) -> Attempt:
    """The chain's record of one attempt."""
    return Attempt(r.solver, r.delta, r.status, r.pivots, r.residual)


def _worst(r: LcpResult) -> float:
    v = max(r.residual, r.sign_violation, r.eq_residual)
    return v if np.isfinite(v) else np.inf


def solve_lcp(
    M: np.ndarray,
    q: np.ndarray,
    solver: str = "lemke",
    chain: bool = True,
    tol_rel: float = DEFAULT_TOL_REL,
    max_pivots: int | None = None,
    pgs_max_iter: int = DEFAULT_MAX_ITER,
    deltas: tuple[float, ...] = DEFAULT_DELTAS,
    select: str | None = None,
    split: bool = True,
    warm: warm_start.WarmStart | None = None,
    skip_first: bool = False,
) -> LcpResult:
    """Solve the standard LCP (M, q) with ``solver`` ("lemke" or "pgs") and the fallback chain.

    With ``split`` (the default) an M that is block diagonal under a permutation is solved
    block by block (islands.py: exact, the blocks are independent LCPs); an M that does not
    split takes the chain as it is.

    With a ``warm`` store (lcp/warm.py; ``solver="lemke"`` only) each block first tries the
    active set the store remembers for it, accepted by the chain's own acceptance test, and
    runs the chain only when the guess fails; the store then remembers this answer's sets.

    ``deltas`` are relative to ||M||_inf (absolute if M = 0). ``select`` ("vertex" or
    "least_norm", selection.py; None: the mode of the enclosing ``selection.selecting``
    block) chooses among many solutions. See the module docstring for the order of attempts
    and what the result records.

    ``skip_first``: the caller has run the warm guess and the chain's first attempt on this
    very (M, q) and neither was accepted (the compiled contact step, contact_fused.py,
    ``ContactFuser.first_failed``), so the chain starts at its second attempt (the store's
    ``tried`` still counts the guess); if no later attempt is accepted the first runs after
    all, so a failure is the one the whole chain gives, its attempts in their order. The same
    answer, solver, delta and pivots as without it whenever the caller's claim holds;
    an accepted result's ``attempts`` then lack the first. Ignored for an M that splits.
    """
    if select is None:
        select = selection.current()
    if select not in selection.SELECTIONS:
        raise ValueError(
            f"unknown LCP selection {select!r}; expected one of {', '.join(selection.SELECTIONS)}"
        )
    if solver not in SOLVERS:
        raise ValueError(f"unknown LCP solver {solver!r}; expected one of {', '.join(SOLVERS)}")
    M, q = as_problem(M, q)
    mscale = inf_norm(M)
    mscale = mscale if mscale > 0.0 and np.isfinite(mscale) else 1.0
    args = (solver, chain, tol_rel, max_pivots, pgs_max_iter, deltas, select, mscale)
    parts = islands.blocks(M) if split else []
    skip = skip_first and len(parts) <= 1
    if warm is not None and warm_start.ENABLED and solver == "lemke":
        return _solve_warm(M, q, parts, warm, args, skip)
    if len(parts) > 1:
        return islands.solve_blocks(
            M, q, parts, lambda Mb, qb: _solve_chain(Mb, qb, *args),
            lambda: _solve_chain(M, q, *args), tol_rel,
        )  # fmt: skip
    return _solve_chain(M, q, *args, skip_first=skip)


def _solve_warm(M, q, parts, warm, args, skip_first=False) -> LcpResult:
    """:func:`solve_lcp` with the warm start: each block (or the unsplit problem) tries its
    remembered active set first (:func:`_warm_attempt`), else the chain; the store then
    remembers the answer's active set of every block (forgets them if the solve failed).
    ``skip_first`` (unsplit only): the guess was tried and not accepted by the caller."""
    n = q.shape[0]
    select, mscale, tol_rel = args[6], args[7], args[2]
    if len(parts) <= 1:
        key = (n, None)
        finals: dict = {}
        if skip_first:
            r = None
            if warm.guess(key) is not None:
                warm.tried += 1  # the caller tried it, as _warm_attempt counts
        else:
            r = _warm_attempt(M, q, warm, key, select, mscale, tol_rel, finals)
        if r is None:
            r = _solve_chain(M, q, *args, skip_first=skip_first)
        if r.ok:
            warm.remember(key, r.z, finals.get(key))
        else:
            warm.forget(key)
        return r
    keys = [(n, rows.tobytes()) for rows in parts]
    it = iter(keys)
    used = [0, False]  # blocks accepted from their guess; whether the unsplit solve ran
    finals: dict = {}

    def block(Mb, qb):
        # solve_blocks solves the parts in order, once each: the i-th call is block i
        r = _warm_attempt(Mb, qb, warm, next(it), select, mscale, tol_rel, finals)
        if r is not None:
            used[0] += 1
            return r
        return _solve_chain(Mb, qb, *args)

    def unsplit():
        used[1] = True
        return _solve_chain(M, q, *args)

    r = islands.solve_blocks(M, q, parts, block, unsplit, tol_rel)
    for key, rows in zip(keys, parts, strict=True):
        if r.ok:
            warm.remember(key, r.z[rows], None if used[1] else finals.get(key))
        else:
            warm.forget(key)
    if used[0] and not used[1]:
        r.warm = used[0] == len(parts)
        r.message += f"; {used[0]} of {len(parts)} blocks from the warm start"
    return r


def _warm_attempt(M, q, warm, key, select, mscale, tol_rel, finals) -> LcpResult | None:
    """The answer of the active set ``warm`` remembers under ``key`` (lcp/warm.py) if it
    passes the acceptance test of problem.py, else None. It stands for the chain's first
    attempt: ``lemke_reg`` with delta = LEAST_NORM_DELTA mscale in the least-norm selection,
    ``lemke`` in the vertex one; ``pivots`` 0, ``warm`` True. An accepted answer's set (after
    the swaps) goes to ``finals[key]``."""
    S = warm.guess(key)
    if S is None:
        return None
    warm.tried += 1
    least_norm = select == "least_norm"
    delta = selection.LEAST_NORM_DELTA * mscale if least_norm else 0.0
    n = q.shape[0]
    z = np.empty(n)
    final = np.empty(n, dtype=np.int64)
    code, ns, rounds = warm_start.guess_kernel(
        M,
        q,
        S,
        delta,
        least_norm,
        tol_rel,
        LSTSQ_RCOND,
        warm_start.ROUNDS,
        ACTIVE_SET_FIXES,
        z,
        final,
    )
    if code != warm_start.CANDIDATE:
        return None
    r = evaluate(
        M, q, z, Status.SOLVED, 0, "lemke_reg" if least_norm else "lemke", delta, tol_rel,
        f"warm start: the previous step's active set of {S.size} rows, {rounds - 1} "
        f"swap(s), {ns} of {n} rows",
    )  # fmt: skip
    if not r.ok:
        return None
    warm.accepted += 1
    finals[key] = final[:ns].copy()
    r.warm = True
    r.attempts = [Attempt(r.solver, r.delta, r.status, 0, r.residual)]
    return r


def _solve_chain(
    M, q, solver, chain, tol_rel, max_pivots, pgs_max_iter, deltas, select, mscale, skip_first=False
):
    """The fallback chain on (M, q) (module docstring); the regularisations are
    ``deltas * mscale``, mscale the whole problem's ||M||_inf when (M, q) is one of its blocks
    (so a block is regularised as it would be inside the whole problem). ``skip_first``
    (:func:`solve_lcp`): the plan's first attempt is known to fail and runs only if every
    other one fails too, so the failure is the whole plan's, in the plan's order."""

    def run_lemke_plain():
        return lemke(M, q, max_pivots=max_pivots, tol_rel=tol_rel)

    def run_pgs():
        return pgs(M, q, max_iter=pgs_max_iter, tol_rel=tol_rel)

    def run_reg(c):
        return lambda: lemke_regularised(M, q, c * mscale, max_pivots, tol_rel)

    if select == "least_norm" and solver == "lemke":
        # the selecting solve first; the regularisation it uses is not tried twice
        first = [run_reg(selection.LEAST_NORM_DELTA), run_lemke_plain]
        regs = [run_reg(c) for c in deltas if c != selection.LEAST_NORM_DELTA]
        plan = [*first, *regs, run_pgs]
    elif solver == "lemke":
        plan = [run_lemke_plain, *[run_reg(c) for c in deltas], run_pgs]
    else:
        plan = [run_pgs, run_lemke_plain, *[run_reg(c) for c in deltas]]
    if not chain:
        plan = plan[:1]
    deferred = None
    if skip_first and len(plan) > 1:
        deferred, plan = plan[0], plan[1:]

    results: list[LcpResult] = []
    for run in plan:
        r = run()
        results.append(r)
        if r.ok:
            r.attempts = [_attempt(x) for x in results]
            return r
        if r.status == Status.TIME_LIMIT:
            break  # the budget is the whole step's: the next attempt would have none left
    if deferred is not None:
        # every later attempt failed: the skipped one after all, in its place, so the
        # failure (its attempts, the best candidate, the message) is the whole chain's
        r = deferred()
        results.insert(0, r)
        if r.ok:  # the caller's claim did not hold: the chain would have stopped here
            r.attempts = [_attempt(r)]
            return r
    attempts = [_attempt(x) for x in results]
    best = results[0]
    for r in results[1:]:
        if _worst(r) < _worst(best):
            best = r
    best.attempts = attempts
    b = budget.current()
    if attempts[-1].status == Status.TIME_LIMIT and b is not None:
        best.message = (
            f"the step's LCP time budget of {b.seconds:g} s ran out after {len(attempts)} "
            f"solver attempt(s)"
        )
        best.status = Status.FAILED
    elif len(attempts) > 1:
        best.message = f"all {len(attempts)} solvers of the fallback chain failed"
        best.status = Status.FAILED
    return best
