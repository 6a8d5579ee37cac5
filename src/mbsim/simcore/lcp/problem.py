"""LCP result types, residuals and the acceptance test shared by every solver.

The standard LCP (000 Eq. 9): given M (n x n) and q (n), find z with

    w = M z + q >= 0,   z >= 0,   w' z = 0.

The mixed LCP (000 Eqs. 27, 36, 45, 53) adds nb free variables x with equality rows:

    [A B; C D] [x; z] + [a; b] = [0; w],   w >= 0, z >= 0, w' z = 0.

Units are the formulation's: in the OS LCP (Eq. 53) z holds impulses (N s) and sliding speeds
(m/s) and w holds velocities (m/s) and impulse slacks (N s). The solvers are unit-agnostic; the
tolerance below is relative to the problem's own scale so that it does not depend on them.

Residuals are always recomputed from the original (M, q), never read off a solver's internal
tableau, so a result can be trusted whatever happened inside the solver:

* ``residual = max_i |min(w_i, z_i)|``: zero iff complementarity and both signs hold;
* ``sign_violation = max(0, -min(w), -min(z))``: how far w or z is negative;
* ``eq_residual = max |A x + B z + a|`` for mixed problems (0 for standard ones).

Acceptance (:func:`check`): a result is accepted when every number is finite and residual,
sign violation and equality residual are all <= ``tol`` with

    tol = tol_rel * (min(||M||_inf ||z||_inf, GROWTH ||q||_inf) + ||q||_inf)
          + ROUND * n * eps * ||M||_inf ||z||_inf,

tol_rel = 1e-9, GROWTH = 1e4 and ROUND = 10 by default, ``||M||_inf`` the induced infinity norm
(max absolute row sum); for a mixed LCP, M, q and z are the full ones (z there means [x; z]);
and never below the floor tol_rel * SCALE_FLOOR: ABS_TOL = 1e-12 at the default tol_rel (below).
The test is on the verified residuals only: a candidate that meets it is accepted whichever
solver produced it and however that solver ended (a Lemke basis it judged ill-conditioned, a
pivot cap), and the status becomes ``solved`` (the solver's own verdict stays in the message).
Why these terms:

* the first is a normwise backward error: w = M z + q is computed from data known to about
  1e-9 of |M| |z| + |q| (the two terms whose sum is w), so a residual at that level means z
  solves a problem within 1e-9 of the one posed. It scales with the problem: a heavy body
  resting on a link 1e4 times lighter has ||M|| ||z|| ~ 1e4 ||q||, and its contact rows are
  resolved only to ~1e-9 of that (the issue-20 trial on real URDFs: 9 of 11 rejected landing
  and resting steps had residuals of 2.5e-13 to 2.4e-9 under the old absolute floor
  1e-9 max(1, ||q||)). It does not depend on units, except through the floor below.
* ``||M|| ||z||`` counts at most GROWTH ||q||. Without a cap an infeasible problem (e.g. a
  singular PSD M with q outside its range) "solved" on M + delta I returns z ~ 1/delta, and its
  O(||q||) residual would pass because ||M|| ||z|| is huge (tested). With the cap the relative
  tolerance is at most 1e-5 ||q||. GROWTH 1e4 covers mass ratios up to 1e4 between bodies
  sharing contacts at full scale (beyond, the answers must be exact to 1e-5 ||q||, which
  Lemke's refined solves are).
* the last is the rounding error of a backward-stable solve and of evaluating ``w = M z + q``
  itself (bounded by n eps |M| |z|), with a factor 10 for pivot growth.
* the floor tol_rel * SCALE_FLOOR, SCALE_FLOOR = 1e-3 (the data's scale is never taken
  below 1e-3), i.e. ABS_TOL = 1e-12 at the default tol_rel, in the units of w: m/s (contact
  and closure velocity rows), rad/s (joint rows) and N s (the friction rows' impulse
  slacks), mbsim's SI units. Proportional to tol_rel, so a caller's tighter tol_rel tightens
  it and a tol_rel <= 0 (no answer accepted: tests) keeps meaning that. The relative
  terms vanish with ||q||, but q itself carries rounding that ||q|| does not see: a contact
  resting at a gap of rounding size (pybullet_data's minitaur on the floor: -6.9e-18 m,
  eps times its coordinates) gets the recovery demand 0.2 |g| / dt = 1.4e-15 m/s, and when
  its normal row of M is exactly zero (a motor cylinder turning about its own axis) no z can
  meet it. With ||q|| = 1.4e-15 the relative tolerance was 1.4e-24, so z = 0 (sign violation
  1.4e-15) was refused and every step was solved again with softened recovery. The floor is
  the largest residual that is still noise in every unit above: 1e-12 m/s moves a body 1e-15 m
  in a 1 ms step (a rounding-size gap demands 0.2 x 4 eps x 1 m / dt = 1.8e-13 m/s at
  coordinates up to 1 m and dt = 1 ms), and 1e-12 N s is 1e-7 of a 1 g body's weight
  impulse in that step. It only matters where every relative term is below it (||q|| below
  ~1e-3 with z ~ 0).

Unverifiable candidates (:func:`verifiable`). The rounding term grows with ||z|| without a
cap, so a candidate with astronomically large z (a Lemke basis near a ray) could pass with an
O(||q||) residual. What rounding can hide is bounded row by row: the computed w_i = q_i +
sum_j M_ij z_j (n products, n sums in float64, in any order, fused or not) is within
gamma_{n+1} (|q_i| + sum_j |M_ij| |z_j|) of the exact one, gamma_k = k eps / (1 - k eps)
(Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., Sec. 3.1), so no residual
below about n eps (|| |M| |z| ||_inf + ||q||_inf) can be told from zero, where

    || |M| |z| ||_inf = max_i sum_j |M_ij| |z_j|   <=   ||M||_inf ||z||_inf

(the componentwise product, computed in :func:`_verify_kernel`'s pass over M). Such a z is
refused (status ``numerical``) when that rounding bound, with the same factor ROUND, exceeds
the largest relative term: ROUND n eps || |M| |z| || > tol_rel (GROWTH + 1) ||q||, i.e.
|| |M| |z| || / ||q|| > ~4e7 at n = 120: an answer whose own rounding hides residuals of
1e-5 ||q|| cannot be verified. Measured: on pybullet_data's spirit40newer a step accepted
||z|| ~ 1e14 N s with a residual of 988 (below n eps ||M|| ||z||) and the next step's energy
was 2e4 J instead of 5.3 J; such a z meets large entries of M in some row, and the
componentwise bound refuses it as well (that drop runs with bounded energy:
tests/test_corpus_drop.py). The normwise product ||M|| ||z|| was used before and
overstates the rounding when the largest z and the largest rows of M do not meet: on
alex_psyonic_hands (issue 19) the impact LCP at t = 0.68 s (n = 298) was solved by Lemke to an
exact residual of 3.2e-13, its ||M|| ||z|| = 1.24e6 x 11.4 put the normwise bound at 9.3e-6,
above the cap 7.2e-6, while the rows of 6 g fingertips that carry the impulses have
componentwise bound 3.5e-9. With the floor, a rounding bound below ABS_TOL is verifiable as
well (:func:`verify_cap`; tol_rel * SCALE_FLOOR in general). A z = 0 candidate is always
verifiable. The acceptance tolerance itself keeps the normwise rounding term (a looser, safe
upper bound on the same error).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
from numba import njit

from mbsim.errors import MbsimError
from mbsim.simcore.lcp.rowops import inf_norm as _inf_norm  # ||M||_inf, four rows at once

DEFAULT_TOL_REL = 1e-9
GROWTH = 1e4
ROUND = 10.0
EPS = float(np.finfo(np.float64).eps)
#: The smallest data scale (units of w: m/s, rad/s, N s) the acceptance tolerance is relative
#: to: its floor is tol_rel * SCALE_FLOOR (module docstring).
SCALE_FLOOR = 1e-3
#: That floor at the default tol_rel: a residual far below anything physical, above the
#: rounding of q's entries.
ABS_TOL = DEFAULT_TOL_REL * SCALE_FLOOR


class Status(StrEnum):
    """How a solve ended. A ``StrEnum``: compares equal to its string value."""

    SOLVED = "solved"  # complementary feasible point found and verified on (M, q)
    RAY_TERMINATION = "ray_termination"  # Lemke: no blocking row; (M, q) likely has no solution
    PIVOT_LIMIT = "pivot_limit"  # Lemke: pivot cap reached
    ITERATION_LIMIT = "iteration_limit"  # PGS: sweep cap reached without meeting the tolerance
    NUMERICAL = "numerical"  # singular/ill-conditioned basis or Schur block, or residual > tol
    TIME_LIMIT = "time_limit"  # the step's wall-time budget ran out (budget.py)
    FAILED = "failed"  # fallback chain: every solver in the chain failed


class LcpFailure(MbsimError):
    """An LCP could not be solved to tolerance; the message names every attempt."""


@dataclass
class Attempt:
    """One solver run inside the fallback chain."""

    solver: str
    delta: float
    status: Status
    pivots: int
    residual: float

    def label(self) -> str:
        return self.solver if self.delta == 0.0 else f"{self.solver}(delta={self.delta:.1e})"


@dataclass
class LcpResult:
    """Solution and diagnostics of one (standard or mixed) LCP solve.

    ``pivots`` counts the Lemke pivots, or PGS sweeps, of the solver that produced the result
    (each attempt's count is in ``attempts``).
    ``solver`` is ``"lemke"``, ``"lemke_reg"`` (Lemke on M + delta I, then polished on M),
    ``"pgs"``; when the whole chain failed it names the attempt with the smallest residual,
    whose z and w are returned with status ``failed``. ``x`` holds the free variables of a mixed LCP
    (empty for a standard one). ``attempts`` lists every run of the chain, in order. ``warm``
    is True when the answer is the previous step's active set (lcp/warm.py) for every block,
    accepted without a pivot (``pivots`` 0; ``solver`` names the attempt it stands for).
    """

    z: np.ndarray
    w: np.ndarray
    status: Status
    pivots: int
    residual: float
    sign_violation: float
    solver: str
    delta: float = 0.0
    tol: float = 0.0
    x: np.ndarray = field(default_factory=lambda: np.zeros(0))
    eq_residual: float = 0.0
    message: str = ""
    attempts: list[Attempt] = field(default_factory=list)
    warm: bool = False

    def row_violations(self) -> np.ndarray:
        """Per complementarity row: max(|min(w_i, z_i)|, -w_i, -z_i) (inf if not finite)."""
        w, z = self.w, self.z
        with np.errstate(invalid="ignore"):
            v = np.maximum(np.abs(np.minimum(w, z)), np.maximum(-w, -z))
        return np.where(np.isfinite(v), v, np.inf)

    @property
    def size(self) -> int:
        """Size of the LCP as posed: free plus complementarity variables."""
        return int(self.x.shape[0] + self.z.shape[0])

    @property
    def ok(self) -> bool:
        """True when the status is ``solved`` and every residual is within ``tol``."""
        return (
            self.status == Status.SOLVED
            and math.isfinite(self.residual)
            and max(self.residual, self.sign_violation, self.eq_residual) <= self.tol
        )

    def describe(self, step: int | None = None, time: float | None = None, labels=None) -> str:
        """One sentence for a log or an error: size, where, how every attempt ended and, with
        ``labels`` (one string per complementarity row, e.g. the contact it belongs to), the
        rows that violate the conditions most."""
        head = f"LCP of size {self.size}{_where(step, time)}"
        if self.attempts:
            parts = [f"{a.label()} {a.status} (residual {a.residual:.3g})" for a in self.attempts]
            body = ", ".join(parts)
        else:
            body = f"{self.solver} {self.status} (residual {self.residual:.3g})"
        msg = f"{head}: {body}"
        if self.message:
            msg += f"; {self.message}"
        return msg + worst_rows(self, labels)


#: how many distinct row labels a failure message names
WORST_ROWS = 3


def worst_rows(result: LcpResult, labels) -> str:
    """ "; worst rows: <label> (violation v), ..." for the WORST_ROWS labels whose rows violate
    the complementarity conditions most; "" without labels or violations."""
    if labels is None or result.z.size == 0 or len(labels) != result.z.size:
        return ""
    viol = result.row_violations()
    worst: dict[str, float] = {}
    for i in np.argsort(-viol, kind="stable"):
        if not viol[i] > 0.0:
            break
        if labels[i] not in worst:
            worst[labels[i]] = float(viol[i])
            if len(worst) == WORST_ROWS:
                break
    if not worst:
        return ""
    return "; worst rows: " + ", ".join(f"{k} (violation {v:.3g})" for k, v in worst.items())


def inf_norm(M: np.ndarray) -> float:
    """Induced infinity norm (max absolute row sum); 0 for an empty matrix."""
    if M.size == 0:
        return 0.0
    return float(_inf_norm(np.ascontiguousarray(M, dtype=np.float64)))


@njit(cache=True, forceinline=True)
def principal_kernel(M, q, rows):
    """The sub-LCP on ``rows`` (int64 indices into M's rows): (M[rows][:, rows], q[rows]),
    new arrays."""
    m = rows.shape[0]
    Ms = np.empty((m, m))
    qs = np.empty(m)
    for a in range(m):
        qs[a] = q[rows[a]]
        for b in range(m):
            Ms[a, b] = M[rows[a], rows[b]]
    return Ms, qs


@njit(cache=True)
def _max_abs(v):
    out = 0.0
    for i in range(v.shape[0]):
        a = abs(v[i])
        if not a <= out:  # also propagates nan
            out = a
    return out


@njit(cache=True, fastmath={"reassoc", "contract"})
def _verify_kernel(M, q, v, nb, out):
    """out = M v + q with v = [x; z]; rows < nb are equalities, the rest complementarity.

    Returns (max |min(w, z)|, sign violation, max |equality row|, ||M||_inf, ||q||_inf,
    ||v||_inf, || |M| |v| ||_inf). The last, max_i sum_j |M_ij| |v_j|, is the componentwise
    product that bounds the rounding of every row of M v (module docstring); it is computed in
    the same pass over M and is never larger than ||M||_inf ||v||_inf. Non-finite values give
    inf residuals (nan never compares as acceptable).
    """
    n = q.shape[0]
    mnorm = 0.0
    mv = 0.0
    for i in range(n):
        s = q[i]
        a = 0.0
        b = 0.0
        for j in range(n):
            s += M[i, j] * v[j]
            a += abs(M[i, j])
            b += abs(M[i, j] * v[j])
        out[i] = s
        mnorm = max(mnorm, a)
        if not b <= mv:  # also propagates nan
            mv = b
    res = 0.0
    sv = 0.0
    eq = 0.0
    for i in range(n):
        if not (np.isfinite(out[i]) and np.isfinite(v[i])):
            return np.inf, np.inf, np.inf, mnorm, _max_abs(q), _max_abs(v), mv
        if i < nb:
            eq = max(eq, abs(out[i]))
        else:
            res = max(res, abs(min(out[i], v[i])))
            sv = max(sv, -out[i], -v[i])
    return res, sv, eq, mnorm, _max_abs(q), _max_abs(v), mv


def _verify_parts(M, q, v, parts, out):
    """:func:`_verify_kernel`'s numbers for a standard LCP whose M is exactly zero off the
    blocks ``parts`` (rows of each, ascending; together every row): each row of
    out = M v + q is summed over its block only, the residuals and norms are the blocks'
    largest. The same numbers as a pass over the whole M but for the rounding of the row
    sums (the dense pass adds the zeros in the order its vectorised loop picks); the
    compiled contact step's ``contact_islands.verify_blocks`` takes the same steps, so the
    two agree bit for bit."""
    res = sv = mnorm = qn = vn = mv = 0.0
    for rows in parts:
        wb = np.empty(rows.size)
        Mb = np.ascontiguousarray(M[np.ix_(rows, rows)])
        rb, sb, _eq, mb, qb, vb, mvb = _verify_kernel(Mb, q[rows], v[rows], 0, wb)
        out[rows] = wb
        res, sv, mnorm = max(res, rb), max(sv, sb), max(mnorm, mb)
        qn, vn = max(qn, qb), max(vn, vb)
        if not mvb <= mv:  # also propagates nan, as _verify_kernel does
            mv = mvb
    return res, sv, 0.0, mnorm, qn, vn, mv


def snap_rounding_negatives(z: np.ndarray) -> np.ndarray:
    """Set entries in [-ROUND n eps ||z||_inf, 0) to 0 in place and return z.

    A basic variable that is zero in exact arithmetic (a degenerate vertex) comes out of the
    final solve as +-1e-16-ish; these are the only negatives removed. Anything more negative is
    left alone and shows up as a sign violation.
    """
    if z.size:
        _snap_kernel(z)
    return z


@njit(cache=True)
def _snap_kernel(z):
    floor = -ROUND * z.shape[0] * EPS * _max_abs(z)
    for i in range(z.shape[0]):
        if z[i] < 0.0 and z[i] >= floor:
            z[i] = 0.0


def _tol(tol_rel: float, n: int, mnorm: float, qn: float, zn: float) -> float:
    if not (math.isfinite(qn) and math.isfinite(zn) and math.isfinite(mnorm)):
        return 0.0
    return tolerance_kernel(tol_rel, n, mnorm, qn, zn)


@njit(cache=True)
def tolerance_kernel(tol_rel, n, mnorm, qn, zn):
    """The acceptance tolerance of the module docstring from the norms (shared with PGS, the
    warm start and every compiled acceptance test), never below tol_rel * SCALE_FLOOR."""
    mz = mnorm * zn
    return max(tol_rel * (min(mz, GROWTH * qn) + qn) + ROUND * n * EPS * mz, tol_rel * SCALE_FLOOR)


@njit(cache=True)
def verify_cap(tol_rel, qn):
    """The largest rounding bound ROUND n eps || |M| |z| || a verifiable candidate may have:
    the largest relative term of the tolerance, tol_rel (GROWTH + 1) ||q||, or its floor
    tol_rel * SCALE_FLOOR when that is larger (module docstring, "Unverifiable candidates")."""
    return max(tol_rel * (GROWTH + 1.0) * qn, tol_rel * SCALE_FLOOR)


@njit(cache=True)
def accept_kernel(tol_rel, n, res, sv, mnorm, qn, zn, mv):
    """(ok, worst residual, tol) of an LCP of n rows from :func:`_verify_kernel`'s numbers
    (residual, sign violation, ||M||, ||q||, ||z||, || |M| |z| ||): accepted when the worst
    of them is within :func:`tolerance_kernel`'s tolerance (0 if a norm is not finite) and
    the candidate is :func:`verifiable`. The compiled kernels' acceptance test, as
    ``evaluate`` decides it with status solved."""
    if np.isfinite(qn) and np.isfinite(zn) and np.isfinite(mnorm):
        tol = tolerance_kernel(tol_rel, n, mnorm, qn, zn)
    else:
        tol = 0.0
    worst = max(res, sv, 0.0)
    if zn != 0.0 and not ROUND * n * EPS * mv <= verify_cap(tol_rel, qn):
        return False, worst, tol  # unverifiable (verifiable)
    return bool(np.isfinite(res) and worst <= tol), worst, tol


def verifiable(tol_rel: float, n: int, mz_abs: float, qn: float, zn: float) -> bool:
    """Whether a candidate z can be verified at all: the rounding bound ROUND n eps
    || |M| |z| ||_inf (``mz_abs``, from :func:`_verify_kernel`) of the computed w = M z + q
    must not exceed the largest relative term tol_rel (GROWTH + 1) ||q||, which caps what may
    be accepted relative to the data, or the floor tol_rel * SCALE_FLOOR (:func:`verify_cap`,
    module docstring). z = 0 (``zn`` = 0) always is."""
    if zn == 0.0:
        return True
    return ROUND * n * EPS * mz_abs <= float(verify_cap(tol_rel, qn))


def tolerance(M: np.ndarray, q: np.ndarray, z: np.ndarray, tol_rel: float = DEFAULT_TOL_REL):
    """Absolute acceptance tolerance (module docstring); 0 if anything is not finite."""
    qn = float(_max_abs(q)) if q.size else 0.0
    zn = float(_max_abs(z)) if z.size else 0.0
    return _tol(tol_rel, q.shape[0], inf_norm(M), qn, zn)


def residuals(w: np.ndarray, z: np.ndarray) -> tuple[float, float]:
    """``(max |min(w, z)|, max(0, -min w, -min z))``; inf if anything is not finite."""
    if w.size == 0:
        return 0.0, 0.0
    if not (np.all(np.isfinite(w)) and np.all(np.isfinite(z))):
        return float("inf"), float("inf")
    res = float(np.max(np.abs(np.minimum(w, z))))
    sv = max(0.0, -float(np.min(w)), -float(np.min(z)))
    return res, sv


def evaluate(
    M: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    status: Status,
    pivots: int,
    solver: str,
    delta: float = 0.0,
    tol_rel: float = DEFAULT_TOL_REL,
    message: str = "",
    nb: int = 0,
    attempts: list[Attempt] | None = None,
    parts: Sequence[np.ndarray] | None = None,
) -> LcpResult:
    """Build an :class:`LcpResult` by verifying the candidate v = [x; z] on the original (M, q).

    ``nb`` is the number of leading equality rows (0 for a standard LCP). M, q and v must be
    contiguous float64 (as returned by ``lemke.as_problem``). A solver that believes it has
    solved the problem passes ``status=SOLVED``; if the verified residuals exceed the tolerance
    the status is downgraded to ``NUMERICAL`` with a message, so ``solved`` always means
    verified on the original data.

    ``parts``: the rows of independent blocks of a standard LCP (lcp/islands.py: M is exactly
    zero off them), verified block by block (:func:`_verify_parts`).
    """
    out = np.empty_like(q)
    if parts is None:
        res, sv, eqr, mnorm, qn, vn, mv = _verify_kernel(M, q, v, nb, out)
    else:
        res, sv, eqr, mnorm, qn, vn, mv = _verify_parts(M, q, v, parts, out)
    res, sv, eqr = float(res), float(sv), float(eqr)
    tol = _tol(tol_rel, q.shape[0], mnorm, qn, vn)
    worst = max(res, sv, eqr)
    if not verifiable(tol_rel, q.shape[0], float(mv), qn, vn):
        # impulses so large that rounding alone hides residuals of 1e-5 ||q||: a near-ray,
        # not a solution, however small its residual relative to ||M|| ||z|| (module docstring)
        status = Status.NUMERICAL
        message = (message + "; " if message else "") + (
            f"|| |M| |z| || = {mv:.3g} (||M|| ||z|| = {mnorm * vn:.3g}) is too large to "
            f"verify against ||q|| = {qn:.3g}"
        )
    elif status == Status.SOLVED and not worst <= tol:
        status = Status.NUMERICAL
        message = (message + "; " if message else "") + (
            f"terminated but the residual {worst:.3g} on the original data exceeds tol {tol:.3g}"
        )
    elif status != Status.SOLVED and worst <= tol:
        # verified on (M, q): a solution, whatever the solver thought of its own end
        message = f"accepted on verification ({solver} ended {status}" + (
            f": {message})" if message else ")"
        )
        status = Status.SOLVED
    return LcpResult(
        z=v[nb:],
        w=out[nb:],
        status=status,
        pivots=int(pivots),
        residual=res,
        sign_violation=sv,
        solver=solver,
        delta=float(delta),
        tol=tol,
        x=v[:nb],
        eq_residual=eqr,
        message=message,
        attempts=[] if attempts is None else attempts,
    )


def check(
    result: LcpResult,
    tol: float | None = None,
    step: int | None = None,
    time: float | None = None,
    labels=None,
) -> str | None:
    """Acceptance test used by the stepper: ``None`` if accepted, else a one-sentence reason.

    ``tol`` is an absolute tolerance overriding ``result.tol`` (the solver's relative one);
    ``step``, ``time`` and ``labels`` (one per complementarity row: which contact it belongs
    to) only go into the message.
    """
    t = result.tol if tol is None else tol
    if result.status != Status.SOLVED:
        return result.describe(step, time, labels)
    worst = max(result.residual, result.sign_violation, result.eq_residual)
    if not math.isfinite(worst) or worst > t:
        return (
            f"LCP of size {result.size}{_where(step, time)} solved by {result.solver} has "
            f"residual {result.residual:.3g}, sign violation {result.sign_violation:.3g} and "
            f"equality residual {result.eq_residual:.3g}, above the tolerance {t:.3g}"
        ) + worst_rows(result, labels)
    return None


def ensure(
    result: LcpResult,
    tol: float | None = None,
    step: int | None = None,
    time: float | None = None,
) -> LcpResult:
    """Return ``result`` if :func:`check` accepts it, else raise :class:`LcpFailure`."""
    reason = check(result, tol, step, time)
    if reason is not None:
        raise LcpFailure(reason)
    return result


def _where(step: int | None, time: float | None) -> str:
    where = ""
    if step is not None:
        where += f" at step {step}"
    if time is not None:
        where += f" (t = {time:.6g} s)"
    return where
