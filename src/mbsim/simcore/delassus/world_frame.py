"""World-frame pieces shared by the world-frame Upsilon (:mod:`.upsilon_world`) and PV-OSIMr
(:mod:`.pv_osimr`): frame transforms, the bodies' inertial parameters and the articulated
sweep (Featherstone's ABA factorisation, 004 Eq. 0.26) in world-aligned coordinates.

The coordinates are world axes with the origin at the body's *tree root* body: the inertial
frame of 003 Sec. II ("expressed in and with respect to a fixed inertial frame"), moved from
the world origin onto the robot so that lever arms, and so the rounding, stay at the robot's
size (about the world origin the error grew to ~6e-9 relative for a robot 100 m away and
~2e-4 at 1 km). In these coordinates a joint's propagator needs no change of frame:
psi = 1 - U D^-1 S^T, and Ia = IA - U D^-1 U^T is added to the parent as it is.

Per-body workspace ``ws`` (nb, WS_COLS), row i:

* ``IA0`` (21, packed, :data:`PK`): Ia_i = IA_i - U_i D_i^-1 U_i^T, what body i hands to its
  parent (kg, kg m, kg m^2);
* ``UP0`` (21, packed): Upsilon(i) of 000 Eq. 68 (world-frame Upsilon only);
* ``SW0`` (6 n): S_i in world coordinates, column k at ``SW0 + 6 k`` (rad/s and m/s per unit
  joint velocity);
* ``UW0`` (6 n): U_i = IA_i S_i in world coordinates, column k at ``UW0 + 6 k``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.dynamics import spd_inverse

# fastmath "contract" lets LLVM fuse multiply-adds (one rounding instead of two: never less
# accurate); "numpy" error model: a division by zero gives inf, not an exception check.
OPTS = {"cache": True, "fastmath": {"contract"}, "error_model": "numpy"}

#: Packed storage of a symmetric 6x6 matrix: the upper triangle by rows, entry (a, b) at
#: PK[a, b] (21 numbers).
PK = np.array(
    [
        [0, 1, 2, 3, 4, 5],
        [1, 6, 7, 8, 9, 10],
        [2, 7, 11, 12, 13, 14],
        [3, 8, 12, 15, 16, 17],
        [4, 9, 13, 16, 18, 19],
        [5, 10, 14, 17, 19, 20],
    ],
    dtype=np.int64,
)
IA0, UP0, SW0, UW0, WS_COLS = 0, 21, 42, 78, 114


@njit(inline="always", **OPTS)
def rotate3(R, x0, x1, x2):
    """R x for a 3-vector, R a 9-tuple (row by row, :func:`rows9`); scalars in and out."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = R
    return (
        r00 * x0 + r01 * x1 + r02 * x2,
        r10 * x0 + r11 * x1 + r12 * x2,
        r20 * x0 + r21 * x1 + r22 * x2,
    )


@njit(inline="always", **OPTS)
def rotate_shift(R, p0, p1, p2, x0, x1, x2, x3, x4, x5, motion):
    """A spatial vector [x0..x2; x3..x5] in body coordinates, returned (6 scalars) in world
    axes about the reference origin, (p0, p1, p2) being the body origin from that reference:
    both halves rotated by R, then for a motion [w; v] v += p x w, for a force [n; f]
    n += p x f. R is a 9-tuple (row by row, :func:`rows9`), and all else scalars, so that a
    kernel's 1-DoF path keeps them in registers (array loads would be repeated after every
    store, numba arrays not being known not to alias)."""
    a0, a1, a2 = rotate3(R, x0, x1, x2)
    b0, b1, b2 = rotate3(R, x3, x4, x5)
    if motion:
        b0 += p1 * a2 - p2 * a1
        b1 += p2 * a0 - p0 * a2
        b2 += p0 * a1 - p1 * a0
    else:
        a0 += p1 * b2 - p2 * b1
        a1 += p2 * b0 - p0 * b2
        a2 += p0 * b1 - p1 * b0
    return a0, a1, a2, b0, b1, b2


