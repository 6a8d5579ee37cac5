"""Exact contact between two convex "cores swept by a radius" (numba).

Spheres (a point swept by r), capsules (a segment swept by r), boxes and convex meshes
(polytopes, r = 0) are all a convex *core* plus a radius. For a pair (A, B) with cores
(vertices, faces with outward normals and offsets, edges, edge directions, in world
coordinates) the kernel finds every contact point within ``margin`` of touching:

1. **Separating axes (SAT).** Over the face normals of B and of A and the normalised cross
   products of their edge directions, the largest separation s of the cores (the exact
   signed distance when the cores overlap: min penetration over these axes is the
   penetration depth of two convex polytopes). If s - rA - rB > margin there is no contact.
   Ties prefer B's faces, then A's, then edge pairs (tolerance ``SAT_TOL``), so a face of the
   static shape is the reference whenever possible.
2. **Separated cores (s > 0).** The exact closest points by enumerating feature pairs:
   every vertex against every face polygon of the other core (or its edges/vertex when it
   has no faces) and every edge against every edge. The gap is the distance minus rA + rB.
3. **Manifold.** When the contact normal is a face normal of either core (always for
   penetration found on a face axis; for separated cores when the exact normal is within
   ``ALIGN_COS`` of one), the *incident* face of the other core (the face most opposed to the
   normal, its segment or its point) is clipped against the side planes of the *reference*
   face (Sutherland-Hodgman) and every clipped point within the margin is a contact, its gap
   the distance to the reference plane less the radii. This gives the support polygon of a
   box or mesh face resting on a face, and both ends of a capsule lying on one. Edge-edge
   penetration gives the single closest point of the two supporting edges.

All numbers are metres; normals are unit vectors from B to A (B's point plus gap times the
normal is A's point).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.collision.manifold import (
    K_DEEPEST,
    K_EDGE_EDGE,
    K_EDGES,
    K_REF_A,
    K_REF_B,
    K_VERT_A,
    K_VERT_B,
    key_of,
    put,
)
from mbsim.collision.primitives import (
    closest_on_polygon,
    closest_on_segment,
    copy3,
    cross3,
    dot3,
    segment_segment,
)
from mbsim.collision.table import D0, DN, E0, EN, F0, FN, HX, V0, VN

#: Separations (m) closer than this are a tie in the SAT: float64 noise on sizes up to
#: ~100 m is ~1e-14 m, so ties are real ties; 1e-9 m is far below anything physical.
SAT_TOL = 1e-9
#: A separated-core contact normal within acos(ALIGN_COS) ~ 4.5e-5 rad of a face normal is a
#: face contact (closest features vertex-face or edge-face reach it exactly, up to rounding).
ALIGN_COS = 1.0 - 1e-9
#: Points within this distance (m) of a vertex, edge or side plane lie on it (key labelling).
ON_TOL = 1e-9

#: Rows of a pair's work array ``W`` ((rows, 3) float64, :func:`pair_work_rows`): the
#: 3-vectors the kernels below would otherwise allocate (~50 ns each, plus their reference
#: counts; issue 15), then the clipping polygons. Each function uses its own rows, so nested
#: calls never share one.
(_AXIS, _U, _SIDE, _E, _N, _PA, _PB, _Q, _TMP, _C1, _C2, _P1, _P2, _LE, _LSIDE, _LTMP, _NEG,
 _CN, _CPA, _CPB, _D) = range(21)  # fmt: skip
#: rows 21-30 of W: two boxes' centres, axes (rows) and half extents for the SAT's bounds
#: (:func:`box_rows`)
_BX = 21
W_SMALL = 31
#: Relative bound (of the coordinates' size, m) on the difference between a separation taken
#: over a box's world vertices and the same separation from its centre, axes and half extents:
#: a few float64 roundings (~1e-16) of the same sums, so 1e-12 is ~10^3 times what it needs.
BOX_SLACK = 1e-12


@njit(cache=True)
def world_poly(g, si, V, FN_, FD_, ED_, Rw, pw):
    """Shape g's core in world coordinates: (vertices, face normals, face offsets, edge dirs)."""
    R = Rw[g]
    p = pw[g]
    v0, vn = si[g, V0], si[g, VN]
    f0, fn = si[g, F0], si[g, FN]
    d0, dn = si[g, D0], si[g, DN]
    wv = np.empty((vn, 3))
    for i in range(vn):
        for a in range(3):
            wv[i, a] = R[a, 0] * V[v0 + i, 0] + R[a, 1] * V[v0 + i, 1] + R[a, 2] * V[v0 + i, 2]
            wv[i, a] += p[a]
    wn = np.empty((fn, 3))
    wd = np.empty(fn)
    for i in range(fn):
        s = 0.0
        for a in range(3):
            wn[i, a] = (
                R[a, 0] * FN_[f0 + i, 0] + R[a, 1] * FN_[f0 + i, 1] + R[a, 2] * FN_[f0 + i, 2]
            )
            s += wn[i, a] * p[a]
        wd[i] = FD_[f0 + i] + s
    wed = np.empty((dn, 3))
    for i in range(dn):
        for a in range(3):
            wed[i, a] = (
                R[a, 0] * ED_[d0 + i, 0] + R[a, 1] * ED_[d0 + i, 1] + R[a, 2] * ED_[d0 + i, 2]
            )
    return wv, wn, wd, wed


