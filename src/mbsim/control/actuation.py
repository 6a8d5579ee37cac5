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
effort is finite and > 0. A joint whose force at the start of the step, tau_e, is outside the
bound is saturated for the step: its force is the bound, with no implicit part (g = 0), and its
``tau_limit`` flag is +1 or -1. An unsaturated implicit joint applies tau_e - g (v+ - v),
which may leave the bound by g |v+ - v| within the step (recorded as it is, in /trajectory/tau).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
        self.constant = np.asarray(constant, dtype=float)
        self.commands = list(commands)
        self.implicit = bool(implicit)
        self.gravity = any(c.gravity_compensation for c in self.commands)
        #: whether any joint has an implicit part; without, forces() returns tau alone and
        #: the stepper's diagonal stays that of joint damping
        self.has_gain = self.implicit and any(c.mode != "torque" for c in self.commands)
        e = np.asarray(model.effort, dtype=float)
        self.limited = np.isfinite(e) & (e > 0.0)
        self.effort = np.where(self.limited, e, np.inf)
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

    def forces(self, t: float, q, v, extra=None):
        """(tau_e, g) for the step from (t, q, v); ``extra``: a Python controller's (nv,)
        torques, added before the effort clamp."""
        if self.idle and extra is None:  # zero force: nothing to clamp, no implicit part
            self.tau_e, self.gain, self.flags = self._zeros, self._zeros, self._no_flags
            return self._zeros
        tau = self.constant.copy()
        gain = np.zeros_like(tau)
        zero = np.zeros_like(tau)
        tau_g = rnea(self.model, self.data, q, zero, zero) if self.gravity else None
        dt = self.dt if self.implicit else 0.0
        for c in self.commands:
            i, k = c.qi, c.vi
            if c.mode == "torque":
                f = c.torque(t)[0]
            else:
                f = c.feedforward(t)[0] if c.feedforward is not None else 0.0
                ref, dref = c.target(t)
                if c.mode == "position":
                    f += c.kp * (ref - q[i] - dt * v[k]) + c.kd * (dref - v[k])
                    g = c.kd + dt * c.kp
                else:  # velocity: the target is a speed
                    f += c.kd * (ref - v[k])
                    g = c.kd
                if self.implicit:
                    gain[k] += g
            if tau_g is not None and c.gravity_compensation:
                f += tau_g[k]
            tau[k] += f
        if extra is not None:
            tau += extra
        flags = np.zeros(len(tau), dtype=np.int8)
        over = self.limited & (np.abs(tau) > self.effort)
        if over.any():
            flags[over] = np.sign(tau[over]).astype(np.int8)
            tau[over] = np.clip(tau[over], -self.effort[over], self.effort[over])
            gain[over] = 0.0
        self.tau_e, self.gain, self.flags = tau, gain, flags
        return (tau, gain) if self.has_gain else tau

    def applied(self, v_before, v_after) -> np.ndarray:
        """The actuator force applied over the step just taken (N m or N): tau_e - g (v+ - v)."""
        if self.tau_e is self._zeros:  # an idle step (forces): nothing applied
            return np.zeros(len(self._zeros))
        return self.tau_e - self.gain * (np.asarray(v_after) - np.asarray(v_before))