@njit(inline="always", **OPTS)
def force_to_body6(R, p0, p1, p2, x0, x1, x2, x3, x4, x5):
    """The inverse of rotate_shift for a force, on scalars (R a 9-tuple):
    f_b = R^T f, n_b = R^T (n - p x f)."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = R
    m0 = x0 - (p1 * x5 - p2 * x4)
    m1 = x1 - (p2 * x3 - p0 * x5)
    m2 = x2 - (p0 * x4 - p1 * x3)
    return (
        r00 * m0 + r10 * m1 + r20 * m2,
        r01 * m0 + r11 * m1 + r21 * m2,
        r02 * m0 + r12 * m1 + r22 * m2,
        r00 * x3 + r10 * x4 + r20 * x5,
        r01 * x3 + r11 * x4 + r21 * x5,
        r02 * x3 + r12 * x4 + r22 * x5,
    )


@njit(inline="always", **OPTS)
def rows9(R):
    """The 3x3 array R as a 9-tuple, row by row."""
    return R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2], R[2, 0], R[2, 1], R[2, 2]


@njit(inline="always", **OPTS)
def _store6(out, v):
    out[0], out[1], out[2], out[3], out[4], out[5] = v[0], v[1], v[2], v[3], v[4], v[5]


@njit(inline="always", **OPTS)
def motion_to_world(R, p, x, out):
    """out = :func:`rotate_shift` of the motion vector x (6-array; p a 3-array)."""
    _store6(out, rotate_shift(rows9(R), p[0], p[1], p[2], x[0], x[1], x[2], x[3], x[4], x[5], True))


@njit(inline="always", **OPTS)
def force_to_world(R, p, x, out):
    """out = :func:`rotate_shift` of the force x (6-array; p a 3-array)."""
    _store6(
        out, rotate_shift(rows9(R), p[0], p[1], p[2], x[0], x[1], x[2], x[3], x[4], x[5], False)
    )


@njit(inline="always", **OPTS)
def origin_from_root(p_world, i, root, out):
    """out = the origin of body i from the origin of its tree root body ``root`` (m)."""
    for c in range(3):
        out[c] = p_world[i, c] - p_world[root, c]


def tree_roots(parent) -> np.ndarray:
    """The root body of each body's tree (int64, (nb,)); bodies are in preorder."""
    root = np.empty(len(parent), dtype=np.int64)
    for i, p in enumerate(parent):
        root[i] = i if p < 0 else root[p]
    return root


def children_csr(parent) -> tuple[np.ndarray, np.ndarray]:
    """The children of each body as (start (nb + 1), list (nb)): body i's children are
    ``list[start[i] : start[i + 1]]``, in increasing order."""
    nb = len(parent)
    count = np.zeros(nb + 1, dtype=np.int64)
    for p in parent:
        if p >= 0:
            count[p + 1] += 1
    start = np.cumsum(count)
    order = np.array([i for i in range(nb) if parent[i] >= 0], dtype=np.int64)
    clist = np.zeros(max(nb, 1), dtype=np.int64)
    clist[: order.size] = order[np.argsort(np.asarray(parent)[order], kind="stable")]
    return start.astype(np.int64), clist


def inertial_parameters(model) -> np.ndarray:
    """(nb, 10) per body: [m, c (3), Jc (xx xy xz yy yz zz)], the mass (kg), the centre of
    mass (m, body frame) and the rotational inertia about it (kg m^2, body axes), read off the
    spatial inertia about the body origin: c = h / m (h = m c from the upper-right block m c^),
    Jc = J_origin - m (|c|^2 1 - c c^T)."""
    nb = model.nb
    params = np.zeros((nb, 10))
    for i in range(nb):
        I = model.inertia[i]
        m = I[3, 3]
        c = np.array([I[2, 4], I[0, 5], I[1, 3]]) / m if m > 0.0 else np.zeros(3)
        Jc = I[:3, :3] - m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
        params[i] = [m, *c, Jc[0, 0], Jc[0, 1], Jc[0, 2], Jc[1, 1], Jc[1, 2], Jc[2, 2]]
    return params