@njit(cache=True)
def world_poly_into(g, si, V, FN_, FD_, ED_, Rw, pw, wv, wn, wd, wed):
    """:func:`world_poly` into given arrays (rows: the shape's vertex, face and edge-direction
    counts), the same arithmetic in the same order."""
    v0, vn = si[g, V0], si[g, VN]
    f0, fn = si[g, F0], si[g, FN]
    d0, dn = si[g, D0], si[g, DN]
    for i in range(vn):
        for a in range(3):
            wv[i, a] = (
                Rw[g, a, 0] * V[v0 + i, 0] + Rw[g, a, 1] * V[v0 + i, 1] + Rw[g, a, 2] * V[v0 + i, 2]
            )
            wv[i, a] += pw[g, a]
    for i in range(fn):
        s = 0.0
        for a in range(3):
            wn[i, a] = (
                Rw[g, a, 0] * FN_[f0 + i, 0]
                + Rw[g, a, 1] * FN_[f0 + i, 1]
                + Rw[g, a, 2] * FN_[f0 + i, 2]
            )
            s += wn[i, a] * pw[g, a]
        wd[i] = FD_[f0 + i] + s
    for i in range(dn):
        for a in range(3):
            wed[i, a] = (
                Rw[g, a, 0] * ED_[d0 + i, 0]
                + Rw[g, a, 1] * ED_[d0 + i, 1]
                + Rw[g, a, 2] * ED_[d0 + i, 2]
            )


@njit(cache=True)
def pair_work_rows(nva, nvb):
    """Rows of the work array ``W`` for a pair of cores with nva and nvb vertices: the small
    vectors, three clipping polygons of at most 2 (nva + nvb + 2) points (a face has at
    most its core's vertices; :func:`_clip`'s bound) and the reference face's side planes."""
    return W_SMALL + 6 * (nva + nvb + 2) + 2 * (nva + nvb)


@njit(cache=True)
def box_rows(g, slot, sf, Rw, pw, W):
    """Box g's centre, axes (its world frame's columns) and half extents into W's rows
    _BX + 5 slot .. + 4 (slot 0 = A, 1 = B), for :func:`sat`'s bounds."""
    b = _BX + 5 * slot
    for a in range(3):
        W[b, a] = pw[g, a]
        W[b + 4, a] = sf[g, HX + a]
        for k in range(3):
            W[b + 1 + k, a] = Rw[g, a, k]


@njit(cache=True)
def _box_bound(W, u, slot):
    """(centre . u, half extent along u) of box ``slot``'s rows in W: its vertices' dot
    products with u lie in centre . u -+ extent (exactly; up to rounding as computed)."""
    b = _BX + 5 * slot
    c = W[b, 0] * u[0] + W[b, 1] * u[1] + W[b, 2] * u[2]
    r = 0.0
    for k in range(3):
        r += W[b + 4, k] * abs(W[b + 1 + k, 0] * u[0] + W[b + 1 + k, 1] * u[1]
                               + W[b + 1 + k, 2] * u[2])  # fmt: skip
    return c, r


@njit(cache=True)
def _box_size(W):
    """1 + the coordinates' size of both boxes (m), for BOX_SLACK."""
    z = 1.0
    for slot in range(2):
        b = _BX + 5 * slot
        for a in range(3):
            z += abs(W[b, a]) + W[b + 4, a]
    return z


