"""The free-motion fast path of the OS step: one compiled call when nothing constrains the step.

A step with no contact, no bilateral row, no joint-limit row and a formulation that does not
solve an LCP every step is plain semi-implicit Euler on the free dynamics (000 Sec. 6 with an
empty contact set). Joint limits may exist: a step in which no limit is near (the rule of
:meth:`mbsim.simcore.joint_rows.JointLimits.rows`, gap plus the step's travel at the faster
of v and v+ below the margin, checked by :func:`limit_rows_needed`) has no limit row in the
general path either, so it is the same free step. Joint friction rows are on every step, so
every step of a model with joint friction goes to ``general`` (below: the compiled
joint-row step of limit_step.py takes it when it may, else the general path).

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
``max_speed``; when it is not, the general path redoes the step from the same joint forces
and raises its error.

The caller (:class:`FreeStepper`) decides when the fast path may run (``eligible``) and runs
collision detection first, on the kinematics of q: a step that finds a contact goes through the
general path from the start, before any joint force is asked for (a controller is called once
a step; nothing the fast path computed leaks into a contact step). After a contact step the
fast path is skipped until a step finds no contact, so a resting contact costs no second
detection per step. Limits are checked twice, both cheap and compiled: at v before the joint
forces are asked for (a limit already near sends the step to the general path untouched), and
at v+ after the free step (a limit the step would reach: the general path redoes it from the
same joint forces, so a controller is still called once). One difference a controller could
see: during its call on a free step, the stepper's ``data`` already holds the kinematics of
the current q (the general path holds the previous step's there).

``general`` is what :meth:`~mbsim.simcore.stepper.OSStepper.step` hands in: the compiled
joint-limit step (limit_step.LimitStepper.step), which takes the steps whose only rows are
joint-limit rows and passes every other to ``OSStepper._general_step``.
"""

from __future__ import annotations

import time as _time

import numpy as np
from numba import njit

