"""A compiled loop of steps: up to K free, joint-limit or contact steps of the run loop in one call.

The run loop (:meth:`mbsim.Simulator.run`) takes one step at a time through Python: the
stepper, the compiled free step (fast_step.py), collision detection, the run loop's own
bookkeeping. When nothing can happen in a step but free motion, that Python is all overhead:
:func:`free_run_kernel` takes such steps back to back in one call and stops, with the state of
the last step it accepted, at the first step that needs anything else. A step is accepted in
the loop only when the step-by-step path would take it as a compiled free step
(:class:`~mbsim.simcore.fast_step.FreeStepper`) and nothing of it would reach the run loop's
Python (events, applied forces, the summary's counters). The step it stops at, it has not
taken: Python takes it through the usual path, from the same state.

Per step, in the order of the step-by-step path (FreeStepper.step, then
limit_step.LimitStepper.step for the steps it hands on):

1. a joint limit near at v (``limit_rows_needed(q, v, v)``): a limit step (5b), or stop when
   the compiled limit step may not take the stepper's steps (``LimitStepper.eligible``);
2. kinematics of (q, v) (``forward_kinematics_kernel``; with nothing to collide
   ``motion_kinematics_kernel``, no world poses: nothing else of the step reads them), the
   moving shapes' poses (``shape_poses``) and the numba broadphase (``aabb_candidates``): stop
   at any candidate pair the scene allows whose bounding spheres come within the detection
   margin, or any shape whose bounding sphere comes within the margin of a ground half-space.
   These are the narrowphase's own first rejections (collision/narrowphase.py), so a step the
   loop takes is one in which detection finds no contact; a step it stops at may still find
   none, and then Python takes it as a free step. With the contact stage (``cl``,
   contact_loop.py) it does not stop there: the step's free motion (steps 3-4) is followed by
   the detection and, with contacts, the compiled contact step (step 4b), so contact steps too
   run in the loop. The run hands the stage over from its first call when the scene has pairs it
   may collide (``FreeLoop.early_stage``), so that a run with contacts compiles this kernel
   once, not once without the stage and again with it (each ~20 s on an empty numba cache);
   until the run has come to a contact (``FreeLoop.contacts_met``) the stage is not linked to
   the contact step (``ContactStage.link``): the loop stops at a step with contacts, and the run
   links it then (waiting for the compile-ahead helper, warmup.py) and calls again; a run of a
   process that linked a stage before links its own before its first call
   (``FreeLoop.link_early``: the contact step is compiled, the link costs nothing). A scene with
   nothing to collide never gets a stage (numba prunes it). The stage's kernels, the contact
   step among them, are called through their addresses (native_call.py), not compiled again
   inside this one, and the stage is handed over as one record (``contact_loop.StageType``, a
   pointer): its arrays, the step's contacts and the contact step's outputs stay in it, so this
   kernel carries no tuple of them (as a nested tuple of ~100 arrays it made LLVM's SROA pass
   most of this kernel's compile time);
3. tau = -D v + tau_a, as ``OSStepper._joint_forces`` computes it: tau_a the scenario's
   actuators (position, velocity and torque modes on their signals, gravity compensation,
   constant forces, the URDF effort clamp) by the same compiled law as the step-by-step path
   (control/actuator_law.py), with the implicit PD's diagonal dt g added to the armature;
   the signals are evaluated for the whole call in Python beforehand
   (``Actuators.signals_over``, element for element what the step's own evaluation gives).
   The effort bound of the implicit forces is settled at the free motion of step 4 by the
   same active-set passes as ``OSStepper._free_motion`` (actuator_law.settle_effort); a
   limit step whose impulses move an implicit force across its effort stops the loop
   (Python's general path takes that step).
   The loop does not run with a Python controller or ``step(tau)``: those are Python calls
   every step;
4. the articulated-body factorisation, bias and accelerations of q (ABA, dynamics.py: the
   same kernels as ``aba_kernel`` after its kinematics, which step 2 already did with the
   same arguments), v+ = v + dt qdd, q+ = q (+) dt v+ (``integrate_kernel``): the operations
   of ``free_step_kernel``, in its order, so the loop agrees bit for bit with the step-by-step
   path (tests/test_fast_step.py compares whole runs);
4b. with the contact stage and a pair that may touch: the step's contacts
   (``contact_loop.contact_set``; a pair it cannot take: stop) and, with any, the compiled
   contact step (``contact_loop.fused_step``: ``contact_step_kernel`` as ContactFuser.step
   calls it; a step it does not decide, or joint rows or acting limits with the contacts:
   stop), v+ its answer; an impulse that moves an implicit force across its effort changes
   that joint's side and the free motion and contact step are taken again, as
   ``OSStepper._general_step``'s active-set passes (actuator_law.settle_effort); the contact
   events (``contact_loop.record_events``, Simulator.events_of's rule, also for the first
   step without contact after one) and, recorded, its contact rows and diagnostics; an energy
   share above ``GAIN_TOL_ABS`` leaves a GAIN event row (step 5c);
5. a non-finite state, |v+| > max_speed or (a contact step) a penetration above
   ``max_penetration``: stop (Python's path raises the error); a limit
   the step would reach (``limit_rows_needed(q, v, v+)``): a limit step (5b) or stop;
5b. a limit step: the step is taken again from (q, v, tau) by
   :func:`~mbsim.simcore.limit_step.limit_step_kernel`, the function the step-by-step path
   calls, and kept only when nothing of it reaches the run loop's Python: the kernel decided
   it (no FALLBACK to the Python LCP chain, no bad state); else stop: Python takes that
   step. A recorded limit step records its LCP diagnostics (size, pivots, residual, solver)
   too;
5c. an event row, when the limits acting after the step (impulse > ``LIMIT_IMPULSE_MIN``)
   are not those acting before it (limit_begin / limit_end events; a free step has none
   acting: LIMITS) or an impact or recovery energy share of the limit step exceeds
   ``GAIN_TOL_ABS`` (energy_sources.py: a gain the summary may count; GAIN): the step index,
   the limits acting after it (v index, side, impulse, in row order), the two shares and q+,
   v+. The run loop turns the rows, after the call, into the events and summary entries the
   step-by-step path makes (:meth:`Simulator._loop_events`), so the loop need not stop;
6. the largest |v_k| / velocity limit so far (the run summary's ``max_velocity_ratio``, the
   rule of ``Simulator._velocity_ratio``);
7. at a recorded step (index a multiple of ``record_every``), the row the run loop writes:
   q, v, the energy and the body poses, computed as ``Simulator.energy`` and ``body_poses``
   compute them (kinematics into the Simulator's own Data, ``energy_kernel``,
   ``body_poses_kernel``), and the actuator force applied over the step with its effort
   flags (``Actuators.applied``). The run loop hands the rows to the writer in one batch
   (``ResultsWriter.append_free_steps``).

8. at a step whose index is a multiple of ``ENERGY_CHECK_EVERY``, the run loop's energy
   check (``Simulator._check_energy``: the total energy, computed as ``Simulator.energy``
   computes it, against the bound of the run's initial energy): the loop stops after a step
   that fails it (DIVERGED), and the run loop raises the error.

The run loop calls it for up to ``FREE_LOOP_CHUNK`` steps (fewer after a call that stopped
early, simulator.py); a run with a Python controller never starts in the loop
(:meth:`FreeLoop.eligible`). The loop keeps the summary's worst LCP residual of its limit
steps. Units: SI (s, rad or m, rad/s or m/s, J).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.collision.broadphase import AabbBroadphase, aabb_candidates
from mbsim.collision.prefilter import above_halfspace, spheres_apart
from mbsim.collision.scene import Contacts, shape_poses
from mbsim.collision.table import BODY
from mbsim.control.actuator_law import (
    CHECK,
    FULL,
    GROW,
    SETTLE_FREE_PASSES,
    actuator_forces_kernel,
    settle_effort,
)
from mbsim.simcore import warmup
from mbsim.simcore.contact_fused import I_DEEPEST as C_DEEPEST
from mbsim.simcore.contact_fused import I_E_IMPACTS as C_E_IMPACTS
from mbsim.simcore.contact_fused import I_E_STAB as C_E_STAB
from mbsim.simcore.contact_fused import I_PIVOTS as C_PIVOTS
from mbsim.simcore.contact_fused import I_RESIDUAL as C_RESIDUAL
from mbsim.simcore.contact_fused import I_SOLVER as C_SOLVER
from mbsim.simcore.contact_loop import (
    MAX_CONTACTS,
    ContactStage,
    keep_warm,
    stage_contacts,
    stage_events,
    stage_joint_rows,
    stage_rows,
    stage_step,
)
from mbsim.simcore.dynamics import (
    aba_accel_kernel,
    aba_bias_kernel,
    articulated_kernel,
    energy_kernel,
    rnea_kernel,
)
from mbsim.simcore.energy_sources import GAIN_TOL_ABS
from mbsim.simcore.fast_step import FreeStepper
from mbsim.simcore.joint_rows import limit_rows_needed
from mbsim.simcore.kinematics import (
    body_poses_kernel,
    forward_kinematics_kernel,
    integrate_kernel,
    motion_kinematics_kernel,
)
from mbsim.simcore.limit_step import (
    BAD as LIMIT_BAD,
)
from mbsim.simcore.limit_step import (
    FALLBACK,
    FREE_MOTION_DONE,
    I_E_IMPACTS,
    I_E_STAB,
    I_PIVOTS,
    I_RESIDUAL,
    I_ROWS,
    I_SIZE,
    I_SOLVER,
    KINEMATICS_DONE,
    N_INFO,
    OK,
    LimitStepper,
    friction_args,
    limit_step_body,
    step_work,
)
from mbsim.simcore.native_call import native
from mbsim.simcore.spatial import borrowed_all

#: why :func:`free_run_kernel` stopped before its step budget (its second result); DIVERGED:
#: after a step whose energy check failed (module docstring, step 8); BUFFERS: the contact
#: event or contact row buffers could not hold another step (the next call goes on)
DONE, LIMIT, CONTACT, BAD, DIVERGED, BUFFERS = 0, 1, 2, 3, 4, 5
#: whether the loop takes contact steps too (contact_loop.py; False: it stops at them, for
#: benchmarks and tests)
CONTACT_STEPS = True
#: the contact stage's larger kernels, called through their addresses (native_call.py): each
#: is compiled once, on its own, not again inside each compilation of the loop's kernel
_stage_contacts = native(stage_contacts)
_stage_step = native(stage_step)
_stage_events = native(stage_events)
_stage_rows = native(stage_rows)
_stage_joint_rows = native(stage_joint_rows)
#: the free step's kernels, the recording's and the limit step, called through their addresses
#: too: each is compiled on its own anyway (the run calls it from Python, or another kernel
#: links it), and linked here it was optimised and compiled to machine code again inside
#: each compilation of this kernel (a first run's compile time; docs/results.md, branch frec)
_forward_kinematics_kernel = native(forward_kinematics_kernel)
_motion_kinematics_kernel = native(motion_kinematics_kernel)
_articulated_kernel = native(articulated_kernel)
_aba_bias_kernel = native(aba_bias_kernel)
_aba_accel_kernel = native(aba_accel_kernel)
_integrate_kernel = native(integrate_kernel)
_energy_kernel = native(energy_kernel)
_body_poses_kernel = native(body_poses_kernel)
_rnea_kernel = native(rnea_kernel)
_actuator_forces_kernel = native(actuator_forces_kernel)
#: the joint-row step's body itself: the loop's arrays are borrowed already (above), so a
#: borrowing wrapper would only pass the ~60 arrays (some 500 words of array fields) once
#: more (docs/results.md, "pfree5")
_limit_step_body = native(limit_step_body)
_shape_poses = native(shape_poses)
_aabb_candidates = native(aabb_candidates)
#: the bits of an event row's kind (module docstring, step 5c): the limits acting changed
#: (limit_begin / limit_end events), a source's energy share exceeds GAIN_TOL_ABS
LIMITS, GAIN = 1, 2


@njit(cache=True)
def _may_touch(pairs, allowed, si, sf, bc, ground, reach):
    """Whether any candidate pair (allowed, bounding spheres within ``reach``) or any moving
    shape and a ground half-space (bounding sphere within ``reach`` of it; ``ground`` (m, 4)
    as the narrowphase takes it) may be in contact:
    the narrowphase's first tests (module docstring, step 2). A NaN never counts as apart."""
    for k in range(pairs.shape[0]):
        i, j = pairs[k, 0], pairs[k, 1]
        if i == j or not allowed[i, j]:
            continue
        if not spheres_apart(i, j, sf, bc, reach):
            return True
    n = si.shape[0]
    for k in range(ground.shape[0]):
        gh = n + k  # the half-space's shape index, as in the narrowphase
        for g in range(n):
            if si[g, BODY] < 0 or not allowed[g, gh]:
                continue
            if not above_halfspace(g, sf, bc, ground, k, reach):
                return True
    return False


