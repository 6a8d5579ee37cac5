"""6D spatial algebra (Featherstone's Plücker convention), as small numba kernels.

Conventions used throughout :mod:`mbsim.simcore`:

* A spatial motion vector is ``[omega; v]`` (angular first, rad/s then m/s) and a spatial force
  is ``[n; f]`` (moment first, N m then N), both expressed in some frame's coordinates with the
  linear part referred to that frame's origin.
* A Plücker motion transform from frame A to frame B is stored as the pair ``(E, r)`` where
  ``E`` (3x3) rotates A coordinates into B coordinates and ``r`` (3) is the position of B's
  origin in A coordinates. As a 6x6 matrix ``X = [[E, 0], [-E r^, E]]`` (``r^`` the cross-product
  matrix). Forces transform with ``X^-T``; the transpose ``X^T`` maps B forces back to A, which
  is how articulated quantities travel towards the root (Featherstone 2008, Ch. 2).
* Composition: ``X(E1, r1) X(E2, r2) = X(E1 E2, r2 + E2^T r1)``.

These kernels are the building blocks; the recursions in :mod:`kinematics`, :mod:`dynamics` and
:mod:`compliance` call them on preallocated arrays so nothing is allocated per step.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def skew(r, out):
    """out = r^ so that r^ y = r x y (3x3)."""
    out[0, 0] = 0.0
    out[0, 1] = -r[2]
    out[0, 2] = r[1]
    out[1, 0] = r[2]
    out[1, 1] = 0.0
    out[1, 2] = -r[0]
    out[2, 0] = -r[1]
    out[2, 1] = r[0]
    out[2, 2] = 0.0


@njit(cache=True)
def plucker(E, r, out):
    """out (6x6) = X(E, r) = [[E, 0], [-E r^, E]], the motion transform A -> B."""
    for i in range(3):
        for j in range(3):
            out[i, j] = E[i, j]
            out[i, j + 3] = 0.0
            out[i + 3, j + 3] = E[i, j]
    # -E r^ : column j of r^ is r x e_j
    for i in range(3):
        out[i + 3, 0] = -(E[i, 1] * r[2] - E[i, 2] * r[1])
        out[i + 3, 1] = -(E[i, 2] * r[0] - E[i, 0] * r[2])
        out[i + 3, 2] = -(E[i, 0] * r[1] - E[i, 1] * r[0])


@njit(cache=True)
def rotation_about_axis(axis, angle, out):
    """out = Rodrigues rotation matrix R(axis, angle) (axis a unit 3-vector, angle in rad).

    R rotates vectors of the child frame into the parent frame: R = I + sin(a) k^ + (1-cos a) k^2.
    """
    c = np.cos(angle)
    s = np.sin(angle)
    t = 1.0 - c
    x, y, z = axis[0], axis[1], axis[2]
    out[0, 0] = t * x * x + c
    out[0, 1] = t * x * y - s * z
    out[0, 2] = t * x * z + s * y
    out[1, 0] = t * x * y + s * z
    out[1, 1] = t * y * y + c
    out[1, 2] = t * y * z - s * x
    out[2, 0] = t * x * z - s * y
    out[2, 1] = t * y * z + s * x
    out[2, 2] = t * z * z + c


@njit(cache=True)
def quat_to_rotation(qw, qx, qy, qz, out):
    """out = rotation matrix of the quaternion (qw, qx, qy, qz), normalised first."""
    n = np.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    w, x, y, z = qw / n, qx / n, qy / n, qz / n
    out[0, 0] = 1 - 2 * (y * y + z * z)
    out[0, 1] = 2 * (x * y - z * w)
    out[0, 2] = 2 * (x * z + y * w)
    out[1, 0] = 2 * (x * y + z * w)
    out[1, 1] = 1 - 2 * (x * x + z * z)
    out[1, 2] = 2 * (y * z - x * w)
    out[2, 0] = 2 * (x * z - y * w)
    out[2, 1] = 2 * (y * z + x * w)
    out[2, 2] = 1 - 2 * (x * x + y * y)


@njit(cache=True)
def cross_motion(v, m, out):
    """out = v x m for spatial motion vectors (v x m = [w x mw; w x mv + vv x mw])."""
    w0, w1, w2 = v[0], v[1], v[2]
    u0, u1, u2 = v[3], v[4], v[5]
    out[0] = w1 * m[2] - w2 * m[1]
    out[1] = w2 * m[0] - w0 * m[2]
    out[2] = w0 * m[1] - w1 * m[0]
    out[3] = w1 * m[5] - w2 * m[4] + u1 * m[2] - u2 * m[1]
    out[4] = w2 * m[3] - w0 * m[5] + u2 * m[0] - u0 * m[2]
    out[5] = w0 * m[4] - w1 * m[3] + u0 * m[1] - u1 * m[0]


@njit(cache=True)
def cross_force(v, f, out):
    """out = v x* f for a spatial motion v and force f (v x* f = [w x n + vv x f; w x f])."""
    w0, w1, w2 = v[0], v[1], v[2]
    u0, u1, u2 = v[3], v[4], v[5]
    out[0] = w1 * f[2] - w2 * f[1] + u1 * f[5] - u2 * f[4]
    out[1] = w2 * f[0] - w0 * f[2] + u2 * f[3] - u0 * f[5]
    out[2] = w0 * f[1] - w1 * f[0] + u0 * f[4] - u1 * f[3]
    out[3] = w1 * f[5] - w2 * f[4]
    out[4] = w2 * f[3] - w0 * f[5]
    out[5] = w0 * f[4] - w1 * f[3]


@njit(cache=True)
def mat6_vec(A, x, out):
    """out = A x (6x6 times 6)."""
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += A[i, j] * x[j]
        out[i] = s


@njit(cache=True)
def mat6T_vec(A, x, out):
    """out = A^T x (6x6 transposed times 6)."""
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += A[j, i] * x[j]
        out[i] = s


@njit(cache=True)
def congruence_T(X, A, tmp, out):
    """out = X^T A X for 6x6 X and A (tmp is 6x6 scratch).

    Used to move an inertia-like quantity from a child frame to its parent (X the child's
    parent-to-child motion transform).
    """
    for i in range(6):
        for j in range(6):
            s = 0.0
            for k in range(6):
                s += A[i, k] * X[k, j]
            tmp[i, j] = s
    for i in range(6):
        for j in range(6):
            s = 0.0
            for k in range(6):
                s += X[k, i] * tmp[k, j]
            out[i, j] = s


def spatial_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """The 6x6 spatial inertia of a rigid body about its frame origin.

    I = [[Ic + m c^ c^T, m c^], [m c^T, m 1]] with c the centre of mass (m) and Ic the
    rotational inertia about the centre of mass (kg m^2), all in the body frame.
    """
    c = np.asarray(com, dtype=float)
    cx = np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])
    out = np.zeros((6, 6))
    out[:3, :3] = inertia_com + mass * cx @ cx.T
    out[:3, 3:] = mass * cx
    out[3:, :3] = mass * cx.T
    out[3:, 3:] = mass * np.eye(3)
    return out


def plucker_np(E: np.ndarray, r: np.ndarray) -> np.ndarray:
    """6x6 motion transform X(E, r) as a new array (convenience for non-hot code)."""
    out = np.empty((6, 6))
    plucker(np.ascontiguousarray(E, dtype=float), np.ascontiguousarray(r, dtype=float), out)
    return out


@njit(cache=True, inline="always")
def xform_motion(E, r, m, out):
    """out = X(E, r) m for a motion vector: w' = E w, v' = E (v - r x w)."""
    w0, w1, w2 = m[0], m[1], m[2]
    t0 = m[3] - (r[1] * w2 - r[2] * w1)
    t1 = m[4] - (r[2] * w0 - r[0] * w2)
    t2 = m[5] - (r[0] * w1 - r[1] * w0)
    for a in range(3):
        out[a] = E[a, 0] * w0 + E[a, 1] * w1 + E[a, 2] * w2
        out[a + 3] = E[a, 0] * t0 + E[a, 1] * t1 + E[a, 2] * t2


@njit(cache=True, inline="always")
def xform_force_T(E, r, f, out):
    """out = X(E, r)^T f: a force in B coordinates expressed in A coordinates,
    f' = E^T f, n' = E^T n + r x f'."""
    n0 = E[0, 0] * f[0] + E[1, 0] * f[1] + E[2, 0] * f[2]
    n1 = E[0, 1] * f[0] + E[1, 1] * f[1] + E[2, 1] * f[2]
    n2 = E[0, 2] * f[0] + E[1, 2] * f[1] + E[2, 2] * f[2]
    g0 = E[0, 0] * f[3] + E[1, 0] * f[4] + E[2, 0] * f[5]
    g1 = E[0, 1] * f[3] + E[1, 1] * f[4] + E[2, 1] * f[5]
    g2 = E[0, 2] * f[3] + E[1, 2] * f[4] + E[2, 2] * f[5]
    out[0] = n0 + r[1] * g2 - r[2] * g1
    out[1] = n1 + r[2] * g0 - r[0] * g2
    out[2] = n2 + r[0] * g1 - r[1] * g0
    out[3] = g0
    out[4] = g1
    out[5] = g2