@njit(inline="always", **OPTS)
def u_dinv_world(w, Di, n, G):
    """G[:, :n] = U D^-1 (6 x n) for the body whose workspace row is ``w`` (U at UW0)."""
    for x in range(6):
        for c in range(n):
            t = 0.0
            for k in range(n):
                t += w[UW0 + 6 * k + x] * Di[k, c]
            G[x, c] = t


@njit(**OPTS)
def subspaces_world(nvj, S, U, R_world, p_world, troot, ws):
    """ws's S_i and U_i columns (world coordinates) from the body-frame S and U in Data, for
    an algorithm that reuses the factorisation ABA left there."""
    pr = np.empty(3)
    for i in range(ws.shape[0]):
        origin_from_root(p_world, i, troot[i], pr)
        for k in range(nvj[i]):
            motion_to_world(R_world[i], pr, S[i, :, k], ws[i, SW0 + 6 * k : SW0 + 6 * k + 6])
            force_to_world(R_world[i], pr, U[i, :, k], ws[i, UW0 + 6 * k : UW0 + 6 * k + 6])


@njit(**OPTS)
def _multi_dof_world(i, up, n, vi, S, Rt, p0, p1, p2, U, Dinv, pivots, ws, sc):
    """articulated_sweep_world for a multi-DoF joint i, on full matrices: sc[0] holds IA_i on
    entry (sc: 0 IA, 1 D, 2-3 Cholesky, 4 G = U D^-1); ``up``: i has a parent."""
    for k in range(n):
        _store6(
            ws[i, SW0 + 6 * k : SW0 + 6 * k + 6],
            rotate_shift(Rt, p0, p1, p2, S[i, 0, k], S[i, 1, k], S[i, 2, k], S[i, 3, k],
                         S[i, 4, k], S[i, 5, k], True),
        )  # fmt: skip
    for k in range(n):
        for x in range(6):
            t = 0.0
            for y in range(6):
                t += sc[0, x, y] * ws[i, SW0 + 6 * k + y]
            ws[i, UW0 + 6 * k + x] = t
    for k in range(n):
        for c in range(n):
            t = 0.0
            for x in range(6):
                t += ws[i, SW0 + 6 * k + x] * ws[i, UW0 + 6 * c + x]
            sc[1, k, c] = t
    dmin = spd_inverse(sc[1], n, Dinv[i], sc[2], sc[3])
    for k in range(n):
        pivots[vi[i] + k] = dmin
        o = UW0 + 6 * k
        b = force_to_body6(
            Rt, p0, p1, p2, ws[i, o], ws[i, o + 1], ws[i, o + 2], ws[i, o + 3], ws[i, o + 4],
            ws[i, o + 5],
        )  # fmt: skip
        for x in range(6):
            U[i, x, k] = b[x]
    if up:
        u_dinv_world(ws[i], Dinv[i], n, sc[4])
        for x in range(6):
            for y in range(x, 6):
                t = sc[0, x, y]
                for k in range(n):
                    t -= sc[4, x, k] * ws[i, UW0 + 6 * k + y]
                ws[i, PK[x, y]] = t


