"""Cheap exact rejections of candidate pairs before the contact kernels (numba).

Each returns True only when the pair is certainly farther apart than the margin, so no
contact is ever lost: two bounding spheres, a bounding sphere above a ground half-space, a
box against another shape's bounding sphere (large floor boxes), the 15-axis test of the two
shapes' bounding boxes, and a lower bound on the distance of the two convex hulls (used
before the slow FCL queries).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.collision.primitives import copy3
from mbsim.collision.shapes import BOX
from mbsim.collision.table import BR, HX, KIND, OCX, OHX, RAD, V0, VN


@njit(cache=True, forceinline=True)
def spheres_apart(i, j, sf, bc, margin):
    """True if the bounding spheres of shapes i and j (centres bc, m) are more than ``margin``
    (m) apart: |c_i - c_j| > r_i + r_j + margin. False for a NaN (never counted apart)."""
    dx = bc[i, 0] - bc[j, 0]
    dy = bc[i, 1] - bc[j, 1]
    dz = bc[i, 2] - bc[j, 2]
    reach = sf[i, BR] + sf[j, BR] + margin
    return dx * dx + dy * dy + dz * dz > reach * reach


@njit(cache=True, forceinline=True)
def above_halfspace(g, sf, bc, ground, k, margin):
    """True if shape g's bounding sphere is more than ``margin`` (m) above ground half-space k,
    row (nx, ny, nz, d) of n . x <= d: n . c_g - d - r_g > margin. False for a NaN."""
    h = ground[k, 0] * bc[g, 0] + ground[k, 1] * bc[g, 1] + ground[k, 2] * bc[g, 2] - ground[k, 3]
    return h - sf[g, BR] > margin


@njit(cache=True)
def boxes_apart(i, j, sf, Rw, pw, margin):
    """True if the bounding boxes of shapes i and j (each in its own frame, grown by
    margin / 2) are disjoint: the 15-axis separating-axis test of two oriented boxes
    (Ericson 4.4.1). Cheap, and far tighter than bounding spheres for long links.
    (:func:`boxes_apart_in` with its own work array.)"""
    return boxes_apart_in(i, j, sf, Rw, pw, margin, np.empty(33))


@njit(cache=True)
def boxes_apart_in(i, j, sf, Rw, pw, margin, w):
    """:func:`boxes_apart` in the work array ``w`` (33 floats; the narrowphase passes one
    for all its pairs, as a view without reference counts: an allocation, two reshapes and
    their views cost about as much as the test's arithmetic; issue 15). w holds the two
    centres ci, cj, the grown half extents ea, eb, t, then Rm (j's axes in i's frame) and
    Ab, row-major: the same operations as on named arrays."""
    CI, CJ, EA, EB, T, RM, AB = 0, 3, 6, 9, 12, 15, 24
    for a in range(3):
        w[CI + a] = pw[i, a]
        w[CJ + a] = pw[j, a]
        for k in range(3):
            w[CI + a] += Rw[i, a, k] * sf[i, OCX + k]
            w[CJ + a] += Rw[j, a, k] * sf[j, OCX + k]
        w[EA + a] = sf[i, OHX + a] + 0.5 * margin
        w[EB + a] = sf[j, OHX + a] + 0.5 * margin
    for a in range(3):
        w[T + a] = 0.0
        for k in range(3):
            w[T + a] += Rw[i, k, a] * (w[CJ + k] - w[CI + k])
            s = 0.0
            for m in range(3):
                s += Rw[i, m, a] * Rw[j, m, k]
            w[RM + 3 * a + k] = s
            w[AB + 3 * a + k] = abs(s) + 1e-12
    for a in range(3):
        if (
            abs(w[T + a])
            > w[EA + a]
            + w[EB] * w[AB + 3 * a]
            + w[EB + 1] * w[AB + 3 * a + 1]
            + w[EB + 2] * w[AB + 3 * a + 2]
        ):
            return True
    for k in range(3):
        tk = w[T] * w[RM + k] + w[T + 1] * w[RM + 3 + k] + w[T + 2] * w[RM + 6 + k]
        if (
            abs(tk)
            > w[EA] * w[AB + k] + w[EA + 1] * w[AB + 3 + k] + w[EA + 2] * w[AB + 6 + k] + w[EB + k]
        ):
            return True
    for a in range(3):
        a1, a2 = (a + 1) % 3, (a + 2) % 3
        for k in range(3):
            k1, k2 = (k + 1) % 3, (k + 2) % 3
            ra = w[EA + a1] * w[AB + 3 * a2 + k] + w[EA + a2] * w[AB + 3 * a1 + k]
            rb = w[EB + k1] * w[AB + 3 * a + k2] + w[EB + k2] * w[AB + 3 * a + k1]
            if abs(w[T + a2] * w[RM + 3 * a1 + k] - w[T + a1] * w[RM + 3 * a2 + k]) > ra + rb:
                return True
    return False


@njit(cache=True)
def hulls_apart(i, j, si, sf, V, Rw, pw, bc, margin, iterations):
    """True if the convex hulls of shapes i and j (their vertices swept by their radii) are
    provably farther apart than the margin: a lower bound on the distance of any shapes
    inside them, used before handing a pair to FCL.

    For a direction u, min_i u.x - max_j u.x - r_i - r_j is a lower bound on the distance.
    Start from the line between the bounding-sphere centres and iterate u <- the direction
    between the two current support points (GJK's first step, repeated) while the bound grows.
    Cylinders have no vertices here: never claimed apart.
    """
    if si[i, VN] == 0 or si[j, VN] == 0:
        return False
    u = np.empty(3)
    for a in range(3):
        u[a] = bc[i, a] - bc[j, a]
    pa = np.empty(3)
    pb = np.empty(3)
    v = np.empty(3)
    reach = margin + sf[i, RAD] + sf[j, RAD]
    best_lo = -np.inf
    for _ in range(iterations):
        ln = np.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
        if ln < 1e-15:
            return False
        u /= ln
        lo = np.inf
        for g, sign in ((i, 1.0), (j, -1.0)):
            R = Rw[g]
            best = np.inf
            for k in range(si[g, V0], si[g, V0] + si[g, VN]):
                for a in range(3):
                    v[a] = R[a, 0] * V[k, 0] + R[a, 1] * V[k, 1] + R[a, 2] * V[k, 2] + pw[g, a]
                d = sign * (u[0] * v[0] + u[1] * v[1] + u[2] * v[2])
                if d < best:
                    best = d
                    if sign > 0.0:
                        copy3(pa, v)
                    else:
                        copy3(pb, v)
            lo = best if sign > 0.0 else lo + best
        if lo > reach:
            return True
        if lo <= best_lo + 1e-9:
            return False  # no progress: the hulls overlap or touch, FCL decides
        best_lo = lo
        for a in range(3):
            u[a] = pa[a] - pb[a]
    return False


@njit(cache=True)
def outside_box(b, o, si, sf, Rw, pw, bc, margin):
    """True if b is a box and o's bounding sphere is farther than the margin from it: the
    bounding-sphere test alone lets every shape near a large floor box through."""
    if si[b, KIND] != BOX:
        return False
    d2 = 0.0
    for k in range(3):
        x = (
            Rw[b, 0, k] * (bc[o, 0] - pw[b, 0])
            + Rw[b, 1, k] * (bc[o, 1] - pw[b, 1])
            + Rw[b, 2, k] * (bc[o, 2] - pw[b, 2])
        )
        e = abs(x) - sf[b, HX + k]
        if e > 0.0:
            d2 += e * e
    reach = sf[o, BR] + margin
    return d2 > reach * reach
