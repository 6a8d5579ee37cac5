"""Joint-space unilateral and friction rows: position limits and Coulomb joint friction.

Both act on the joint velocity v alone, so they are rows G_j v of the step's LCP in every
formulation (the extension point of formulations.base.Formulation), placed between the
equality rows and the contact rows.

Position limits (URDF ``<limit lower upper>`` of revolute and prismatic joints; continuous
and free joints have none; a spherical joint's swing and twist spans are rows of the same kind
on its angular velocity, built by simcore/spherical_limits.py and appended after the 1-DoF
ones). For DoF k with position q_k the gap to the lower limit is
g = q_k - lower (side s = +1) and to the upper one g = upper - q_k (s = -1). A limit whose
gap is below ``margin`` (plus the distance the joint may travel this step, see
:meth:`JointLimits.rows`) adds the unilateral row

    w = s v_k+ + g_v >= 0,   lambda >= 0,   w lambda = 0,

lambda (N m s or N s) the limit impulse acting on DoF k with sign s. g_v is the contact gap
rule of stepper.py applied to the joint gap: g/dt when separated (the joint may close the
gap this step but not pass it), max(k g, -v_max dt)/dt when past the limit (k =
``StepOptions.stabilization``, v_max = ``max_recovery_speed``, read as rad/s or m/s), and 0 in
an impulsive phase (dt = 0). Restitution eps at a stop acts as for contacts (stepper.
impact_phase): the compression impulse lambda_c is followed by eps lambda_c.

Recovery. Past a stop (g < 0: a start outside the range, an RK4 step, a softened step) the
row pushes the joint back at s v+ >= r = min(k |g| / dt, v_max). That row is one-sided: it
cannot take back the speed it gave, so on its own the joint would keep r once inside and
coast on (to the opposite stop, with nothing else acting). So while the stop is passed by
more than RECOVERY_END_SPEED dt, the row of the other side of the same DoF (or angle) is
replaced by the stop's cap row, of side -s, gap +inf (no impact rule, no energy share):

    -s v+ + c |g| / dt >= 0,   c = (1 + k) / 2 (0.6 by default; k for k > 1),

so r <= s v+ <= c |g| / dt: the joint never crosses the bound from outside within a step,
and its speed falls with the violation (|g| shrinks by the factor 1 - c a step while the cap
pulls), to below c / (1 - c) RECOVERY_END_SPEED (1.5e-6 rad/s by default) when the cap row
goes. The cap replaces the other stop's row only when that row would be looser: past the
lower stop, upper - q > |g| > c |g|. This is the position-level Baumgarte correction (as
PyBullet's ERP and MuJoCo's reference acceleration) made so the speed it lends ends with the
violation, which neither of them does (both leave the joint moving). An impulse of a cap row
is reported as a limit row of side -s (limit_begin / limit_end events with that normal,
the direction it acts).

Coulomb joint friction (URDF ``<dynamics friction>`` F > 0, N m or N) on DoF k is a
box-constrained impulse |p| <= F dt, complementary with the joint speed. In LCP form it is the
two-direction friction pyramid of a contact with a fixed bound instead of mu p_n:

    w+ =  v_k+ + sigma >= 0  _|_  beta+ >= 0
    w- = -v_k+ + sigma >= 0  _|_  beta- >= 0
    w_s = F dt - beta+ - beta- >= 0  _|_  sigma >= 0

so p = beta+ - beta- opposes the motion with |p| = F dt when the joint slides (sigma = |v_k+|)
and holds it (v_k+ = 0) while the other forces need less than F dt. In an impulsive phase the
bound F dt is 0: a finite friction torque gives no impulse in zero time.

Integrators: the rows are written for the Euler update q+ = q + dt v+. With ``integrator =
"rk4"`` the step's impulses are held as forces (stepper._rk4) and a stop can be passed by up to
dt |v_s - v+| / 2 in the impact step, which the next step's recovery removes; held joint
friction is, like held contact friction (001 Sec. 4.1), not guaranteed to dissipate.
URDF ``planar`` joints are refused by the loader, so they have no limits here.

Row layout (``JointRows``): the velocity rows G (n_rows, nv) are the limit rows (s e_k, or
``limit_G`` when spherical limits add rows that are not unit vectors), then one
(+e_k, -e_k) pair per friction joint; the complementary unknowns are [lambda; beta (pairs);
sigma (one per friction joint)]. :meth:`JointRows.row_map` maps the unknowns to row impulses.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numba import njit

#: Joint-limit margin (rad for revolute, m for prismatic joints): a limit row is added once
#: the gap is below this plus the travel of the step, like the contact margin for shapes.
#: Rows of separated limits cost a few LCP unknowns but never act early (the -g/dt rule).
LIMIT_MARGIN = 0.01
#: Recovery end speed (rad/s or m/s; module docstring, "Recovery"): a stop passed by more than
#: this times dt gets a cap row on its recovery, so a joint pushed back from past its stop is
#: left with at most about this speed once inside (1.5 times it with k = 0.2); below it (a
#: joint resting on its stop, whose gap is at rounding level) the stop's row is one-sided only.
RECOVERY_END_SPEED = 1e-6


@njit(cache=True, inline="always")
def _stop_reach(sign, x, bound, v, v_next, dt):
    """(g, g + dt min(0, s v, s v_next)): the gap g = s (x - bound) of a stop on side s (+1
    lower, -1 upper; rad or m) and the least gap the step can reach at either velocity. The
    stop gets a row when the latter is below the margin (the one rule for the step's rows
    and for the compiled free step's check)."""
    g = sign * (x - bound)
    return g, g + dt * min(0.0, min(sign * v, sign * v_next))


@njit(cache=True)
def limit_allowance(g, dt, stabilization, max_recovery_speed):
    """g_v of a stop with gap g (module docstring; rad/s or m/s): g/dt when separated, the
    capped recovery max(k g, -v_max dt)/dt past it, 0 in an impulsive phase (dt = 0)."""
    if dt <= 0:
        return 0.0
    target = g if g > 0.0 else max(stabilization * g, -max_recovery_speed * dt)
    return target / dt


@njit(cache=True)
def recovery_cap(g, dt, stabilization):
    """The allowance of the cap row of a stop passed by -g > RECOVERY_END_SPEED dt (g < 0,
    rad or m; module docstring, "Recovery"): c |g| / dt with c = (1 + k) / 2 (rad/s or m/s),
    so the recovery closes at most the fraction c < 1 of the violation per step (the joint
    never crosses the bound from outside) and the speed it is left with falls with the
    violation; c >= k (the push row's k |g| / dt, capped) for k <= 1 (k > 1: c = k), so the
    two rows always agree."""
    return max(0.5 * (1.0 + stabilization), stabilization) * -g / dt


@njit(cache=True, inline="always")
def _recovering(g, dt):
    """Whether a stop with gap g (rad or m) is passed by more than RECOVERY_END_SPEED dt, so
    that its recovery is capped (module docstring, "Recovery"); never in an impulsive phase."""
    return dt > 0.0 and g < -RECOVERY_END_SPEED * dt


@njit(cache=True)
def _near_limits(
    lower, upper, q_of_v, v, v_free, dt, margin, stabilization, max_recovery_speed, dof, side,
    gap, allowance,
):  # fmt: skip
    """The near limits of :meth:`JointLimits.rows` into dof, side, gap and allowance (g_v,
    module docstring; 0 for dt = 0): the lower limits first, then the upper ones, each by
    increasing DoF; returns their number. The row of side s of a DoF whose opposite stop is
    passed by more than RECOVERY_END_SPEED dt is that stop's cap row instead (gap +inf, the
    allowance :func:`recovery_cap`): at most two rows a DoF."""
    n = 0
    for s in range(2):
        sign = 1.0 if s == 0 else -1.0
        bound = lower if s == 0 else upper
        other = upper if s == 0 else lower
        for k in range(bound.shape[0]):
            # the opposite stop, of side -sign: g = -sign (q - bound)
            g_other = -sign * (q_of_v[k] - other[k])
            if np.isfinite(other[k]) and _recovering(g_other, dt):
                dof[n] = k
                side[n] = sign
                gap[n] = np.inf
                allowance[n] = recovery_cap(g_other, dt, stabilization)
                n += 1
                continue
            if not np.isfinite(bound[k]):
                continue
            g, reach = _stop_reach(sign, q_of_v[k], bound[k], v[k], v_free[k], dt)
            if reach < margin:
                dof[n] = k
                side[n] = sign
                gap[n] = g
                allowance[n] = limit_allowance(g, dt, stabilization, max_recovery_speed)
                n += 1
    return n


@njit(cache=True)
def limit_rows_needed(qi, vi, lower, upper, margin, q, v, v_new, dt):
    """Whether the general path would add a joint-limit row this step: for any limited DoF
    (q index ``qi``, v index ``vi``, bounds lower/upper, -inf/inf where none) and side s
    (+1 lower, -1 upper), g + dt min(0, s v_k, s v+_k) < margin with g = s (q - bound)
    (the rule of JointLimits.rows, :func:`_stop_reach`; a NaN never counts as near).
    The compiled free step (fast_step.py) asks it before and after its step."""
    for j in range(qi.shape[0]):
        x = q[qi[j]]
        k = vi[j]
        for side in (1.0, -1.0):
            bound = lower[j] if side > 0 else upper[j]
            if not np.isfinite(bound):
                continue
            if _stop_reach(side, x, bound, v[k], v_new[k], dt)[1] < margin:
                return True
    return False


@dataclass(frozen=True)
class JointLimits:
    """Which joint-space rows a model gets (per v index, fixed for a run).

    lower/upper (nv,): the enforced limits (-inf/inf where none or disabled); restitution
    (nv,): eps at the stops; friction (nv,): Coulomb friction F (N m or N, 0 = none); margin:
    see :data:`LIMIT_MARGIN`; spherical: the enforced swing/twist limits
    (spherical_limits.SphericalLimit) and spherical_eps their restitution."""

    lower: np.ndarray
    upper: np.ndarray
    restitution: np.ndarray
    friction: np.ndarray
    margin: float = LIMIT_MARGIN
    spherical: tuple = ()
    spherical_eps: tuple = ()

    @classmethod
    def from_model(cls, model, limits=True, restitution=0.0, friction=True, overrides=None):
        """The rows of ``model``'s URDF data. ``limits``: enforce position limits at all;
        ``restitution``: default eps at stops; ``friction``: use URDF joint friction;
        ``overrides``: {v index: (enabled, restitution or None)} per joint."""
        nv = model.nv
        lower = np.where(limits, model.lower, -np.inf).astype(float)
        upper = np.where(limits, model.upper, np.inf).astype(float)
        eps = np.full(nv, float(restitution))
        for k, (enabled, e) in (overrides or {}).items():
            if not enabled:
                lower[k], upper[k] = -np.inf, np.inf
            elif not limits:
                lower[k], upper[k] = model.lower[k], model.upper[k]
            if e is not None:
                eps[k] = e
        fr = getattr(model, "friction", None)
        fr = np.zeros(nv) if fr is None or not friction else np.maximum(fr, 0.0)
        spherical, s_eps = [], []
        for lim in getattr(model, "spherical_limits", ()):
            # an override of any of the joint's three v indices (NAME.wx, .wy, .wz) is its own
            given = [(overrides or {}).get(k) for k in range(lim.vi, lim.vi + 3)]
            enabled, e = next((o for o in given if o is not None), (limits, None))
            if enabled:
                spherical.append(lim)
                s_eps.append(float(restitution) if e is None else e)
        return cls(
            lower, upper, eps, np.asarray(fr, dtype=float), spherical=tuple(spherical),
            spherical_eps=tuple(s_eps),
        )  # fmt: skip

    @cached_property
    def _friction_dof(self) -> np.ndarray:
        """The DoFs with Coulomb friction (F > 0)."""
        return np.flatnonzero(self.friction > 0)

    def __bool__(self) -> bool:
        return bool(
            np.any(np.isfinite(self.lower)) or np.any(np.isfinite(self.upper))
            or np.any(self.friction > 0) or self.spherical
        )  # fmt: skip

    def rows(self, q_of_v, v, v_free, dt, stabilization, max_recovery_speed, q=None) -> JointRows:
        """The rows of one step. ``q_of_v`` (nv,): the joint position of each v index (NaN
        for free-joint components); v, v_free: start and free-motion velocities; q: the
        configuration (needed for spherical limits). A limit is near when g + dt min(0, s v_k,
        s v_free_k) < margin: within the margin, or reachable this step at the faster of the
        two speeds (the same rule on the swing and twist angles, spherical_limits.py)."""
        nv = len(v)
        dof = np.empty(2 * nv, dtype=np.int64)
        side = np.empty(2 * nv)
        gap = np.empty(2 * nv)
        allowance = np.empty(2 * nv)
        n = _near_limits(
            self.lower, self.upper, np.asarray(q_of_v, dtype=np.float64),
            np.asarray(v, dtype=np.float64), np.asarray(v_free, dtype=np.float64), float(dt),
            float(self.margin), float(stabilization), float(max_recovery_speed), dof, side, gap,
            allowance,
        )  # fmt: skip
        dof, side, gap, allowance = dof[:n], side[:n], gap[:n], allowance[:n]
        eps = self.restitution[dof]
        limit_G = None
        if self.spherical and q is not None:
            from mbsim.simcore.spherical_limits import near_rows  # it imports this module

            s_rows = near_rows(
                self.spherical, self.spherical_eps, np.asarray(q, dtype=float), v, v_free,
                float(dt), float(self.margin), float(stabilization), float(max_recovery_speed),
                nv,
            )  # fmt: skip
            if len(s_rows[0]):
                limit_G = np.zeros((n, nv))
                limit_G[np.arange(n), dof] = side
                dof, side, gap, allowance, eps, limit_G = (
                    np.concatenate([a, b]) for a, b in zip(
                        (dof, side, gap, allowance, eps, limit_G), s_rows, strict=True
                    )
                )  # fmt: skip
        fdof = self._friction_dof
        return JointRows(
            nv=nv, limit_dof=dof, limit_side=side, limit_gap=gap, limit_allowance=allowance,
            limit_eps=eps, friction_dof=fdof, friction_force=self.friction[fdof],
            limit_G=limit_G,
        )  # fmt: skip


@dataclass
class JointRows:
    """The joint-space rows of one step (module docstring for the layout and the math).

    limit_dof/limit_side/limit_gap (nl,): DoF, side s (+1 lower, -1 upper), gap (rad or m);
    limit_allowance (nl,): g_v of the step's LCP (rad/s or m/s); limit_eps: restitution;
    friction_dof/friction_force (nf,): DoF and F (N m or N); limit_G (nl, nv): the limit
    rows when some are not s e_k (spherical limits), None when all are."""

    nv: int
    limit_dof: np.ndarray
    limit_side: np.ndarray
    limit_gap: np.ndarray
    limit_allowance: np.ndarray
    limit_eps: np.ndarray
    friction_dof: np.ndarray
    friction_force: np.ndarray
    limit_G: np.ndarray | None = None

    @property
    def n_limits(self) -> int:
        return len(self.limit_dof)

    @property
    def n_friction(self) -> int:
        return len(self.friction_dof)

    @property
    def n_rows(self) -> int:
        """Velocity rows: one per limit, two per friction joint."""
        return self.n_limits + 2 * self.n_friction

    @property
    def n_unknowns(self) -> int:
        """Complementary unknowns: the row impulses and one sigma per friction joint."""
        return self.n_rows + self.n_friction

    def __bool__(self) -> bool:
        return self.n_rows > 0

    @property
    def G(self) -> np.ndarray:
        """(n_rows, nv): s e_k for the limits, then +e_k, -e_k per friction joint."""
        G = np.zeros((self.n_rows, self.nv))
        nl = self.n_limits
        if self.limit_G is None:
            G[np.arange(nl), self.limit_dof] = self.limit_side
        else:
            G[:nl] = self.limit_G
        j = np.arange(self.n_friction)
        G[nl + 2 * j, self.friction_dof] = 1.0
        G[nl + 2 * j + 1, self.friction_dof] = -1.0
        return G

    def limit_rate(self, v: np.ndarray) -> np.ndarray:
        """(nl,): the rate of each limit's gap at joint velocity v (rad/s or m/s)."""
        if self.limit_G is None:
            return self.limit_side * v[self.limit_dof]
        return self.limit_G @ v

    def row_map(self) -> np.ndarray:
        """(n_rows, n_unknowns): the row impulses from the unknowns [lambda; beta; sigma]."""
        return np.eye(self.n_rows, self.n_unknowns)

    def row_shift(self, gap: bool) -> np.ndarray:
        """The allowance added to the velocity rows (the limits' g_v in a time step)."""
        out = np.zeros(self.n_rows)
        if gap:
            out[: self.n_limits] = self.limit_allowance
        return out

    def block(self, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """(E, e): the complementarity part of the joint block (n_unknowns square) and its
        constant: +1 couples each beta row to its sigma, the sigma row is F dt - beta+ -
        beta-."""
        n, nl, nr = self.n_unknowns, self.n_limits, self.n_rows
        E = np.zeros((n, n))
        e = np.zeros(n)
        for j in range(self.n_friction):
            s = nr + j
            for r in (nl + 2 * j, nl + 2 * j + 1):
                E[r, s] = 1.0
                E[s, r] = -1.0
            e[s] = self.friction_force[j] * dt
        return E, e

    def impulses(self, z: np.ndarray) -> np.ndarray:
        """Generalized joint impulse G^T p (nv,) from the joint unknowns z[:n_unknowns]."""
        return self.G.T @ z[: self.n_rows]

    def limit_impulses(self, z: np.ndarray) -> np.ndarray:
        """lambda (nl,) of the limits, N m s or N s."""
        return z[: self.n_limits].copy()


def q_of_v(model, q: np.ndarray) -> np.ndarray:
    """The position of each 1-DoF joint at its v index; NaN for free-joint components."""
    out = np.full(model.nv, np.nan)
    one = model.nvj == 1
    out[model.vi[one]] = q[model.qi[one]]
    return out


@njit(cache=True, inline="always")
def friction_rows_into(nl, friction_dof, dof, side):
    """The friction pairs' rows after the nl limit rows (``JointRows.G``'s layout): row
    nl + 2 j is +e_k, row nl + 2 j + 1 is -e_k for the j-th friction DoF k, written as the
    (dof, side) of a one-entry row (the form the limit rows take). Returns the row count
    nl + 2 nf."""
    for j in range(friction_dof.shape[0]):
        dof[nl + 2 * j] = friction_dof[j]
        side[nl + 2 * j] = 1.0
        dof[nl + 2 * j + 1] = friction_dof[j]
        side[nl + 2 * j + 1] = -1.0
    return nl + 2 * friction_dof.shape[0]


@njit(cache=True)
def joint_lcp_into(K, rate, nl, bound, M, q):
    """The joint block's LCP (M, q) of ``assembly.delassus_lcp`` without contacts or
    equality rows: M = T^T K T + E, q = T^T rate + e (``ContactProblem.complementary_map``,
    ``complementary_block``, ``complementary_shift``; ``JointRows.row_map`` and ``block``).

    K (nr square, nr = nl + 2 nf): the rows' Delassus matrix G (M + armature)^-1 G^T, rows
    [nl limit rows; nf (+e_k, -e_k) friction pairs] (module docstring, "Row layout"); rate
    (nr,): each row's velocity plus its allowance, G v + shift (rad/s or m/s); bound (nf,):
    each friction joint's F dt (N m s or N s; 0 in an impulsive phase). Writes M (n square,
    n = nr + nf, unknowns [lambda; beta pairs; sigma]) and q (n,). T is the identity on the
    row impulses, so T^T K T is K with zero sigma rows and columns; E couples each beta row to
    its sigma (+1) and each sigma row to its pair (-1); e is the bound on the sigma rows. The
    same numbers as the general path's BLAS products, whose only nonzero term per entry is
    one product by 1 (the sums of exact zeros leave it unchanged)."""
    nr = K.shape[0]
    nf = (nr - nl) // 2
    n = nr + nf
    for i in range(n):
        for j in range(n):
            M[i, j] = 0.0
    for i in range(nr):
        for j in range(nr):
            M[i, j] = K[i, j] + 0.0
        q[i] = rate[i] + 0.0
    for j in range(nf):
        s = nr + j
        for r in (nl + 2 * j, nl + 2 * j + 1):
            M[r, s] = 1.0
            M[s, r] = -1.0
        q[s] = 0.0 + bound[j]