@njit(cache=True)
def _same_limits(solved, info, dof, side, imp, active, n_active, limit_min):
    """Whether the limits acting after a limit step (impulse > ``limit_min``; none when the
    step had no row, ``solved`` False) are those acting before it: ``active`` (2 nv,) marks
    (v index k, side) at 2 k (lower) or 2 k + 1 (upper), ``n_active`` of them
    (Simulator.limit_events_of: no event then)."""
    n = 0
    if solved:
        for i in range(int(info[I_ROWS])):
            if imp[i] > limit_min:
                slot = 2 * dof[i] + (0 if side[i] > 0 else 1)
                if not active[slot]:
                    return False
                n += 1
    return n == n_active


@njit(cache=True)
def _event_row(
    row, step, kind, solved, info, dof, side, imp, limit_min, active, n_active, q_new, v_new,
    ev_step, ev_kind, ev_n, ev_dof, ev_side, ev_imp, ev_gain, ev_q, ev_v,
):  # fmt: skip
    """Row ``row`` of the event rows (module docstring, step 5c) for step ``step``, of
    ``kind`` (LIMITS | GAIN), q+ and v+; with LIMITS the limits acting after it (impulse >
    ``limit_min``, in row order; none when the limit step had no row, ``solved`` False),
    which also replace ``active`` (:func:`_same_limits`' marks). Returns how many limits act
    (``n_active`` when unchanged). A function of its own: written out in free_run_kernel
    this costs a first run more compile time."""
    ev_step[row] = step
    ev_kind[row] = kind
    ev_n[row] = 0
    if kind & LIMITS:
        for i in range(active.shape[0]):
            active[i] = 0
        n_active = 0
        if solved:
            for i in range(int(info[I_ROWS])):
                if imp[i] > limit_min:
                    active[2 * dof[i] + (0 if side[i] > 0 else 1)] = 1
                    ev_dof[row, n_active] = dof[i]
                    ev_side[row, n_active] = side[i]
                    ev_imp[row, n_active] = imp[i]
                    n_active += 1
        ev_n[row] = n_active
    ev_gain[row, 0] = info[I_E_IMPACTS] if solved else 0.0
    ev_gain[row, 1] = info[I_E_STAB] if solved else 0.0
    for i in range(q_new.shape[0]):
        ev_q[row, i] = q_new[i]
    for i in range(v_new.shape[0]):
        ev_v[row, i] = v_new[i]
    return n_active