@njit(cache=True)
def shape_faces(g, si, FP):
    """Rows of FP (face polygon start/count) of shape g."""
    return FP[si[g, F0] : si[g, F0] + si[g, FN]]


@njit(cache=True)
def shape_edges(g, si, E):
    return E[si[g, E0] : si[g, E0] + si[g, EN]]


@njit(cache=True)
def _min_dot(v, u):
    m = np.inf
    for i in range(v.shape[0]):
        d = v[i, 0] * u[0] + v[i, 1] * u[1] + v[i, 2] * u[2]
        if d < m:
            m = d
    return m


@njit(cache=True)
def _max_dot(v, u):
    m = -np.inf
    for i in range(v.shape[0]):
        d = v[i, 0] * u[0] + v[i, 1] * u[1] + v[i, 2] * u[2]
        if d > m:
            m = d
    return m


@njit(cache=True)
def sat(vA, nA, dA, edA, vB, nB, dB, edB, limit, axis, faces, u, boxes, W):
    """Largest core separation over the candidate axes (module docstring, step 1).

    Returns (s, type, i, j): type 1 = face i of B (axis = its normal), 0 = face i of A (axis =
    minus its normal), 2 = edge directions i of A and j of B. ``axis`` receives the unit
    normal from B to A. Stops early once s > limit. faces=False: edge pairs only. ``u``:
    scratch (3,).

    boxes: both cores are boxes whose centres, axes and half extents are in W
    (:func:`box_rows`). An axis's separation is then bounded from above in a few products
    (centre and extents, plus ``BOX_SLACK`` for rounding) and not taken over the vertices
    when that bound cannot beat the best by more than SAT_TOL: exactly the axes the vertex
    loop would not have chosen, so the result is the same, bit for bit.
    """
    best = -np.inf
    typ, bi, bj = -1, -1, -1
    slack = BOX_SLACK * _box_size(W) if boxes else 0.0
    for f in range(nB.shape[0] if faces else 0):
        if boxes and typ >= 0:
            c, r = _box_bound(W, nB[f], 0)
            if c - r - dB[f] + slack <= best + SAT_TOL:
                continue
        s = _min_dot(vA, nB[f]) - dB[f]
        if s > best + SAT_TOL or typ < 0:
            best, typ, bi = s, 1, f
            copy3(axis, nB[f])
            if best > limit:
                return best, typ, bi, bj
    for f in range(nA.shape[0] if faces else 0):
        if boxes and typ >= 0:
            c, r = _box_bound(W, nA[f], 1)
            if c - r - dA[f] + slack <= best + SAT_TOL:
                continue
        s = _min_dot(vB, nA[f]) - dA[f]
        if s > best + SAT_TOL or typ < 0:
            best, typ, bi = s, 0, f
            for a in range(3):
                axis[a] = -nA[f, a]
            if best > limit:
                return best, typ, bi, bj
    for i in range(edA.shape[0]):
        for j in range(edB.shape[0]):
            cross3(edA[i], edB[j], u)
            ln = np.sqrt(dot3(u, u))
            if ln < 1e-9:
                continue  # parallel edges: their plane normals are face axes already
            for a in range(3):
                u[a] = u[a] / ln
            if boxes and typ >= 0:
                ca, ra = _box_bound(W, u, 0)
                cb, rb = _box_bound(W, u, 1)
                if abs(ca - cb) - ra - rb + slack <= best + SAT_TOL:
                    continue
            s1 = _min_dot(vA, u) - _max_dot(vB, u)  # A on the +u side
            s2 = _min_dot(vB, u) - _max_dot(vA, u)  # A on the -u side
            s = max(s1, s2)
            if s > best + SAT_TOL or typ < 0:
                best, typ, bi, bj = s, 2, i, j
                if s1 >= s2:
                    copy3(axis, u)
                else:
                    for a in range(3):
                        axis[a] = -u[a]
                if best > limit:
                    return best, typ, bi, bj
    return best, typ, bi, bj


