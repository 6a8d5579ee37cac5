"""The actuator law of one step, compiled: the one place the joint-force formulas live.

Called by :meth:`mbsim.control.actuation.Actuators.forces` on every step-by-step step and by
the compiled loop of free steps (simcore/free_loop.py) on each of its steps, so the two paths
apply the same floating-point operations in the same order. Per controlled DoF c (indices i
into q, k into v), with the signals already evaluated at the step's start time t:

* torque:   f = u(t)
* position: f = u_ff(t) + kp (q*(t) - q_i - dt_pd v_k) + kd (v*(t) - v_k),  g = kd + dt_pd kp
* velocity: f = u_ff(t) + kd (v*(t) - v_k),                                  g = kd

plus tau_g[k] (the gravity torque RNEA(q, 0, 0)) where gravity compensation is on. The joint's
force is tau_k = constant_k + sum of its f + extra_k (a Python controller's torque), and the
stepper adds dt g_k to the joint's diagonal when the PD is implicit (``implicit``; dt_pd = dt
then, 0 for rk4's explicit force).

Effort limits, where the URDF effort e_k is finite and > 0 (control/actuation.py's docstring
has the derivation), in two places:

* :func:`actuator_forces_kernel`, a joint without implicit part (g_k = 0: torque mode, rk4):
  its force is the explicit tau_k, clamped to +-e_k when |tau_k| > e_k, flags_k = sign(tau_k);
* :func:`settle_effort`, a joint with one (g_k > 0). Its force over the step is
  f_k = clamp(tau_k - g_k (v+_k - v_k), -e_k, e_k), which couples the joints through the
  step's velocity v+. With x = v+ - v, the step (M + dt D) x = dt (b + f(x)) is the
  stationarity condition of 1/2 x^T (M + dt D) x - dt b^T x - dt sum_k psi_k(x_k), psi_k'
  = f_k; f_k falls with x_k, so psi_k is concave and the function strictly convex: the
  step has one solution. The callers find it by an active-set (semismooth Newton) iteration:
  solve with the joints saturated so far (force +-e_k, no implicit part), evaluate
  tau_k - g_k x_k at the new velocity with every implicit joint's own tau_k and g_k (kept in
  ``tau0``, ``gain0``), saturate the free joints outside their bound and release the
  saturated ones no longer beyond theirs, and solve again until none changes. After
  ``SETTLE_FREE_PASSES`` passes a joint is only saturated, never released again (``GROW``),
  which ends the iteration within nv more passes whatever happens (no cycling); the joints
  it saturated apply +-e_k, flagged, and the others are inside their bound. Deciding at
  tau_k alone, the force before the implicit part, would saturate a light joint whose
  implicit force is well inside the bound, and the explicit +-e_k then reverses its
  velocity within one step: the force chatters between +e_k and -e_k. Jumping a saturated
  joint straight to its other bound cycles on coupled joints (a Panda wrist joint beside a
  saturated neighbour), hence the release first (:func:`settle_effort`).

Units: N m or N; kp N m/rad or N/m, kd N m s/rad or N s/m, g the same as kd.
"""

from __future__ import annotations

from numba import njit

#: the ``mode`` code of each controlled DoF
TORQUE, POSITION, VELOCITY = 0, 1, 2
MODE_CODES = {"torque": TORQUE, "position": POSITION, "velocity": VELOCITY}


@njit(cache=True)
def actuator_forces_kernel(
    constant, cmd_qi, cmd_vi, mode, kp, kd, gravity_comp, u, ref, dref, ff, tau_g, extra,
    has_extra, q, v, dt_pd, implicit, limited, effort, tau, gain, flags,
):  # fmt: skip
    """tau, g and the effort flags of one step into ``tau``, ``gain``, ``flags`` (module
    docstring). ``u``, ``ref``, ``dref``, ``ff``: each command's signals at t (ff 0 where it
    has none); ``tau_g`` is read only for commands with ``gravity_comp``; ``extra`` only when
    ``has_extra``."""
    nv = tau.shape[0]
    for k in range(nv):
        tau[k] = constant[k]
        gain[k] = 0.0
        flags[k] = 0
    for c in range(cmd_vi.shape[0]):
        i, k = cmd_qi[c], cmd_vi[c]
        if mode[c] == TORQUE:
            f = u[c]
        else:
            f = ff[c]
            if mode[c] == POSITION:
                f += kp[c] * (ref[c] - q[i] - dt_pd * v[k]) + kd[c] * (dref[c] - v[k])
                g = kd[c] + dt_pd * kp[c]
            else:
                f += kd[c] * (ref[c] - v[k])
                g = kd[c]
            if implicit:
                gain[k] += g
        if gravity_comp[c]:
            f += tau_g[k]
        tau[k] += f
    if has_extra:
        for k in range(nv):
            tau[k] += extra[k]
    for k in range(nv):
        # an implicit joint's force is decided by settle_effort, at the step's velocity
        if limited[k] and gain[k] == 0.0 and abs(tau[k]) > effort[k]:
            if tau[k] > 0.0:
                flags[k] = 1
                tau[k] = effort[k]
            else:
                flags[k] = -1
                tau[k] = -effort[k]


#: :func:`settle_effort` modes: saturate and release (FULL), only saturate (GROW), count
#: the joints whose side would change without changing them (CHECK)
FULL, GROW, CHECK = 0, 1, 2
#: active-set passes before the iteration only saturates (module docstring); the steps of
#: the tests and samples settle within 3
SETTLE_FREE_PASSES = 8


@njit(cache=True)
def settle_effort(tau0, gain0, limited, effort, v, v_after, tau, gain, flags, mode):
    """One active-set pass of the effort bound of the implicit joints (module docstring): at
    the step's velocity ``v_after``, each implicit joint's force tau0_k - gain0_k (v_after_k
    - v_k) decides its side (+1 above e_k, -1 below -e_k, else 0); where that differs from
    ``flags``, the joint is saturated (tau_k = +-e_k, g_k = 0) or released (tau0_k, gain0_k)
    in place, as ``mode`` allows (FULL, GROW: no release, CHECK: nothing written). A
    saturated joint whose force now falls on the other side is released, not saturated on
    that side: jumping from bound to bound cycles when its free force lies between them
    (a Panda wrist joint driven beside a saturated neighbour did, pass after pass). Returns
    how many joints changed side (would have, for CHECK); 0: the step is settled."""
    n = 0
    for k in range(v.shape[0]):
        if limited[k] and gain0[k] != 0.0:
            f = tau0[k] - gain0[k] * (v_after[k] - v[k])
            side = 1 if f > effort[k] else (-1 if f < -effort[k] else 0)
            if side == flags[k] or (mode == GROW and flags[k] != 0):
                continue
            if flags[k] != 0:  # released first, never flipped to the other bound
                side = 0
            n += 1
            if mode == CHECK:
                continue
            flags[k] = side
            if side == 0:
                tau[k], gain[k] = tau0[k], gain0[k]
            else:
                tau[k], gain[k] = side * effort[k], 0.0
    return n