@njit(cache=True)
def congruence_T_sym(E, r, A, tmp, out, accumulate):
    """out (+)= X^T A X for symmetric 6x6 A and X = X(E, r), exploiting X's structure.

    X = blockdiag(E, E) T with T = [[1, 0], [-r^, 1]], so X^T A X = T^T A' T with
    A' = blockdiag(E, E)^T A blockdiag(E, E); then, with blocks A'11, A'12, A'22 and
    B = A'12 + r^ A'22:  11 = A'11 + r^ A'21 - B r^,  12 = B,  22 = A'22.
    About 250 multiply-adds instead of 432 for the dense product. ``tmp`` is (2, 6, 6) scratch.
    """
    AE = tmp[0]
    Ap = tmp[1]
    for i in range(6):
        for bj in range(2):
            for j in range(3):
                AE[i, 3 * bj + j] = (
                    A[i, 3 * bj] * E[0, j] + A[i, 3 * bj + 1] * E[1, j] + A[i, 3 * bj + 2] * E[2, j]
                )
    for bi in range(2):
        for i in range(3):
            for j in range(6):
                Ap[3 * bi + i, j] = (
                    E[0, i] * AE[3 * bi, j]
                    + E[1, i] * AE[3 * bi + 1, j]
                    + E[2, i] * AE[3 * bi + 2, j]
                )
    # AE is free again: B in its top-left 3x3, C = A'11 + r^ A'21 in its bottom-left 3x3
    for j in range(3):
        c0, c1, c2 = Ap[3, 3 + j], Ap[4, 3 + j], Ap[5, 3 + j]
        AE[0, j] = Ap[0, 3 + j] + (r[1] * c2 - r[2] * c1)
        AE[1, j] = Ap[1, 3 + j] + (r[2] * c0 - r[0] * c2)
        AE[2, j] = Ap[2, 3 + j] + (r[0] * c1 - r[1] * c0)
        c0, c1, c2 = Ap[3, j], Ap[4, j], Ap[5, j]
        AE[3, j] = Ap[0, j] + (r[1] * c2 - r[2] * c1)
        AE[4, j] = Ap[1, j] + (r[2] * c0 - r[0] * c2)
        AE[5, j] = Ap[2, j] + (r[0] * c1 - r[1] * c0)
    sign = 1.0 if accumulate else 0.0
    for i in range(3):
        b0, b1, b2 = AE[i, 0], AE[i, 1], AE[i, 2]
        # row i of B r^ (column j of r^ is r x e_j)
        br0 = b1 * r[2] - b2 * r[1]
        br1 = b2 * r[0] - b0 * r[2]
        br2 = b0 * r[1] - b1 * r[0]
        out[i, 0] = sign * out[i, 0] + AE[3 + i, 0] - br0
        out[i, 1] = sign * out[i, 1] + AE[3 + i, 1] - br1
        out[i, 2] = sign * out[i, 2] + AE[3 + i, 2] - br2
        for j in range(3):
            out[i, 3 + j] = sign * out[i, 3 + j] + AE[i, j]
            out[3 + j, i] = sign * out[3 + j, i] + AE[i, j]
            out[3 + i, 3 + j] = sign * out[3 + i, 3 + j] + Ap[3 + i, 3 + j]


