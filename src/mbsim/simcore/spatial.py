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
:mod:`compliance` call them on preallocated arrays so nothing is allocated per step. They are
``forceinline``: compiled once each and inlined by LLVM into every caller (the same machine code
as numba's ``inline="always"``, which instead types the body again at every call site: several
seconds of a cold first run's compile, issue 15).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array


@njit(cache=True, forceinline=True)
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


@njit(cache=True, forceinline=True)
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


@njit(cache=True, forceinline=True, error_model="numpy")
def quat_rotation(qw, qx, qy, qz):
    """The rotation matrix of the quaternion (qw, qx, qy, qz), normalised first, as 9 scalars
    (row-major)."""
    n = np.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    w, x, y, z = qw / n, qx / n, qy / n, qz / n
    return (
        1 - 2 * (y * y + z * z),
        2 * (x * y - z * w),
        2 * (x * z + y * w),
        2 * (x * y + z * w),
        1 - 2 * (x * x + z * z),
        2 * (y * z - x * w),
        2 * (x * z - y * w),
        2 * (y * z + x * w),
        1 - 2 * (x * x + y * y),
    )


@njit(cache=True, forceinline=True)
def quat_to_rotation(qw, qx, qy, qz, out):
    """out = rotation matrix of the quaternion (qw, qx, qy, qz), normalised first."""
    (
        out[0, 0], out[0, 1], out[0, 2],
        out[1, 0], out[1, 1], out[1, 2],
        out[2, 0], out[2, 1], out[2, 2],
    ) = quat_rotation(qw, qx, qy, qz)  # fmt: skip


@njit(cache=True, forceinline=True)
def cross_motion_scalars(w0, w1, w2, u0, u1, u2, m0, m1, m2, m3, m4, m5):
    """v x m for spatial motion vectors v = [w; u] and m, as 6 scalars
    (v x m = [w x mw; w x mv + u x mw])."""
    return (
        w1 * m2 - w2 * m1,
        w2 * m0 - w0 * m2,
        w0 * m1 - w1 * m0,
        w1 * m5 - w2 * m4 + u1 * m2 - u2 * m1,
        w2 * m3 - w0 * m5 + u2 * m0 - u0 * m2,
        w0 * m4 - w1 * m3 + u0 * m1 - u1 * m0,
    )


@njit(cache=True, forceinline=True)
def cross_motion(v, m, out):
    """out = v x m for spatial motion vectors (:func:`cross_motion_scalars`)."""
    out[0], out[1], out[2], out[3], out[4], out[5] = cross_motion_scalars(
        v[0], v[1], v[2], v[3], v[4], v[5], m[0], m[1], m[2], m[3], m[4], m[5]
    )


@njit(cache=True, forceinline=True)
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


@njit(cache=True, forceinline=True)
def copy6x6(src, dst):
    """dst[:, :] = src by explicit loops (numba's slice assignment is several times slower)."""
    for a in range(6):
        for b in range(6):
            dst[a, b] = src[a, b]


@njit(cache=True, forceinline=True)
def mat6_vec(A, x, out):
    """out = A x (6x6 times 6)."""
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += A[i, j] * x[j]
        out[i] = s


@njit(cache=True, forceinline=True)
def mat6T_vec(A, x, out):
    """out = A^T x (6x6 transposed times 6)."""
    for i in range(6):
        s = 0.0
        for j in range(6):
            s += A[j, i] * x[j]
        out[i] = s


def spatial_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """The 6x6 spatial inertia of a rigid body about its frame origin.

    I = [[Ic + m c^ c^T, m c^], [m c^T, m 1]] with c the centre of mass (m) and Ic the
    rotational inertia about the centre of mass (kg m^2), all in the body frame.
    """
    cx = skew_np(np.asarray(com, dtype=float))
    out = np.zeros((6, 6))
    out[:3, :3] = inertia_com + mass * cx @ cx.T
    out[:3, 3:] = mass * cx
    out[3:, :3] = mass * cx.T
    out[3:, 3:] = mass * np.eye(3)
    return out


def skew_np(r: np.ndarray) -> np.ndarray:
    """r^ (3x3) as a new array, so that r^ y = r x y (the numpy twin of :func:`skew`)."""
    return skew_batch(np.asarray(r, dtype=float)[None, :])[0]


def skew_batch(r: np.ndarray) -> np.ndarray:
    """r_k^ for every row of r (n, 3) at once: (n, 3, 3)."""
    out = np.zeros((r.shape[0], 3, 3))
    out[:, 0, 1], out[:, 0, 2], out[:, 1, 2] = -r[:, 2], r[:, 1], -r[:, 0]
    out[:, 1, 0], out[:, 2, 0], out[:, 2, 1] = r[:, 2], -r[:, 1], r[:, 0]
    return out


def plucker_batch(E: np.ndarray, r: np.ndarray) -> np.ndarray:
    """X(E_k, r_k) = [[E_k, 0], [-E_k r_k^, E_k]] for every k at once, (n, 6, 6)."""
    X = np.zeros((E.shape[0], 6, 6))
    X[:, :3, :3] = E
    X[:, 3:, 3:] = E
    X[:, 3:, :3] = -E @ skew_batch(r)
    return X


def cross_force_batch(V: np.ndarray, F: np.ndarray) -> np.ndarray:
    """V_k x* F_k row by row (:func:`cross_force` on (n, 6) arrays), (n, 6)."""
    w0, w1, w2, u0, u1, u2 = V.T
    n0, n1, n2, f0, f1, f2 = F.T
    out = np.empty_like(V)
    out[:, 0] = w1 * n2 - w2 * n1 + u1 * f2 - u2 * f1
    out[:, 1] = w2 * n0 - w0 * n2 + u2 * f0 - u0 * f2
    out[:, 2] = w0 * n1 - w1 * n0 + u0 * f1 - u1 * f0
    out[:, 3] = w1 * f2 - w2 * f1
    out[:, 4] = w2 * f0 - w0 * f2
    out[:, 5] = w0 * f1 - w1 * f0
    return out


def plucker_np(E: np.ndarray, r: np.ndarray) -> np.ndarray:
    """6x6 motion transform X(E, r) as a new array (convenience for non-hot code)."""
    out = np.empty((6, 6))
    plucker(np.ascontiguousarray(E, dtype=float), np.ascontiguousarray(r, dtype=float), out)
    return out


@njit(cache=True, forceinline=True)
def xform_motion_scalars(
    e00, e01, e02, e10, e11, e12, e20, e21, e22, r0, r1, r2, w0, w1, w2, m3, m4, m5
):  # fmt: skip
    """X(E, r) m for a motion vector m = [w; m3 m4 m5] (E row-major), as 6 scalars:
    w' = E w, v' = E (v - r x w)."""
    t0 = m3 - (r1 * w2 - r2 * w1)
    t1 = m4 - (r2 * w0 - r0 * w2)
    t2 = m5 - (r0 * w1 - r1 * w0)
    return (
        e00 * w0 + e01 * w1 + e02 * w2,
        e10 * w0 + e11 * w1 + e12 * w2,
        e20 * w0 + e21 * w1 + e22 * w2,
        e00 * t0 + e01 * t1 + e02 * t2,
        e10 * t0 + e11 * t1 + e12 * t2,
        e20 * t0 + e21 * t1 + e22 * t2,
    )


@njit(cache=True, forceinline=True)
def xform_motion(E, r, m, out):
    """out = X(E, r) m for a motion vector (:func:`xform_motion_scalars`)."""
    out[0], out[1], out[2], out[3], out[4], out[5] = xform_motion_scalars(
        E[0, 0], E[0, 1], E[0, 2], E[1, 0], E[1, 1], E[1, 2], E[2, 0], E[2, 1], E[2, 2],
        r[0], r[1], r[2], m[0], m[1], m[2], m[3], m[4], m[5],
    )  # fmt: skip


@njit(cache=True, forceinline=True)
def xform_force_T_scalars(
    e00, e01, e02, e10, e11, e12, e20, e21, e22, r0, r1, r2, f0, f1, f2, f3, f4, f5
):  # fmt: skip
    """X(E, r)^T f for a force f = [n; f] (E row-major), as 6 scalars: f' = E^T f,
    n' = E^T n + r x f'."""
    n0 = e00 * f0 + e10 * f1 + e20 * f2
    n1 = e01 * f0 + e11 * f1 + e21 * f2
    n2 = e02 * f0 + e12 * f1 + e22 * f2
    g0 = e00 * f3 + e10 * f4 + e20 * f5
    g1 = e01 * f3 + e11 * f4 + e21 * f5
    g2 = e02 * f3 + e12 * f4 + e22 * f5
    return n0 + r1 * g2 - r2 * g1, n1 + r2 * g0 - r0 * g2, n2 + r0 * g1 - r1 * g0, g0, g1, g2


@njit(cache=True, forceinline=True)
def xform_force_T(E, r, f, out):
    """out = X(E, r)^T f: a force in B coordinates expressed in A coordinates
    (:func:`xform_force_T_scalars`)."""
    out[0], out[1], out[2], out[3], out[4], out[5] = xform_force_T_scalars(
        E[0, 0], E[0, 1], E[0, 2], E[1, 0], E[1, 1], E[1, 2], E[2, 0], E[2, 1], E[2, 2],
        r[0], r[1], r[2], f[0], f[1], f[2], f[3], f[4], f[5],
    )  # fmt: skip


@njit(cache=True, forceinline=True)
def congruence_T_scalars(
    a00, a01, a02, a03, a04, a05, a10, a11, a12, a13, a14, a15, a20, a21, a22, a23, a24, a25,
    a33, a34, a35, a43, a44, a45, a53, a54, a55,
    e00, e01, e02, e10, e11, e12, e20, e21, e22, x, y, z,
):  # fmt: skip
    """The blocks 11, 12 and 22 (27 scalars, each row-major) of X^T A X for a symmetric 6x6 A
    (given by its rows 0-2 and its 22 block, row-major) and X = X(E, r) (E row-major, r = x y z).

    X = blockdiag(E, E) T with T = [[1, 0], [-r^, 1]], so X^T A X = T^T A' T with
    A' = blockdiag(E, E)^T A blockdiag(E, E); then, with blocks A'11, A'12, A'22 and
    B = A'12 + r^ A'22:  11 = A'11 + r^ A'21 - B r^,  12 = B,  22 = A'22.
    About 250 multiply-adds instead of 432 for the dense product, all in registers. Scalars
    in and out: a kernel that calls it keeps no array reference counts for it."""
    # A'11, A'12, A'22 = E^T A_bb E
    t00 = a00 * e00 + a01 * e10 + a02 * e20
    t01 = a00 * e01 + a01 * e11 + a02 * e21
    t02 = a00 * e02 + a01 * e12 + a02 * e22
    t10 = a10 * e00 + a11 * e10 + a12 * e20
    t11 = a10 * e01 + a11 * e11 + a12 * e21
    t12 = a10 * e02 + a11 * e12 + a12 * e22
    t20 = a20 * e00 + a21 * e10 + a22 * e20
    t21 = a20 * e01 + a21 * e11 + a22 * e21
    t22 = a20 * e02 + a21 * e12 + a22 * e22
    p00 = e00 * t00 + e10 * t10 + e20 * t20
    p01 = e00 * t01 + e10 * t11 + e20 * t21
    p02 = e00 * t02 + e10 * t12 + e20 * t22
    p10 = e01 * t00 + e11 * t10 + e21 * t20
    p11 = e01 * t01 + e11 * t11 + e21 * t21
    p12 = e01 * t02 + e11 * t12 + e21 * t22
    p20 = e02 * t00 + e12 * t10 + e22 * t20
    p21 = e02 * t01 + e12 * t11 + e22 * t21
    p22 = e02 * t02 + e12 * t12 + e22 * t22
    t00 = a03 * e00 + a04 * e10 + a05 * e20
    t01 = a03 * e01 + a04 * e11 + a05 * e21
    t02 = a03 * e02 + a04 * e12 + a05 * e22
    t10 = a13 * e00 + a14 * e10 + a15 * e20
    t11 = a13 * e01 + a14 * e11 + a15 * e21
    t12 = a13 * e02 + a14 * e12 + a15 * e22
    t20 = a23 * e00 + a24 * e10 + a25 * e20
    t21 = a23 * e01 + a24 * e11 + a25 * e21
    t22 = a23 * e02 + a24 * e12 + a25 * e22
    b00 = e00 * t00 + e10 * t10 + e20 * t20
    b01 = e00 * t01 + e10 * t11 + e20 * t21
    b02 = e00 * t02 + e10 * t12 + e20 * t22
    b10 = e01 * t00 + e11 * t10 + e21 * t20
    b11 = e01 * t01 + e11 * t11 + e21 * t21
    b12 = e01 * t02 + e11 * t12 + e21 * t22
    b20 = e02 * t00 + e12 * t10 + e22 * t20
    b21 = e02 * t01 + e12 * t11 + e22 * t21
    b22 = e02 * t02 + e12 * t12 + e22 * t22
    t00 = a33 * e00 + a34 * e10 + a35 * e20
    t01 = a33 * e01 + a34 * e11 + a35 * e21
    t02 = a33 * e02 + a34 * e12 + a35 * e22
    t10 = a43 * e00 + a44 * e10 + a45 * e20
    t11 = a43 * e01 + a44 * e11 + a45 * e21
    t12 = a43 * e02 + a44 * e12 + a45 * e22
    t20 = a53 * e00 + a54 * e10 + a55 * e20
    t21 = a53 * e01 + a54 * e11 + a55 * e21
    t22 = a53 * e02 + a54 * e12 + a55 * e22
    d00 = e00 * t00 + e10 * t10 + e20 * t20
    d01 = e00 * t01 + e10 * t11 + e20 * t21
    d02 = e00 * t02 + e10 * t12 + e20 * t22
    d10 = e01 * t00 + e11 * t10 + e21 * t20
    d11 = e01 * t01 + e11 * t11 + e21 * t21
    d12 = e01 * t02 + e11 * t12 + e21 * t22
    d20 = e02 * t00 + e12 * t10 + e22 * t20
    d21 = e02 * t01 + e12 * t11 + e22 * t21
    d22 = e02 * t02 + e12 * t12 + e22 * t22
    # B = A'12 + r^ A'22 (column j: b_j + r x d_j)
    B00 = b00 + (y * d20 - z * d10)
    B10 = b10 + (z * d00 - x * d20)
    B20 = b20 + (x * d10 - y * d00)
    B01 = b01 + (y * d21 - z * d11)
    B11 = b11 + (z * d01 - x * d21)
    B21 = b21 + (x * d11 - y * d01)
    B02 = b02 + (y * d22 - z * d12)
    B12 = b12 + (z * d02 - x * d22)
    B22 = b22 + (x * d12 - y * d02)
    # C = A'11 + r^ A'21, A'21 = A'12^T (column j of A'21 is row j of A'12)
    C00 = p00 + (y * b02 - z * b01)
    C10 = p10 + (z * b00 - x * b02)
    C20 = p20 + (x * b01 - y * b00)
    C01 = p01 + (y * b12 - z * b11)
    C11 = p11 + (z * b10 - x * b12)
    C21 = p21 + (x * b11 - y * b10)
    C02 = p02 + (y * b22 - z * b21)
    C12 = p12 + (z * b20 - x * b22)
    C22 = p22 + (x * b21 - y * b20)
    # 11 = C - B r^ ; row i of B r^ = (Bi1 z - Bi2 y, Bi2 x - Bi0 z, Bi0 y - Bi1 x)
    return (
        C00 - (B01 * z - B02 * y),
        C01 - (B02 * x - B00 * z),
        C02 - (B00 * y - B01 * x),
        C10 - (B11 * z - B12 * y),
        C11 - (B12 * x - B10 * z),
        C12 - (B10 * y - B11 * x),
        C20 - (B21 * z - B22 * y),
        C21 - (B22 * x - B20 * z),
        C22 - (B20 * y - B21 * x),
        B00, B01, B02, B10, B11, B12, B20, B21, B22,
        d00, d01, d02, d10, d11, d12, d20, d21, d22,
    )  # fmt: skip


@njit(cache=True, forceinline=True)
def congruence_T_sym(E, r, A, out, accumulate):
    """out (+)= X^T A X for symmetric 6x6 A and X = X(E, r) (:func:`congruence_T_scalars`)."""
    (
        o00, o01, o02, o10, o11, o12, o20, o21, o22,
        B00, B01, B02, B10, B11, B12, B20, B21, B22,
        d00, d01, d02, d10, d11, d12, d20, d21, d22,
    ) = congruence_T_scalars(
        A[0, 0], A[0, 1], A[0, 2], A[0, 3], A[0, 4], A[0, 5],
        A[1, 0], A[1, 1], A[1, 2], A[1, 3], A[1, 4], A[1, 5],
        A[2, 0], A[2, 1], A[2, 2], A[2, 3], A[2, 4], A[2, 5],
        A[3, 3], A[3, 4], A[3, 5], A[4, 3], A[4, 4], A[4, 5], A[5, 3], A[5, 4], A[5, 5],
        E[0, 0], E[0, 1], E[0, 2], E[1, 0], E[1, 1], E[1, 2], E[2, 0], E[2, 1], E[2, 2],
        r[0], r[1], r[2],
    )  # fmt: skip
    w = 1.0 if accumulate else 0.0
    out[0, 0] = w * out[0, 0] + o00
    out[0, 1] = w * out[0, 1] + o01
    out[0, 2] = w * out[0, 2] + o02
    out[1, 0] = w * out[1, 0] + o10
    out[1, 1] = w * out[1, 1] + o11
    out[1, 2] = w * out[1, 2] + o12
    out[2, 0] = w * out[2, 0] + o20
    out[2, 1] = w * out[2, 1] + o21
    out[2, 2] = w * out[2, 2] + o22
    out[0, 3] = w * out[0, 3] + B00
    out[0, 4] = w * out[0, 4] + B01
    out[0, 5] = w * out[0, 5] + B02
    out[1, 3] = w * out[1, 3] + B10
    out[1, 4] = w * out[1, 4] + B11
    out[1, 5] = w * out[1, 5] + B12
    out[2, 3] = w * out[2, 3] + B20
    out[2, 4] = w * out[2, 4] + B21
    out[2, 5] = w * out[2, 5] + B22
    out[3, 0] = w * out[3, 0] + B00
    out[4, 0] = w * out[4, 0] + B01
    out[5, 0] = w * out[5, 0] + B02
    out[3, 1] = w * out[3, 1] + B10
    out[4, 1] = w * out[4, 1] + B11
    out[5, 1] = w * out[5, 1] + B12
    out[3, 2] = w * out[3, 2] + B20
    out[4, 2] = w * out[4, 2] + B21
    out[5, 2] = w * out[5, 2] + B22
    out[3, 3] = w * out[3, 3] + d00
    out[3, 4] = w * out[3, 4] + d01
    out[3, 5] = w * out[3, 5] + d02
    out[4, 3] = w * out[4, 3] + d10
    out[4, 4] = w * out[4, 4] + d11
    out[4, 5] = w * out[4, 5] + d12
    out[5, 3] = w * out[5, 3] + d20
    out[5, 4] = w * out[5, 4] + d21
    out[5, 5] = w * out[5, 5] + d22


@njit(cache=True, forceinline=True)
def _erot(m00, m01, m02, m10, m11, m12, m20, m21, m22, E):
    """The 9 entries (row-major) of E M E^T for a 3x3 M given as scalars."""
    t00 = m00 * E[0, 0] + m01 * E[0, 1] + m02 * E[0, 2]
    t01 = m00 * E[1, 0] + m01 * E[1, 1] + m02 * E[1, 2]
    t02 = m00 * E[2, 0] + m01 * E[2, 1] + m02 * E[2, 2]
    t10 = m10 * E[0, 0] + m11 * E[0, 1] + m12 * E[0, 2]
    t11 = m10 * E[1, 0] + m11 * E[1, 1] + m12 * E[1, 2]
    t12 = m10 * E[2, 0] + m11 * E[2, 1] + m12 * E[2, 2]
    t20 = m20 * E[0, 0] + m21 * E[0, 1] + m22 * E[0, 2]
    t21 = m20 * E[1, 0] + m21 * E[1, 1] + m22 * E[1, 2]
    t22 = m20 * E[2, 0] + m21 * E[2, 1] + m22 * E[2, 2]
    return (
        E[0, 0] * t00 + E[0, 1] * t10 + E[0, 2] * t20,
        E[0, 0] * t01 + E[0, 1] * t11 + E[0, 2] * t21,
        E[0, 0] * t02 + E[0, 1] * t12 + E[0, 2] * t22,
        E[1, 0] * t00 + E[1, 1] * t10 + E[1, 2] * t20,
        E[1, 0] * t01 + E[1, 1] * t11 + E[1, 2] * t21,
        E[1, 0] * t02 + E[1, 1] * t12 + E[1, 2] * t22,
        E[2, 0] * t00 + E[2, 1] * t10 + E[2, 2] * t20,
        E[2, 0] * t01 + E[2, 1] * t11 + E[2, 2] * t21,
        E[2, 0] * t02 + E[2, 1] * t12 + E[2, 2] * t22,
    )


@njit(cache=True, forceinline=True)
def congruence_sym(E, r, A, out):
    """out = X A X^T for symmetric 6x6 A and X = X(E, r) (moves a compliance-like quantity
    from parent to child frame).

    With T = [[1, 0], [-r^, 1]] and G = T A T^T:  G11 = A11,  G12 = A12 + A11 r^,
    G22 = A22 + A21 r^ - r^ G12; then every block is rotated, out_bb = E G_bb E^T.
    """
    x, y, z = r[0], r[1], r[2]
    # G12 = A12 + A11 r^ ; row i of A11 r^ = (a_i1 z - a_i2 y, a_i2 x - a_i0 z, a_i0 y - a_i1 x)
    g00 = A[0, 3] + (A[0, 1] * z - A[0, 2] * y)
    g01 = A[0, 4] + (A[0, 2] * x - A[0, 0] * z)
    g02 = A[0, 5] + (A[0, 0] * y - A[0, 1] * x)
    g10 = A[1, 3] + (A[1, 1] * z - A[1, 2] * y)
    g11 = A[1, 4] + (A[1, 2] * x - A[1, 0] * z)
    g12 = A[1, 5] + (A[1, 0] * y - A[1, 1] * x)
    g20 = A[2, 3] + (A[2, 1] * z - A[2, 2] * y)
    g21 = A[2, 4] + (A[2, 2] * x - A[2, 0] * z)
    g22 = A[2, 5] + (A[2, 0] * y - A[2, 1] * x)
    # H = A22 + A21 r^ (row i of A21 is A[3+i, 0:3])
    h00 = A[3, 3] + (A[3, 1] * z - A[3, 2] * y)
    h01 = A[3, 4] + (A[3, 2] * x - A[3, 0] * z)
    h02 = A[3, 5] + (A[3, 0] * y - A[3, 1] * x)
    h10 = A[4, 3] + (A[4, 1] * z - A[4, 2] * y)
    h11 = A[4, 4] + (A[4, 2] * x - A[4, 0] * z)
    h12 = A[4, 5] + (A[4, 0] * y - A[4, 1] * x)
    h20 = A[5, 3] + (A[5, 1] * z - A[5, 2] * y)
    h21 = A[5, 4] + (A[5, 2] * x - A[5, 0] * z)
    h22 = A[5, 5] + (A[5, 0] * y - A[5, 1] * x)
    # G22 = H - r^ G12 ; column j of r^ G12 = r x (g0j, g1j, g2j)
    k00 = h00 - (y * g20 - z * g10)
    k10 = h10 - (z * g00 - x * g20)
    k20 = h20 - (x * g10 - y * g00)
    k01 = h01 - (y * g21 - z * g11)
    k11 = h11 - (z * g01 - x * g21)
    k21 = h21 - (x * g11 - y * g01)
    k02 = h02 - (y * g22 - z * g12)
    k12 = h12 - (z * g02 - x * g22)
    k22 = h22 - (x * g12 - y * g02)
    o = _erot(A[0, 0], A[0, 1], A[0, 2], A[1, 0], A[1, 1], A[1, 2], A[2, 0], A[2, 1], A[2, 2], E)
    b = _erot(g00, g01, g02, g10, g11, g12, g20, g21, g22, E)
    d = _erot(k00, k01, k02, k10, k11, k12, k20, k21, k22, E)
    for i in range(3):
        for j in range(3):
            out[i, j] = o[3 * i + j]
            out[i, 3 + j] = b[3 * i + j]
            out[3 + j, i] = b[3 * i + j]
            out[3 + i, 3 + j] = d[3 * i + j]


def rpy_matrix(rpy) -> np.ndarray:
    """Rotation of URDF fixed-axis roll-pitch-yaw angles (rad): R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = (float(a) for a in rpy)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


@intrinsic
def c_view(typingctx, buf, offset, shape):
    """``buf[offset : offset + prod(shape)].reshape(shape)`` for a C-contiguous 1-D ``buf``:
    the same view (buf's owner, C strides), without numba's ``reshape`` and its C helper
    call (``numba_attempt_nocopy_reshape``, ~17 ns a call)."""
    if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C"):
        return None
    if not isinstance(offset, types.Integer):
        return None
    if not (
        isinstance(shape, types.BaseTuple) and all(isinstance(t, types.Integer) for t in shape)
    ):
        return None
    nd = len(shape)
    rett = types.Array(buf.dtype, nd, "C")

    def codegen(context, builder, sig, args):
        from numba.core.imputils import impl_ret_borrowed

        bufv, off, shp = args
        src = context.make_array(sig.args[0])(context, builder, bufv)
        out = context.make_array(rett)(context, builder)
        dims = [
            context.cast(builder, d, t, types.intp)
            for d, t in zip(cgutils.unpack_tuple(builder, shp, nd), sig.args[2], strict=True)
        ]
        itemsize = context.get_abi_sizeof(context.get_data_type(sig.args[0].dtype))
        strides = []
        acc = context.get_constant(types.intp, itemsize)
        for d in reversed(dims):
            strides.append(acc)
            acc = builder.mul(acc, d)
        strides.reverse()
        data = builder.gep(src.data, [context.cast(builder, off, sig.args[1], types.intp)])
        populate_array(
            out, data=data, shape=dims, strides=strides,
            itemsize=context.get_constant(types.intp, itemsize), meminfo=src.meminfo,
            parent=src.parent,
        )  # fmt: skip
        return impl_ret_borrowed(context, builder, rett, out._getvalue())

    return rett(buf, offset, shape), codegen


@intrinsic
def borrowed(typingctx, arr):
    """``arr`` (an array) as a borrowed view: the same data, shape and strides, without its
    owner (a null meminfo), so numba counts no references of it (NRT_incref and NRT_decref
    return at once on a null meminfo). The caller keeps ``arr`` alive for as long as the view
    is used (contact_fused.py's :class:`StepType`)."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        return _borrowed_value(context, builder, sig.args[0], args[0])

    return arr(arr), codegen


@intrinsic
def borrowed_all(typingctx, *values):
    """``values`` as a tuple, each array (or tuple of arrays) in it borrowed as :func:`borrowed`
    borrows one, anything else as it is (and counted: the tuple is a new reference): a
    kernel's array arguments borrowed in one statement (the caller holds them for the call)."""
    values = tuple(types.unliteral(t) for t in values)
    rett = types.Tuple(values)

    def codegen(context, builder, sig, args):
        items = cgutils.unpack_tuple(builder, args[0], len(values))
        items = [
            _borrowed_value(context, builder, t, v) for t, v in zip(values, items, strict=True)
        ]
        out = context.make_tuple(builder, rett, items)
        # a new reference, as numba takes a call's result: what is not borrowed (a record,
        # say) counted once more (a borrowed array's count is a no-op)
        context.nrt.incref(builder, rett, out)
        return out

    return rett(types.StarArgTuple.from_types(values)), codegen


def _borrowed_value(context, builder, t, value):
    """The LLVM value of a field of numba type ``t`` as contact_fused.py's :class:`StepType`
    holds it: an array borrowed (:func:`borrowed`), a tuple with its arrays (and theirs, in
    tuples in it) borrowed, anything else as it is."""
    if isinstance(t, types.Array):
        ary = context.make_array(t)(context, builder, value)
        ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
        ary.parent = cgutils.get_null_value(ary.parent.type)
        return ary._getvalue()
    if isinstance(t, types.BaseTuple) and any(
        isinstance(x, (types.Array, types.BaseTuple)) for x in t
    ):
        items = cgutils.unpack_tuple(builder, value, len(t))
        items = [_borrowed_value(context, builder, x, v) for x, v in zip(t, items, strict=True)]
        return context.make_tuple(builder, t, items)
    return value
