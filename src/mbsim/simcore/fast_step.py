"""The free-motion fast path of the OS step: one compiled call when nothing constrains the step.

A step with no contact, no bilateral row, no joint-limit row and a formulation that does not
solve an LCP every step is plain semi-implicit Euler on the free dynamics (000 Sec. 6 with an
empty contact set):

    tau  = -D v                                   (URDF joint damping, N m or N)
    qdd  = (M + diag(armature))^-1 (tau - C(q, v))   (ABA, 004 Eq. 0.31; armature = dt D)
    v+   = v + dt qdd
    q+   = q (+) dt v+                            (kinematics.integrate_kernel)

:func:`free_step_kernel` does all of it in one numba call with the same kernels and the same
floating-point operations, in the same order, as the general path of
:meth:`mbsim.simcore.stepper.OSStepper.step` (``-damping * v``, ``aba_kernel``,
``v + dt * qdd``, ``integrate_kernel``), so the two agree bit for bit
(tests/test_fast_step.py). It also checks the state is finite and below ``max_speed``; when it
is not, the caller falls back to the general path, which raises the usual error.

The caller (:class:`FreeStepper`) decides when the fast path may run (``eligible``) and still
runs collision detection each step: a step that finds a contact goes through the general path
from the start (it recomputes the free motion, so nothing the fast path computed leaks into a
contact step). After a contact step the fast path is skipped until a step finds no contact, so
a resting contact costs no second detection per step.
"""

from __future__ import annotations

import time as _time

import numpy as np
from numba import njit

from mbsim.simcore.dynamics import aba_kernel
from mbsim.simcore.kinematics import integrate_kernel


@njit(cache=True)
def free_step_kernel(
    parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, damping, q, v, dt,
    max_speed, E, r, R_world, p_world, vel, cbias, IA, U, Dinv, pivots, pA, u, acc, scratch,
    qdd, armature, tau, q_new, v_new,
):  # fmt: skip
    """One free-motion Euler step (module docstring). Writes tau, qdd (and the kinematics and
    articulated factorisation of q into the Data arrays), v_new and q_new. Returns 0 when the
    new state is finite with every |v+| <= max_speed, 1 otherwise (the caller then takes the
    general path, which raises the matching error)."""
    nv = v.shape[0]
    for i in range(nv):
        tau[i] = -damping[i] * v[i]
    aba_kernel(
        parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, q, v, tau, E, r,
        R_world, p_world, vel, cbias, IA, U, Dinv, pivots, pA, u, acc, scratch, qdd, armature,
    )  # fmt: skip
    for i in range(nv):
        v_new[i] = v[i] + dt * qdd[i]
    integrate_kernel(jtype, qi, vi, q, v_new, dt, q_new)
    for i in range(q_new.shape[0]):
        if not np.isfinite(q_new[i]):
            return 1
    for i in range(nv):
        if not np.isfinite(v_new[i]) or abs(v_new[i]) > max_speed:
            return 1
    return 0


class FreeStepper:
    """The fast path of one :class:`~mbsim.simcore.stepper.OSStepper` (module docstring)."""

    def __init__(self, stepper):
        self.s = stepper
        m = stepper.model
        self._tau = np.zeros(m.nv)
        self._last_had_contact = False
        self._data = self._model = None
        self._bind(m, stepper.data)

    def _bind(self, m, d) -> None:
        """The kernel's Model and Data arguments: arrays updated in place, never replaced
        (data.py: allocated once); a new Model or Data is bound again."""
        self._model_args = (
            m.parent, m.jtype, m.qi, m.vi, m.nvj, d.S, m.tree_E, m.tree_r, m.axis, m.inertia,
            m.gravity, m.damping,
        )  # fmt: skip
        self._data_args = (
            d.E, d.r, d.R_world, d.p_world, d.vel, d.cbias, d.IA, d.U, d.Dinv, d.pivots, d.pA,
            d.u, d.acc, d.scratch66, d.qdd, d.armature,
        )  # fmt: skip
        self._data, self._model = d, m

    @staticmethod
    def eligible(stepper) -> bool:
        """Whether the fast path may replace the general one at all: Euler, ABA, no applied
        torque callback, no bilateral rows, a formulation that solves no LCP without contacts,
        and no other constraint rows the stepper knows of. Conservative: any stepper attribute
        this module does not know (joint limits, controls) must turn it off here."""
        return (
            not stepper.rk4
            and stepper.dynamics.name == "aba"
            and stepper.torque is None
            and stepper.bilateral is None
            and not stepper.formulation.always_solves
            and getattr(stepper, "limits", None) is None
            and getattr(stepper, "joint_limits", None) is None
        )

    def step(self, q, v, t, general):
        """(q+, v+, StepReport) of one step: the fast path when the step has no contact, else
        ``general(q, v, t)`` (the stepper's general path), which also takes any step whose
        state turns out bad (it raises the usual error) and every step after a contact step
        until one finds no contact."""
        if self._last_had_contact:
            out = general(q, v, t)
            self._last_had_contact = out[2].n_contacts > 0
            return out
        from mbsim.simcore.stepper import StepReport

        t0 = _time.perf_counter()
        s = self.s
        m, d, o = s.model, s.data, s.opt
        if d is not self._data or m is not self._model:  # gathered once per Model and Data
            self._bind(m, d)
        q = np.ascontiguousarray(q, dtype=np.float64)
        v = np.ascontiguousarray(v, dtype=np.float64)
        q_new = np.empty(m.nq)
        v_new = np.empty(m.nv)
        bad = free_step_kernel(
            *self._model_args, q, v, float(o.dt), float(o.max_speed), *self._data_args,
            self._tau, q_new, v_new,
        )  # fmt: skip
        if bad:
            return general(q, v, t)
        c = s.collision.detect(d.R_world, d.p_world) if s.collision is not None else None
        if c is not None and len(c.gap):  # a detector may answer None for "no contact"
            out = general(q, v, t)  # recomputes the free motion: nothing carried over
            self._last_had_contact = out[2].n_contacts > 0
            return out
        s.step_index += 1
        report = StepReport()
        report.step_seconds = _time.perf_counter() - t0
        return q_new, v_new, report