@njit(cache=True)
def event_poses(
    parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, E, r, R_world, p_world, vel, cbias,
    qs, at, body, zero_v, P, R,
):  # fmt: skip
    """The world poses of the bodies of limit events at the configurations of event rows
    (Simulator._loop_events): for each event j, the kinematics of ``qs[at[j]]`` (zero
    velocity, as ``forward_kinematics(model, data, q)``; once per run of equal ``at``) into
    the Data's arrays, then P[j] = p_world[body[j]] (m) and R[j] = R_world[body[j]]. The
    kernel ``forward_kinematics`` calls, so the poses are its bits."""
    last = -1
    for j in range(at.shape[0]):
        i = at[j]
        if i != last:
            _forward_kinematics_kernel(
                parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, qs[i], zero_v, E, r,
                R_world, p_world, vel, cbias,
            )  # fmt: skip
            last = i
        b = body[j]
        for a in range(3):
            P[j, a] = p_world[b, a]
            for c in range(3):
                R[j, a, c] = R_world[b, a, c]


@njit(cache=True, forceinline=True)
def _free_motion(
    parent, vi, nvj, S, inertia, E, r, IA, U, Dinv, pivots, scratch, armature, vel, cbias, tau,
    pA, u, a0, acc, qdd, v, dt, v_new,
):  # fmt: skip
    """The free motion on the Data's kinematics (ABA: factorisation, bias and acceleration
    sweeps): qdd and v_new = v + dt qdd (m/s, rad/s)."""
    _articulated_kernel(parent, vi, nvj, S, inertia, E, r, IA, U, Dinv, pivots, scratch, armature)
    _aba_bias_kernel(parent, vi, nvj, S, inertia, E, r, vel, cbias, IA, U, Dinv, tau, pA, u)
    _aba_accel_kernel(parent, vi, nvj, S, E, r, cbias, U, Dinv, u, a0, acc, qdd)
    for i in range(v.shape[0]):
        v_new[i] = v[i] + dt * qdd[i]


@njit(cache=True, forceinline=True)
def _saturated(armature, base_armature, act_gain, tau, damping, v, act_tau, dt):
    """``OSStepper._saturated``: after an effort pass, the implicit PD's diagonal (armature +
    dt g, kg m^2 or kg) and the joint forces (N m or N) from the pass's force and gain."""
    for i in range(v.shape[0]):
        armature[i] = base_armature[i] + dt * act_gain[i]
        tau[i] = -damping[i] * v[i] + act_tau[i]