@njit(cache=True)
def point_to_core(p, v, n, d, fp, e, FV, q, tmp):
    """Squared distance from p (outside the core) to the core; closest point into q (tmp:
    scratch (3,)). Returns (d2, feature index): a face, an edge, or a vertex, whichever the
    core has."""
    best = np.inf
    feat = -1
    if n.shape[0] > 0:
        for f in range(n.shape[0]):
            if dot3(n[f], p) - d[f] <= 0.0:
                continue  # p behind this face's plane: the closest point is on another face
            d2 = closest_on_polygon(p, v, FV, fp[f, 0], fp[f, 1], n[f], tmp)
            if d2 < best:
                best, feat = d2, f
                copy3(q, tmp)
    elif e.shape[0] > 0:
        for k in range(e.shape[0]):
            closest_on_segment(p, v[e[k, 0]], v[e[k, 1]], tmp)
            d2 = (p[0] - tmp[0]) ** 2 + (p[1] - tmp[1]) ** 2 + (p[2] - tmp[2]) ** 2
            if d2 < best:
                best, feat = d2, k
                copy3(q, tmp)
    else:
        for k in range(v.shape[0]):
            d2 = (p[0] - v[k, 0]) ** 2 + (p[1] - v[k, 1]) ** 2 + (p[2] - v[k, 2]) ** 2
            if d2 < best:
                best, feat = d2, k
                copy3(q, v[k])
    return best, feat


@njit(cache=True)
def closest_features(vA, nA, dA, fpA, eA, vB, nB, dB, fpB, eB, FV, pa, pb, W):
    """Exact closest points of two disjoint convex cores (module docstring, step 2).

    Returns (squared distance, key kind, feature of A, feature of B). W: the work array."""
    best = np.inf
    kind, fa, fb = 0, 0, 0
    q = W[_Q]
    tmp = W[_TMP]
    for i in range(vA.shape[0]):
        d2, f = point_to_core(vA[i], vB, nB, dB, fpB, eB, FV, q, tmp)
        if d2 < best:
            best, kind, fa, fb = d2, K_VERT_A, i, f
            copy3(pa, vA[i])
            copy3(pb, q)
    for i in range(vB.shape[0]):
        d2, f = point_to_core(vB[i], vA, nA, dA, fpA, eA, FV, q, tmp)
        if d2 < best:
            best, kind, fa, fb = d2, K_VERT_B, f, i
            copy3(pa, q)
            copy3(pb, vB[i])
    c1 = W[_C1]
    c2 = W[_C2]
    for i in range(eA.shape[0]):
        for j in range(eB.shape[0]):
            segment_segment(vA[eA[i, 0]], vA[eA[i, 1]], vB[eB[j, 0]], vB[eB[j, 1]], c1, c2)
            d2 = (c1[0] - c2[0]) ** 2 + (c1[1] - c2[1]) ** 2 + (c1[2] - c2[2]) ** 2
            if d2 < best:
                best, kind, fa, fb = d2, K_EDGES, i, j
                copy3(pa, c1)
                copy3(pb, c2)
    return best, kind, fa, fb


@njit(cache=True)
def _incident(v, n, fp, FV, normal, poly):
    """The incident feature of a core against reference normal ``normal``: its face most
    opposed to it, else its segment, else its point. Fills ``poly``; returns (count, face)."""
    if n.shape[0] > 0:
        best = np.inf
        fi = 0
        for f in range(n.shape[0]):
            c = dot3(n[f], normal)
            if c < best:
                best, fi = c, f
        start, count = fp[fi, 0], fp[fi, 1]
        for k in range(count):
            for a in range(3):
                poly[k, a] = v[FV[start + k], a]
        return count, fi
    count = v.shape[0]
    for k in range(count):
        for a in range(3):
            poly[k, a] = v[k, a]
    return count, 0


@njit(cache=True)
def _clip_size(fpR, fr, vI, nI, fpI):
    """Rows of each clipping polygon for :func:`_clip`."""
    rcount = fpR[fr, 1]
    size = rcount + (vI.shape[0] if nI.shape[0] == 0 else 0) + 2
    for f in range(fpI.shape[0]):
        size = max(size, rcount + fpI[f, 1] + 2)
    return 2 * size


@njit(cache=True)
def clip_manifold(
    ref_is_b, vR, nR, dR, fpR, fr, rR, vI, nI, fpI, rI, FV, margin, buf, keys, count
):  # fmt: skip
    """Clip the incident feature of core I against reference face ``fr`` of core R and
    append every point within the margin (module docstring, step 3). Returns the new count.

    ref_is_b: True when R is B (normal = nR[fr]), False when R is A (normal = -nR[fr]).
    (:func:`_clip` with its own work array.)
    """
    W = np.empty((W_SMALL + 3 * _clip_size(fpR, fr, vI, nI, fpI) + 2 * fpR[fr, 1], 3))
    return _clip(ref_is_b, vR, nR, dR, fpR, fr, rR, vI, nI, fpI, rI, FV, margin, buf, keys,
                 count, W)  # fmt: skip


