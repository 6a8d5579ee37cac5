"""The joint forces of one step from the scenario's controllers, a Python controller's torques
and the URDF effort limits.

Modes (``[robot.NAME.control]``, docs/scenario-format.md) per 1-DoF joint, target q*(t) with
v*(t) = dq*/dt, u_ff a feed-forward (N m or N), tau_g the joint's gravity torque
RNEA(q, 0, 0) when ``gravity_compensation`` is on:

* torque:   tau = u(t) [+ tau_g]
* position: tau = kp (q* - q) + kd (v* - v) + u_ff [+ tau_g]
* velocity: tau = kd (v* - v) + u_ff [+ tau_g]

Implicit PD (issue 20, the choice over a box-constrained motor row: it needs no LCP row and
no change to any formulation, and it is the same mechanism as implicit joint damping). With
the Euler integrator the PD force is taken at the end of the step, at q+ = q + dt v+ and v+:

    tau(v+) = kp (q* - q - dt v+) + kd (v* - v+) + ...
            = tau_e - g (v+ - v),   tau_e = kp (q* - q - dt v) + kd (v* - v) + ...,
                                    g = kd + dt kp  (N m s/rad or N s/m).

The velocity update (M + dt D)(v+ - v) = dt (tau - C) + J^T p then becomes
(M + dt (D + diag g))(v+ - v) = dt (tau_e - C) + J^T p: the stepper adds dt g to the joint's
diagonal (``data.armature``, as for implicit damping) and applies tau_e. Every step is then a
backward-Euler step of the PD's stiff part, stable for any kp, kd and dt (the explicit force
diverges once dt sqrt(kp / m) or dt kd / m exceeds ~2, as kp 300 on light iiwa links at
1 ms does). With rk4 the PD is an explicit force of the stages (g = 0; each stage calls
:meth:`Actuators.forces`, so :meth:`Actuators.applied` gives the last stage's force).

Effort limits: the joint's total actuator force (every mode, the Python controller's torque
and the constant ``torque`` entries together) is clamped to [-effort, effort] when the URDF
effort is finite and > 0 (control/actuator_law.py has the rule and its proof of a unique
answer). A joint without implicit part is saturated when tau_e is outside the bound. An
implicit joint's force over the step, clamp(tau_e - g (v+ - v), -effort, effort), depends on
v+, and so on every other joint's force: the stepper finds the step's one solution by an
active-set iteration, :meth:`Actuators.settle` after each solve (first of the free motion,
simcore/stepper.py ``OSStepper._free_motion``; then, when contact or limit impulses act, of
the constrained step, ``OSStepper._general_step``), saturating or releasing joints until none
changes side. A saturated joint's force is the bound, with no implicit part (g = 0), and its
``tau_limit`` flag is +1 or -1; an unsaturated one applies tau_e - g (v+ - v), inside the
bound. Deciding on tau_e alone made a light joint chatter: tau_e includes kd |v|, far above
the force the implicit step really applies, and the explicit bound then reversed the joint's
velocity within a step, every step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbsim.control.actuator_law import (
    CHECK,
    FULL,
    GROW,
    MODE_CODES,
    SETTLE_FREE_PASSES,
    actuator_forces_kernel,
    settle_effort,
)
from mbsim.control.signals import SignalFn
from mbsim.simcore.dynamics import rnea


@dataclass
class JointCommand:
    """One controlled DoF: indices into q and v, and the controller (compiled signals)."""

    qi: int
    vi: int
    mode: str
    kp: float = 0.0
    kd: float = 0.0
    target: SignalFn | None = None
    torque: SignalFn | None = None
    feedforward: SignalFn | None = None
    gravity_compensation: bool = False

    @classmethod
    def from_control(cls, qi: int, vi: int, c) -> JointCommand:
        """From a scenario :class:`~mbsim.io.scenario.JointControl`."""
        return cls(
            qi, vi, c.mode, kp=c.kp, kd=c.kd,
            target=SignalFn(c.target) if c.target is not None else None,
            torque=SignalFn(c.torque) if c.torque is not None else None,
            feedforward=SignalFn(c.feedforward) if c.feedforward is not None else None,
            gravity_compensation=c.gravity_compensation,
        )  # fmt: skip


class Actuators:
    """Joint forces of a step: ``forces(t, q, v, extra) -> (tau_e, g)``, or tau_e alone when
    no joint has an implicit part (see the module docstring); after the step,
    :meth:`applied` gives the force each joint really applied.

    ``constant``: (nv,) constant joint forces; ``commands``: JointCommand list; ``implicit``:
    the PD's implicit split (Euler) or an explicit force (rk4); ``data``: a Data for RNEA.
    """

    def __init__(self, model, data, dt: float, constant, commands, implicit: bool) -> None:
        self.model, self.data, self.dt = model, data, float(dt)
        self.constant = np.ascontiguousarray(constant, dtype=np.float64)
        self.commands = list(commands)
        self.implicit = bool(implicit)
        self.gravity = any(c.gravity_compensation for c in self.commands)
        #: whether any joint has an implicit part; without, forces() returns tau alone and
        #: the stepper's diagonal stays that of joint damping
        self.has_gain = self.implicit and any(c.mode != "torque" for c in self.commands)
        e = np.asarray(model.effort, dtype=float)
        self.limited = np.isfinite(e) & (e > 0.0)
        self.effort = np.where(self.limited, e, np.inf)
        #: whether the step's forces came from :meth:`forces` since :meth:`begin_step`:
        #: settle acts on those only (a stepper whose torque callback was replaced, as tests
        #: do, gets no effort bound from here)
        self._ready = False
        #: whether a joint with an implicit part has an effort bound (:meth:`settle`)
        self.saturable = self.has_gain and bool(
            any(self.limited[c.vi] for c in self.commands if c.mode != "torque")
        )
        nv = model.nv
        self.tau_e = np.zeros(nv)
        self.gain = np.zeros(nv)
        self.flags = np.zeros(nv, dtype=np.int8)
        #: nothing configured (no command, no constant force): every step's force is zero,
        #: so :meth:`forces` without ``extra`` returns shared read-only zeros, no work
        self.idle = not self.commands and not bool(np.any(self.constant))
        self._zeros = np.zeros(nv)
        self._zeros.flags.writeable = False
        self._no_flags = np.zeros(nv, dtype=np.int8)
        self._no_flags.flags.writeable = False
        #: a writable zero input of the law (tau_g, extra when unused): numba compiles one
        #: specialisation for read-only arrays and another for writable ones, and the loop
        #: passes writable ones
        self._zero_in = np.zeros(nv)
        #: the signals of the constant commands (signals_at; filled at its first call), and
        #: the indices of the commands whose signals vary with time
        self._constant_signals, self._varying = None, []
        #: signals_over's last arrays when no signal varies (each row the constant one): a
        #: later call for as many rows or fewer returns their first rows
        self._over = None
        cmds = self.commands
        #: the commands as the law's flat arrays (control/actuator_law.py)
        self._law = (
            np.array([c.qi for c in cmds], dtype=np.int64),
            np.array([c.vi for c in cmds], dtype=np.int64),
            np.array([MODE_CODES[c.mode] for c in cmds], dtype=np.int64),
            np.array([c.kp for c in cmds], dtype=np.float64),
            np.array([c.kd for c in cmds], dtype=np.float64),
            np.array([c.gravity_compensation for c in cmds], dtype=np.bool_),
        )

    def forces(self, t: float, q, v, extra=None):
        """(tau_e, g) for the step from (t, q, v); ``extra``: a Python controller's (nv,)
        torques, added before the effort clamp (the law: control/actuator_law.py)."""
        self._ready = False
        if self.idle and extra is None:  # zero force: nothing to clamp, no implicit part
            self.tau_e, self.gain, self.flags = self._zeros, self._zeros, self._no_flags
            return self._zeros
        nv = self.model.nv
        u, ref, dref, ff = self.signals_at(t)
        tau_g = self._zero_in
        if self.gravity:
            zero = np.zeros(nv)
            tau_g = rnea(self.model, self.data, q, zero, zero)
        tau, gain, flags = np.empty(nv), np.empty(nv), np.empty(nv, dtype=np.int8)
        actuator_forces_kernel(
            self.constant, *self._law, u, ref, dref, ff, tau_g,
            self._zero_in if extra is None else np.ascontiguousarray(extra, dtype=np.float64),
            extra is not None, np.ascontiguousarray(q, dtype=np.float64),
            np.ascontiguousarray(v, dtype=np.float64), self.dt if self.implicit else 0.0,
            self.implicit, self.limited, self.effort, tau, gain, flags,
        )  # fmt: skip
        self.tau_e, self.gain, self.flags = tau, gain, flags
        if self.saturable:  # each implicit joint's own force and gain (settle)
            self._tau0, self._gain0 = tau.copy(), gain.copy()
            self._ready = True
        return (tau, gain) if self.has_gain else tau

    def begin_step(self) -> None:
        """A step starts: :meth:`settle` acts only once :meth:`forces` has given its
        forces (called by the stepper before it asks its torque callback)."""
        self._ready = False

    def settle(self, v, v_after, passes: int):
        """One active-set pass of the effort bound of the implicit joints at the step's
        velocity ``v_after`` (actuator_law.settle_effort; ``passes`` made so far, after
        SETTLE_FREE_PASSES of them joints are only saturated). Returns the step's new
        (tau_e, g), or None when no joint changed side (the step is settled)."""
        if not self._ready:
            return None
        n = settle_effort(
            self._tau0, self._gain0, self.limited, self.effort,
            np.ascontiguousarray(v, dtype=np.float64),
            np.ascontiguousarray(v_after, dtype=np.float64), self.tau_e, self.gain, self.flags,
            FULL if passes < SETTLE_FREE_PASSES else GROW,
        )  # fmt: skip
        return (self.tau_e, self.gain) if n else None

    def settled(self, v, v_after) -> bool:
        """Whether the effort bound is settled at ``v_after`` (:meth:`settle` would change
        nothing); changes nothing."""
        if not self._ready:
            return True
        return not settle_effort(
            self._tau0, self._gain0, self.limited, self.effort,
            np.ascontiguousarray(v, dtype=np.float64),
            np.ascontiguousarray(v_after, dtype=np.float64), self.tau_e, self.gain, self.flags,
            CHECK,
        )  # fmt: skip

    def signals_at(self, t: float):
        """Each command's signals at time t (s): (u, q* or v*, dq*/dt, u_ff), (ncmd,) each;
        the entries a command's mode does not use are 0."""
        self._split()
        u, ref, dref, ff = (a.copy() for a in self._constant_signals)
        if self._varying:
            varying = self._signals_of(self._varying, t)
            for out, new in zip((u, ref, dref, ff), varying, strict=True):
                out[self._varying] = new
        return u, ref, dref, ff

    def _split(self) -> None:
        """The constant commands' signals and the varying commands (:meth:`signals_at`),
        found at the first call."""
        if self._constant_signals is None:
            self._constant_signals = self._signals_of(range(len(self.commands)), 0.0)
            self._varying = [
                j for j, c in enumerate(self.commands)
                if any(f is not None and len(f.t) for f in (c.torque, c.target, c.feedforward))
            ]  # fmt: skip

    def _signals_of(self, which, t: float):
        """:meth:`signals_at` of the commands ``which`` (indices), in that order."""
        n = len(which)
        u, ref, dref, ff = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
        for j, c in enumerate(self.commands[i] for i in which):
            if c.mode == "torque":
                u[j] = c.torque(t)[0]
            else:
                ref[j], dref[j] = c.target(t)
                if c.feedforward is not None:
                    ff[j] = c.feedforward(t)[0]
        return u, ref, dref, ff

    def signals_over(self, times, at_least: int = 0):
        """:meth:`signals_at` at each of ``times`` (n,): four (n, ncmd) arrays, each entry
        equal to the one :meth:`signals_at` gives at that time (the compiled loop's input;
        it only reads them). When no signal varies, the rows are made for ``at_least``
        times if more, and a later call for as many rows returns the first of them."""
        times = np.asarray(times, dtype=float)
        n = len(times)
        self._split()
        kept = self._over
        if kept is not None and kept[0].shape[0] >= n:  # nothing varies: rows of the last
            return tuple(a[:n] for a in kept)
        # each row the constant commands' signals (signals_at's), then the varying commands'
        # columns over the times (SignalFn.over, for those commands only)
        if not self._varying:
            rows = max(n, at_least)
            self._over = tuple(np.repeat(a[None, :], rows, axis=0) for a in self._constant_signals)
            return tuple(a[:n] for a in self._over)
        u, ref, dref, ff = (np.repeat(a[None, :], n, axis=0) for a in self._constant_signals)
        for j in self._varying:
            c = self.commands[j]
            if c.mode == "torque":
                u[:, j] = c.torque.over(times)[0]
            else:
                ref[:, j], dref[:, j] = c.target.over(times)
                if c.feedforward is not None:
                    ff[:, j] = c.feedforward.over(times)[0]
        return u, ref, dref, ff

    def applied(self, v_before, v_after) -> np.ndarray:
        """The actuator force applied over the step just taken (N m or N): tau_e - g (v+ - v)."""
        if self.tau_e is self._zeros:  # an idle step (forces): nothing applied
            return np.zeros(len(self._zeros))
        return self.tau_e - self.gain * (np.asarray(v_after) - np.asarray(v_before))
