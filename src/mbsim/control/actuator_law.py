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
then, 0 for rk4's explicit force). Effort limits: where the URDF effort e_k is finite and
> 0 and |tau_k| > e_k, tau_k is clamped to +-e_k, g_k = 0 and flags_k = sign(tau_k)
(control/actuation.py's docstring has the derivation). Units: N m or N; kp N m/rad or N/m,
kd N m s/rad or N s/m, g the same as kd.
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
        if limited[k] and abs(tau[k]) > effort[k]:
            if tau[k] > 0.0:
                flags[k] = 1
                tau[k] = effort[k]
            else:
                flags[k] = -1
                tau[k] = -effort[k]
            gain[k] = 0.0