@njit(cache=True)
def _clip(
    ref_is_b, vR, nR, dR, fpR, fr, rR, vI, nI, fpI, rI, FV, margin, buf, keys, count, W
):  # fmt: skip
    """:func:`clip_manifold` in the work array W (rows: W_SMALL + 3 x :func:`_clip_size` +
    2 x the reference face's sides, or a new one is made). The side planes are computed
    once, here, for the clipping and for :func:`_label` (which computed them again for
    every point, by the same operations)."""
    nr = nR[fr]
    rstart, rcount = fpR[fr, 0], fpR[fr, 1]
    size = _clip_size(fpR, fr, vI, nI, fpI)
    if W.shape[0] < W_SMALL + 3 * size + 2 * rcount:
        W = np.empty((W_SMALL + 3 * size + 2 * rcount, 3))
    poly = W[W_SMALL : W_SMALL + size]
    incident = W[W_SMALL + size : W_SMALL + 2 * size]
    out = W[W_SMALL + 2 * size : W_SMALL + 3 * size]
    sides = W[W_SMALL + 3 * size : W_SMALL + 3 * size + rcount]
    offs = W[W_SMALL + 3 * size + rcount : W_SMALL + 3 * size + 2 * rcount]
    e = W[_E]
    for s in range(rcount):
        a = vR[FV[rstart + s]]
        b = vR[FV[rstart + (s + 1) % rcount]]
        for k in range(3):
            e[k] = b[k] - a[k]
        side = sides[s]
        cross3(e, nr, side)
        ln = np.sqrt(dot3(side, side))
        for k in range(3):
            side[k] = side[k] / ln
        offs[s, 0] = dot3(side, a)
    m, fi = _incident(vI, nI, fpI, FV, nr, poly)
    m0 = m
    for k in range(m):
        for a in range(3):
            incident[k, a] = poly[k, a]
    for s in range(rcount):
        if m == 0:
            break
        side = sides[s]
        off = offs[s, 0]
        n_out = 0
        for k in range(m):
            cur = poly[k]
            prev = poly[(k - 1) % m]
            dc = dot3(side, cur) - off
            dp = dot3(side, prev) - off
            if dc <= 0.0:
                if dp > 0.0:
                    t = dp / (dp - dc)
                    for c in range(3):
                        out[n_out, c] = prev[c] + t * (cur[c] - prev[c])
                    n_out += 1
                for c in range(3):
                    out[n_out, c] = cur[c]
                n_out += 1
            elif dp <= 0.0:
                t = dp / (dp - dc)
                for c in range(3):
                    out[n_out, c] = prev[c] + t * (cur[c] - prev[c])
                n_out += 1
        m = n_out
        for k in range(m):
            for c in range(3):
                poly[k, c] = out[k, c]
    n = W[_CN]
    sign = 1.0 if ref_is_b else -1.0
    for k in range(3):
        n[k] = sign * nr[k]
    pa = W[_CPA]
    pb = W[_CPB]
    for k in range(m):
        q = poly[k]
        h = dot3(nr, q) - dR[fr]
        gap = h - rR - rI
        if gap > margin:
            continue
        sub = _label(q, incident, m0, rcount, sides, offs, k, W)
        if ref_is_b:  # I is A
            for a in range(3):
                pa[a] = q[a] - rI * n[a]
                pb[a] = q[a] - h * nr[a] + rR * n[a]
            key = key_of(K_REF_B, fr, fi, sub)
        else:  # I is B, R is A
            for a in range(3):
                pb[a] = q[a] + rI * n[a]
                pa[a] = q[a] - h * nr[a] - rR * n[a]
            key = key_of(K_REF_A, fr, fi, sub)
        count = put(buf, keys, count, pa, pb, n, gap, key)
    return count