@njit(cache=True)
def congruence_sym(E, r, A, tmp, out):
    """out = X A X^T for symmetric 6x6 A and X = X(E, r) (moves a compliance-like quantity
    from parent to child frame).

    With T = [[1, 0], [-r^, 1]] and G = T A T^T:  G11 = A11,  G12 = A12 + A11 r^,
    G22 = A22 + A21 r^ - r^ G12; then every block is rotated, out_bb = E G_bb E^T.
    ``tmp`` is (2, 6, 6) scratch.
    """
    G = tmp[0]
    for i in range(3):
        for j in range(3):
            G[i, j] = A[i, j]
    for i in range(3):
        a0, a1, a2 = A[i, 0], A[i, 1], A[i, 2]
        # row i of A11 r^
        G[i, 3] = A[i, 3] + (a1 * r[2] - a2 * r[1])
        G[i, 4] = A[i, 4] + (a2 * r[0] - a0 * r[2])
        G[i, 5] = A[i, 5] + (a0 * r[1] - a1 * r[0])
    for i in range(3):
        a0, a1, a2 = A[3 + i, 0], A[3 + i, 1], A[3 + i, 2]
        d0 = a1 * r[2] - a2 * r[1]
        d1 = a2 * r[0] - a0 * r[2]
        d2 = a0 * r[1] - a1 * r[0]
        G[3 + i, 3] = A[3 + i, 3] + d0
        G[3 + i, 4] = A[3 + i, 4] + d1
        G[3 + i, 5] = A[3 + i, 5] + d2
    for j in range(3):
        # subtract r^ G12 column by column: (r^ c) = r x c
        c0, c1, c2 = G[0, 3 + j], G[1, 3 + j], G[2, 3 + j]
        G[3, 3 + j] -= r[1] * c2 - r[2] * c1
        G[4, 3 + j] -= r[2] * c0 - r[0] * c2
        G[5, 3 + j] -= r[0] * c1 - r[1] * c0
    for i in range(3):
        for j in range(3):
            G[3 + i, j] = G[j, 3 + i]
    GE = tmp[1]
    for i in range(6):
        for bj in range(2):
            for j in range(3):
                GE[i, 3 * bj + j] = (
                    G[i, 3 * bj] * E[j, 0] + G[i, 3 * bj + 1] * E[j, 1] + G[i, 3 * bj + 2] * E[j, 2]
                )
    for bi in range(2):
        for i in range(3):
            for j in range(6):
                out[3 * bi + i, j] = (
                    E[i, 0] * GE[3 * bi, j]
                    + E[i, 1] * GE[3 * bi + 1, j]
                    + E[i, 2] * GE[3 * bi + 2, j]
                )
