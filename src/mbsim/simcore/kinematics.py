"""Forward kinematics, body velocities, constraint nodes and node Jacobians.

Body ``i``'s transform from its parent is ``Xup_i = X_J(q_i) X_T,i`` (joint motion after the
fixed tree transform), its spatial velocity ``V_i = Xup_i V_parent + S_i qdot_i`` (000 Eq. 60 /
004 Eq. 0.4, ``V = phi^* H^* theta-dot`` unrolled), and ``cbias_i = V_i x (S_i qdot_i)`` is the
velocity-product acceleration term (the ``a`` of 004 Eq. 0.5 for body-fixed S).

A constraint *node* (000 Sec. 3) is a frame rigidly attached to a body. Here its origin is a
point ``p`` on the body (body frame, m) and its axes are the world axes, so the node spatial
velocity is ``X_node V_body`` with ``X_node = X(R_world, p)``; its first three rows are the
body's angular velocity and the last three the point's linear velocity, both in world axes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.joints import ANGULAR_V_OFFSET, FREE, PRISMATIC, REVOLUTE, SPHERICAL
from mbsim.simcore.spatial import (
    cross_motion_scalars,
    plucker,
    quat_rotation,
    quat_to_rotation,
    xform_motion_scalars,
)


@njit(cache=True, inline="always")
def free_joint_transform(i, o, q, tree_E, tree_r, EJ, E, r, S):
    """Xup of free joint i (q[o:o+7] = [x y z qw qx qy qz]): E = R_J^T E_T, r = r_T + E_T^T p,
    and S's linear block R_J^T: v = [p-dot (joint frame); w (body frame)], the body-frame
    linear velocity is R_J^T p-dot, so S depends on q. ``EJ`` is 3x3 scratch (R_J)."""
    quat_to_rotation(q[o + 3], q[o + 4], q[o + 5], q[o + 6], EJ)  # R_J (child -> joint)
    for a in range(3):
        for b in range(3):
            E[i, a, b] = (
                EJ[0, a] * tree_E[i, 0, b] + EJ[1, a] * tree_E[i, 1, b] + EJ[2, a] * tree_E[i, 2, b]
            )
        r[i, a] = tree_r[i, a] + (
            tree_E[i, 0, a] * q[o] + tree_E[i, 1, a] * q[o + 1] + tree_E[i, 2, a] * q[o + 2]
        )
    for a in range(3):
        for b in range(3):
            S[i, 3 + a, b] = EJ[b, a]


@njit(cache=True, inline="always")
def spherical_transform(i, o, q, tree_E, tree_r, EJ, E, r):
    """Xup of spherical joint i (q[o:o+4] = [qw qx qy qz], the child's rotation R_J in the
    joint frame): E = R_J^T E_T, r = r_T (the joint only rotates about the joint frame's
    origin). S = [1; 0] is constant (body-frame angular velocity). ``EJ`` is 3x3 scratch."""
    quat_to_rotation(q[o], q[o + 1], q[o + 2], q[o + 3], EJ)  # R_J (child -> joint)
    for a in range(3):
        for b in range(3):
            E[i, a, b] = (
                EJ[0, a] * tree_E[i, 0, b] + EJ[1, a] * tree_E[i, 1, b] + EJ[2, a] * tree_E[i, 2, b]
            )
        r[i, a] = tree_r[i, a]


@njit(cache=True, inline="always")
def prismatic_transform(i, d, k0, k1, k2, tree_E, tree_r, E, r):
    """Xup of a prismatic joint slid by d (m) along axis k (joint frame): E = E_T,
    r = r_T + d E_T^T k."""
    for a in range(3):
        for b in range(3):
            E[i, a, b] = tree_E[i, a, b]
        r[i, a] = tree_r[i, a] + d * (
            tree_E[i, 0, a] * k0 + tree_E[i, 1, a] * k1 + tree_E[i, 2, a] * k2
        )


@njit(cache=True, inline="always")
def world_pose(i, p, E, r, R_world, p_world):
    """World pose of body i from its parent p's (world if p < 0): R_i = R_p E_i^T,
    p_i = p_p + R_p r_i (E, r: the Plücker transform from the parent frame)."""
    if p < 0:
        for a in range(3):
            for b in range(3):
                R_world[i, a, b] = E[i, b, a]
            p_world[i, a] = r[i, a]
    else:
        for a in range(3):
            for b in range(3):
                R_world[i, a, b] = (
                    R_world[p, a, 0] * E[i, b, 0]
                    + R_world[p, a, 1] * E[i, b, 1]
                    + R_world[p, a, 2] * E[i, b, 2]
                )
            p_world[i, a] = (
                p_world[p, a]
                + R_world[p, a, 0] * r[i, 0]
                + R_world[p, a, 1] * r[i, 1]
                + R_world[p, a, 2] * r[i, 2]
            )


@njit(cache=True, forceinline=True)
def pose_row(a0, a1, a2, pa, e00, e01, e02, e10, e11, e12, e20, e21, e22, r0, r1, r2):
    """Row (a0 a1 a2) of a parent's R_world and entry pa of its p_world to row a of the
    child's (R_p E^T, p_p + R_p r: :func:`world_pose` with the child's E and r as scalars)."""
    return (
        a0 * e00 + a1 * e01 + a2 * e02,
        a0 * e10 + a1 * e11 + a2 * e12,
        a0 * e20 + a1 * e21 + a2 * e22,
        pa + a0 * r0 + a1 * r1 + a2 * r2,
    )


@njit(cache=True)
def forward_kinematics_kernel(
    parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, q, v, E, r, R_world, p_world, vel, cbias
):
    """Poses, Plücker transforms (E, r), velocities and velocity-product terms of all bodies
    (:func:`_kinematics` with the world poses)."""
    return _kinematics(
        parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, q, v, E, r, R_world, p_world, vel,
        cbias, True,
    )  # fmt: skip


@njit(cache=True)
def motion_kinematics_kernel(
    parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, q, v, E, r, R_world, p_world, vel, cbias
):
    """:func:`forward_kinematics_kernel` without the world poses: E, r (S of free joints),
    vel and cbias, the same operations so the same bits; R_world and p_world are left as they
    were (stale). What the dynamics needs (the ABA and the joint-row step read E, r, vel,
    cbias); for a step that needs no world pose (no collision, no energy), ~25 % of the
    kernel's time (the compiled loop's steps without contacts, free_loop.py)."""
    return _kinematics(
        parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, q, v, E, r, R_world, p_world, vel,
        cbias, False,
    )  # fmt: skip


@njit(cache=True, inline="always")
def _kinematics(
    parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, q, v, E, r, R_world, p_world, vel, cbias,
    poses,
):  # fmt: skip
    """Poses (with ``poses``, a constant of each caller), Plücker transforms (E, r),
    velocities and velocity-product terms of all bodies.

    Xup = X_J X_T = X(E_J E_T, r_T + E_T^T r_J). For a revolute joint E_J = R(k, q)^T, so each
    column x of E_T is rotated by -q about the axis k with Rodrigues' formula
    R^T x = c x - s (k x x) + (1 - c) (k . x) k, without forming E_J.

    Written with scalar indices (:func:`prismatic_transform`, :func:`spherical_transform`,
    :func:`free_joint_transform`, :func:`world_pose`, ``spatial.xform_motion`` and
    ``cross_motion`` spelled out or called on scalars, the same operations in the same
    order; R_J, the joint velocity and the body velocity in scalars): no array view, no work
    array and one return, so numba's reference-count pruning removes every incref and decref.
    """
    nb = parent.shape[0]
    for i in range(nb):
        jt = jtype[i]
        if jt == REVOLUTE:
            k0, k1, k2 = axis[i, 0], axis[i, 1], axis[i, 2]
            c = np.cos(q[qi[i]])
            s = np.sin(q[qi[i]])
            t = 1.0 - c
            for b in range(3):
                x0, x1, x2 = tree_E[i, 0, b], tree_E[i, 1, b], tree_E[i, 2, b]
                kx = t * (k0 * x0 + k1 * x1 + k2 * x2)
                E[i, 0, b] = c * x0 - s * (k1 * x2 - k2 * x1) + kx * k0
                E[i, 1, b] = c * x1 - s * (k2 * x0 - k0 * x2) + kx * k1
                E[i, 2, b] = c * x2 - s * (k0 * x1 - k1 * x0) + kx * k2
            for a in range(3):
                r[i, a] = tree_r[i, a]
        elif jt == PRISMATIC:  # prismatic_transform
            k0, k1, k2 = axis[i, 0], axis[i, 1], axis[i, 2]
            d = q[qi[i]]
            for a in range(3):
                for b in range(3):
                    E[i, a, b] = tree_E[i, a, b]
                r[i, a] = tree_r[i, a] + d * (
                    tree_E[i, 0, a] * k0 + tree_E[i, 1, a] * k1 + tree_E[i, 2, a] * k2
                )
        else:  # spherical_transform, free_joint_transform: E = R_J^T E_T
            o = qi[i]
            qo = o if jt == SPHERICAL else o + 3
            j00, j01, j02, j10, j11, j12, j20, j21, j22 = quat_rotation(
                q[qo], q[qo + 1], q[qo + 2], q[qo + 3]
            )
            for b in range(3):
                x0, x1, x2 = tree_E[i, 0, b], tree_E[i, 1, b], tree_E[i, 2, b]
                E[i, 0, b] = j00 * x0 + j10 * x1 + j20 * x2
                E[i, 1, b] = j01 * x0 + j11 * x1 + j21 * x2
                E[i, 2, b] = j02 * x0 + j12 * x1 + j22 * x2
            if jt == SPHERICAL:
                for a in range(3):
                    r[i, a] = tree_r[i, a]
            else:  # r = r_T + E_T^T p; S's linear block R_J^T
                for a in range(3):
                    r[i, a] = tree_r[i, a] + (
                        tree_E[i, 0, a] * q[o]
                        + tree_E[i, 1, a] * q[o + 1]
                        + tree_E[i, 2, a] * q[o + 2]
                    )
                S[i, 3, 0], S[i, 3, 1], S[i, 3, 2] = j00, j10, j20
                S[i, 4, 0], S[i, 4, 1], S[i, 4, 2] = j01, j11, j21
                S[i, 5, 0], S[i, 5, 1], S[i, 5, 2] = j02, j12, j22
        e00, e01, e02 = E[i, 0, 0], E[i, 0, 1], E[i, 0, 2]
        e10, e11, e12 = E[i, 1, 0], E[i, 1, 1], E[i, 1, 2]
        e20, e21, e22 = E[i, 2, 0], E[i, 2, 1], E[i, 2, 2]
        r0, r1, r2 = r[i, 0], r[i, 1], r[i, 2]
        p = parent[i]
        if not poses:
            pass
        elif p < 0:  # world_pose
            R_world[i, 0, 0], R_world[i, 0, 1], R_world[i, 0, 2] = e00, e10, e20
            R_world[i, 1, 0], R_world[i, 1, 1], R_world[i, 1, 2] = e01, e11, e21
            R_world[i, 2, 0], R_world[i, 2, 1], R_world[i, 2, 2] = e02, e12, e22
            p_world[i, 0], p_world[i, 1], p_world[i, 2] = r0, r1, r2
        else:
            for a in range(3):
                R_world[i, a, 0], R_world[i, a, 1], R_world[i, a, 2], p_world[i, a] = pose_row(
                    R_world[p, a, 0], R_world[p, a, 1], R_world[p, a, 2], p_world[p, a],
                    e00, e01, e02, e10, e11, e12, e20, e21, e22, r0, r1, r2,
                )  # fmt: skip
        # vJ = S v_i
        n = nvj[i]
        o = vi[i]
        j0 = j1 = j2 = j3 = j4 = j5 = 0.0
        for kk in range(n):
            x = v[o + kk]
            j0 += S[i, 0, kk] * x
            j1 += S[i, 1, kk] * x
            j2 += S[i, 2, kk] * x
            j3 += S[i, 3, kk] * x
            j4 += S[i, 4, kk] * x
            j5 += S[i, 5, kk] * x
        if p >= 0:  # vel_i = Xup vel_p + vJ
            m0, m1, m2, m3, m4, m5 = xform_motion_scalars(
                e00, e01, e02, e10, e11, e12, e20, e21, e22, r0, r1, r2,
                vel[p, 0], vel[p, 1], vel[p, 2], vel[p, 3], vel[p, 4], vel[p, 5],
            )  # fmt: skip
            v0, v1, v2, v3, v4, v5 = m0 + j0, m1 + j1, m2 + j2, m3 + j3, m4 + j4, m5 + j5
        else:
            v0, v1, v2, v3, v4, v5 = j0, j1, j2, j3, j4, j5
        vel[i, 0], vel[i, 1], vel[i, 2] = v0, v1, v2
        vel[i, 3], vel[i, 4], vel[i, 5] = v3, v4, v5
        c0, c1, c2, c3, c4, c5 = cross_motion_scalars(
            v0, v1, v2, v3, v4, v5, j0, j1, j2, j3, j4, j5
        )
        if jt == FREE:
            # S-dot v = [0; -w x (R_J^T p-dot)] for the world-frame linear velocity convention
            c3 -= j1 * j5 - j2 * j4
            c4 -= j2 * j3 - j0 * j5
            c5 -= j0 * j4 - j1 * j3
        cbias[i, 0], cbias[i, 1], cbias[i, 2] = c0, c1, c2
        cbias[i, 3], cbias[i, 4], cbias[i, 5] = c3, c4, c5
    # read last (no effect): the arrays then all live to this one return
    return nb + jtype.shape[0] + qi.shape[0] + vi.shape[0] + q.shape[0] + v.shape[0] > 0


# fdlibm: pi/2 = _PIO2_1 + _PIO2_2 + _PIO2_2T (33 + 33 + 53 bits, __ieee754_rem_pio2) and the
# __kernel_sin / __kernel_cos minimax coefficients on [-pi/4, pi/4]
_PIO2_1 = 1.57079632673412561417e00
_PIO2_2 = 6.07710050630396597660e-11
_PIO2_2T = 2.02226624879595063154e-21
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11


@njit(cache=True, inline="always")
def sincos(x):
    """(sin x, cos x) in one evaluation, within 1.5 ulp of the correctly rounded values for
    |x| < 1e5 (libm's sin and cos otherwise, and for NaN/inf).

    Cody-Waite reduction by pi/2 in three parts (n pi/2 exact for |n| < 2^20) and fdlibm's
    __kernel_sin/__kernel_cos polynomials: about 30 flops and one branch instead of a libm
    call, which matters where kinematics run per body per step.
    """
    if not (abs(x) < 1e5):
        return np.sin(x), np.cos(x)
    n = np.floor(x * 0.63661977236758134308 + 0.5)  # nearest multiple of pi/2
    y = ((x - n * _PIO2_1) - n * _PIO2_2) - n * _PIO2_2T
    z = y * y
    ps = _S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))
    sn = y + (z * y) * (_S1 + z * ps)
    pc = z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6)))))
    hz = 0.5 * z
    w = 1.0 - hz
    cs = w + (((1.0 - w) - hz) + z * pc)
    k = int(n) & 3
    if k == 0:
        return sn, cs
    if k == 1:
        return cs, -sn
    if k == 2:
        return -sn, -cs
    return -cs, sn


@njit(cache=True)
def forward_poses_kernel(parent, jtype, qi, S, tree_E, tree_r, axis, q, E, r, R_world, p_world):
    """The pose part of :func:`forward_kinematics_kernel` alone: (E, r), R_world, p_world and
    the q-dependent S of free joints, without velocities (what a q-only quantity such as
    Lambda needs). Same formulas in the same order, except that a revolute joint's sine and
    cosine come from :func:`sincos` (so results agree with forward_kinematics to about an
    ulp), and E is kept in scalars, which saves the reloads the array form needs."""
    nb = parent.shape[0]
    EJ = np.empty((3, 3))
    for i in range(nb):
        jt = jtype[i]
        p = parent[i]
        if jt == REVOLUTE:
            k0, k1, k2 = axis[i, 0], axis[i, 1], axis[i, 2]
            s, c = sincos(q[qi[i]])
            t = 1.0 - c
            x0, x1, x2 = tree_E[i, 0, 0], tree_E[i, 1, 0], tree_E[i, 2, 0]
            kx = t * (k0 * x0 + k1 * x1 + k2 * x2)
            e00 = c * x0 - s * (k1 * x2 - k2 * x1) + kx * k0
            e10 = c * x1 - s * (k2 * x0 - k0 * x2) + kx * k1
            e20 = c * x2 - s * (k0 * x1 - k1 * x0) + kx * k2
            x0, x1, x2 = tree_E[i, 0, 1], tree_E[i, 1, 1], tree_E[i, 2, 1]
            kx = t * (k0 * x0 + k1 * x1 + k2 * x2)
            e01 = c * x0 - s * (k1 * x2 - k2 * x1) + kx * k0
            e11 = c * x1 - s * (k2 * x0 - k0 * x2) + kx * k1
            e21 = c * x2 - s * (k0 * x1 - k1 * x0) + kx * k2
            x0, x1, x2 = tree_E[i, 0, 2], tree_E[i, 1, 2], tree_E[i, 2, 2]
            kx = t * (k0 * x0 + k1 * x1 + k2 * x2)
            e02 = c * x0 - s * (k1 * x2 - k2 * x1) + kx * k0
            e12 = c * x1 - s * (k2 * x0 - k0 * x2) + kx * k1
            e22 = c * x2 - s * (k0 * x1 - k1 * x0) + kx * k2
            E[i, 0, 0], E[i, 0, 1], E[i, 0, 2] = e00, e01, e02
            E[i, 1, 0], E[i, 1, 1], E[i, 1, 2] = e10, e11, e12
            E[i, 2, 0], E[i, 2, 1], E[i, 2, 2] = e20, e21, e22
            r0, r1, r2 = tree_r[i, 0], tree_r[i, 1], tree_r[i, 2]
            r[i, 0], r[i, 1], r[i, 2] = r0, r1, r2
            if p < 0:
                R_world[i, 0, 0], R_world[i, 0, 1], R_world[i, 0, 2] = e00, e10, e20
                R_world[i, 1, 0], R_world[i, 1, 1], R_world[i, 1, 2] = e01, e11, e21
                R_world[i, 2, 0], R_world[i, 2, 1], R_world[i, 2, 2] = e02, e12, e22
                p_world[i, 0], p_world[i, 1], p_world[i, 2] = r0, r1, r2
            else:
                for a in range(3):
                    R_world[i, a, 0], R_world[i, a, 1], R_world[i, a, 2], p_world[i, a] = (
                        pose_row(
                            R_world[p, a, 0], R_world[p, a, 1], R_world[p, a, 2], p_world[p, a],
                            e00, e01, e02, e10, e11, e12, e20, e21, e22, r0, r1, r2,
                        )
                    )  # fmt: skip
            continue
        if jt == PRISMATIC:
            prismatic_transform(
                i, q[qi[i]], axis[i, 0], axis[i, 1], axis[i, 2], tree_E, tree_r, E, r
            )
        elif jt == SPHERICAL:
            spherical_transform(i, qi[i], q, tree_E, tree_r, EJ, E, r)
        else:
            free_joint_transform(i, qi[i], q, tree_E, tree_r, EJ, E, r, S)
        world_pose(i, p, E, r, R_world, p_world)


def forward_kinematics(model, data, q, v=None) -> None:
    """Fill ``data`` with poses, transforms and velocities for configuration ``q`` and
    velocity ``v`` (zero if None)."""
    if v is None:
        v = np.zeros(model.nv)
    forward_kinematics_kernel(
        model.parent, model.jtype, model.qi, model.vi, model.nvj, data.S, model.tree_E,
        model.tree_r, model.axis, np.ascontiguousarray(q, dtype=np.float64),
        np.ascontiguousarray(v, dtype=np.float64), data.E, data.r, data.R_world, data.p_world,
        data.vel, data.cbias,
    )  # fmt: skip


@njit(cache=True)
def node_transforms_kernel(node_body, node_point, R_world, out):
    """out[a] = X(R_world[body], p): body -> world-aligned node frame at point p (body frame)."""
    for a in range(node_body.shape[0]):
        # spatial.plucker's entries on scalar indices (no views)
        b = node_body[a]
        r0, r1, r2 = node_point[a, 0], node_point[a, 1], node_point[a, 2]
        for i in range(3):
            for j in range(3):
                out[a, i, j] = R_world[b, i, j]
                out[a, i, j + 3] = 0.0
                out[a, i + 3, j + 3] = R_world[b, i, j]
        for i in range(3):
            out[a, i + 3, 0] = -(R_world[b, i, 1] * r2 - R_world[b, i, 2] * r1)
            out[a, i + 3, 1] = -(R_world[b, i, 2] * r0 - R_world[b, i, 0] * r2)
            out[a, i + 3, 2] = -(R_world[b, i, 0] * r1 - R_world[b, i, 1] * r0)


def node_transforms(data, node_body, node_point) -> np.ndarray:
    """(nc, 6, 6) motion transforms from each node's body to its world-aligned node frame."""
    node_body = np.ascontiguousarray(node_body, dtype=np.int64)
    out = np.empty((node_body.shape[0], 6, 6))
    node_transforms_kernel(
        node_body, np.ascontiguousarray(node_point, dtype=np.float64), data.R_world, out
    )
    return out


@njit(cache=True)
def node_jacobian_kernel(parent, vi, nvj, S, E, r, node_body, node_X, J):
    """Dense node Jacobian J (6 nc x nv): J = B^* phi^* H^* (000 Eq. 61).

    For node a on body k, the block of ancestor joint j is X_node ^kX_j S_j, with ^kX_j built
    by walking from k to j (each step multiplies by the child's Xup).
    """
    J[:, :] = 0.0
    X = np.empty((6, 6))
    Xj = np.empty((6, 6))
    tmp = np.empty((6, 6))
    for a in range(node_body.shape[0]):
        X[:, :] = node_X[a]
        j = node_body[a]
        while j >= 0:
            for row in range(6):
                for c in range(nvj[j]):
                    s = 0.0
                    for k in range(6):
                        s += X[row, k] * S[j, k, c]
                    J[6 * a + row, vi[j] + c] = s
            plucker(E[j], r[j], Xj)
            for row in range(6):
                for c in range(6):
                    s = 0.0
                    for k in range(6):
                        s += X[row, k] * Xj[k, c]
                    tmp[row, c] = s
            X[:, :] = tmp
            j = parent[j]


def node_jacobian(model, data, node_body, node_X) -> np.ndarray:
    """Dense (6 nc, nv) Jacobian of the nodes; ``data`` must hold current kinematics."""
    node_body = np.ascontiguousarray(node_body, dtype=np.int64)
    J = np.zeros((6 * node_body.shape[0], model.nv))
    node_jacobian_kernel(
        model.parent, model.vi, model.nvj, data.S, data.E, data.r, node_body,
        np.ascontiguousarray(node_X, dtype=np.float64), J,
    )  # fmt: skip
    return J


@njit(cache=True)
def body_velocities_kernel(parent, vi, nvj, S, E, r, v, out):
    """out[i] = V_i for joint velocities ``v`` at the transforms in (E, r) (no other state).

    Written on scalars (no work array, no views: no reference count or allocation a call);
    X_i out_p goes into out[i] first, then each entry adds S_i v_i's terms in order."""
    for i in range(parent.shape[0]):
        p = parent[i]
        if p >= 0:
            out[i, 0], out[i, 1], out[i, 2], out[i, 3], out[i, 4], out[i, 5] = (
                xform_motion_scalars(
                    E[i, 0, 0], E[i, 0, 1], E[i, 0, 2], E[i, 1, 0], E[i, 1, 1], E[i, 1, 2],
                    E[i, 2, 0], E[i, 2, 1], E[i, 2, 2], r[i, 0], r[i, 1], r[i, 2],
                    out[p, 0], out[p, 1], out[p, 2], out[p, 3], out[p, 4], out[p, 5],
                )
            )  # fmt: skip
        else:
            for a in range(6):
                out[i, a] = 0.0
        j = vi[i]
        for a in range(6):
            s = out[i, a]
            for k in range(nvj[i]):
                s += S[i, a, k] * v[j + k]
            out[i, a] = s


@njit(cache=True)
def propagate_bias(parent, E, r, c, out):
    """out_i = Xup_i out_p + c_i: the velocity-product accelerations accumulated from the root
    (c-hat, so that V = Jb v + dt c-hat after a step in the non-minimal formulations).
    Written on scalars (no work array, no views)."""
    for i in range(parent.shape[0]):
        p = parent[i]
        if p >= 0:
            t0, t1, t2, t3, t4, t5 = xform_motion_scalars(
                E[i, 0, 0], E[i, 0, 1], E[i, 0, 2], E[i, 1, 0], E[i, 1, 1], E[i, 1, 2],
                E[i, 2, 0], E[i, 2, 1], E[i, 2, 2], r[i, 0], r[i, 1], r[i, 2],
                out[p, 0], out[p, 1], out[p, 2], out[p, 3], out[p, 4], out[p, 5],
            )  # fmt: skip
            out[i, 0] = t0 + c[i, 0]
            out[i, 1] = t1 + c[i, 1]
            out[i, 2] = t2 + c[i, 2]
            out[i, 3] = t3 + c[i, 3]
            out[i, 4] = t4 + c[i, 4]
            out[i, 5] = t5 + c[i, 5]
        else:
            for a in range(6):
                out[i, a] = c[i, a]


@njit(cache=True, forceinline=True)
def point_velocity(body_vel, R_world, b, p0, p1, p2):
    """World-frame linear velocity of the point (p0, p1, p2) (body coordinates) of body ``b``
    (-1: the static world, zero), as 3 scalars: :func:`point_velocities_kernel`'s arithmetic."""
    if b < 0:
        return 0.0, 0.0, 0.0
    w0, w1, w2 = body_vel[b, 0], body_vel[b, 1], body_vel[b, 2]
    l0 = body_vel[b, 3] + w1 * p2 - w2 * p1
    l1 = body_vel[b, 4] + w2 * p0 - w0 * p2
    l2 = body_vel[b, 5] + w0 * p1 - w1 * p0
    return (
        R_world[b, 0, 0] * l0 + R_world[b, 0, 1] * l1 + R_world[b, 0, 2] * l2,
        R_world[b, 1, 0] * l0 + R_world[b, 1, 1] * l1 + R_world[b, 1, 2] * l2,
        R_world[b, 2, 0] * l0 + R_world[b, 2, 1] * l1 + R_world[b, 2, 2] * l2,
    )


@njit(cache=True)
def point_velocities_kernel(body_vel, R_world, bodies, local_points, out):
    """World-frame linear velocity of points fixed on bodies (-1 = static world: zero).

    v_point = R_world (v + w x p), with the body velocity [w; v] and p in body coordinates.
    """
    for a in range(bodies.shape[0]):
        b = bodies[a]
        if b < 0:
            out[a, 0] = 0.0
            out[a, 1] = 0.0
            out[a, 2] = 0.0
            continue
        w0, w1, w2 = body_vel[b, 0], body_vel[b, 1], body_vel[b, 2]
        p0, p1, p2 = local_points[a, 0], local_points[a, 1], local_points[a, 2]
        l0 = body_vel[b, 3] + w1 * p2 - w2 * p1
        l1 = body_vel[b, 4] + w2 * p0 - w0 * p2
        l2 = body_vel[b, 5] + w0 * p1 - w1 * p0
        for k in range(3):
            out[a, k] = R_world[b, k, 0] * l0 + R_world[b, k, 1] * l1 + R_world[b, k, 2] * l2


def point_velocities(model, data, v, bodies, local_points, body_vel=None) -> np.ndarray:
    """(n, 3) world velocities (m/s) of body-fixed points for joint velocities ``v`` at the
    configuration held in ``data``; ``bodies[a] = -1`` gives zero (static world)."""
    if body_vel is None:
        body_vel = np.empty((model.nb, 6))
    body_velocities_kernel(model.parent, model.vi, model.nvj, data.S, data.E, data.r, v, body_vel)
    bodies = np.ascontiguousarray(bodies, dtype=np.int64)
    out = np.empty((bodies.shape[0], 3))
    point_velocities_kernel(
        body_vel, data.R_world, bodies, np.ascontiguousarray(local_points, dtype=np.float64), out
    )
    return out


@njit(cache=True)
def relative_velocities_into(
    parent, vi, nvj, S, E, r, R_world, v, body_a, local_a, body_b, local_b, vel, out
):  # fmt: skip
    """out[i] = v_A(i) - v_B(i), as :func:`relative_velocities_kernel`, with the body
    velocities written to ``vel`` ((nb, 6) scratch): no allocation, no reference count."""
    body_velocities_kernel(parent, vi, nvj, S, E, r, v, vel)
    for i in range(body_a.shape[0]):
        a0, a1, a2 = point_velocity(
            vel, R_world, body_a[i], local_a[i, 0], local_a[i, 1], local_a[i, 2]
        )
        b0, b1, b2 = point_velocity(
            vel, R_world, body_b[i], local_b[i, 0], local_b[i, 1], local_b[i, 2]
        )
        out[i, 0] = a0 - b0
        out[i, 1] = a1 - b1
        out[i, 2] = a2 - b2


@njit(cache=True)
def relative_velocities_kernel(
    parent, vi, nvj, S, E, r, R_world, v, body_a, local_a, body_b, local_b, out
):  # fmt: skip
    """out[i] = v_A(i) - v_B(i): :func:`point_velocities` of the A points minus that of the B
    points, the same arithmetic in one call (body velocities once)."""
    vel = np.empty((parent.shape[0], 6))
    relative_velocities_into(
        parent, vi, nvj, S, E, r, R_world, v, body_a, local_a, body_b, local_b, vel, out
    )


def relative_velocities(model, data, v, body_a, local_a, body_b, local_b) -> np.ndarray:
    """(n, 3) world velocity (m/s) of each body-fixed point A(i) minus that of B(i), for
    joint velocities ``v`` at the configuration held in ``data`` (body -1: the static world,
    zero velocity): the relative contact velocity v_u of 000 Eq. 46."""
    out = np.empty((len(body_a), 3))
    relative_velocities_kernel(
        model.parent, model.vi, model.nvj, data.S, data.E, data.r, data.R_world, v,
        *_point_pairs(body_a, local_a, body_b, local_b), out,
    )  # fmt: skip
    return out


def _point_pairs(body_a, local_a, body_b, local_b) -> tuple:
    """The kernels' contiguous (int64 bodies, float64 local points) of both sides."""
    return (
        np.ascontiguousarray(body_a, dtype=np.int64),
        np.ascontiguousarray(local_a, dtype=np.float64),
        np.ascontiguousarray(body_b, dtype=np.int64),
        np.ascontiguousarray(local_b, dtype=np.float64),
    )


@njit(cache=True)
def relative_velocity_sums_kernel(
    parent, vi, nvj, S, E, r, R_world, v1, v2, body_a, local_a, body_b, local_b, out
):  # fmt: skip
    """out = u(v1) + u(v2), each u as :func:`relative_velocities_kernel` computes it."""
    u2 = np.empty_like(out)
    relative_velocities_kernel(
        parent, vi, nvj, S, E, r, R_world, v1, body_a, local_a, body_b, local_b, out
    )
    relative_velocities_kernel(
        parent, vi, nvj, S, E, r, R_world, v2, body_a, local_a, body_b, local_b, u2
    )
    for i in range(out.shape[0]):
        for k in range(3):
            out[i, k] += u2[i, k]


def relative_velocity_sums(model, data, v1, v2, body_a, local_a, body_b, local_b) -> np.ndarray:
    """(n, 3) m/s: :func:`relative_velocities` at ``v1`` plus that at ``v2`` (each computed
    on its own, then added: the sum of the two relative velocities, not that of v1 + v2)."""
    out = np.empty((len(body_a), 3))
    relative_velocity_sums_kernel(
        model.parent, model.vi, model.nvj, data.S, data.E, data.r, data.R_world, v1, v2,
        *_point_pairs(body_a, local_a, body_b, local_b), out,
    )  # fmt: skip
    return out


@njit(cache=True, inline="always")
def quaternion_step(q, a, v, b, dt, out):
    """out[a:a+4] = q[a:a+4] (x) exp(w dt / 2), renormalised: the exact rotation by the
    constant body angular velocity w = v[b:b+3] (rad/s) over dt (s), quaternions [qw qx qy qz]
    (a Taylor form of sin(th/2)/th and cos(th/2) below th = 1e-12 rad)."""
    w, x, y, z = q[a], q[a + 1], q[a + 2], q[a + 3]
    wx, wy, wz = v[b] * dt, v[b + 1] * dt, v[b + 2] * dt
    th = np.sqrt(wx * wx + wy * wy + wz * wz)
    if th > 1e-12:
        s = np.sin(0.5 * th) / th
        c = np.cos(0.5 * th)
    else:
        s = 0.5 - th * th / 48.0
        c = 1.0 - th * th / 8.0
    dw, dx, dy, dz = c, s * wx, s * wy, s * wz
    # q_new = q (x) dq (body-frame increment)
    nw = w * dw - x * dx - y * dy - z * dz
    nx = w * dx + x * dw + y * dz - z * dy
    ny = w * dy - x * dz + y * dw + z * dx
    nz = w * dz + x * dy - y * dx + z * dw
    n = np.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
    out[a] = nw / n
    out[a + 1] = nx / n
    out[a + 2] = ny / n
    out[a + 3] = nz / n


@njit(cache=True)
def integrate_kernel(jtype, qi, vi, q, v, dt, out):
    """out = q (+) dt v: Euler on 1-DoF joints. On a free joint the position moves with its
    velocity p-dot (joint frame: exact for constant velocity) and the orientation by the exact
    quaternion exponential of the body angular velocity, q_k (x) exp(w dt / 2), renormalised
    (:func:`quaternion_step`); a spherical joint's quaternion moves the same way.
    """
    for i in range(jtype.shape[0]):
        a = qi[i]
        b = vi[i]
        jt = jtype[i]
        if jt == SPHERICAL:
            quaternion_step(q, a, v, b, dt, out)
            continue
        if jt != FREE:
            out[a] = q[a] + dt * v[b]
            continue
        for k in range(3):
            out[a + k] = q[a + k] + dt * v[b + k]
        quaternion_step(q, a + 3, v, b + 3, dt, out)


def lie_stage_velocity(model, theta, v) -> np.ndarray:
    """RKMK stage velocity of 4th-order Lie-group RK (Munthe-Kaas): ``v`` with the body
    angular velocity w of every free and spherical joint replaced by dexp^-1 of it at the
    stage's rotation vector theta (rad, the angular block of ``theta``): w + 1/2 theta x w +
    1/12 theta x (theta x w). The orientation R = R_0 exp([Theta]) then obeys Theta-dot =
    dexp^-1(w) (body-frame convention), an ODE on a vector space that classical RK4
    integrates to 4th order; the truncation drops O(|theta|^4 |w|) terms, below RK4's local
    error. Other joints (and the free joint's linear block, p-dot = v in the world frame) are
    unchanged."""
    out = np.array(v, dtype=float, copy=True)
    for i in np.flatnonzero((model.jtype == FREE) | (model.jtype == SPHERICAL)):
        b = model.vi[i] + ANGULAR_V_OFFSET[int(model.jtype[i])]
        th = np.asarray(theta[b : b + 3], dtype=float)
        w = np.asarray(v[b : b + 3], dtype=float)
        tw = np.cross(th, w)
        out[b : b + 3] = w + 0.5 * tw + np.cross(th, tw) / 12.0
    return out


def integrate(model, q, v, dt, out=None) -> np.ndarray:
    """Configuration after moving with constant joint velocity ``v`` for ``dt`` seconds."""
    out = np.empty(model.nq) if out is None else out
    integrate_kernel(model.jtype, model.qi, model.vi, q, v, float(dt), out)
    return out


@njit(cache=True)
def body_poses_kernel(R_world, p_world, out):
    """out[i] = [x y z qw qx qy qz] of body i (unit quaternion with qw >= 0, Shepperd's
    method: take the largest of 1 + trace and 1 + 2 R_kk - trace for stability)."""
    for i in range(R_world.shape[0]):
        R = R_world[i]
        tr = R[0, 0] + R[1, 1] + R[2, 2]
        if tr >= R[0, 0] and tr >= R[1, 1] and tr >= R[2, 2]:
            s = np.sqrt(1.0 + tr) * 2.0
            w, x, y, z = (
                0.25 * s,
                (R[2, 1] - R[1, 2]) / s,
                (R[0, 2] - R[2, 0]) / s,
                (R[1, 0] - R[0, 1]) / s,
            )
        elif R[0, 0] >= R[1, 1] and R[0, 0] >= R[2, 2]:
            s = np.sqrt(1.0 + 2.0 * R[0, 0] - tr) * 2.0
            w, x, y, z = (
                (R[2, 1] - R[1, 2]) / s,
                0.25 * s,
                (R[0, 1] + R[1, 0]) / s,
                (R[0, 2] + R[2, 0]) / s,
            )
        elif R[1, 1] >= R[2, 2]:
            s = np.sqrt(1.0 + 2.0 * R[1, 1] - tr) * 2.0
            w, x, y, z = (
                (R[0, 2] - R[2, 0]) / s,
                (R[0, 1] + R[1, 0]) / s,
                0.25 * s,
                (R[1, 2] + R[2, 1]) / s,
            )
        else:
            s = np.sqrt(1.0 + 2.0 * R[2, 2] - tr) * 2.0
            w, x, y, z = (
                (R[1, 0] - R[0, 1]) / s,
                (R[0, 2] + R[2, 0]) / s,
                (R[1, 2] + R[2, 1]) / s,
                0.25 * s,
            )
        if w < 0.0:
            w, x, y, z = -w, -x, -y, -z
        for k in range(3):
            out[i, k] = p_world[i, k]
        out[i, 3] = w
        out[i, 4] = x
        out[i, 5] = y
        out[i, 6] = z