from mbsim.simcore.dynamics import aba_kernel
from mbsim.simcore.joint_rows import limit_rows_needed
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
        #: the stepper's parts :meth:`eligible` last answered for, and its answer
        self._eligible_for, self._eligible = None, False
        #: the JointLimits :meth:`no_joint_rows` last looked at, and whether its rows can
        #: only be 1-DoF limit rows (no joint friction, no spherical limits)
        self._rows_for, self._only_limits = None, False
        #: the JointLimits :meth:`step` last looked at, and whether it has joint friction
        self._friction_for, self._friction = None, False
        self._data = self._model = None
        self._bind(m, stepper.data)
        self._jl = stepper.joint_limits
        self._limits = self._limit_args(self._jl, m)

    @staticmethod
    def _limit_args(limits, m):
        """(qi, vi, lower, upper, margin) of the limited 1-DoF joints, or None."""
        if limits is None:
            return None
        one = np.flatnonzero(m.nvj == 1)
        vi = np.asarray(m.vi, dtype=np.int64)[one]
        keep = np.isfinite(limits.lower[vi]) | np.isfinite(limits.upper[vi])
        if not keep.any():
            return None
        vi = vi[keep]
        qi = np.asarray(m.qi, dtype=np.int64)[one][keep]
        return (
            qi, vi, np.ascontiguousarray(limits.lower[vi], dtype=np.float64),
            np.ascontiguousarray(limits.upper[vi], dtype=np.float64), float(limits.margin),
        )  # fmt: skip

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
        rows, a formulation that solves no LCP without contacts, and no spherical-joint
        limits (joint limits are checked per step; joint friction, rows on every step, sends
        every step to ``general``: module docstring). Conservative: any new kind of
        constraint row must turn it off here. Applied forces (damping, controls, implicit PD
        gains) go through the stepper's own ``_joint_forces``, as in the general path."""
        jl = stepper.joint_limits
        # asked up to three times a step: the answer is kept while the stepper's parts are
        # the same objects (a JointLimits is not changed in place once the stepper has it)
        key = (stepper.rk4, stepper.dynamics, stepper.bilateral, stepper.formulation, jl)
        fast = getattr(stepper, "_fast", None)
        if fast is not None and fast._eligible_for is not None:
            if all(a is b for a, b in zip(key, fast._eligible_for, strict=True)):
                return fast._eligible
        ok = (
            not stepper.rk4
            and stepper.dynamics.name == "aba"
            and stepper.bilateral is None
            and not stepper.formulation.always_solves
            and (jl is None or not jl.spherical)  # spherical limits: general path only
        )
        if fast is not None:
            fast._eligible_for, fast._eligible = key, ok
        return ok

    def no_joint_rows(self, q, v, v_free) -> bool:
        """Whether ``JointLimits.rows`` would give no row this step: no joint friction, no
        spherical limits and no 1-DoF limit near at v or v_free (``limit_rows_needed``, the
        rule of ``rows``), asked by the general path before it builds the rows (a compiled
        test of a microsecond for rows() of ~15 us on a contact step with no stop near)."""
        s = self.s
        jl = s.joint_limits
        if jl is not self._jl:  # set after the stepper was built
            self._jl = jl
            self._limits = self._limit_args(jl, s.model)
        if jl is not self._rows_for:
            self._rows_for = jl
            self._only_limits = (
                jl is not None and not bool(np.any(jl.friction > 0)) and not jl.spherical
            )
        if not self._only_limits:
            return False
        lim = self._limits
        return lim is None or not limit_rows_needed(*lim, q, v, v_free, float(s.opt.dt))

    def _handed_on(self, general, q, v, t):
        """``general(q, v, t)``'s step, remembering whether it had contacts: the step after a
        contact step goes to the general path too (:meth:`step`), and the compiled loop's
        contact stage resumes from it (free_loop.FreeLoop.ready)."""
        out = general(q, v, t)
        self._last_had_contact = out[2].n_contacts > 0
        return out

    def step(self, q, v, t, general):
        """(q+, v+, StepReport) of one step: the fast path when the step has no contact and no
        limit row, else ``general(q, v, t[, tau])`` (the stepper's general path, given the
        joint forces when they were already asked for), which also takes any step whose state
        turns out bad (it raises the usual error), every step after a contact step until
        one finds no contact, and every step of a model with joint friction."""
        jl = self.s.joint_limits
        if jl is not self._friction_for:
            self._friction_for = jl
            self._friction = jl is not None and bool(np.any(jl.friction > 0))
        if self._friction or self._last_had_contact:
            # joint friction rows: on every step (module docstring); after a contact step
            return self._handed_on(general, q, v, t)
        from mbsim.simcore.stepper import StepReport

        t0 = _time.perf_counter()
        s = self.s
        m, d, o = s.model, s.data, s.opt
        if d is not self._data or m is not self._model:  # gathered once per Model and Data
            self._bind(m, d)
        if s.joint_limits is not self._jl:  # set after the stepper was built
            self._jl = s.joint_limits
            self._limits = self._limit_args(self._jl, m)
        q = np.ascontiguousarray(q, dtype=np.float64)
        v = np.ascontiguousarray(v, dtype=np.float64)
        lim = self._limits
        dt = float(o.dt)
        if lim is not None and limit_rows_needed(*lim, q, v, v, dt):
            # a limit is near already: before any joint force
            return self._handed_on(general, q, v, t)
        if s.collision is not None:
            # contacts first, from the poses of q: a contact step goes to the general path
            # before the joint forces are asked for, so a controller is called once a step
            forward_kinematics_kernel(*self._fk_args, q, v, *self._fk_out)
            c = s.collision.detect(d.R_world, d.p_world)
            if c is not None and len(c.gap):  # a detector may answer None for "no contact"
                return self._handed_on(general, q, v, t)
        tau = s._joint_forces(t, q, v)  # the general path's own rule (damping, controls)
        q_new = np.empty(m.nq)
        v_new = np.empty(m.nv)
        passes = 0
        while True:  # solved again while the effort bound changes a side (_free_motion)
            bad = free_step_kernel(
                *self._model_args, q, v, np.ascontiguousarray(tau, dtype=np.float64), dt,
                float(o.max_speed), *self._data_args, q_new, v_new,
            )  # fmt: skip
            bounded = None if bad else s._saturated(v, v_new, passes)
            if bounded is None:
                break
            passes += 1
            tau = bounded
        if bad:  # diverging: the general path redoes the step and raises its error
            return general(q, v, t, tau)
        if lim is not None and limit_rows_needed(*lim, q, v, v_new, dt):
            return general(q, v, t, tau)  # the step reaches a limit: its row is needed
        s.step_index += 1
        report = StepReport()
        report.step_seconds = _time.perf_counter() - t0
        return q_new, v_new, report