@njit(cache=True)
def free_run_kernel(
    parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, damping,
    E, r, R_world, p_world, vel, cbias, IA, U, Dinv, pivots, pA, u, acc, scratch, qdd, armature,
    lim_on, lim_qi, lim_vi, lim_lower, lim_upper, lim_margin,
    collide, si, sf, local_R, local_p, Rw, pw, bc, allowed, ground, reach,
    bp_index, bp_moving, bp_mrow, bp_mindex, bp_msphere, bp_msize, bp_moffset, bp_lo, bp_hi,
    bp_out, vl_dofs, vl_limit, vl_best, vl_dof, every, k0, rS, rE, rr, rRw, rpw, rvel, rcbias,
    mass, com, poses, rec_step, rec_q, rec_v, rec_e, rec_pose, q, v, dt, max_speed, n_max, tau,
    q_new, v_new,
    act_on, constant, cmd_qi, cmd_vi, mode, kp, kd, gravity_comp, sig_u, sig_ref, sig_dref,
    sig_ff, grav_any, aS, aE, ar, aRw, apw, avel, acbias, aacc, aforce, atau, zv, dt_pd,
    implicit, has_gain, saturable, act_tau0, act_gain0, limited, effort, base_armature, act_tau,
    act_gain, act_flags, applied,
    last_flags, rec_tau, rec_flags, saturated, ls_on, wpA, wu, wacc, zero6, bv, ls_lower,
    ls_upper, ls_eps, ls_qi, ls_vi, ls_margin, ls_fdof, ls_fforce, stabilization,
    max_recovery_speed,
    impact_velocity, tol_rel, least_norm, active, n_active, ls_dof, ls_side, ls_imp, ls_info,
    ls_vstart, ls_stats, limit_min, rec_lcp, rec_solver, ev_step, ev_kind, ev_n, ev_dof,
    ev_side, ev_imp, ev_gain, ev_q, ev_v, check_every, e_bound, e_now, ls_work, cl,
):  # fmt: skip
    """Up to ``n_max`` free or joint-limit steps from (q, v), updated in place (module
    docstring). Returns (steps taken, why it stopped: DONE, LIMIT, CONTACT or BAD, rows
    recorded, event rows). Limit steps (``ls_on`` True; None: no limit step, and numba prunes the
    limit-step call from that compilation, so a model without enforced limits never compiles
    it: a first run's compile time; the ``ls_*`` and option arguments are those of
    limit_step.limit_step_kernel): ``active``/``n_active`` the limits acting at the start
    (:func:`_same_limits`); ``ls_stats`` gets [limit steps, worst LCP residual, steps solved
    with rows]; ``rec_lcp``/``rec_solver`` the recorded rows' LCP size, pivots, residual and
    SOLVER_CODES index (0 for a free step). ``vl_best[0]``
    holds the largest |v_k| / velocity limit so far and ``vl_dof[0]`` the v index it was
    reached at (left as it was when no step raised it).

    Recording: the first step is step ``k0 + 1``; after every step whose index is a multiple
    of ``every`` (0: none), its index, q, v, energy and (``poses``) body poses go to the next
    row of rec_step, rec_q, rec_v, rec_e, rec_pose (as ``Simulator.energy`` and
    ``body_poses`` compute them, with the kinematics in the recording Data arrays rS ...
    rcbias, dynamics.energy_kernel and kinematics.body_poses_kernel)."""
    # the array arguments borrowed (spatial.borrowed_all): Python holds them for the call,
    # so no step counts references of them (an atomic add and subtract each time one is
    # passed on or inlined: ~280 a step on panda-table, docs/results.md "loop16")
    (
        parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, damping, E,
        r, R_world, p_world,
    ) = borrowed_all(
        parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, damping, E,
        r, R_world, p_world,
    )  # fmt: skip
    (
        vel, cbias, IA, U, Dinv, pivots, pA, u, acc, scratch, qdd, armature, lim_qi, lim_vi,
        lim_lower, lim_upper,
    ) = borrowed_all(
        vel, cbias, IA, U, Dinv, pivots, pA, u, acc, scratch, qdd, armature, lim_qi, lim_vi,
        lim_lower, lim_upper,
    )  # fmt: skip
    (
        lim_margin, si, sf, local_R, local_p, Rw, pw, bc, allowed, bp_index, bp_moving,
        bp_mrow, bp_mindex, bp_msphere, bp_msize, bp_moffset,
    ) = borrowed_all(
        lim_margin, si, sf, local_R, local_p, Rw, pw, bc, allowed, bp_index, bp_moving,
        bp_mrow, bp_mindex, bp_msphere, bp_msize, bp_moffset,
    )  # fmt: skip
    (
        bp_lo, bp_hi, bp_out, vl_dofs, vl_limit, vl_best, vl_dof, rS, rE, rr, rRw, rpw,
        rvel, rcbias, mass, com,
    ) = borrowed_all(
        bp_lo, bp_hi, bp_out, vl_dofs, vl_limit, vl_best, vl_dof, rS, rE, rr, rRw, rpw,
        rvel, rcbias, mass, com,
    )  # fmt: skip
    (
        rec_step, rec_q, rec_v, rec_e, rec_pose, q, v, tau, q_new, v_new, cmd_qi, cmd_vi,
        mode, kp, kd, gravity_comp,
    ) = borrowed_all(
        rec_step, rec_q, rec_v, rec_e, rec_pose, q, v, tau, q_new, v_new, cmd_qi, cmd_vi,
        mode, kp, kd, gravity_comp,
    )  # fmt: skip
    (
        sig_u, sig_ref, sig_dref, sig_ff, aS, aE, ar, aRw, apw, avel, acbias, aacc, aforce,
        atau, zv, act_tau0,
    ) = borrowed_all(
        sig_u, sig_ref, sig_dref, sig_ff, aS, aE, ar, aRw, apw, avel, acbias, aacc, aforce,
        atau, zv, act_tau0,
    )  # fmt: skip
    (
        act_gain0, effort, base_armature, act_tau, act_gain, act_flags, applied, last_flags,
        rec_tau, rec_flags, saturated, wpA, wu, wacc, zero6, bv,
    ) = borrowed_all(
        act_gain0, effort, base_armature, act_tau, act_gain, act_flags, applied, last_flags,
        rec_tau, rec_flags, saturated, wpA, wu, wacc, zero6, bv,
    )  # fmt: skip
    (
        ls_lower, ls_upper, ls_qi, ls_vi, ls_fdof, ls_fforce, active, ls_dof, ls_side,
        ls_imp, ls_info, ls_vstart, ls_stats, rec_lcp, rec_solver, ev_step,
    ) = borrowed_all(
        ls_lower, ls_upper, ls_qi, ls_vi, ls_fdof, ls_fforce, active, ls_dof, ls_side,
        ls_imp, ls_info, ls_vstart, ls_stats, rec_lcp, rec_solver, ev_step,
    )  # fmt: skip
    (
        ev_kind, ev_n, ev_dof, ev_side, ev_imp, ev_gain, ev_q, ev_v, e_now, ls_work,
    ) = borrowed_all(
        ev_kind, ev_n, ev_dof, ev_side, ev_imp, ev_gain, ev_q, ev_v, e_now, ls_work,
    )  # fmt: skip
    nrec = 0
    nev = np.int64(0)  # not a literal: one compile of _event_row
    touch = False
    if cl is not None:  # the contact stage's record (contact_loop.ContactStage.arrays):
        # one field a statement, no tuple of them built (a first run's compile time)
        cinfo = cl.info
        cst = cl.cst
        ev_ci = cl.ev_i
        rc_i = cl.rc_i
        rec_cd = cl.rec_cd
        cstats = cl.stats
        gi = cl.gain
        max_pen = cl.max_pen
        warm = cl.warm
    nv = v.shape[0]
    nq = q.shape[0]
    a0 = np.zeros(6)
    for k in range(3):
        a0[3 + k] = -gravity[k]
    for step in range(n_max):
        # joint friction (ls_fdof: its DoFs) has rows on every step: each is a limit step,
        # or a contact step with the joint rows (contact_loop.stage_joint_rows)
        fric = ls_fdof.shape[0] > 0
        lim_near = lim_on and limit_rows_needed(
            lim_qi, lim_vi, lim_lower, lim_upper, lim_margin, q, v, v, dt
        )
        near = fric or lim_near
        if near and ls_on is None:
            return step, LIMIT, nrec, nev
        if collide:  # the shapes' poses below need the bodies' world poses
            _forward_kinematics_kernel(
                parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, q, v, E, r, R_world,
                p_world, vel, cbias,
            )  # fmt: skip
        else:  # the dynamics reads none (the step's energies use the recording's kinematics)
            _motion_kinematics_kernel(
                parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, q, v, E, r, R_world,
                p_world, vel, cbias,
            )  # fmt: skip
        if collide:
            _shape_poses(si, sf, local_R, local_p, R_world, p_world, Rw, pw, bc, False)
            pairs = _aabb_candidates(
                bp_index, bp_moving, bp_mrow, bp_mindex, bp_msphere, bp_msize, bp_moffset, Rw,
                pw, bp_lo, bp_hi, bp_out,
            )  # fmt: skip
            touch = _may_touch(pairs, allowed, si, sf, bc, ground, reach)
            if touch and cl is None:
                return step, CONTACT, nrec, nev
        nc = 0
        nl = 0  # the contact step's limit rows
        nz = 0  # the contact step's LCP rows
        had = False
        touch_rows = False  # joint rows at v and a pair that may touch: a contact step's?
        if cl is not None:  # contact steps in the loop (contact_loop.py); pruned without
            had = cst[1] > 0  # the last step had contacts: Python's general path's step
            if had and not touch and (near or n_active):
                return step, CONTACT, nrec, nev  # joint rows or acting limits after contacts
            touch_rows = near and touch
            if cst[2] + 3 * MAX_CONTACTS > ev_ci.shape[0] or cst[3] + MAX_CONTACTS > rc_i.shape[0]:
                return step, BUFFERS, nrec, nev
        if act_on:
            # the actuators of step k0 + step at t = (k0 + step) dt (control/actuator_law.py);
            # the gravity torque as Actuators.forces computes it, in the actuators' own Data
            if grav_any:
                _forward_kinematics_kernel(
                    parent, jtype, qi, vi, nvj, aS, tree_E, tree_r, axis, q, zv, aE, ar, aRw,
                    apw, avel, acbias,
                )  # fmt: skip
                _rnea_kernel(
                    parent, vi, nvj, aS, inertia, gravity, aE, ar, avel, acbias, zv, aacc,
                    aforce, atau,
                )  # fmt: skip
            _actuator_forces_kernel(
                constant, cmd_qi, cmd_vi, mode, kp, kd, gravity_comp, sig_u[step],
                sig_ref[step], sig_dref[step], sig_ff[step], atau, zv, False, q, v, dt_pd,
                implicit, limited, effort, act_tau, act_gain, act_flags,
            )  # fmt: skip
            if saturable is not None:  # each implicit joint's own force and gain
                for i in range(nv):
                    act_tau0[i] = act_tau[i]
                    act_gain0[i] = act_gain[i]
            if has_gain:  # OSStepper._joint_forces: the implicit PD's diagonal
                for i in range(nv):
                    armature[i] = base_armature[i] + dt * act_gain[i]
            for i in range(nv):
                tau[i] = -damping[i] * v[i] + act_tau[i]
        else:
            for i in range(nv):
                tau[i] = -damping[i] * v[i] + 0.0
        at_stop = near
        # saturable None: no effort bound to settle, and numba prunes the settle_effort calls
        # from that compilation (a first run's compile time), as ls_on's limit step
        settle = act_on and saturable is not None
        passes = 0
        # solved again while the effort bound changes a side
        while not near or settle or touch_rows:
            _free_motion(
                parent, vi, nvj, S, inertia, E, r, IA, U, Dinv, pivots, scratch, armature, vel,
                cbias, tau, pA, u, a0, acc, qdd, v, dt, v_new,
            )  # fmt: skip
            if not settle:
                break
            if saturable is None:  # pruned: nothing below is compiled without a bound
                break
            if not settle_effort(
                act_tau0, act_gain0, limited, effort, v, v_new, act_tau, act_gain, act_flags,
                FULL if passes < SETTLE_FREE_PASSES else GROW,
            ):  # fmt: skip
                break
            passes += 1
            _saturated(armature, base_armature, act_gain, tau, damping, v, act_tau, dt)
        pen = 0.0
        if cl is not None:
            if touch:  # the step's contacts and, with any, its contact step (contact_loop.py;
                # both kept in the stage's record, read there by the events and rows below)
                nc = _stage_contacts(pairs, Rw, pw, bc, R_world, p_world, cl)
                if nc < 0:
                    return step, CONTACT, nrec, nev  # a pair Python's detection must take
                if touch_rows and nc == 0 and had:
                    return step, CONTACT, nrec, nev  # a joint-row step after a contact step
                if nc > 0:
                    at_stop = False  # the joint rows go in the contact step
                    if lim_on or fric:
                        nl = _stage_joint_rows(
                            cl, ls_lower, ls_upper, ls_qi, ls_vi, ls_fdof, q, v, v_new, dt,
                            ls_margin, stabilization, max_recovery_speed,
                        )  # fmt: skip
                        if nl < 0 or (nl and ls_on is None):
                            return step, CONTACT, nrec, nev  # Python's (it compiles jtab)
                    ccode, nz = _stage_step(cl, q, v, tau, qdd, v_new)
                    if ccode != 0:
                        return step, CONTACT, nrec, nev  # Python's contact step decides
                    if saturable is not None and settle:
                        # an impulse moved an implicit force across its effort: its side
                        # changes and the step is taken again, as OSStepper._general_step's
                        # active-set passes after its contact step (actuator_law.py)
                        passes = 0
                        while settle_effort(
                            act_tau0, act_gain0, limited, effort, v, v_new, act_tau, act_gain,
                            act_flags, FULL if passes < SETTLE_FREE_PASSES else GROW,
                        ):  # fmt: skip
                            passes += 1
                            _saturated(
                                armature, base_armature, act_gain, tau, damping, v, act_tau, dt
                            )
                            # ABA at (q, v) from its kinematics: a collision's contact step
                            # left the Data's velocities and bias at its v_start
                            _forward_kinematics_kernel(
                                parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, q, v, E,
                                r, R_world, p_world, vel, cbias,
                            )  # fmt: skip
                            _free_motion(
                                parent, vi, nvj, S, inertia, E, r, IA, U, Dinv, pivots,
                                scratch, armature, vel, cbias, tau, pA, u, a0, acc, qdd, v, dt,
                                v_new,
                            )  # fmt: skip
                            if lim_on or fric:  # the rows at the new free motion
                                nl = _stage_joint_rows(
                                    cl, ls_lower, ls_upper, ls_qi, ls_vi, ls_fdof, q, v, v_new,
                                    dt, ls_margin, stabilization, max_recovery_speed,
                                )  # fmt: skip
                                if nl < 0 or (nl and ls_on is None):
                                    return step, CONTACT, nrec, nev
                            ccode, nz = _stage_step(cl, q, v, tau, qdd, v_new)
                            if ccode != 0:
                                return step, CONTACT, nrec, nev  # Python's step decides
                    deepest = cinfo[C_DEEPEST]
                    pen = -deepest if -deepest > 0.0 else 0.0
        if not near or nc > 0:
            _integrate_kernel(jtype, qi, vi, q, v_new, dt, q_new)
            for i in range(nq):
                if not np.isfinite(q_new[i]):
                    return step, BAD, nrec, nev
            for i in range(nv):
                if not np.isfinite(v_new[i]) or abs(v_new[i]) > max_speed:
                    return step, BAD, nrec, nev
            if nc > 0 and pen > max_pen:
                return step, BAD, nrec, nev  # Python's step raises the penetration error
            if (
                nc == 0
                and lim_on
                and limit_rows_needed(
                    lim_qi, lim_vi, lim_lower, lim_upper, lim_margin, q, v, v_new, dt
                )
            ):
                if ls_on is None or had:  # after a contact step: Python's general path
                    return step, LIMIT, nrec, nev
                at_stop = True
        code = -1
        kind = 0
        if at_stop:  # step 5b: the compiled joint-limit step (module docstring)
            if ls_on is None:  # numba prunes the call below: nothing of it is compiled
                return step, LIMIT, nrec, nev
            # the kinematics of (q, v) are in the Data (step 2), and the free motion too
            # unless a stop was near at v already (step 4 skipped): not computed again
            done = KINEMATICS_DONE if near and not touch_rows else FREE_MOTION_DONE
            code = _limit_step_body(
                parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, inertia, gravity, mass,
                com, E, r, R_world, p_world, vel, cbias, IA, U, Dinv, pivots, pA, u, acc,
                scratch, qdd, armature, wpA, wu, wacc, zero6, bv, ls_lower, ls_upper, ls_eps,
                ls_qi, ls_vi, ls_margin, ls_fdof, ls_fforce, dt, stabilization, max_recovery_speed,
                impact_velocity, tol_rel, least_norm, max_speed, q, v, tau, q_new, v_new,
                ls_vstart, ls_dof, ls_side, ls_imp, ls_info, done, ls_work,
            )  # fmt: skip
            if code == FALLBACK or code == LIMIT_BAD:
                return step, LIMIT, nrec, nev
            if saturable is not None:  # pruned without an effort bound (above)
                if (
                    code == OK and settle
                    and settle_effort(
                        act_tau0, act_gain0, limited, effort, v, v_new, act_tau, act_gain,
                        act_flags, CHECK,
                    )
                ):  # fmt: skip
                    return step, LIMIT, nrec, nev  # an impulse moved a force across its effort
            if code == OK and not (
                ls_info[I_E_IMPACTS] <= GAIN_TOL_ABS and ls_info[I_E_STAB] <= GAIN_TOL_ABS
            ):
                kind |= GAIN  # an energy gain the run summary counts
            if not _same_limits(
                code == OK, ls_info, ls_dof, ls_side, ls_imp, active, n_active, limit_min
            ):
                kind |= LIMITS  # a limit_begin or limit_end event
        elif n_active and nc == 0:  # a free step ends the limits still acting: limit_end
            if ls_on is None:  # no event row then (below): Python takes the step
                return step, LIMIT, nrec, nev
            kind |= LIMITS
        # step 5c: the event row (module docstring); numba prunes it with ls_on None: no
        # limit acts then (FreeLoop.ready), so none can end, and none can begin without a
        # limit step
        if cl is not None and nc > 0:
            # the contact step's limit rows (their impulses lead its LCP's unknowns, z) in
            # the limit step's slots: the limits acting after it, as a limit step's
            gi[I_ROWS] = nl
            zc = cl.b_z
            for i in range(nl):
                ls_dof[i] = cl.jb_dof[i]
                ls_side[i] = cl.jb_sign[i]
                ls_imp[i] = zc[i]
            if not _same_limits(True, gi, ls_dof, ls_side, ls_imp, active, n_active, limit_min):
                kind |= LIMITS  # a limit_begin or limit_end event
            if not (cinfo[C_E_IMPACTS] <= GAIN_TOL_ABS and cinfo[C_E_STAB] <= GAIN_TOL_ABS):
                kind |= GAIN  # the contact step's energy shares, in the limit step's slots
            gi[I_E_IMPACTS] = cinfo[C_E_IMPACTS]
            gi[I_E_STAB] = cinfo[C_E_STAB]
            if kind:
                n_active = _event_row(
                    nev, k0 + step + 1, kind, True, gi, ls_dof, ls_side, ls_imp, limit_min,
                    active, n_active, q_new, v_new, ev_step, ev_kind, ev_n, ev_dof, ev_side,
                    ev_imp, ev_gain, ev_q, ev_v,
                )  # fmt: skip
                nev += 1
                kind = 0
        if ls_on is not None:
            if kind:
                n_active = _event_row(
                    nev, k0 + step + 1, kind, code == OK, ls_info, ls_dof, ls_side, ls_imp,
                    limit_min, active, n_active, q_new, v_new, ev_step, ev_kind, ev_n, ev_dof,
                    ev_side, ev_imp, ev_gain, ev_q, ev_v,
                )  # fmt: skip
                nev += 1
        if code >= 0:
            ls_stats[0] += 1.0
        if code == OK:
            ls_stats[1] = max(ls_stats[1], ls_info[I_RESIDUAL])
            ls_stats[2] += 1.0
        if act_on:  # the force applied over the step (Actuators.applied) and its flags
            sat = False
            for i in range(nv):
                applied[i] = act_tau[i] - act_gain[i] * (v_new[i] - v[i])
                last_flags[i] = act_flags[i]
                sat = sat or act_flags[i] != 0
            saturated[0] += sat
        if cl is not None:
            if nc > 0:
                cst[4] += 1  # contact steps taken
                if warm:  # the step is kept: so are its changes to the warm store
                    keep_warm(cl)
                if pen > cstats[0]:
                    cstats[0] = pen
                if cinfo[C_RESIDUAL] > cstats[1]:
                    cstats[1] = cinfo[C_RESIDUAL]
            if nc > 0 or had:  # the contact events of the step (Simulator.events_of)
                _stage_events(cl, k0 + step + 1, nc)
        for i in range(nq):
            q[i] = q_new[i]
        for i in range(nv):
            v[i] = v_new[i]
        # the scan below only when some ratio exceeds the best so far: each ratio is then
        # compared with vl_best[0] on its own (independent divisions), not through the scan's
        # chain of comparisons, on most steps; the same ratios, so the same record
        raise_best = False
        for k in range(vl_dofs.shape[0]):
            raise_best |= abs(v[vl_dofs[k]]) / vl_limit[k] > vl_best[0]
        if raise_best:
            best = -1.0
            at = -1
            for k in range(vl_dofs.shape[0]):
                x = abs(v[vl_dofs[k]]) / vl_limit[k]
                if at < 0 or x > best:  # np.argmax: the first largest
                    best, at = x, k
            if best > vl_best[0]:
                vl_best[0] = best
                vl_dof[0] = vl_dofs[at]
        record = every > 0 and (k0 + step + 1) % every == 0
        check = check_every > 0 and (k0 + step + 1) % check_every == 0
        if record or check:
            # the energy as Simulator.energy computes it, for the row and the energy check
            # (step 8); one call site of each kernel: a first run's compile time
            _forward_kinematics_kernel(
                parent, jtype, qi, vi, nvj, rS, tree_E, tree_r, axis, q, v, rE, rr, rRw, rpw,
                rvel, rcbias,
            )  # fmt: skip
            _energy_kernel(inertia, mass, com, gravity, rRw, rpw, rvel, e_now)
        if record:
            for i in range(3):
                rec_e[nrec, i] = e_now[i]
            if poses:
                _body_poses_kernel(rRw, rpw, rec_pose[nrec])
            rec_step[nrec] = k0 + step + 1
            for i in range(nq):
                rec_q[nrec, i] = q[i]
            for i in range(nv):
                rec_v[nrec, i] = v[i]
                rec_tau[nrec, i] = applied[i]
                rec_flags[nrec, i] = last_flags[i]
            if code == OK:  # the limit step's diagnostics row (SOLVER_CODES: 1 + its code)
                rec_lcp[nrec, 0] = ls_info[I_SIZE]
                rec_lcp[nrec, 1] = ls_info[I_PIVOTS]
                rec_lcp[nrec, 2] = ls_info[I_RESIDUAL]
                rec_solver[nrec] = 1 + int(ls_info[I_SOLVER])
            else:
                rec_lcp[nrec, 0] = 0.0
                rec_lcp[nrec, 1] = 0.0
                rec_lcp[nrec, 2] = 0.0
                rec_solver[nrec] = 0
            if cl is not None:  # a contact step's diagnostics and contact rows
                rec_cd[nrec, 0] = nc
                rec_cd[nrec, 1] = pen
                if nc > 0:
                    rec_lcp[nrec, 0] = nz
                    rec_lcp[nrec, 1] = cinfo[C_PIVOTS]
                    rec_lcp[nrec, 2] = cinfo[C_RESIDUAL]
                    rec_solver[nrec] = 1 + int(cinfo[C_SOLVER])
                    _stage_rows(cl, k0 + step + 1, nc)
            nrec += 1
        if check and not e_now[2] <= e_bound:  # step 8: Simulator._check_energy fails
            return step + 1, DIVERGED, nrec, nev
    return n_max, DONE, nrec, nev