@njit(cache=True)
def _label(q, incident, m0, rcount, sides, offs, index, W):
    """Stable id of a clipped point: an incident vertex k -> k; on incident edge e and
    reference side s -> (1 << 18) + 512 e + s; at reference corner s -> (2 << 18) + s."""
    for k in range(m0):
        if (q[0] - incident[k, 0]) ** 2 + (q[1] - incident[k, 1]) ** 2 + (
            q[2] - incident[k, 2]
        ) ** 2 < ON_TOL * ON_TOL:
            return k
    on = 0
    first = -1
    for s in range(rcount):
        if abs(dot3(sides[s], q) - offs[s, 0]) < ON_TOL:
            on += 1
            if first < 0:
                first = s
            elif s == rcount - 1 and first == 0:
                first = s  # the corner between the last and first sides
    if on >= 2:
        return (2 << 18) + first
    if on == 1:
        tmp = W[_LTMP]
        for k in range(m0):
            closest_on_segment(q, incident[k], incident[(k + 1) % m0], tmp)
            if (q[0] - tmp[0]) ** 2 + (q[1] - tmp[1]) ** 2 + (q[2] - tmp[2]) ** 2 < ON_TOL**2:
                return (1 << 18) + 512 * k + first
    return (3 << 18) + index


@njit(cache=True)
def convex_pair(
    vA, nA, dA, fpA, eA, edA, rA, vB, nB, dB, fpB, eB, edB, rB, FV, margin, buf, keys
):  # fmt: skip
    """All contacts of cores A and B within ``margin`` into the pair buffer (module
    docstring); returns how many were written. (:func:`convex_pair_in` with its own work
    array.)"""
    W = np.empty((pair_work_rows(vA.shape[0], vB.shape[0]), 3))
    return convex_pair_in(
        vA, nA, dA, fpA, eA, edA, rA, vB, nB, dB, fpB, eB, edB, rB, FV, margin, buf, keys, W,
        np.bool_(False),
    )  # fmt: skip