@njit(**OPTS)
def articulated_sweep_world(parent, cstart, clist, vi, nvj, S, R_world, p_world, troot, prm,
                            U, Dinv, pivots, ws, sc):  # fmt: skip
    """Tips to base over all bodies: the articulated factorisation in world coordinates.

    Per body i (children first): the inertia from its 10 inertial parameters ``prm``
    (:func:`inertial_parameters`) moved to world coordinates, IA_i = that + the children's Ia
    (pulled through the children list ``cstart``/``clist``, :func:`children_csr`),
    S_i (:func:`rotate_shift`), U = IA S, D = S^T U (003 Eq. 7; ``pivots`` get D, or its
    smallest Cholesky pivot for a multi-DoF joint), D^-1 into ``Dinv``, U back to body axes
    into ``U`` (as :func:`~mbsim.simcore.dynamics.articulated_factor` leaves it), and
    Ia = IA - U D^-1 U^T for the parent (003 Alg. 3 lines 8-11). Results in ``ws`` (module
    docstring). The 1-DoF path is written out on scalars (packed triangles kept in registers,
    ~160 multiply-adds per body); multi-DoF joints take general loops. ``sc`` is (5, 6, 6)
    scratch; ``troot`` the tree root of each body (:func:`tree_roots`).
    """
    for i in range(ws.shape[0] - 1, -1, -1):
        n = nvj[i]
        p = parent[i]
        r00, r01, r02 = R_world[i, 0, 0], R_world[i, 0, 1], R_world[i, 0, 2]
        r10, r11, r12 = R_world[i, 1, 0], R_world[i, 1, 1], R_world[i, 1, 2]
        r20, r21, r22 = R_world[i, 2, 0], R_world[i, 2, 1], R_world[i, 2, 2]
        Rt = (r00, r01, r02, r10, r11, r12, r20, r21, r22)
        o = troot[i]
        p0 = p_world[i, 0] - p_world[o, 0]
        p1 = p_world[i, 1] - p_world[o, 1]
        p2 = p_world[i, 2] - p_world[o, 2]
        m, cb0, cb1, cb2 = prm[i, 0], prm[i, 1], prm[i, 2], prm[i, 3]
        j00, j01, j02 = prm[i, 4], prm[i, 5], prm[i, 6]
        j11, j12, j22 = prm[i, 7], prm[i, 8], prm[i, 9]
        # inertia about the tree root's origin: c = p + R c_body, h = m c,
        # J = R Jc R^T + m (|c|^2 1 - c c^T) with Jc about the centre of mass
        c0, c1, c2 = rotate3(Rt, cb0, cb1, cb2)
        c0, c1, c2 = p0 + c0, p1 + c1, p2 + c2
        h0, h1, h2 = m * c0, m * c1, m * c2
        mcc = h0 * c0 + h1 * c1 + h2 * c2
        t00, t10, t20 = rotate3(Rt, j00, j01, j02)  # T = R Jc, column by column
        t01, t11, t21 = rotate3(Rt, j01, j11, j12)
        t02, t12, t22 = rotate3(Rt, j02, j12, j22)
        w00 = (t00 * r00 + t01 * r01 + t02 * r02) + (mcc - h0 * c0)
        w11 = (t10 * r10 + t11 * r11 + t12 * r12) + (mcc - h1 * c1)
        w22 = (t20 * r20 + t21 * r21 + t22 * r22) + (mcc - h2 * c2)
        w01 = (t00 * r10 + t01 * r11 + t02 * r12) - h0 * c1
        w02 = (t00 * r20 + t01 * r21 + t02 * r22) - h0 * c2
        w12 = (t10 * r20 + t11 * r21 + t12 * r22) - h1 * c2
        # IA_i = [[J_w, h^], [h^T, m 1]] + sum over children of their Ia, packed
        a0, a1, a2, a3, a4, a5 = w00, w01, w02, 0.0, -h2, h1
        a6, a7, a8, a9, a10 = w11, w12, h2, 0.0, -h0
        a11, a12, a13, a14 = w22, -h1, h0, 0.0
        a15, a16, a17, a18, a19, a20 = m, 0.0, 0.0, m, 0.0, m
        for cc in range(cstart[i], cstart[i + 1]):
            c = clist[cc]
            a0, a1, a2, a3 = a0 + ws[c, 0], a1 + ws[c, 1], a2 + ws[c, 2], a3 + ws[c, 3]
            a4, a5, a6, a7 = a4 + ws[c, 4], a5 + ws[c, 5], a6 + ws[c, 6], a7 + ws[c, 7]
            a8, a9, a10 = a8 + ws[c, 8], a9 + ws[c, 9], a10 + ws[c, 10]
            a11, a12, a13, a14 = a11 + ws[c, 11], a12 + ws[c, 12], a13 + ws[c, 13], a14 + ws[c, 14]
            a15, a16, a17 = a15 + ws[c, 15], a16 + ws[c, 16], a17 + ws[c, 17]
            a18, a19, a20 = a18 + ws[c, 18], a19 + ws[c, 19], a20 + ws[c, 20]
        if n == 1:
            s0, s1, s2, s3, s4, s5 = rotate_shift(
                Rt, p0, p1, p2, S[i, 0, 0], S[i, 1, 0], S[i, 2, 0], S[i, 3, 0], S[i, 4, 0],
                S[i, 5, 0], True,
            )  # fmt: skip
            ws[i, SW0], ws[i, SW0 + 1], ws[i, SW0 + 2] = s0, s1, s2
            ws[i, SW0 + 3], ws[i, SW0 + 4], ws[i, SW0 + 5] = s3, s4, s5
            u0 = (a0 * s0 + a1 * s1 + a2 * s2) + (a3 * s3 + a4 * s4 + a5 * s5)
            u1 = (a1 * s0 + a6 * s1 + a7 * s2) + (a8 * s3 + a9 * s4 + a10 * s5)
            u2 = (a2 * s0 + a7 * s1 + a11 * s2) + (a12 * s3 + a13 * s4 + a14 * s5)
            u3 = (a3 * s0 + a8 * s1 + a12 * s2) + (a15 * s3 + a16 * s4 + a17 * s5)
            u4 = (a4 * s0 + a9 * s1 + a13 * s2) + (a16 * s3 + a18 * s4 + a19 * s5)
            u5 = (a5 * s0 + a10 * s1 + a14 * s2) + (a17 * s3 + a19 * s4 + a20 * s5)
            d = (s0 * u0 + s1 * u1 + s2 * u2) + (s3 * u3 + s4 * u4 + s5 * u5)
            g = 1.0 / d if d > 0.0 else 0.0
            pivots[vi[i]] = d
            Dinv[i, 0, 0] = g
            ws[i, UW0], ws[i, UW0 + 1], ws[i, UW0 + 2] = u0, u1, u2
            ws[i, UW0 + 3], ws[i, UW0 + 4], ws[i, UW0 + 5] = u3, u4, u5
            b0, b1, b2, b3, b4, b5 = force_to_body6(Rt, p0, p1, p2, u0, u1, u2, u3, u4, u5)
            U[i, 0, 0], U[i, 1, 0], U[i, 2, 0] = b0, b1, b2
            U[i, 3, 0], U[i, 4, 0], U[i, 5, 0] = b3, b4, b5
            if p >= 0:
                g0, g1, g2, g3, g4, g5 = g * u0, g * u1, g * u2, g * u3, g * u4, g * u5
                ws[i, 0], ws[i, 1], ws[i, 2] = a0 - g0 * u0, a1 - g0 * u1, a2 - g0 * u2
                ws[i, 3], ws[i, 4], ws[i, 5] = a3 - g0 * u3, a4 - g0 * u4, a5 - g0 * u5
                ws[i, 6], ws[i, 7], ws[i, 8] = a6 - g1 * u1, a7 - g1 * u2, a8 - g1 * u3
                ws[i, 9], ws[i, 10], ws[i, 11] = a9 - g1 * u4, a10 - g1 * u5, a11 - g2 * u2
                ws[i, 12], ws[i, 13], ws[i, 14] = a12 - g2 * u3, a13 - g2 * u4, a14 - g2 * u5
                ws[i, 15], ws[i, 16], ws[i, 17] = a15 - g3 * u3, a16 - g3 * u4, a17 - g3 * u5
                ws[i, 18], ws[i, 19], ws[i, 20] = a18 - g4 * u4, a19 - g4 * u5, a20 - g5 * u5
            continue
        # multi-DoF joint: the same steps on full matrices, in a separate call: with them
        # inlined here the whole sweep ran ~17% slower (chain N = 120 and 240, 2026-11-25)
        # fmt: off
        av = (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17,
              a18, a19, a20)
        # fmt: on
        for x in range(6):
            for y in range(6):
                sc[0, x, y] = av[PK[x, y]]
        _multi_dof_world(i, p >= 0, n, vi, S, Rt, p0, p1, p2, U, Dinv, pivots, ws, sc)