class FreeLoop:
    """The compiled loop of one :class:`~mbsim.Simulator` (module docstring): built once,
    asked per chunk of the run loop whether it may run (:meth:`ready`) and to
    :meth:`advance`."""

    def __init__(self, sim) -> None:
        self.sim = sim
        self._stepper = self._data = self._scene = None
        self._jl = self._rec_data = None
        self.records = None
        #: the event rows of the last advance (step 5c of the module docstring), in step
        #: order: arrays of the rows' step, kind bits LIMITS | GAIN, number n of limits
        #: acting after the step, their (rows, 2 nv) v indices, sides and impulses (the
        #: first n of a row), (rows, 2) energy_impacts and energy_stabilisation, (rows, nq) q+
        #: and (rows, nv) v+; views of the loop's buffers, valid until the next advance
        self.events: tuple = ()
        self.steps = 0  # steps taken in the loop (for profiles and tests)
        self.limit_steps = 0  # of which joint-limit steps (limit_step.py)
        self.contact_steps = 0  # of which contact steps (contact_loop.py)
        self.why = DONE  # why the last advance stopped (free_run_kernel's codes)
        #: the contact event rows of the last advance ((rows, 4) step, kind index of
        #: contact_loop.EVENT_NAMES, body_a, body_b; (rows, 10) mid point, normal, normal
        #: impulse, tangent impulse), or None; and its recorded contact rows ((rows, 3)
        #: step, body_a, body_b; (rows, 11) mid point, normal, normal and tangent impulse,
        #: gap), or None
        self.contact_events = None
        self.contact_records = None
        self._stage = None
        #: whether the run has come to a contact step (the loop stopped at one, or the
        #: step-by-step path took one): only then is the contact stage linked to the
        #: contact step (ContactStage.link waits for the compile-ahead helper), or handed to
        #: the kernel at all without :data:`early_stage`. The results are the same either
        #: way (bit for bit).
        self.contacts_met = False
        self.retry = False

    #: hand the contact stage (not linked yet) to the kernel from the run's first call when
    #: the scene has pairs it may collide (module docstring, step 2): one compilation of
    #: free_run_kernel for a run with contacts (False: only from the first contact, as
    #: before; for benchmarks and tests)
    early_stage = True

    @staticmethod
    def eligible(sim) -> bool:
        """Whether the loop may run at all for ``sim``: the stepper's compiled free step is
        eligible (Euler, ABA, no bilateral rows, fast_step.FreeStepper; with joint friction
        the compiled joint-row step too, limit_step.LimitStepper),
        the scene's broadphase is the numba one (or nothing can collide), and no force but
        joint damping and the scenario's actuators acts (no step(tau), no Python
        controller)."""
        st = sim.stepper
        if not st._fast.eligible(st):
            return False
        jl = st.joint_limits
        if jl is not None and bool(np.any(jl.friction > 0)) and not LimitStepper.eligible(st):
            return False  # joint friction: every step is a joint-row step, none of them ours
        c = st.collision
        if c is not None and not isinstance(getattr(c, "_broad", None), AabbBroadphase):
            return False
        return sim._controller is None and sim._extra_tau is None and st.torque == sim._torque

    def ready(self) -> bool:
        """Whether the next step may start in the loop: :meth:`eligible`, and the last step
        left nothing for the step-by-step path to finish (a contact step: FreeStepper's
        rule; a contact still counted active by the event bookkeeping, or a limit when the
        loop may not take limit steps)."""
        s = self.sim
        if not self.eligible(s) or (s._limits_active and not LimitStepper.eligible(s.stepper)):
            return False
        had = s.stepper._fast._last_had_contact
        if not had and not s._active:
            return True
        # after a contact step: the loop's contact stage takes the next steps, when it may
        self.contacts_met = True
        prev = s._prev_contacts
        return (
            had == bool(s._active)
            and isinstance(prev, Contacts)
            and len(prev) <= MAX_CONTACTS
            and self._contact_stage() is not None
        )

    def _contact_stage(self):
        """The loop's contact stage (contact_loop.ContactStage) when the loop may take
        contact steps (``CONTACT_STEPS`` and ``ContactStage.eligible``), else None."""
        s = self.sim
        if not CONTACT_STEPS or not ContactStage.eligible(s):
            return None
        if not self.contacts_met and not (self.early_stage and s.stepper.collision.allowed.any()):
            return None
        st = s.stepper
        key = (st, s.model, st.data, st.opt, st.collision)
        g = self._stage
        if g is None or any(a is not b for a, b in zip(g.key, key, strict=True)) or not g.current():
            g = self._stage = ContactStage(s)
        return g

    def link_early(self) -> bool:
        """Link the contact stage before the run's first contact when that costs nothing
        (``ContactStage.warm``: an earlier run of this process linked the contact step), so
        the loop's first call takes contact steps instead of stopping at the first one and
        being called again (the results are the same either way, bit for bit); True when it
        linked the stage now. A run's first contact in a process still links as before."""
        if self.contacts_met or not ContactStage.warm():
            return False
        stage = self._contact_stage()
        if stage is None or stage.linked:
            return False
        stage.link()
        return True

    def _bind(self) -> None:
        s = self.sim
        st, m = s.stepper, s.model
        d = st.data
        self._model_args = (
            m.parent, m.jtype, m.qi, m.vi, m.nvj, d.S, m.tree_E, m.tree_r, m.axis, m.inertia,
            m.gravity, np.ascontiguousarray(m.damping, dtype=np.float64),
        )  # fmt: skip
        self._data_args = (
            d.E, d.r, d.R_world, d.p_world, d.vel, d.cbias, d.IA, d.U, d.Dinv, d.pivots, d.pA,
            d.u, d.acc, d.scratch66, d.qdd, d.armature,
        )  # fmt: skip
        jl = st.joint_limits
        lim = FreeStepper._limit_args(jl, m)
        zi = np.zeros(0, dtype=np.int64)
        if lim is None:
            self._lim_args = (False, zi, zi, np.zeros(0), np.zeros(0), 0.0)
        else:
            self._lim_args = (True, *lim)
        c = st.collision
        if c is None:
            self._coll_args = (
                False, np.zeros((0, 14), np.int64), np.zeros((0, 15)), np.zeros((0, 3, 3)),
                np.zeros((0, 3)), np.zeros((0, 3, 3)), np.zeros((0, 3)), np.zeros((0, 3)),
                np.zeros((1, 1), np.bool_), np.zeros((0, 4)), 0.0,
                np.zeros(0, np.int64), np.zeros(0, np.bool_), np.zeros(0, np.int64),
                np.zeros(0, np.int64), np.zeros(0, np.bool_), np.zeros((0, 3)),
                np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((1, 2), np.int64),
            )  # fmt: skip
        else:
            t, b = c.table, c._broad
            self._coll_args = (
                True, t.si, t.sf, t.local_R, t.local_p, c._Rw, c._pw, c._bc, c.allowed,
                np.ascontiguousarray(c.ground, dtype=np.float64), float(c.reach), b._index,
                b._moving, b._mrow, b._mindex, b._msphere, b._msize, b._moffset, b._lo, b._hi,
                b._out,
            )  # fmt: skip
        k = s._vlim_dofs.astype(np.int64)
        self._vl = (k, np.ascontiguousarray(m.velocity_limit[k], dtype=np.float64))
        self._best = np.zeros(1)
        self._dof = np.zeros(1, dtype=np.int64)
        self._tau = np.zeros(m.nv)
        self._q_new = np.zeros(m.nq)
        self._v_new = np.zeros(m.nv)
        r = s.data  # the Simulator's own Data: Simulator.energy() computes there
        self._rec_args = (
            r.S, r.E, r.r, r.R_world, r.p_world, r.vel, r.cbias, m.mass, m.com,
        )  # fmt: skip
        a = s.actuators
        ad = a.data
        nv = m.nv
        self._act_args = (
            not a.idle, a.constant, *a._law,
        )  # fmt: skip
        self._act_data = (
            bool(a.gravity), ad.S, ad.E, ad.r, ad.R_world, ad.p_world, ad.vel, ad.cbias, ad.acc,
            ad.force, ad.tau, np.zeros(nv), a.dt if a.implicit else 0.0, a.implicit,
            a.has_gain, True if a.saturable else None, np.zeros(nv), np.zeros(nv), a.limited,
            a.effort,
            st._armature, np.zeros(nv), np.zeros(nv),
            np.zeros(nv, dtype=np.int8), np.zeros(nv), np.zeros(nv, dtype=np.int8),
        )  # fmt: skip
        self._applied, self._last_flags = self._act_data[-2], self._act_data[-1]
        self._saturated = np.zeros(1, dtype=np.int64)
        # the record and event buffers: made by the first advance for the run loop's longest
        # call (not here for one row and again there)
        self._rec_q = self._ev_step = None
        self._stepper, self._data, self._scene, self._jl = st, d, c, jl
        self._actuators = a
        self._rec_data = r
        # the compiled joint-limit step's arguments (limit_step.py), used when it is eligible
        nb = m.nb
        one = np.flatnonzero(m.nvj == 1)
        lo = np.full(nv, -np.inf) if jl is None else jl.lower
        hi = np.full(nv, np.inf) if jl is None else jl.upper
        eps = np.zeros(nv) if jl is None else jl.restitution
        self._ls_arrays = (
            np.zeros((nb, 6)), np.zeros((nb, 6)), np.zeros((nb, 6)), np.zeros((nb, 6)),
            np.zeros((nb, 6)), np.ascontiguousarray(lo, dtype=np.float64),
            np.ascontiguousarray(hi, dtype=np.float64),
            np.ascontiguousarray(eps, dtype=np.float64),
            np.ascontiguousarray(np.asarray(m.qi)[one], dtype=np.int64),
            np.ascontiguousarray(np.asarray(m.vi)[one], dtype=np.int64),
            0.0 if jl is None else float(jl.margin),
            *(friction_args(jl) if jl is not None else (zi, np.zeros(0))),
        )  # fmt: skip
        self._ls_out = (
            np.zeros(4 * nv, dtype=np.int64), np.zeros(4 * nv), np.zeros(4 * nv),
            np.zeros(N_INFO), np.zeros(nv),
        )  # fmt: skip
        self._active = np.zeros(2 * nv, dtype=np.int8)
        self._ls_stats = np.zeros(3)
        self._e_now = np.zeros(3)
        # the limit steps' one work buffer (limit_step.limit_step_body: any content)
        self._ls_work = np.empty(step_work(nv))

    def advance(
        self,
        n_max: int,
        summary,
        every: int = 0,
        poses: bool = False,
        check_every: int = 0,
        e_bound: float = np.inf,
    ) -> int:
        """Take up to ``n_max`` free or limit steps in the loop from the simulator's state; returns
        how many it took (0: the next step needs the step-by-step path). Updates the state
        (q, v, t, step counters, the applied forces of the last step: zero) and the summary's
        velocity-limit ratio as the step-by-step run loop would have. The steps whose index is
        a multiple of ``every`` (0: none) are recorded: :attr:`records` then holds (step, q,
        v, energy, body poses or None, applied actuator force, effort flags) of each, as
        arrays, and the LCP diagnostics of the recorded rows when a limit step was taken
        (None otherwise; ResultsWriter.append_free_steps' ``lcp``); :attr:`events` the event
        rows of the steps taken, for the run loop (Simulator._loop_events). At every step whose
        index is a multiple of ``check_every`` (0: none) the total energy is checked against
        ``e_bound`` (J; Simulator._check_energy's bound): the call stops after a step above it
        (DIVERGED). :attr:`why` says why the call stopped (free_run_kernel's codes)."""
        s = self.sim
        st = s.stepper
        if (
            st is not self._stepper or st.data is not self._data
            or st.collision is not self._scene or st.joint_limits is not self._jl
            or s.data is not self._rec_data or s.actuators is not self._actuators
        ):  # fmt: skip
            self._bind()
        m = s.model
        # the run loop's rules: its longest call, and the limit events' impulse bound
        from mbsim.simulator import FREE_LOOP_CHUNK, LIMIT_IMPULSE_MIN

        rows = n_max // every + 1 if every > 0 else 0
        # the buffers are made once for the run loop's longest call (its first is often
        # shorter): its steps and recorded rows
        most = max(n_max, FREE_LOOP_CHUNK)
        most_rows = max(rows, most // every + 1 if every > 0 else 0, 1)
        if self._rec_q is None or self._rec_q.shape[0] < rows:
            self._rec_buffers(most_rows)
        if self._ev_step is None or self._ev_step.shape[0] < n_max:
            self._ev_buffers(most)
        q = np.array(s.q, dtype=np.float64)
        v = np.array(s.v, dtype=np.float64)
        self._best[0] = summary.max_velocity_ratio
        self._dof[0] = -1
        k0 = s.step_index
        a = s.actuators
        if a.idle:
            ncmd = len(a.commands)
            signals = (np.zeros((n_max, ncmd)),) * 4
        else:  # each step's signals at its start time, as the step-by-step path takes them
            signals = a.signals_over(np.arange(k0, k0 + n_max) * float(st.opt.dt), most)
        self._saturated[0] = 0
        o = st.opt
        active = self._active
        active[:] = 0
        for dof, side in s._limits_active:
            active[2 * dof + (0 if side > 0 else 1)] = 1
        stats = self._ls_stats
        stats[:] = 0.0
        stage = self._contact_stage()
        cl = None if stage is None else stage.arrays(s, summary, n_max, rows, most, most_rows)
        head = (
            *self._model_args, *self._data_args, *self._lim_args, *self._coll_args, *self._vl,
            self._best, self._dof, int(every), k0, *self._rec_args, bool(poses),
            self._rec_step, self._rec_q, self._rec_v, self._rec_e, self._rec_pose, q, v,
            float(o.dt), float(o.max_speed),
        )  # fmt: skip
        tail = (
            self._tau, self._q_new,
            self._v_new, *self._act_args, *signals, *self._act_data, self._rec_tau,
            self._rec_flags, self._saturated, self._limit_steps(st), *self._ls_arrays,
            float(o.stabilization), float(o.max_recovery_speed), float(o.impact_velocity),
            float(o.lcp_tol_rel), o.lcp_selection == "least_norm", active,
            len(s._limits_active), *self._ls_out, stats, LIMIT_IMPULSE_MIN, self._rec_lcp,
            self._rec_solver, *self._ev, int(check_every), float(e_bound), self._e_now,
            self._ls_work,
        )  # fmt: skip
        if cl is not None and not stage.linked and self.contacts_met:
            # the loop calls the contact step by its address (contact_loop.fused_step): the
            # loop's kernel compiles first, while a helper may still be compiling the contact
            # step (warmup.py), and the contact step's address is taken once that is done.
            # A call of no step (n_max = 0: it returns at once, touching nothing) compiles
            # the kernel for these argument types if needed, or loads it: numba's own
            # dispatch types the ~170 arguments in C (typeof_pyval of each, in Python, cost
            # ~0.6 ms a run, the run loop's first contact)
            free_run_kernel(*head, 0, *tail, cl)
            warmup.wait()
            stage.link()
            cl = stage.record()
        n, why, nrec, nev = free_run_kernel(*head, int(n_max), *tail, cl)
        self.why = int(why)
        #: the call stopped at the run's first contact, which the loop may take now with its
        #: contact stage: the run loop calls again at once (no step-by-step step between)
        self.retry = False
        if self.why == CONTACT and not self.contacts_met:
            self.contacts_met = True
            # (an early stage not linked yet stops at the first step with contacts)
            self.retry = (stage is None or not stage.linked) and self._contact_stage() is not None
        csteps = 0
        self.contact_events = self.contact_records = None
        if stage is not None:
            csteps, self.contact_events, self.contact_records = stage.results(s, n, summary)
        # the event rows as the buffers hold them: read before the next call
        self.events = tuple(a[:nev] for a in self._ev)
        lcp = None
        if (stats[0] or csteps) and nrec:
            lcp = {
                "lcp_size": self._rec_lcp[:nrec, 0].astype(np.int64),
                "lcp_pivots": self._rec_lcp[:nrec, 1].astype(np.int64),
                "lcp_residual": self._rec_lcp[:nrec, 2].copy(),
                "solver": self._rec_solver[:nrec].copy(),
            }
            if csteps:  # contact steps: their contacts and penetration too
                cd = stage._cd
                lcp["n_contacts"] = cd[:nrec, 0].astype(np.int64)
                lcp["max_penetration"] = cd[:nrec, 1].copy()
        self.records = (
            self._rec_step[:nrec].copy(), self._rec_q[:nrec].copy(), self._rec_v[:nrec].copy(),
            self._rec_e[:nrec].copy(), self._rec_pose[:nrec].copy() if poses else None,
            self._rec_tau[:nrec].copy(), self._rec_flags[:nrec].copy(), lcp,
        )  # fmt: skip
        if n == 0:
            return 0
        if csteps:  # contact steps taken, as ContactFuser.step counts and leaves them
            st._fused.steps += csteps
            self.contact_steps += csteps
            st._soft_from = 0
        if stats[0]:  # limit steps taken (simcore/limit_step.py), as OSStepper would count
            st._limit.steps += int(stats[0])
            self.limit_steps += int(stats[0])
            summary.worst_lcp_residual = max(summary.worst_lcp_residual, float(stats[1]))
            if stats[2]:
                st._soft_from = 0  # solved at full recovery (OSStepper._softened_step)
        s.q, s.v = q, v
        st.step_index += n
        s.step_index += n
        s.t = s.step_index * st.opt.dt
        nv = m.nv
        if a.idle:
            s.tau, s.tau_limit = np.zeros(nv), np.zeros(nv, dtype=np.int8)
        else:  # the last step's applied force and effort flags (Simulator.step's)
            s.tau, s.tau_limit = self._applied.copy(), self._last_flags.copy()
        summary.saturated_steps += int(self._saturated[0])
        if stage is None:
            s._prev_contacts = None  # as events_of leaves it after a step without contact
        if self._dof[0] >= 0:
            s._velocity_ratio_at(summary, float(self._best[0]), int(self._dof[0]))
        self.steps += n
        return n

    def _limit_steps(self, stepper):
        """``free_run_kernel``'s ``ls_on``: True when the compiled limit step may take the
        stepper's steps and the model has limits or joint friction to enforce, else None
        (module docstring)."""
        rows = self._lim_args[0] or self._ls_arrays[-2].shape[0] > 0
        return True if rows and LimitStepper.eligible(stepper) else None

    def _ev_buffers(self, rows: int) -> None:
        m = self.sim.model
        nv2 = 2 * m.nv
        # np.empty: _event_row writes every element of a row that :meth:`advance` reads (the
        # first ev_n limits of its dof, side and impulse rows); zeroing the ~1-2 MB a new
        # Simulator's run makes cost ~0.2 ms a run (a1-stand)
        self._ev = (
            np.empty(rows, dtype=np.int64), np.empty(rows, dtype=np.int64),
            np.empty(rows, dtype=np.int64), np.empty((rows, nv2), dtype=np.int64),
            np.empty((rows, nv2)), np.empty((rows, nv2)), np.empty((rows, 2)),
            np.empty((rows, m.nq)), np.empty((rows, m.nv)),
        )  # fmt: skip
        self._ev_step = self._ev[0]

    def _rec_buffers(self, rows: int) -> None:
        m = self.sim.model
        self._rec_step = np.zeros(rows, dtype=np.int64)
        self._rec_q = np.zeros((rows, m.nq))
        self._rec_v = np.zeros((rows, m.nv))
        self._rec_e = np.zeros((rows, 3))
        self._rec_pose = np.zeros((rows, m.nb, 7))
        self._rec_tau = np.zeros((rows, m.nv))
        self._rec_flags = np.zeros((rows, m.nv), dtype=np.int8)
        self._rec_lcp = np.zeros((rows, 3))
        self._rec_solver = np.zeros(rows, dtype=np.int64)
