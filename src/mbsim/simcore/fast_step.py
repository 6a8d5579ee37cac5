"""The free-motion fast path of the OS step: one compiled call when nothing constrains the step.

A step with no contact, no bilateral row, no joint-limit row and a formulation that does not
solve an LCP every step is plain semi-implicit Euler on the free dynamics (000 Sec. 6 with an
empty contact set):

    tau  = -D v + tau_applied(t, q, v)            (OSStepper._joint_forces, N m or N)
    qdd  = (M + diag(armature))^-1 (tau - C(q, v))   (ABA, 004 Eq. 0.31; armature = dt D
                                                   plus dt g of implicit PD gains)
    v+   = v + dt qdd
    q+   = q (+) dt v+                            (kinematics.integrate_kernel)

:func:`free_step_kernel` does the last three in one numba call with the same kernels and the
same floating-point operations, in the same order, as the general path of
:meth:`mbsim.simcore.stepper.OSStepper.step` (``aba_kernel``, ``v + dt * qdd``,
``integrate_kernel``); tau comes from the stepper's own ``_joint_forces``. The two paths agree
bit for bit (tests/test_fast_step.py). The kernel also checks the state is finite and below
``max_speed``; when it is not, the general path redoes the step and raises its error (the
torque callback is then called a second time for that failing step).

The caller (:class:`FreeStepper`) decides when the fast path may run (``eligible``) and runs
collision detection first, on the kinematics of q: a step that finds a contact goes through the
general path from the start, before any joint force is asked for (a controller is called once
a step; nothing the fast path computed leaks into a contact step). After a contact step the
fast path is skipped until a step finds no contact, so a resting contact costs no second
detection per step. One difference a controller could see: during its call on a free step,
the stepper's ``data`` already holds the kinematics of the current q (the general path holds
the previous step's there).
"""

from __future__ import annotations

import time as _time

import numpy as np
from numba import njit

from mbsim.simcore.dynamics import aba_kernel
from mbsim.simcore.kinematics import forward_kinematics_kernel, integrate_kernel


@njit(cache=True)
def free_step_kernel(
    parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, q, v, tau, dt,
    max_speed, E, r, R_world, p_world, vel, cbias, IA, U, Dinv, pivots, pA, u, acc, scratch,
    qdd, armature, q_new, v_new,
):  # fmt: skip
    """One free-motion Euler step (module docstring) under the applied joint forces ``tau``.
    Writes qdd (and the kinematics and articulated factorisation of q into the Data arrays),
    v_new and q_new. Returns 0 when the new state is finite with every |v+| <= max_speed, 1
    otherwise (the caller then takes the general path, which raises the matching error)."""
    nv = v.shape[0]
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
        self._last_had_contact = False
        self._data = self._model = None
        self._bind(m, stepper.data)

    def _bind(self, m, d) -> None:
        """The kernel's Model and Data arguments: arrays updated in place, never replaced
        (data.py: allocated once); a new Model or Data is bound again."""
        self._model_args = (
            m.parent, m.jtype, m.qi, m.vi, m.nvj, d.S, m.tree_E, m.tree_r, m.axis, m.inertia,
            m.gravity,
        )  # fmt: skip
        self._fk_args = (m.parent, m.jtype, m.qi, m.vi, m.nvj, d.S, m.tree_E, m.tree_r, m.axis)
        self._fk_out = (d.E, d.r, d.R_world, d.p_world, d.vel, d.cbias)
        self._data_args = (
            d.E, d.r, d.R_world, d.p_world, d.vel, d.cbias, d.IA, d.U, d.Dinv, d.pivots, d.pA,
            d.u, d.acc, d.scratch66, d.qdd, d.armature,
        )  # fmt: skip
        self._data, self._model = d, m

    @staticmethod
    def eligible(stepper) -> bool:
        """Whether the fast path may replace the general one at all: Euler, ABA, no bilateral
        rows, a formulation that solves no LCP without contacts, and no other constraint rows
        the stepper knows of (joint limits and friction: ``joint_limits``). Conservative: any
        new kind of constraint row must turn it off here. Applied forces (damping, controls,
        implicit PD gains) go through the stepper's own ``_joint_forces``, as in the general
        path."""
        return (
            not stepper.rk4
            and stepper.dynamics.name == "aba"
            and stepper.bilateral is None
            and not stepper.formulation.always_solves
            and stepper.joint_limits is None
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
        if s.collision is not None:
            # contacts first, from the poses of q: a contact step goes to the general path
            # before the joint forces are asked for, so a controller is called once a step
            forward_kinematics_kernel(*self._fk_args, q, v, *self._fk_out)
            c = s.collision.detect(d.R_world, d.p_world)
            if c is not None and len(c.gap):  # a detector may answer None for "no contact"
                out = general(q, v, t)
                self._last_had_contact = out[2].n_contacts > 0
                return out
        tau = s._joint_forces(t, q, v)  # the general path's own rule (damping, controls)
        q_new = np.empty(m.nq)
        v_new = np.empty(m.nv)
        bad = free_step_kernel(
            *self._model_args, q, v, np.ascontiguousarray(tau, dtype=np.float64), float(o.dt),
            float(o.max_speed), *self._data_args, q_new, v_new,
        )  # fmt: skip
        if bad:  # diverging: the general path redoes the step and raises its error
            return general(q, v, t)
        s.step_index += 1
        report = StepReport()
        report.step_seconds = _time.perf_counter() - t0
        return q_new, v_new, report
