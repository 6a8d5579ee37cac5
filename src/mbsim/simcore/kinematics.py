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

from mbsim.simcore.model import PRISMATIC, REVOLUTE
from mbsim.simcore.spatial import (
    cross_motion,
    mat6_vec,
    plucker,
    quat_to_rotation,
    rotation_about_axis,
)


@njit(cache=True)
def _joint_transform(jtype, axis, q, qi, EJ, rJ):
    """(E_J, r_J): transform from joint frame to child body for the joint's q (rad/m/quat)."""
    if jtype == REVOLUTE:
        rotation_about_axis(axis, q[qi], EJ)
        # rotation_about_axis gives child->parent R; the Plücker E is its transpose.
        for a in range(3):
            for b in range(a + 1, 3):
                t = EJ[a, b]
                EJ[a, b] = EJ[b, a]
                EJ[b, a] = t
        rJ[:] = 0.0
    elif jtype == PRISMATIC:
        EJ[:, :] = 0.0
        for a in range(3):
            EJ[a, a] = 1.0
            rJ[a] = axis[a] * q[qi]
    else:
        quat_to_rotation(q[qi + 3], q[qi + 4], q[qi + 5], q[qi + 6], EJ)
        for a in range(3):
            for b in range(a + 1, 3):
                t = EJ[a, b]
                EJ[a, b] = EJ[b, a]
                EJ[b, a] = t
        for a in range(3):
            rJ[a] = q[qi + a]


@njit(cache=True)
def forward_kinematics_kernel(
    parent, jtype, qi, vi, nvj, S, tree_E, tree_r, axis, q, v, E, r, Xup, R_world, p_world,
    vel, cbias,
):  # fmt: skip
    """Poses, Plücker transforms, velocities and velocity-product terms of all bodies."""
    nb = parent.shape[0]
    EJ = np.empty((3, 3))
    rJ = np.empty(3)
    vJ = np.empty(6)
    tmp = np.empty(6)
    for i in range(nb):
        _joint_transform(jtype[i], axis[i], q, qi[i], EJ, rJ)
        ET = tree_E[i]
        # Xup = X(EJ, rJ) X(ET, rT) = X(EJ ET, rT + ET^T rJ)
        for a in range(3):
            for b in range(3):
                s = 0.0
                for k in range(3):
                    s += EJ[a, k] * ET[k, b]
                E[i, a, b] = s
            s = 0.0
            for k in range(3):
                s += ET[k, a] * rJ[k]
            r[i, a] = tree_r[i, a] + s
        plucker(E[i], r[i], Xup[i])
        p = parent[i]
        # world pose: R_i = R_p E_i^T, p_i = p_p + R_p r_i
        for a in range(3):
            for b in range(3):
                s = 0.0
                for k in range(3):
                    rp = (1.0 if a == k else 0.0) if p < 0 else R_world[p, a, k]
                    s += rp * E[i, b, k]
                R_world[i, a, b] = s
            s = 0.0 if p < 0 else p_world[p, a]
            for k in range(3):
                rp = (1.0 if a == k else 0.0) if p < 0 else R_world[p, a, k]
                s += rp * r[i, k]
            p_world[i, a] = s
        for a in range(6):
            s = 0.0
            for k in range(nvj[i]):
                s += S[i, a, k] * v[vi[i] + k]
            vJ[a] = s
        if p >= 0:
            mat6_vec(Xup[i], vel[p], tmp)
        else:
            tmp[:] = 0.0
        for a in range(6):
            vel[i, a] = tmp[a] + vJ[a]
        cross_motion(vel[i], vJ, cbias[i])


def forward_kinematics(model, data, q, v=None) -> None:
    """Fill ``data`` with poses, transforms and velocities for configuration ``q`` and
    velocity ``v`` (zero if None)."""
    if v is None:
        v = np.zeros(model.nv)
    forward_kinematics_kernel(
        model.parent, model.jtype, model.qi, model.vi, model.nvj, model.S, model.tree_E,
        model.tree_r, model.axis, np.ascontiguousarray(q, dtype=np.float64),
        np.ascontiguousarray(v, dtype=np.float64), data.E, data.r, data.Xup, data.R_world,
        data.p_world, data.vel, data.cbias,
    )  # fmt: skip


@njit(cache=True)
def node_transforms_kernel(node_body, node_point, R_world, out):
    """out[a] = X(R_world[body], p): body -> world-aligned node frame at point p (body frame)."""
    for a in range(node_body.shape[0]):
        plucker(R_world[node_body[a]], node_point[a], out[a])


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
        model.parent, model.vi, model.nvj, model.S, data.E, data.r, node_body,
        np.ascontiguousarray(node_X, dtype=np.float64), J,
    )  # fmt: skip
    return J
