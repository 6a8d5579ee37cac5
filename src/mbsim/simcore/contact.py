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

import numpy as np


def tangent_basis(normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit tangents (t1, t2) with (t1, t2, n) right-handed, for each row of ``normal``.

    t1 is the normalised projection of the world axis least aligned with n, so the basis is
    a smooth function of n away from those switching cones and deterministic everywhere.
    """
    n = np.atleast_2d(np.asarray(normal, dtype=float))
    axis = np.zeros_like(n)
    axis[np.arange(len(n)), np.argmin(np.abs(n), axis=1)] = 1.0
    t1 = axis - np.sum(axis * n, axis=1, keepdims=True) * n
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    t2 = np.cross(n, t1)
    return t1, t2


def friction_matrix(normal: np.ndarray, nf: int) -> np.ndarray:
    """D(i) for every contact: (nu, 3, nf + 1) with columns [n, d_1, ..., d_nf] (Eq. 7).

    d_j = cos(2 pi j / nf) t1 + sin(2 pi j / nf) t2, j = 0 .. nf-1.
    """
    if nf < 4 or nf % 2:
        raise ValueError(f"friction directions nf={nf} must be an even number >= 4")
    n = np.atleast_2d(np.asarray(normal, dtype=float))
    if n.shape[0] == 0:
        return np.zeros((0, 3, nf + 1))
    t1, t2 = tangent_basis(n)
    angles = 2.0 * np.pi * np.arange(nf) / nf
    D = np.empty((len(n), 3, nf + 1))
    D[:, :, 0] = n
    D[:, :, 1:] = (
        t1[:, :, None] * np.cos(angles)[None, None, :]
        + t2[:, :, None] * np.sin(angles)[None, None, :]
    )
    return D


def contact_lcp(W: np.ndarray, D: np.ndarray, mu: np.ndarray, v_free: np.ndarray):
    """Contact rows of the OS LCP (Eq. 53 without bilateral rows): returns (M, q).

    W: (3 nu, 3 nu) relative-velocity compliance Q_u Lambda Q_u^T; D: (nu, 3, nf + 1);
    mu: (nu,) friction coefficients; v_free: (nu, 3) relative contact velocities after the
    free motion (m/s, normal component possibly shifted by a gap term). z = [beta; sigma].
    """
    nu, _, k = D.shape
    nf = k - 1
    size_b = nu * k
    Dblk = np.zeros((3 * nu, size_b))
    for i in range(nu):
        Dblk[3 * i : 3 * i + 3, k * i : k * i + k] = D[i]
    M = np.zeros((size_b + nu, size_b + nu))
    M[:size_b, :size_b] = Dblk.T @ W @ Dblk
    for i in range(nu):
        M[k * i + 1 : k * i + k, size_b + i] = 1.0  # E-hat
        M[size_b + i, k * i] = mu[i]  # E-bar
        M[size_b + i, k * i + 1 : k * i + k] = -1.0
    q = np.zeros(size_b + nu)
    q[:size_b] = np.einsum("ijk,ij->ik", D, v_free).ravel()
    del nf
    return M, q


def relative_compliance(Lam: np.ndarray, node_a: np.ndarray, node_b: np.ndarray) -> np.ndarray:
    """W = Q_u Lambda Q_u^T from the node compliance (000 Eqs. 46, 49).

    Lam: (6 nc, 6 nc) for world-aligned nodes (rows [angular; linear] per node); node_a[i],
    node_b[i]: node indices of contact i's points on A and on B (-1 for the static world,
    which contributes nothing). Returns (3 nu, 3 nu).
    """
    nu = len(node_a)
    lin = Lam.reshape(Lam.shape[0] // 6, 6, Lam.shape[1] // 6, 6)[:, 3:, :, 3:]
    W = np.zeros((3 * nu, 3 * nu))
    for i in range(nu):
        for j in range(nu):
            block = np.zeros((3, 3))
            for ni, si in ((node_a[i], 1.0), (node_b[i], -1.0)):
                if ni < 0:
                    continue
                for nj, sj in ((node_a[j], 1.0), (node_b[j], -1.0)):
                    if nj >= 0:
                        block += si * sj * lin[ni, :, nj, :]
            W[3 * i : 3 * i + 3, 3 * j : 3 * j + 3] = block
    return W


def curvature_drift(R_world, vel, chat, contacts, dt: float) -> np.ndarray:
    """The normal displacement (m, (nu,)) a step of length dt adds beyond the velocity-level
    row: 1/2 dt^2 n . (a_A - a_B), with a the contact points' accelerations at zero joint
    acceleration (the J-dot v term: centripetal and Coriolis).

    The contact rows constrain n . J(q) v+, a first-order prediction of the gap; a point on a
    rotating body moves on a curve, so each step drifts by 1/2 dt^2 n . J-dot v (about 4e-5 m
    per ms-step for a chain rolling on a contact, docs/results.md, 001 Fig. 8). Adding it to
    the gap makes the prediction second order. Point acceleration of a body point p (body
    frame) from the body's spatial velocity (w, v) and bias acceleration (alpha, a) (chat,
    body frame, Featherstone's spatial convention): R (a + alpha x p + w x (v + w x p)).
    """
    out = np.zeros(len(contacts.gap))
    if not len(out):
        return out
    acc = np.zeros((len(out), 3))
    for body, local, sign in (
        (contacts.body_a, contacts.local_a, 1.0),
        (contacts.body_b, contacts.local_b, -1.0),
    ):
        idx = np.flatnonzero(body >= 0)
        if not len(idx):
            continue
        k = body[idx]
        p = local[idx]
        w, v = vel[k, :3], vel[k, 3:]
        al, a = chat[k, :3], chat[k, 3:]
        a_local = a + np.cross(al, p) + np.cross(w, v + np.cross(w, p))
        acc[idx] += sign * np.einsum("kij,kj->ki", R_world[k], a_local)
    return 0.5 * dt * dt * np.einsum("ij,ij->i", acc, contacts.normal)
