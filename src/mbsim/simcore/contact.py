"""Contact model of 000 Sec. 2: friction polyhedron, D(i), E(i), E-hat, E-bar, and the Q_u map.

For contact i between body A and body B with unit normal n(i) pointing from B to A, the linear
contact impulse on A is ``F_u(i) = D(i) beta(i)`` (Eq. 7) with ``D(i) = [n, d_1 ... d_nf]``
(3 x (nf + 1)) and ``beta(i) = [F_n, beta_1 ... beta_nf] >= 0``; the ``d_j`` are nf unit vectors
evenly spaced in the tangent plane (nf even, so every direction's opposite is in the set: the
friction polyhedron of Fig. 2). B receives ``-F_u(i)``. The complementarity conditions
(Eqs. 10-13) are

    E-hat(i) sigma(i) + D(i)^T v_u+(i)  ⊥  beta(i)      E-hat(i) = [0; 1_nf]   ((nf+1) x 1)
    E-bar(i) beta(i)                    ⊥  sigma(i)     E-bar(i) = [mu, -1_nf^T]  (1 x (nf+1))

where ``v_u(i) = Q_u(i) V_c`` is the linear velocity of A's contact point relative to B's
(Eq. 46) and sigma(i) approximates the sliding speed. With W = Q_u Lambda Q_u^T (the relative
velocity compliance of the contacts, 3 nu x 3 nu), the contact rows of the OS LCP (Eq. 53) are

    M = [[D^T W D, E-hat], [E-bar, 0]],   q = [D^T v_u^free; 0],

of size nu (nf + 2) (Table 1). Units: impulses N s, velocities m/s.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit

#: A reference direction whose tangential part is shorter than this (m/s for a slip
#: velocity) is no direction: the polyhedron falls back to the world-axis basis. 1e-4 m/s is
#: far below any push a step resolves (g sin(1 deg) dt = 1.7e-4 m/s at dt 1 ms) and far above
#: the rounding-level tangential velocity of a body at rest; following that noise turned a
#: resting contact's polyhedron every step and kept a body settling on an edge rocking
#: (tests/test_mesh_mesh.py, the tilted L: 2.6e-5 m instead of 1e-9 m).
MIN_REFERENCE = 1e-4


@njit(cache=True)
def _friction_kernel(n, cos_a, sin_a, ref, D):
    """Fill D (nu, 3, nf + 1) from unit normals n (nu, 3): column 0 is n, column 1 + j is
    cos_a[j] t1 + sin_a[j] t2 (see friction_matrix); ``ref`` (nu, 3) or (0, 3)."""
    for i in range(n.shape[0]):
        n0, n1, n2 = n[i, 0], n[i, 1], n[i, 2]
        t10 = t11 = t12 = 0.0
        aligned = False
        if ref.shape[0]:
            rn = ref[i, 0] * n0 + ref[i, 1] * n1 + ref[i, 2] * n2
            t10, t11, t12 = ref[i, 0] - rn * n0, ref[i, 1] - rn * n1, ref[i, 2] - rn * n2
            aligned = t10 * t10 + t11 * t11 + t12 * t12 > MIN_REFERENCE * MIN_REFERENCE
        if not aligned:
            # the world axis least aligned with n (first of ties, as argmin), projected off n
            axis = 0
            if abs(n1) < abs(n0):
                axis = 1
            if abs(n2) < abs(n[i, axis]):
                axis = 2
            nk = n[i, axis]
            t10, t11, t12 = -nk * n0, -nk * n1, -nk * n2
            if axis == 0:
                t10 += 1.0
            elif axis == 1:
                t11 += 1.0
            else:
                t12 += 1.0
        inv = 1.0 / np.sqrt(t10 * t10 + t11 * t11 + t12 * t12)
        t10 *= inv
        t11 *= inv
        t12 *= inv
        t20 = n1 * t12 - n2 * t11  # t2 = n x t1
        t21 = n2 * t10 - n0 * t12
        t22 = n0 * t11 - n1 * t10
        D[i, 0, 0], D[i, 1, 0], D[i, 2, 0] = n0, n1, n2
        for j in range(cos_a.shape[0]):
            c, s = cos_a[j], sin_a[j]
            D[i, 0, j + 1] = c * t10 + s * t20
            D[i, 1, j + 1] = c * t11 + s * t21
            D[i, 2, j + 1] = c * t12 + s * t22


def friction_matrix(normal: np.ndarray, nf: int, reference=None) -> np.ndarray:
    """D(i) for every contact: (nu, 3, nf + 1) with columns [n, d_1, ..., d_nf] (Eq. 7).

    d_j = cos(2 pi j / nf) t1 + sin(2 pi j / nf) t2, j = 0 .. nf-1, with (t1, t2, n)
    right-handed and t2 = n x t1. t1 is the normalised tangential part of ``reference[i]``
    (nu, 3; the stepper passes the contact's relative slip velocity at the free motion) when
    that is longer than MIN_REFERENCE: a slip along d_1 meets the polyhedron's vertex, so
    sliding friction is exactly mu F_n in any direction (the world-axis polyhedron gives
    cos(pi/nf) mu at 45 deg to its axes for nf = 4), and the free motion's tangential
    velocity of a sticking contact points where friction must hold it. Otherwise (no
    reference, or none for this contact) t1 is the normalised projection of the world axis
    least aligned with n (a smooth function of n away from those switching cones and
    deterministic everywhere): 000's fixed polyhedron.
    """
    if nf < 4 or nf % 2:
        raise ValueError(f"friction directions nf={nf} must be an even number >= 4")
    n = np.ascontiguousarray(np.atleast_2d(np.asarray(normal, dtype=float)))
    cos_a, sin_a = _edge_angles(nf)
    D = np.empty((len(n), 3, nf + 1))
    ref = _NO_REFERENCE if reference is None else np.asarray(reference, dtype=float)
    _friction_kernel(n, cos_a, sin_a, np.ascontiguousarray(ref), D)
    return D


_NO_REFERENCE = np.zeros((0, 3))


@lru_cache(maxsize=8)
def _edge_angles(nf: int) -> tuple[np.ndarray, np.ndarray]:
    """(cos, sin) of the polyhedron's edge angles 2 pi j / nf, j = 0 .. nf-1 (shared: never
    written to)."""
    angles = 2.0 * np.pi * np.arange(nf) / nf
    return np.cos(angles), np.sin(angles)


@njit(cache=True)
def _contact_lcp_kernel(W, D, mu, v_free, M, q):
    """M's and q's contact entries (:func:`contact_lcp`; M's other entries as given). A block
    W_ij that is exactly zero (contacts i and j on no common body: about half the pairs of a
    stack of boxes) gives D(i)^T W_ij D(j) = +0.0 entry for entry when D(i) and D(j) are
    finite (each sum is 0.0 plus products +-0.0, and 0.0 + -0.0 = 0.0), so those entries are
    written as 0.0 without the products: the same bits."""
    nu, _, k = D.shape
    size_b = nu * k
    finite = np.empty(nu, dtype=np.bool_)
    for i in range(nu):
        f = True
        for c in range(3):
            for b in range(k):
                f = f and np.isfinite(D[i, c, b])
        finite[i] = f
    for i in range(nu):
        for j in range(nu):
            if finite[i] and finite[j] and _zero_block(W, i, j):
                for a in range(k):
                    for b in range(k):
                        M[k * i + a, k * j + b] = 0.0
                continue
            # block (i, j) of D^T W D: D(i)^T W_ij D(j), a column b at a time: the column
            # (W_ij D(j))[:, b] in three scalars (no work array), each entry's sums as before
            for b in range(k):
                wd0 = 0.0
                for c in range(3):
                    wd0 += W[3 * i, 3 * j + c] * D[j, c, b]
                wd1 = 0.0
                for c in range(3):
                    wd1 += W[3 * i + 1, 3 * j + c] * D[j, c, b]
                wd2 = 0.0
                for c in range(3):
                    wd2 += W[3 * i + 2, 3 * j + c] * D[j, c, b]
                for a in range(k):
                    acc = 0.0
                    acc += D[i, 0, a] * wd0
                    acc += D[i, 1, a] * wd1
                    acc += D[i, 2, a] * wd2
                    M[k * i + a, k * j + b] = acc
        for a in range(1, k):
            M[k * i + a, size_b + i] = 1.0  # E-hat
            M[size_b + i, k * i + a] = -1.0  # E-bar
        M[size_b + i, k * i] = mu[i]
        for a in range(k):
            q[k * i + a] = (
                D[i, 0, a] * v_free[i, 0] + D[i, 1, a] * v_free[i, 1] + (D[i, 2, a] * v_free[i, 2])
            )


@njit(cache=True, inline="always")
def _zero_block(W, i, j):
    """Whether the 3 x 3 block W_ij is exactly zero (+-0.0)."""
    for r in range(3):
        for c in range(3):
            if W[3 * i + r, 3 * j + c] != 0.0:
                return False
    return True


def contact_lcp(W: np.ndarray, D: np.ndarray, mu: np.ndarray, v_free: np.ndarray):
    """Contact rows of the OS LCP (Eq. 53 without bilateral rows): returns (M, q).

    W: (3 nu, 3 nu) relative-velocity compliance Q_u Lambda Q_u^T; D: (nu, 3, nf + 1);
    mu: (nu,) friction coefficients; v_free: (nu, 3) relative contact velocities after the
    free motion (m/s, normal component possibly shifted by a gap term). z = [beta; sigma].
    """
    nu, _, k = D.shape
    size = nu * k + nu
    M = np.zeros((size, size))
    q = np.zeros(size)
    _contact_lcp_kernel(
        np.ascontiguousarray(W, dtype=float), np.ascontiguousarray(D, dtype=float),
        np.ascontiguousarray(mu, dtype=float), np.ascontiguousarray(v_free, dtype=float), M, q,
    )  # fmt: skip
    return M, q


@njit(cache=True)
def _relative_compliance_kernel(Lam, node_a, node_b, W):
    nu = node_a.shape[0]
    for i in range(nu):
        for j in range(nu):
            for si in range(2):
                ni = node_a[i] if si == 0 else node_b[i]
                if ni < 0:
                    continue
                for sj in range(2):
                    nj = node_a[j] if sj == 0 else node_b[j]
                    if nj < 0:
                        continue
                    sign = 1.0 if si == sj else -1.0
                    for r in range(3):
                        for c in range(3):
                            W[3 * i + r, 3 * j + c] += sign * Lam[6 * ni + 3 + r, 6 * nj + 3 + c]


def relative_compliance(Lam: np.ndarray, node_a: np.ndarray, node_b: np.ndarray) -> np.ndarray:
    """W = Q_u Lambda Q_u^T from the node compliance (000 Eqs. 46, 49).

    Lam: (6 nc, 6 nc) for world-aligned nodes (rows [angular; linear] per node); node_a[i],
    node_b[i]: node indices of contact i's points on A and on B (-1 for the static world,
    which contributes nothing). Returns (3 nu, 3 nu): block (i, j) is the sum over the
    points of i and j of (+1 on A, -1 on B) products times Lambda's linear-linear block.
    """
    W = np.zeros((3 * len(node_a), 3 * len(node_a)))
    _relative_compliance_kernel(
        np.ascontiguousarray(Lam, dtype=float), np.asarray(node_a, dtype=np.int64),
        np.asarray(node_b, dtype=np.int64), W,
    )  # fmt: skip
    return W


@njit(cache=True, forceinline=True)
def _point_bias_accel_normal(R_world, vel, chat, k, p0, p1, p2, n0, n1, n2):
    """n . R (a + alpha x p + w x (v + w x p)): the normal world acceleration at zero joint
    acceleration of point p (body frame) on body k (see curvature_drift); p and n as
    scalars."""
    w0, w1, w2 = vel[k, 0], vel[k, 1], vel[k, 2]
    u0 = vel[k, 3] + w1 * p2 - w2 * p1  # v + w x p
    u1 = vel[k, 4] + w2 * p0 - w0 * p2
    u2 = vel[k, 5] + w0 * p1 - w1 * p0
    al0, al1, al2 = chat[k, 0], chat[k, 1], chat[k, 2]
    a0 = chat[k, 3] + al1 * p2 - al2 * p1 + w1 * u2 - w2 * u1
    a1 = chat[k, 4] + al2 * p0 - al0 * p2 + w2 * u0 - w0 * u2
    a2 = chat[k, 5] + al0 * p1 - al1 * p0 + w0 * u1 - w1 * u0
    acc = 0.0
    acc += n0 * (R_world[k, 0, 0] * a0 + R_world[k, 0, 1] * a1 + R_world[k, 0, 2] * a2)
    acc += n1 * (R_world[k, 1, 0] * a0 + R_world[k, 1, 1] * a1 + R_world[k, 1, 2] * a2)
    acc += n2 * (R_world[k, 2, 0] * a0 + R_world[k, 2, 1] * a1 + R_world[k, 2, 2] * a2)
    return acc


@njit(cache=True, forceinline=True)
def _core_point(R_world, k, p0, p1, p2, n0, n1, n2, offset):
    """p + offset R_k^T n (body frame, m) as 3 scalars: the point ``offset`` along the world
    normal n from the body point p of body k (see curvature_drift)."""
    return (
        p0 + offset * (R_world[k, 0, 0] * n0 + R_world[k, 1, 0] * n1 + R_world[k, 2, 0] * n2),
        p1 + offset * (R_world[k, 0, 1] * n0 + R_world[k, 1, 1] * n1 + R_world[k, 2, 1] * n2),
        p2 + offset * (R_world[k, 0, 2] * n0 + R_world[k, 1, 2] * n1 + R_world[k, 2, 2] * n2),
    )


@njit(cache=True)
def _curvature_kernel(
    R_world, vel, chat, body_a, local_a, body_b, local_b, normal, radius_a, radius_b, scale, out
):  # fmt: skip
    """out[i] = scale n . (a_A - a_B) (curvature_drift); with radii (length nu, else 0) the
    points are first moved to the core points at radius_a along +n and radius_b along -n.
    Written on scalars (no work arrays, no views)."""
    radii = radius_a.shape[0] > 0
    for i in range(out.shape[0]):
        n0, n1, n2 = normal[i, 0], normal[i, 1], normal[i, 2]
        acc = 0.0
        k = body_a[i]
        if k >= 0:
            p0, p1, p2 = local_a[i, 0], local_a[i, 1], local_a[i, 2]
            if radii and radius_a[i] != 0.0:
                p0, p1, p2 = _core_point(R_world, k, p0, p1, p2, n0, n1, n2, radius_a[i])
            acc += _point_bias_accel_normal(R_world, vel, chat, k, p0, p1, p2, n0, n1, n2)
        k = body_b[i]
        if k >= 0:
            p0, p1, p2 = local_b[i, 0], local_b[i, 1], local_b[i, 2]
            if radii and radius_b[i] != 0.0:
                p0, p1, p2 = _core_point(R_world, k, p0, p1, p2, n0, n1, n2, -radius_b[i])
            acc -= _point_bias_accel_normal(R_world, vel, chat, k, p0, p1, p2, n0, n1, n2)
        out[i] = scale * acc


def curvature_drift(R_world, vel, chat, contacts, dt: float, core: bool = True) -> np.ndarray:
    """The normal displacement (m, (nu,)) a step of length dt adds beyond the velocity-level
    row: 1/2 dt^2 n . (a_A - a_B), with a the contact points' accelerations at zero joint
    acceleration (the J-dot v term: centripetal and Coriolis).

    The contact rows constrain n . J(q) v+, a first-order prediction of the gap; a point on a
    rotating body moves on a curve, so each step drifts by 1/2 dt^2 n . J-dot v (about 4e-5 m
    per ms-step for a chain rolling on a contact, docs/results.md, 001 Fig. 8). Adding it to
    the gap makes the prediction second order. Point acceleration of a body point p (body
    frame) from the body's spatial velocity (w, v) and bias acceleration (alpha, a) (chat,
    body frame, Featherstone's spatial convention): R (a + alpha x p + w x (v + w x p)).

    Smooth surfaces (``core``, the default; issue 14): a contact point on a sphere, capsule
    or cylinder rim is not a material point but the closest point of the surface, found anew
    each step; the gap is n . (core point) - r, so its second-order motion is that of the
    core point at ``contacts.radius_a`` (radius_b) along +n (-n) from point A (B). At the
    contact point itself, 001's prediction, a rolling body sinks by ~2.5 dt^2 w^2 r (its
    bottom material point accelerates up at w^2 r). Contacts without radii (hand-written
    detectors) and ``core`` False take the contact points.
    """
    out = np.zeros(len(contacts.gap))
    if len(out):
        c = contacts
        ra, rb = getattr(c, "radius_a", None), getattr(c, "radius_b", None)
        if not core or ra is None:
            ra = rb = _NO_RADII
        _curvature_kernel(
            R_world, vel, chat, c.body_a, np.ascontiguousarray(c.local_a), c.body_b,
            np.ascontiguousarray(c.local_b), np.ascontiguousarray(c.normal),
            np.ascontiguousarray(ra, dtype=np.float64),
            np.ascontiguousarray(rb, dtype=np.float64), 0.5 * dt * dt, out,
        )  # fmt: skip
    return out


_NO_RADII = np.zeros(0)


@njit(cache=True)
def _node_impulses_kernel(F, ia, ib, out):
    for i in range(F.shape[0]):
        for c in range(3):
            if ia[i] >= 0:
                out[ia[i], 3 + c] = F[i, c]
            if ib[i] >= 0:
                out[ib[i], 3 + c] = -F[i, c]


def node_impulses(F: np.ndarray, ia: np.ndarray, ib: np.ndarray, n_nodes: int) -> np.ndarray:
    """Q_u^T F as (n_nodes, 6) [moment; force] node impulses (000 Eq. 46 transposed): the
    contact impulse F(i) (nu, 3) on A's node ia[i], -F(i) on B's node ib[i] (-1: the static
    world, nothing), zero moments about the nodes (each node sits at its contact point). Each
    contact side has its own node, so this scatter is Q_u^T F exactly; nodes past the contact
    nodes (bilateral) get zero."""
    out = np.zeros((n_nodes, 6))
    _node_impulses_kernel(np.ascontiguousarray(F, dtype=np.float64), ia, ib, out)
    return out


@njit(cache=True, inline="always")
def _side_nodes(body, local, node_body, node_point, index, n):
    """Append a node for each contact side on a moving body (body >= 0) from node n on;
    index[i] gets contact i's node, -1 for the static world. Returns the next free node."""
    for i in range(body.shape[0]):
        index[i] = -1
        if body[i] >= 0:
            index[i] = n
            node_body[n] = body[i]
            for c in range(3):  # not node_point[n] = local[i]: its shape check compiles ~2 s
                node_point[n, c] = local[i, c]
            n += 1
    return n


@njit(cache=True)
def _contact_nodes_kernel(body_a, body_b, local_a, local_b, node_body, node_point, ia, ib):
    n = _side_nodes(body_a, local_a, node_body, node_point, ia, 0)
    return _side_nodes(body_b, local_b, node_body, node_point, ib, n)


def contact_nodes(body_a, body_b, local_a, local_b):
    """The nodes of the contacts: one per moving side (000 Sec. 6), A sides first, then B
    sides, each in contact order. Returns (node_body (nn,) int64, node_point (nn, 3) body
    frame m, ia, ib (nu,) int64: contact i's A and B node, -1 for the static world)."""
    nu = len(body_a)
    node_body = np.empty(2 * nu, dtype=np.int64)
    node_point = np.empty((2 * nu, 3))
    ia = np.empty(nu, dtype=np.int64)
    ib = np.empty(nu, dtype=np.int64)
    n = _contact_nodes_kernel(
        np.asarray(body_a, dtype=np.int64), np.asarray(body_b, dtype=np.int64),
        np.ascontiguousarray(local_a, dtype=np.float64),
        np.ascontiguousarray(local_b, dtype=np.float64), node_body, node_point, ia, ib,
    )  # fmt: skip
    return node_body[:n], node_point[:n], ia, ib
