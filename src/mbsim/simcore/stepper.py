"""One time step of the OS complementarity formulation (000 Sec. 6-7), semi-implicit Euler.

The pipeline (DESIGN.md "One time step"):

1. kinematics and free motion: ABA at (q, v, tau) gives qdd_f; v_free = v + dt qdd_f. The
   articulated factorisation of q stays in ``data`` for steps 4 and 7.
2. collision: contacts (points on A and B, normal from B to A, signed gap).
3. impacts (Sec. 7, :func:`impact_phase`): contacts approaching faster than
   ``impact_velocity`` trigger the compression LCP (Eq. 54, dt = 0, q from the pre-step
   velocity) and, with restitution, the decompression LCP (Eq. 57) with the recovered impulse
   theta(i) = eps(i) (n . p_c(i)) n (Eq. 56); the velocity after the collision replaces v and
   the free motion is recomputed.
4. Lambda for the contact nodes by the Upsilon recursion, W = Q_u Lambda Q_u^T.
5. the contact rows of the OS LCP (Eq. 53): M = [[D^T W D, E-hat], [E-bar, 0]],
   q = D^T v_u^free, with the gap term below on the normal rows.
6. solve (Lemke with the fallback chain; residual checked against the tolerance).
7. impulses back to joint space in O(N): v+ = v_free + M^-1 J^T p (impulse response).
8. integrate q with v+.

The kinetic energy the impact phase, penetration recovery and loop-closure rows added is split
off exactly (simcore/energy_sources.py) into the report's ``energy_*`` fields.

Gap stabilisation (Anitescu-Potra style): the normal row asks for n . v_u+ >= -g/dt for a
separated contact (gap g > 0 within the margin: the bodies may close the gap this step but not
pass through, so near contacts do not stop a body early) and n . v_u+ >= -k g/dt for a
penetrating one (g < 0), pushing the bodies apart by a fraction k = ``stabilization`` of the
penetration per step (default 0.2: critically damped-like recovery over ~5 steps without the
energy injection of k = 1), at a speed capped at ``max_recovery_speed`` (default 0.5 m/s,
as Chrono's SetMaxPenetrationRecoverySpeed): uncapped, k |g| / dt is 10 m/s for a body
starting 5 cm deep at dt = 1 ms, which leaves the floor with 50 J/kg. With the cap a body
leaves a penetration with at most 1/2 v_max^2 = 0.125 J/kg, less than the g |g| per kg its
rise costs once |g| > v_max^2 / 2 g = 1.3 cm; a shallower penetration may leave with up to
that much (a hop of at most 1.3 cm). The gap is first advanced by the second-order term the velocity
row cannot see, 1/2 dt^2 n . J-dot v (contact.curvature_drift; ``curvature_correction``), so
a contact point on a rotating body does not drift into the surface by that much every step;
for a contact on a smooth surface (sphere, capsule, cylinder rim) the term is taken at the
material core point under it (``curvature_point``), or a rolling body would sink.
With ``gap_floor`` set (001 Sec. 4.1's g_Neps) the rule is n . v_u+ >= -max(g, g_Neps)/dt.

Joint damping (URDF ``<dynamics damping>``, D = diag(d)) is implicit with the Euler
integrator: the step factorises M + dt D instead of M (data.armature = dt d, dynamics.aba),
so (M + dt D)(v+ - v) = dt (tau - D v - C) + J^T p, the damping force taken at v+ (MuJoCo's
implicit damping): stable for any d and dt, where the explicit force diverges once
dt eig(M^-1 D) > 2. With rk4 damping stays an explicit force of the stages. The ``torque``
callback may return (tau_e, g) instead of tau: a joint force tau_e - g (v+ - v) taken at v+
(implicit PD, mbsim/control/actuation.py), folded in the same way: dt g is added to the
diagonal for the step (Euler only). The ``effort`` object (``control.Actuators``) bounds
that force by the joint's effort, clamp(tau_e - g (v+ - v), -e, e), a step with one solution
(control/actuator_law.py) found by active-set passes: after each free-motion solve
(``_free_motion``) ``effort.settle`` saturates (force +-e, g = 0) or releases the joints
whose side changed and the free motion is solved again; after a constrained step, the same
at its v+ (the impulses pass through the implicit force), and the step is taken again
(``_general_step``), until no joint changes side.

Softened recovery. The recovery terms above (penetration and joint-limit recovery, the
closure rows' stabilisation -k e / dt) ask rows to open at a speed. Two such demands can
contradict each other: a start pose below a joint's lower limit (ERD kinova) has the limit row
push the joint back, which drives one link into another whose contact row forbids it; no
velocity satisfies both, and the LCP has no solution (a Farkas certificate,
tests/test_lcp_redundant.py). When a step's contact LCP fails and it carries such demands (a
failed impact phase, whose LCPs have no gap terms, is not retried), the step is solved again
with every demanded separation speed (the negative part of each row's allowance) multiplied
by each of RECOVERY_RETRY_SCALES in turn (from the one the last softened step needed, while
no step has solved at full recovery since), the allowance to close a gap (g / dt of a
separated contact or limit) unchanged; the report says so (``recovery_scale``,
``softened_reason``), the run summary counts such steps. At scale 0 every unilateral row reads
w = J_i v+ + a_i with a_i >= 0 (g_i / dt when separated, 0 when penetrating or past the stop)
and every closure row J_b v+ = 0, so v+ = 0 satisfies every row: without friction the LCP is
then the optimality system of the strictly convex QP min 1/2 (v+ - v_f)' M (v+ - v_f) over
that non-empty polyhedron, which has a solution. With the friction pyramid the claim rests on
the solvability result for this velocity-level LCP (Anitescu and Potra 1997, Nonlinear Dyn.
14), whose premise is such a feasible set of normal rows; it is not re-proved here, and Lemke
may still end on a ray there (the friction M is not copositive-plus, docs/lcp.md): that
failure is then raised. Exceptions: the curvature term is kept at its full size when positive and
scaled with the recovery when negative (it is part of the allowance), and the rk4 rows
(n . v+ >= -(2 g / dt + n . v_s)) are not covered by the argument. A failed step that demands
no separation (or fails at scale 0: a solver failure on a solvable problem) is raised as it
is; the joint stays past its stop and is pushed back by the next steps' recovery, softened
again only while the contradiction lasts (as PyBullet's and MuJoCo's soft limits would).

The integrator is decided once, when the stepper is built (``OSStepper.rk4``; friction is
refused by :func:`check_rk4_friction`, the one rule the Simulator also applies to the
scenario's keys). With ``integrator = "rk4"`` the step's impulses are held as the force I/dt
over a classical RK4 step (001 Sec. 4.1). Under a constant force the position moves by dt (v_s
+ v+)/2 to first order (the stages' velocity average; v_s the velocity after the step's
impacts), not by dt v+, so the normal rows ask n . (v_s + v+)/2 >= -g/dt, i.e. n . v+ >= -(2
g/dt + n . v_s). The Euler-step rows that 001 uses let the point move by dt n . (v_s - v+)/2
more than the LCP allowed: more than g_Neps = -1e-5 m per step on a chain turning about a
contact, which the cap cannot undo. Impacts have already brought n . v_s to >= 0 at a contact
about to close, so the doubled allowance does not throw a closing contact back out.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass, field, replace

import numpy as np

from mbsim.errors import MbsimError
from mbsim.simcore.bilateral import ConstraintError
from mbsim.simcore.contact import curvature_drift
from mbsim.simcore.contact_fused import ContactFuser
from mbsim.simcore.contact_stages import gap_allowance, split_impulses
from mbsim.simcore.contact_stages import impacting as contact_impacting
from mbsim.simcore.data import Data
from mbsim.simcore.dynamics import energy, rnea
from mbsim.simcore.energy_sources import armature_energy, step_shares
from mbsim.simcore.fast_step import FreeStepper
from mbsim.simcore.formulations import ContactProblem, Solution, make
from mbsim.simcore.formulations.base import normal_velocity
from mbsim.simcore.forward import make_dynamics
from mbsim.simcore.joint_rows import q_of_v
from mbsim.simcore.kinematics import (
    body_velocities_kernel,
    integrate,
    lie_stage_velocity,
    node_transforms,
    propagate_bias,
    relative_velocities,
)
from mbsim.simcore.lcp import DUMP_MODES, check, should_dump
from mbsim.simcore.lcp.budget import limits as lcp_limits
from mbsim.simcore.lcp.selection import SELECTIONS, selecting
from mbsim.simcore.limit_step import LimitStepper
from mbsim.simcore.options import (
    CURVATURE_POINTS,
    FRICTION_AXES,
    IMPACT_FRICTION,
    INTEGRATORS,
)

RK4_GAP_ROWS = ("trapezoid", "euler")
#: Scales of every demanded separation speed with which a step whose LCP failed is solved
#: again, in turn (module docstring, "Softened recovery"): a tenth, then none.
RECOVERY_RETRY_SCALES = (0.1, 0.0)


def rk4_friction_message(mu) -> str:
    """Why rk4 is refused with friction (001 Sec. 4.1)."""
    return (
        f"integrator rk4 needs frictionless contact, but mu = {mu:g}: with the LCP impulses "
        "held as constant forces over an RK4 step, Coulomb friction is no longer guaranteed "
        'to dissipate energy (001 Sec. 4.1); use integrator = "euler" or set mu = 0'
    )


def check_rk4_friction(integrator: str, frictions, where: str = "") -> None:
    """The one rule for rk4 and friction (001 Sec. 4.1): refuse ``integrator = "rk4"`` when
    any friction coefficient is positive. ``frictions``: (name, mu) pairs, the name the
    setting has for the user (``contact.mu``, ``contact.pairs.0.mu``); ``where`` prefixes the
    message (the scenario file). None values (unset) are skipped."""
    if integrator != "rk4":
        return
    for name, mu in frictions:
        if mu is not None and mu > 0.0:
            prefix = f"{where}: " if where else ""
            raise MbsimError(f"{prefix}{name} = {mu:g}: {rk4_friction_message(mu)}")


class SimulationError(MbsimError):
    """The simulation cannot continue (diverged, LCP failure): exit code 1, status failed."""


@dataclass(frozen=True)
class StepOptions:
    """Numerical settings of the stepper (SI units), fixed once the stepper holds them
    (:meth:`OSStepper.configure` validates and swaps in a changed copy).

    dt: time step (s). nf: friction directions (even, >= 4). mu, restitution: defaults for
    every contact pair; ``pair_params_fn(contacts) -> (mu, eps)`` per contact, when some pairs
    have their own (the Simulator's per-pair table). impact_velocity: approach speed (m/s)
    above which a contact is treated as a collision (compression/decompression). stabilization:
    fraction of a penetration removed per step. lcp_tol_rel: LCP acceptance tolerance relative
    to the problem's scale (see docs/lcp.md). max_penetration (m) and max_speed (m/s or rad/s):
    a step exceeding them is divergence. integrator: "euler" or "rk4" (001 Sec. 4.1).
    gap_floor: 001's g_Neps (m), None for the stabilisation rule (module docstring).
    rk4_gap_rows: with rk4, "trapezoid" writes the normal rows for the held-force step's own
    position update, n . (v_s + v+)/2 >= -g/dt; "euler" keeps 001's literal procedure, rows for
    q + dt v+ (its Fig. 8 bounce and ratcheting penetration; docs/results.md).
    max_recovery_speed: the fastest a penetration is pushed out (m/s; module docstring).
    lcp_max_seconds: wall-time budget (s) of all the LCP solves of one step (None: no limit);
    a step that exceeds it fails the run with that cause (docs/lcp.md, lcp/budget.py).
    lcp_selection: which solution of a contact LCP with many (redundant contacts) the step
    takes: "least_norm" spreads the load over them (lcp/selection.py), "vertex" is plain
    Lemke's answer.
    friction_axes: "slip" turns each friction polyhedron's first edge to the contact's
    relative velocity after the free motion (exact Coulomb sliding in any direction),
    "world" keeps 000's polyhedron fixed to the world axes (contact.friction_matrix).
    impact_friction: "total" bounds an impact's friction by mu times its whole normal
    impulse (Coulomb, Routh/Stronge), "compression" by the compression impulse (000's law;
    impact_phase).
    curvature_point: where the J-dot v gap term (curvature_correction) is taken for a
    contact on a smooth surface (the detector's radius_a/radius_b: spheres, capsules, a
    cylinder's rim): "core" at the material core point under it (a rolling body neither
    sinks nor hops), "contact" at the contact point itself, as 001's material-point
    prediction (contact.curvature_drift).
    """

    dt: float
    nf: int = 4
    mu: float = 0.5
    restitution: float = 0.0
    solver: str = "lemke"
    formulation: str = "os"
    impact_velocity: float = 1e-2
    stabilization: float = 0.2
    lcp_tol_rel: float = 1e-9
    max_penetration: float = 0.05
    max_speed: float = 1e4
    energy_consistent_impacts: bool = False
    pair_params_fn: object = None
    delassus: str = "upsilon"
    dynamics: str = "aba"
    integrator: str = "euler"
    gap_floor: float | None = None
    curvature_correction: bool = True
    rk4_gap_rows: str = "trapezoid"
    max_recovery_speed: float = 0.5
    lcp_max_seconds: float | None = 60.0
    lcp_selection: str = "least_norm"
    friction_axes: str = "slip"
    impact_friction: str = "total"
    curvature_point: str = "core"


def _empty(shape, dtype=float) -> np.ndarray:
    """A read-only empty array: the shared default of a StepReport field (a free step makes
    one report; six fresh allocations were a tenth of its Python time)."""
    a = np.zeros(shape, dtype=dtype)
    a.flags.writeable = False
    return a


_NO_F, _NO_F3 = _empty(0), _empty((0, 3))
_NO_B, _NO_I = _empty(0, bool), _empty(0, np.int64)


@dataclass
class StepReport:
    """What one step did: contacts with their impulses, LCP diagnostics, impacts. The empty
    array fields of a step without contacts or limits are shared and read-only."""

    n_contacts: int = 0
    lcp_size: int = 0
    lcp_pivots: int = 0
    lcp_residual: float = 0.0
    solver: str = ""
    max_penetration: float = 0.0
    contacts: object = None
    normal_impulse: np.ndarray = field(default_factory=lambda: _NO_F)
    tangent_impulse: np.ndarray = field(default_factory=lambda: _NO_F3)
    sliding: np.ndarray = field(default_factory=lambda: _NO_B)
    impacts: list = field(default_factory=list)
    step_seconds: float = 0.0
    v_new: np.ndarray | None = None
    #: velocity the step's LCP started from: v, or the velocity after the step's impacts
    v_start: np.ndarray | None = None
    #: largest loop-closure / mimic position error at the start of the step (m or rad)
    constraint_error: float = 0.0
    #: bilateral rows dropped as redundant this step (bilateral.independent_rows)
    redundant_rows: int = 0
    #: joint-limit rows of the step (simcore/joint_rows.py): v index, side (+1 lower, -1
    #: upper) and total impulse over the step (N m s or N s, impacts included)
    limit_dof: np.ndarray = field(default_factory=lambda: _NO_I)
    limit_side: np.ndarray = field(default_factory=lambda: _NO_F)
    limit_impulse: np.ndarray = field(default_factory=lambda: _NO_F)
    #: a joint reached a limit fast enough for an impact phase this step
    limit_impact: bool = False
    #: 1, or the scale of every demanded separation speed with which the step was solved
    #: again after its LCP failed (OSStepper._softened_step), and that failure's message
    recovery_scale: float = 1.0
    softened_reason: str = ""
    #: kinetic energy (J) each source added this step (simcore/energy_sources.py): the impact
    #: phase, penetration recovery of contacts and joint limits, loop-closure / mimic rows
    energy_impacts: float = 0.0
    energy_stabilisation: float = 0.0
    energy_closures: float = 0.0


@dataclass
class Impact:
    """One contact's collision: velocities (m/s) and impulses (N s), kinetic energy (J)."""

    index: int
    normal_impulse: float
    tangent_impulse: np.ndarray
    normal_velocity_before: float
    normal_velocity_after: float
    energy_before: float
    energy_after: float

    @classmethod
    def records(cls, hit, impulse, normal, vn_before, vn_after, ke_before, ke_after) -> list:
        """The Impact of each contact index in ``hit``: its impulse (nu, 3; N s) split into
        the normal part along ``normal`` (nu, 3) and the rest, its normal velocity before
        and after (nu,; m/s), and the kinetic energy before and after the collision (J)."""
        out = []
        for i in hit:
            n_imp = float(impulse[i] @ normal[i])
            out.append(
                cls(
                    int(i),
                    n_imp,
                    impulse[i] - n_imp * normal[i],
                    float(vn_before[i]),
                    float(vn_after[i]),
                    ke_before,
                    ke_after,
                )  # fmt: skip
            )
        return out


def _no_contacts():
    """An empty contact set (for formulations that solve their LCP every step)."""
    from types import SimpleNamespace

    z3 = np.zeros((0, 3))
    zi = np.zeros(0, dtype=np.int64)
    return SimpleNamespace(
        body_a=zi, body_b=zi, geom_a=zi, geom_b=zi, point_a=z3, point_b=z3, local_a=z3,
        local_b=z3, normal=z3, gap=np.zeros(0), pair_id=zi, feature_key=zi,
    )  # fmt: skip


def impact_phase(
    form, problem, v, eps, energy_consistent, kinetic, respond, accept, joint_respond=None,
    friction="total",
):  # fmt: skip
    """The collision of one step (000 Sec. 7, Eqs. 54-58), from the pre-step velocity v.

    Compression (Eq. 54): the LCP of ``form`` with dt = 0 and no gap allowance gives v_c and
    the compression impulses P_c (nu, 3). With restitution eps (nu,) > 0, decompression
    (Eqs. 56-57): the recovered impulse theta(i) = eps(i) (n . P_c(i)) n is applied explicitly
    (``respond(theta)`` = M^-1 J^T Q_u^T theta) and the LCP solved again from v_c + that
    response, so every contact stays non-penetrating (q of Eq. 57 = D^T (v_c + W theta)).

    Friction (``friction``, options.IMPACT_FRICTION). "compression" is 000's law: theta is
    normal, and the decompression LCP's cone only holds its own normal impulse, so the
    friction of the whole collision is capped near mu P_c,n (a ball sliding through an impact
    with e = 0.5 loses a third less tangential speed than Coulomb's law says). "total"
    (default; Routh's / Stronge's Coulomb friction over the whole impulse): the decompression
    LCP's sigma rows get the budget mu(i) n . theta(i) (ContactProblem.friction_budget), so
    its friction may reach mu times theta plus its own normal impulse: the collision's
    friction is bounded by mu times its total normal impulse, and still opposes the
    post-collision slip (maximal dissipation), so it takes energy, never adds it.

    With ``energy_consistent`` the recovered impulse is halved (up to 30 times) until the
    kinetic energy ``kinetic(v)`` does not exceed its value before the collision (Kane's
    paradox guard). ``accept(solution, what)`` checks (and dumps) every LCP solved.

    Joint limits (simcore/joint_rows.py) take part in both phases as rows of the same LCPs;
    a limit with restitution eps_l recovers theta_l = eps_l lambda_c of its compression
    impulse, applied by ``joint_respond(theta)`` = M^-1 G_j^T theta (None: no joint rows).

    Returns (v after the collision, total impulse on A (nu, 3) N s, kinetic energy before, J).
    The total joint-row impulses are left in ``problem.joint_impulse_total``.
    """
    ke_before = kinetic(v)
    sol = form.solve(problem, v, 0.0, False)
    accept(sol, "compression")
    v_c, impulse = sol.v, sol.F
    p_joint = problem.joint_impulses(sol.result.z)
    eps_j = np.zeros(len(p_joint))
    if problem.joint is not None:
        eps_j[: problem.joint.n_limits] = problem.joint.limit_eps
    if np.any(eps > 0) or np.any(eps_j > 0):
        normal = problem.contacts.normal
        theta = (eps * np.einsum("ij,ij->i", sol.F, normal))[:, None] * normal
        theta_j = eps_j * p_joint
        scale = 1.0
        for _ in range(30 if energy_consistent else 1):
            v_t = v_c + respond(scale * theta)
            if joint_respond is not None and np.any(theta_j):
                v_t = v_t + joint_respond(scale * theta_j)
            if friction == "total":
                problem.friction_budget = problem.mu * scale * np.einsum("ij,ij->i", theta, normal)
            try:
                sol_d = form.solve(problem, v_t, 0.0, False)
            finally:
                problem.friction_budget = None
            accept(sol_d, "decompression")
            if not energy_consistent or kinetic(sol_d.v) <= ke_before:
                break
            scale *= 0.5
        v_c = sol_d.v
        impulse = impulse + (sol_d.F + scale * theta)
        p_joint = p_joint + problem.joint_impulses(sol_d.result.z) + scale * theta_j
    problem.joint_impulse_total = p_joint
    return v_c, impulse, ke_before


class OSStepper:
    """Advances (q, v) by one step with the OS formulation; see the module docstring.

    ``opt`` (StepOptions, frozen) is fixed while the stepper holds it; :meth:`configure`
    swaps in a validated copy. ``rk4`` is the integrator decision, made there once.
    """

    def __init__(
        self, model, collision, options: StepOptions, torque=None, bilateral=None,
        joint_limits=None, effort=None,
    ):  # fmt: skip
        self.model = model
        #: the effort bound of the implicit joint forces (module docstring):
        #: control.Actuators (``settle``, ``settled``), or None
        self.effort = effort
        #: joint limits and joint friction (simcore/joint_rows.JointLimits), or None
        self.joint_limits = joint_limits if joint_limits else None
        self.data = Data(model)
        self.collision = collision
        self.torque = torque
        #: index into RECOVERY_RETRY_SCALES of the last softened step's scale (_softened_step)
        self._soft_from = 0
        self._demands_separation = False
        #: loop closures and mimic joints (simcore/bilateral.py), or None
        self.bilateral = bilateral if bilateral else None
        self.body_vel = np.zeros((model.nb, 6))
        self.step_index = 0
        self._contacts = None  # the step's contacts, for the rows of a failure message
        #: where LCPs go for ``dump_lcp`` (see dump_lcps): (mode, fn) or None
        self._dump = None
        self._apply(options)

    def _apply(self, options: StepOptions) -> None:
        """Validate ``options`` and build what follows from them (formulation, dynamics path,
        integrator)."""
        if options.dt <= 0:
            raise MbsimError(f"time step dt={options.dt} must be positive")
        for name, allowed in (
            ("rk4_gap_rows", RK4_GAP_ROWS),
            ("lcp_selection", SELECTIONS),
            ("friction_axes", FRICTION_AXES),
            ("impact_friction", IMPACT_FRICTION),
            ("curvature_point", CURVATURE_POINTS),
            ("integrator", INTEGRATORS),
        ):
            value = getattr(options, name)
            if value not in allowed:
                raise MbsimError(f"unknown {name} {value!r}; expected one of {', '.join(allowed)}")
        if self.collision is not None:  # nothing can touch: no friction to refuse
            check_rk4_friction(options.integrator, [("StepOptions.mu", options.mu)])
        formulation = make(options.formulation, delassus=options.delassus)
        dynamics = make_dynamics(options.dynamics, self.model)
        self.opt = options
        self.formulation = formulation
        self.dynamics = dynamics
        # implicit joint damping with Euler: M + dt D wherever M is factorised (dynamics.aba)
        self._armature = (
            np.zeros(self.model.nv)
            if options.integrator == "rk4"
            else options.dt * np.asarray(self.model.damping, dtype=float)
        )
        self.data.armature[:] = self._armature
        #: the integrator, decided here once: classical RK4 with held impulses, or Euler
        self.rk4 = options.integrator == "rk4"
        #: RK4's contact rows for its own position update (module docstring)
        self._trapezoid_rows = self.rk4 and options.rk4_gap_rows == "trapezoid"
        #: the compiled free-motion path, used when nothing but contacts can constrain a step
        self._fast = FreeStepper(self)
        #: the compiled joint-limit step, which FreeStepper hands the steps it does not take
        self._limit = LimitStepper(self)
        #: the compiled contact step (contact_fused.py), which _softened_step asks first
        self._fused = ContactFuser(self)

    def configure(self, **changes) -> None:
        """Replace the options by a copy with ``changes`` (StepOptions field names), validated
        as at construction."""
        self._apply(replace(self.opt, **changes))

    def dump_lcps(self, mode: str, fn) -> None:
        """Send the LCPs ``mode`` asks for (lcp.DUMP_MODES) to ``fn(name, M, q, result,
        n_free, step, time)``; mode "none" or fn None stops dumping."""
        if mode not in DUMP_MODES:
            raise ValueError(f"dump_lcp must be one of {', '.join(DUMP_MODES)}, got {mode!r}")
        self._dump = None if fn is None or mode == "none" else (mode, fn)

    # ------------------------------------------------------------------ helpers
    def _pair_params(self, contacts):
        """(mu, eps) per contact: the options' defaults or pair_params_fn's table."""
        o = self.opt
        if o.pair_params_fn is None:
            n = len(contacts.body_a)
            return np.full(n, o.mu), np.full(n, o.restitution)
        mu, eps = o.pair_params_fn(contacts)
        if self.rk4 and len(mu):
            check_rk4_friction("rk4", [("contact mu", float(np.max(mu)))])
        return mu, eps

    def _kinetic(self, q, v) -> float:
        """Kinetic energy (J) at configuration q (held in data) and joint velocity v."""
        m, d = self.model, self.data
        body_velocities_kernel(m.parent, m.vi, m.nvj, d.S, d.E, d.r, v, self.body_vel)
        return float(energy(m, d, self.body_vel)[0])

    def _respond(self, problem, F) -> np.ndarray:
        """M^-1 J^T Q_u^T F for explicit contact impulses F (O(N) on the ABA path)."""
        return self.dynamics.respond(
            self.data, problem.node_body, problem.node_X, problem.node_impulses(F)
        )

    def _accept(self, sol: Solution, what: str, t: float) -> None:
        """Dump the LCP ``sol`` solved when asked to, and stop the run if it failed."""
        res = sol.result
        if self._dump is not None and should_dump(self._dump[0], res):
            name = f"step_{self.step_index:09d}_{what}"
            self._dump[1](name, sol.M, sol.q, res, sol.n_free, self.step_index, t)
        if check(res) is not None:  # the row labels only for the message of a failure
            reason = check(res, step=self.step_index, time=t, labels=self._row_labels(res))
            raise SimulationError(f"{what} {reason}")

    def _row_labels(self, res) -> list[str] | None:
        """Which contact each complementarity row of ``res`` belongs to (z = [beta (nf + 1
        per contact); sigma (1 per contact)] in every formulation), for failure messages."""
        c = self._contacts
        nu = 0 if c is None else len(c.gap)
        k = self.opt.nf + 1
        if not nu or res.z.size != nu * (k + 1):
            return None
        names = self.model.body_names

        def side(b):
            return "world" if b < 0 else repr(names[b])

        per_contact = [
            f"contact {i} ({side(c.body_a[i])} on {side(c.body_b[i])}, gap {c.gap[i]:.3g} m)"
            for i in range(nu)
        ]
        return [per_contact[i // k] for i in range(nu * k)] + per_contact

    def _joint_forces(self, t, q, v) -> np.ndarray:
        """Applied joint forces: URDF damping and the scenario's torques (N m or N)."""
        tau = -self.model.damping * v
        if self.effort is not None:
            self.effort.begin_step()  # bound only the forces the callback gets from it
        if self.torque is not None:
            applied = self.torque(t, q, v)
            if isinstance(applied, tuple):  # (tau_e, g): implicit in v+ (module docstring)
                applied, gain = applied
                if not self.rk4:
                    self.data.armature[:] = self._armature + self.opt.dt * gain
            tau = tau + applied
        return tau

    def _saturated(self, v, v_after, passes: int):
        """The step's joint forces again (as _joint_forces builds them) after an active-set
        pass of the effort bound at ``v_after`` (``passes`` made so far) changed a joint's
        side, with the diagonal updated; None when none changed (module docstring)."""
        if self.effort is None or self.rk4:
            return None
        out = self.effort.settle(v, v_after, passes)
        if out is None:
            return None
        applied, gain = out
        self.data.armature[:] = self._armature + self.opt.dt * gain
        return -self.model.damping * v + applied

    def _free_motion(self, q, v, tau):
        """(tau, qdd): the free acceleration qdd = (M + diag(armature))^-1 (tau - C), solved
        again while the effort bound changes a joint's side at v + dt qdd."""
        qdd = self.dynamics.accel(self.data, q, v, tau)
        passes = 0
        while (bounded := self._saturated(v, v + self.opt.dt * qdd, passes)) is not None:
            passes += 1
            tau = bounded
            qdd = self.dynamics.accel(self.data, q, v, tau)
        return tau, qdd

    def _rk4(self, q, v_start, tau_c, t, k1a):
        """Advance with classical RK4 holding the step's constraint impulses as constant joint
        forces ``tau_c`` (001 Sec. 4.1, F_c = I_c / dt): the Euler step's
        v+ = v_s + dt M^-1 (tau - C(q, v_s)) + M^-1 h gives h / dt = RNEA(q, v_s, (v+ - v_s)/dt)
        - tau, the generalized force of every contact and bilateral impulse; v_s is the
        velocity after any impact of the step (the impulsive jump is kept as it is). Stages on
        free joints compose q with the stage velocity mapped by dexp^-1 (Runge-Kutta-Munthe-
        Kaas, kinematics.lie_stage_velocity), so orientation is fourth order too (a plain
        average of body angular velocities is second order). The held force
        makes the scheme first order across a contact event and fourth order between them.
        ``k1a`` is the first stage's acceleration when already known, else None: qdd(q, v,
        tau) without constraint impulses, and (v+ - v_s)/dt with them when no impact changed
        the velocity (then the applied forces at v_s are those at v, and the held force was
        built to give exactly that).
        """
        m, d, dt = self.model, self.data, self.opt.dt

        def accel(ts, qs, vs):
            return self.dynamics.accel(d, qs, vs, self._joint_forces(ts, qs, vs) + tau_c)

        h = 0.5 * dt
        k1v = v_start
        if k1a is None:
            k1a = accel(t, q, v_start)
        # RKMK: stage k's configuration is q (+) (step x K_{k-1}), K the stage velocity
        # mapped by dexp^-1 at that stage's rotation vector (kinematics.lie_stage_velocity;
        # the identity on 1-DoF joints), so free-joint orientations are 4th order too
        q2 = integrate(m, q, k1v, h)
        k2v = v_start + h * k1a
        k2a = accel(t + h, q2, k2v)
        K2 = lie_stage_velocity(m, h * k1v, k2v)
        q3 = integrate(m, q, K2, h)
        k3v = v_start + h * k2a
        k3a = accel(t + h, q3, k3v)
        K3 = lie_stage_velocity(m, h * K2, k3v)
        q4 = integrate(m, q, K3, dt)
        k4v = v_start + dt * k3a
        k4a = accel(t + dt, q4, k4v)
        K4 = lie_stage_velocity(m, dt * K3, k4v)
        v_avg = (k1v + 2.0 * K2 + 2.0 * K3 + K4) / 6.0
        v_new = v_start + dt * (k1a + 2.0 * k2a + 2.0 * k3a + k4a) / 6.0
        return integrate(m, q, v_avg, dt), v_new

    def _integrate(self, q, v_start, v_new, tau, t, qdd, constrained, impacted):
        """(q+, v+) by the integrator decided in ``self.rk4``: Euler's q + dt v+, or RK4 from
        v_s = ``v_start`` with the step's constraint impulses (``constrained``: an LCP was
        solved) held as the generalized force h / dt = RNEA(q, v_s, (v+ - v_s)/dt) - tau (see
        _rk4). qdd: the free acceleration at (q, v), RK4's first stage without constraints;
        with them it is (v+ - v_s)/dt unless an impact changed v (``impacted``: damping and
        torques at v_s differ from tau, taken at v)."""
        m, d, dt = self.model, self.data, self.opt.dt
        if not self.rk4:
            return integrate(m, q, v_new, dt), v_new
        tau_c = np.zeros(m.nv)
        k1a = qdd
        if constrained:
            dv_dt = (v_new - v_start) / dt
            tau_c = rnea(m, d, q, v_start, dv_dt) - tau
            k1a = None if impacted else dv_dt
        return self._rk4(q, v_start, tau_c, t, k1a)

    # ------------------------------------------------------------------ the step
    def step(self, q: np.ndarray, v: np.ndarray, t: float):
        """Return (q+, v+, StepReport) for one step of length dt starting at time t: the
        compiled free-motion path (simcore/fast_step.py) when nothing can constrain the step,
        the compiled joint-limit step (simcore/limit_step.py) when only joint-limit rows do,
        else the general path."""
        if self._fast.eligible(self):  # asked every step: torque, bilateral may be set later
            return self._fast.step(q, v, t, self._limit.step)
        return self._general_step(q, v, t)

    def _general_step(self, q: np.ndarray, v: np.ndarray, t: float, tau=None):
        """One step by the full pipeline of the module docstring; ``tau``: the step's applied
        joint forces when the fast path already asked for them (a controller is called once)."""
        t0 = _time.perf_counter()
        d, o = self.data, self.opt
        dt = o.dt
        if tau is None:
            tau = self._joint_forces(t, q, v)
        tau, qdd = self._free_motion(q, v, tau)
        report = StepReport()
        c = self.collision.detect(d.R_world, d.p_world) if self.collision is not None else None
        nu = 0 if c is None else len(c.gap)
        v_new = v + dt * qdd
        v_start = v
        joint = self._joint_rows(q, v, v_new, 1.0)
        constrained = bool(
            nu or self.formulation.always_solves or self.bilateral is not None or joint
        )
        if constrained:
            if c is None:
                c = _no_contacts()
            report = self._softened_step(q, v, tau, c, t, qdd, v_new, joint)
            passes = 0
            while (bounded := self._saturated(v, report.v_new, passes)) is not None:
                # the step's impulses moved an implicit joint's force across its effort
                # (module docstring): its side changes and the step is taken again
                passes += 1
                tau = bounded
                qdd = self.dynamics.accel(d, q, v, tau)
                v_new = v + dt * qdd
                joint = self._joint_rows(q, v, v_new, 1.0)
                report = self._softened_step(q, v, tau, c, t, qdd, v_new, joint)
            v_new = report.v_new
            v_start = report.v_start
        q_new, v_new = self._integrate(
            q, v_start, v_new, tau, t, qdd, constrained,
            bool(report.impacts) or report.limit_impact,
        )  # fmt: skip
        self.step_index += 1
        if not (np.all(np.isfinite(q_new)) and np.all(np.isfinite(v_new))):
            raise SimulationError(
                f"the state became NaN or infinite at step {self.step_index}, t = {t + dt:.6g} s"
            )
        if np.max(np.abs(v_new), initial=0.0) > o.max_speed:
            raise SimulationError(
                f"a joint speed exceeded {o.max_speed:g} at step {self.step_index}, "
                f"t = {t + dt:.6g} s: the simulation diverged"
            )
        if report.max_penetration > o.max_penetration:
            raise SimulationError(
                f"penetration {report.max_penetration:.3g} m exceeded the bound "
                f"{o.max_penetration:g} m at step {self.step_index}, t = {t + dt:.6g} s"
            )
        report.step_seconds = _time.perf_counter() - t0
        return q_new, v_new, report

    def _joint_rows(self, q, v, v_free, scale: float):
        """The step's joint-limit and friction rows (None without any), every limit's
        recovery speed (past a stop) multiplied by ``scale`` (see _softened_step)."""
        if self.joint_limits is None or self._fast.no_joint_rows(q, v, v_free):
            return None
        o = self.opt
        return self.joint_limits.rows(
            q_of_v(self.model, q), v, v_free, o.dt, scale * o.stabilization,
            scale * o.max_recovery_speed, q=q,
        )  # fmt: skip

    def _softened_step(self, q, v, tau, c, t, qdd, v_free, joint) -> StepReport:
        """The constrained step (_contact_step), solved again with softened recovery when its
        LCP fails (module docstring, "Softened recovery"): every row's demanded separation
        speed (penetration and limit recovery, closure stabilisation) times each scale of
        RECOVERY_RETRY_SCALES in turn, from the one the last softened step needed (until a
        step solves at full recovery again), each attempt with the full LCP time budget. A failure
        of a step that demands no separation speed, or at scale 0, is raised as it is; the
        report of a softened step says the scale used and why (``recovery_scale``,
        ``softened_reason``). A step whose joint rows are 1-DoF ones (no spherical limits) goes
        first to the compiled contact step (contact_fused.py, the same arithmetic as
        _contact_step at full recovery; with joint rows the same LCP up to BLAS rounding),
        which hands back what it does not take."""
        o = self.opt
        skip = False  # the kernel rejected the LCP's first attempt: the chain starts at its second
        if (not joint or joint.limit_G is None) and self._fused.eligible(self):
            # the compiled contact step at full recovery, with the step's 1-DoF joint rows;
            # None: a collision, an LCP its first attempt does not settle, or a case it does
            # not cover, all taken below
            report = self._fused.step(q, v, tau, c, qdd, joint)
            if report is not None:
                self._soft_from = 0
                return report
            skip = self._fused.first_failed
        first = None
        # the retries start at the scale the last softened step needed (a wedged robot fails
        # at every larger scale each step: each failure costs the whole fallback chain)
        start = min(self._soft_from, len(RECOVERY_RETRY_SCALES))
        for scale in (1.0, *RECOVERY_RETRY_SCALES[start:]):
            if scale != 1.0:
                joint = self._joint_rows(q, v, v_free, scale)
            self._demands_separation = False
            try:
                with lcp_limits(seconds=o.lcp_max_seconds), selecting(o.lcp_selection):
                    report = self._contact_step(
                        q, v, tau, c, t, qdd, joint, scale, skip and scale == 1.0
                    )
            except SimulationError as exc:
                if first is None:
                    first = exc
                if not self._demands_separation:
                    raise first from None
                continue
            if scale != 1.0:
                report.recovery_scale = scale
                report.softened_reason = str(first)
                self._soft_from = RECOVERY_RETRY_SCALES.index(scale)
            else:
                self._soft_from = 0
            return report
        raise first

    def _contact_step(
        self, q, v, tau, c, t, qdd, joint=None, scale=1.0, skip_first=False
    ) -> StepReport:
        """The constrained step (steps 3-7 of the module docstring); ``scale`` multiplies
        every demanded separation speed (the negative part of each contact row's gap
        allowance, the closure rows' stabilisation; the limit rows come scaled in ``joint``).
        ``skip_first``: the compiled contact step rejected this step LCP's first attempt
        (OS.solve's ``skip_first``)."""
        m, d, o = self.model, self.data, self.opt
        dt = o.dt
        nu = len(c.gap)
        self._contacts = c  # for the rows of a failure message
        mu, eps = self._pair_params(c)
        drift = _NO_F
        if o.curvature_correction and nu:
            # a kinematic prediction, not an error to correct: neither scaled nor capped
            chat = np.empty((m.nb, 6))
            propagate_bias(m.parent, d.E, d.r, d.cbias, chat)
            drift = curvature_drift(d.R_world, d.vel, chat, c, dt, core=o.curvature_point == "core")
        # recovery of a penetration at k |g| / dt, never faster than the cap, or 001 Sec.
        # 4.1's position-level gap capped at g_Neps; softened: a row may close its gap as
        # before, but is pushed open only ``scale`` as fast (contact_stages.gap_allowance)
        gap_velocity, demands, deepest = gap_allowance(
            c.gap, drift, o.stabilization, o.max_recovery_speed, o.gap_floor, scale, dt
        )
        demands = bool(
            demands
            or (joint is not None and (joint.limit_allowance < 0.0).any())
            or (self.bilateral is not None and self.bilateral.stabilization > 0.0)
        )
        reference = None
        if o.friction_axes == "slip" and nu:
            # each polyhedron's first edge along the contact's relative velocity after the
            # free motion: its slip, or where a sticking contact is pushed (contact.py)
            reference = relative_velocities(
                m, d, v + dt * qdd, c.body_a, c.local_a, c.body_b, c.local_b
            )
        try:
            problem = ContactProblem.build(
                m, d, q, c, tau, o.nf, mu, gap_velocity, o.solver, o.lcp_tol_rel,
                node_transforms, bilateral=self.bilateral, dt=dt, dynamics=self.dynamics,
                joint=joint,
                friction_reference=reference,
            )  # fmt: skip
        except ConstraintError as exc:  # e.g. a distance closure's points came together
            raise SimulationError(f"at step {self.step_index}, t = {t:.6g} s: {exc}") from None
        if scale != 1.0 and problem.ub is not None:
            problem.ub = scale * problem.ub  # the closure rows' stabilisation, -k e / dt
        form = self.formulation
        form.prepare(problem)
        report = StepReport(contacts=c, n_contacts=nu)
        report.constraint_error = problem.bilateral_error
        report.redundant_rows = problem.n_redundant
        report.max_penetration = float(max(0.0, -deepest))
        impulse_total = np.zeros((nu, 3))
        joint_total = np.zeros(problem.n_joint_rows)

        # --- impacts (Sec. 7): compression (Eq. 54) then decompression (Eqs. 56-57)
        colliding = False
        if nu:
            vn_minus = normal_velocity(problem, v)
            # a collision: a contact approaching fast that would close its gap within the step
            impacting, colliding = contact_impacting(vn_minus, c.gap, o.impact_velocity, dt)
        else:
            impacting = _NO_B
        limit_impacting = False
        if problem.joint is not None and problem.joint.n_limits:
            jr = problem.joint
            sv = jr.limit_rate(v)  # the same rule on the joint gap
            limit_impacting = bool(
                np.any((sv < -o.impact_velocity) & (jr.limit_gap + sv * dt <= 0.0))
            )
        if colliding or limit_impacting:
            Gj = problem.Gj
            v_c, impulse, ke_before = impact_phase(
                form, problem, v, eps, o.energy_consistent_impacts,
                kinetic=lambda vk: self._kinetic(q, vk),
                respond=lambda F: self._respond(problem, F),
                accept=lambda sol, what: self._accept(sol, what, t),
                joint_respond=lambda th: self.dynamics.solve_joint(d, Gj) @ th,
                friction=o.impact_friction,
            )  # fmt: skip
            impulse_total += impulse
            joint_total += problem.joint_impulse_total
            report.limit_impact = limit_impacting
            ke_after = self._kinetic(q, v_c)
            # in the metric the impulses act in, M + armature (energy_sources.py)
            report.energy_impacts = (
                ke_after - ke_before + armature_energy(d.armature, v_c)
                - armature_energy(d.armature, v)
            )  # fmt: skip
            vn_after = normal_velocity(problem, v_c)
            if impacting.any():  # contacts collided (vn_minus exists only then)
                report.impacts += Impact.records(
                    np.flatnonzero(impacting), impulse_total, c.normal, vn_minus, vn_after,
                    ke_before, ke_after,
                )  # fmt: skip
            v = v_c
        if self._trapezoid_rows and nu:
            # RK4 with the held force moves the contact point by dt n . (v_s + v+)/2 (the
            # stages' velocity average, to first order), not by dt n . v+ as Euler does:
            # n . (v_s + v+)/2 >= -target/dt, i.e. n . v+ >= -(2 target/dt + n . v_s)
            problem.gap_velocity = 2.0 * gap_velocity + normal_velocity(problem, v)
        # --- the contact LCP of the step (Eq. 53 or the chosen formulation's); qdd is the
        # free acceleration at (q, v), still valid when no impact changed v
        impacted = bool(report.impacts) or report.limit_impact
        # only this LCP carries the recovery terms: a failure of the impact phase's (dt = 0,
        # no gap terms) is not retried softened
        self._demands_separation = demands
        skip = {"skip_first": True} if skip_first else {}  # OS's only, the kernel's formulation
        sol = form.solve(problem, v, dt, True, accel=None if impacted else qdd, **skip)
        self._accept(sol, "contact", t)
        res = sol.result
        report.v_new = sol.v
        report.v_start = v
        impulse_total += sol.F
        p_joint = problem.joint_impulses(res.z)
        joint_total += p_joint
        jr = problem.joint
        past_stop = jr is not None and bool(np.any(jr.limit_gap < 0.0))
        if problem.bilateral is not None or past_stop or (c.gap < 0.0).any():
            # which source added kinetic energy (energy_sources.py); v_f the LCP's free motion
            v_free = v + dt * (self.dynamics.accel(d, q, v, tau) if impacted else qdd)
            report.energy_stabilisation, report.energy_closures = step_shares(
                m, d, problem, sol.F, p_joint, v_free, sol.v, lambda vk: self._kinetic(q, vk)
            )
        if problem.joint is not None:
            jr = problem.joint
            report.limit_dof = jr.limit_dof
            report.limit_side = jr.limit_side
            report.limit_impulse = joint_total[: jr.n_limits]
        sigma = res.z[problem.n_joint_unknowns + nu * problem.k :]
        report.normal_impulse, report.tangent_impulse, report.sliding = split_impulses(
            impulse_total, c.normal, sigma
        )
        report.lcp_size = res.size
        report.lcp_pivots = res.pivots
        report.lcp_residual = max(res.residual, res.sign_violation, res.eq_residual)
        report.solver = res.solver
        return report