@njit(cache=True)
def convex_pair_in(
    vA, nA, dA, fpA, eA, edA, rA, vB, nB, dB, fpB, eB, edB, rB, FV, margin, buf, keys, W, boxes
):  # fmt: skip
    """:func:`convex_pair` in the work array ``W`` (:func:`pair_work_rows` rows), with no
    allocation: every vector of the formulas below is a row of W, and the expressions once
    written on arrays (``pa - rA * n``, ...) are the same operations element by element.
    boxes: A and B are boxes, their rows in W (:func:`box_rows`; :func:`sat`'s bounds)."""
    axis = W[_AXIS]
    # np.bool_/np.int64 constants, not literals: one compile of each callee (see round_pair)
    s, typ, i, j = sat(
        vA, nA, dA, edA, vB, nB, dB, edB, margin + rA + rB, axis, np.bool_(True), W[_U], boxes,
        W,
    )  # fmt: skip
    if typ < 0 or s - rA - rB > margin:
        return 0
    count = np.int64(0)
    p1 = W[_P1]
    p2 = W[_P2]
    # Cores apart by more than the tie tolerance: exact closest points. (Touching cores, s ~ 0,
    # would give a closest-point direction made of rounding noise; the SAT axis is exact.)
    if s > SAT_TOL:
        pa = W[_PA]
        pb = W[_PB]
        d2, fk, fa, fb = closest_features(
            vA, nA, dA, fpA, eA, vB, nB, dB, fpB, eB, FV, pa, pb, W
        )  # fmt: skip
        d = np.sqrt(d2)
        gap = d - rA - rB
        if gap > margin:
            return 0
        n = W[_N]
        for a in range(3):
            n[a] = (pa[a] - pb[a]) / d
        fbest, cb = np.int64(-1), -np.inf
        for f in range(nB.shape[0]):
            c = dot3(nB[f], n)
            if c > cb:
                cb, fbest = c, f
        fabest, ca = np.int64(-1), -np.inf
        for f in range(nA.shape[0]):
            c = -dot3(nA[f], n)
            if c > ca:
                ca, fabest = c, f
        if cb >= ALIGN_COS and cb >= ca:
            count = _clip(
                np.bool_(True), vB, nB, dB, fpB, fbest, rB, vA, nA, fpA, rA, FV, margin,
                buf, keys, np.int64(0), W,
            )  # fmt: skip
        elif ca >= ALIGN_COS:
            count = _clip(
                np.bool_(False), vA, nA, dA, fpA, fabest, rA, vB, nB, fpB, rB, FV, margin,
                buf, keys, np.int64(0), W,
            )  # fmt: skip
        for k in range(count):
            if abs(buf[k, 9] - gap) <= ON_TOL:
                return count
        for a in range(3):
            p1[a] = pa[a] - rA * n[a]
            p2[a] = pb[a] + rB * n[a]
        return put(buf, keys, count, p1, p2, n, gap, key_of(fk, fa, fb, 0))
    if typ == 1:
        count = _clip(
            np.bool_(True), vB, nB, dB, fpB, i, rB, vA, nA, fpA, rA, FV, margin, buf, keys,
            np.int64(0), W,
        )  # fmt: skip
    elif typ == 0:
        count = _clip(
            np.bool_(False), vA, nA, dA, fpA, i, rA, vB, nB, fpB, rB, FV, margin, buf, keys,
            np.int64(0), W,
        )  # fmt: skip
    if count > 0:
        return count
    if typ != 2 and s >= -SAT_TOL:
        # touching on a face axis, but at a vertex or edge outside that face: the closest
        # features (coincident points) are the contact, the face normal a valid normal
        pa = W[_PA]
        pb = W[_PB]
        _, fk, fa, fb = closest_features(
            vA, nA, dA, fpA, eA, vB, nB, dB, fpB, eB, FV, pa, pb, W
        )  # fmt: skip
        for a in range(3):
            p1[a] = pa[a] - rA * axis[a]
            p2[a] = pb[a] + rB * axis[a]
        return put(buf, keys, np.int64(0), p1, p2, axis, s - rA - rB, key_of(fk, fa, fb, 0))
    if typ != 2 and edA.shape[0] > 0 and edB.shape[0] > 0:
        # penetration on a face axis whose clipped incident feature fell outside the reference
        # face (a tie within SAT_TOL between a face and an edge pair): use the best edge pair
        s2, t2, i, j = sat(
            vA, nA, dA, edA, vB, nB, dB, edB, np.inf, axis, np.bool_(False), W[_U], boxes, W
        )  # fmt: skip
        if t2 == 2:
            typ, s = 2, s2
    if typ == 2:
        # supporting edges: A's edge along dir i deepest towards B, B's along j towards A
        ea = _support_edge(vA, eA, edA[i], axis, -1.0, W[_D])
        eb = _support_edge(vB, eB, edB[j], axis, 1.0, W[_D])
        c1 = W[_C1]
        c2 = W[_C2]
        segment_segment(vA[eA[ea, 0]], vA[eA[ea, 1]], vB[eB[eb, 0]], vB[eB[eb, 1]], c1, c2)
        for a in range(3):
            p1[a] = c1[a] - rA * axis[a]
            p2[a] = c2[a] + rB * axis[a]
        return put(
            buf, keys, np.int64(0), p1, p2, axis, s - rA - rB, key_of(K_EDGE_EDGE, ea, eb, 0)
        )  # fmt: skip
    # a point or segment core deep in a polytope near the rim of the reference face: report the
    # deepest vertex of the incident core
    if typ == 1:
        k = _argmin_dot(vA, axis)
        for a in range(3):
            p1[a] = vA[k, a] - rA * axis[a]
            p2[a] = vA[k, a] - s * axis[a] + rB * axis[a]
        return put(buf, keys, 0, p1, p2, axis, s - rA - rB, key_of(K_DEEPEST, k, 0, 0))
    neg = W[_NEG]
    for a in range(3):
        neg[a] = -axis[a]
    k = _argmin_dot(vB, neg)
    for a in range(3):
        p1[a] = vB[k, a] + s * axis[a] - rA * axis[a]
        p2[a] = vB[k, a] + rB * axis[a]
    return put(buf, keys, 0, p1, p2, axis, s - rA - rB, key_of(K_DEEPEST, 0, k, 0))


@njit(cache=True)
def _argmin_dot(v, u):
    best, bk = np.inf, 0
    for k in range(v.shape[0]):
        d = dot3(v[k], u)
        if d < best:
            best, bk = d, k
    return bk


@njit(cache=True)
def _support_edge(v, e, direction, axis, sign, d):
    """Index of the edge parallel to ``direction`` extreme along sign * axis (d: scratch (3,))."""
    best, be = -np.inf, 0
    for k in range(e.shape[0]):
        for a in range(3):
            d[a] = v[e[k, 1], a] - v[e[k, 0], a]
        ln = np.sqrt(dot3(d, d))
        if ln == 0.0 or abs(dot3(d, direction)) < (1.0 - 1e-9) * ln:
            continue
        h = sign * 0.5 * (dot3(v[e[k, 0]], axis) + dot3(v[e[k, 1]], axis))
        if h > best:
            best, be = h, k
    return be
