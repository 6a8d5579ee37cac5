"""Contact manifolds: the per-pair point buffer and its reduction to at most ``cap`` points.

A pair's kernel writes candidate points into a :class:`numba` scratch buffer ``buf`` of shape
(K, 10): columns 0-2 the point on A, 3-5 the point on B (world, m), 6-8 the unit normal from B
to A, 9 the gap (m, negative = penetration), with a parallel int64 ``keys`` array (the feature
key of each point, see below). :func:`reduce_manifold` then keeps at most ``cap`` of them,
the ones spanning the largest area, so a face resting on a face keeps its support polygon:

1. the deepest point (smallest gap);
2. the point farthest from it;
3. the point making the triangle with 1 and 2 of largest area;
4. the point adding the most area outside that triangle (the quadrilateral of largest area);
5. further points (cap > 4), each the one farthest from all points kept so far.

Areas are measured on the points on B projected along the normal (the contact plane). Points
closer than ``MERGE_DIST`` to a kept point (duplicates from clipping) are dropped first.

Feature keys (int64) identify a contact across steps within its pair: the kernel composes
them from the indices of the features that produced the point (vertex, edge, face ids of the
two shapes), so a box resting on a face keeps the same four keys while it slides. The stepper
identifies a contact by ``(pair_id, feature_key)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.simcore.options import CONTACT_MANIFOLDS

#: Two candidate points closer than this (m) on B are one contact.
MERGE_DIST = 1e-9

# Feature-key kinds (bits 56-62 of a key): which kernel made the point.
K_REF_B = 1  # clipped on a reference face of B: (face of B, incident face of A, point label)
K_REF_A = 2  # clipped on a reference face of A: (face of A, incident face of B, point label)
K_EDGE_EDGE = 3  # penetrating edges: (edge of A, edge of B)
K_VERT_A = 4  # closest features, a vertex of A: (vertex of A, feature of B)
K_VERT_B = 5  # closest features, a vertex of B: (feature of A, vertex of B)
K_EDGES = 6  # closest features, two edges: (edge of A, edge of B)
K_DEEPEST = 7  # deepest vertex of an incident core
K_GROUND = 8  # ground plane: (vertex)
K_SPHERES = 9  # sphere/capsule pairs: (0 closest, 1-2 ends of a parallel overlap)
K_BOX_POINT, K_CYL_POINT, K_MESH_POINT = 10, 11, 12  # sphere (or capsule point) on a solid
K_CYL_RIM = 13  # cylinder rim point: (end cap, slot)
K_FCL_COLLIDE, K_FCL_DISTANCE = 14, 15  # FCL: (triangle ids)
K_MESH_VERTEX, K_POLY_VERTEX = 16, 17  # mesh vertex on a polytope, polytope vertex on a mesh
K_TRI_B, K_TRI_A = 18, 19  # mesh-mesh: a triangle of A clipped on a triangle of B (and vice versa):
# (reference triangle, incident triangle, clipped-polygon vertex)


@njit(cache=True, inline="always")
def _area2(buf, i, j, k, n):
    """Twice the signed area of triangle (i, j, k) of B-points, about normal n."""
    ax = buf[j, 3] - buf[i, 3]
    ay = buf[j, 4] - buf[i, 4]
    az = buf[j, 5] - buf[i, 5]
    bx = buf[k, 3] - buf[i, 3]
    by = buf[k, 4] - buf[i, 4]
    bz = buf[k, 5] - buf[i, 5]
    return n[0] * (ay * bz - az * by) + n[1] * (az * bx - ax * bz) + n[2] * (ax * by - ay * bx)


@njit(cache=True, inline="always")
def _dist2(buf, i, j):
    return (
        (buf[i, 3] - buf[j, 3]) ** 2 + (buf[i, 4] - buf[j, 4]) ** 2 + (buf[i, 5] - buf[j, 5]) ** 2
    )


@njit(cache=True)
def reduce_manifold(buf, keys, count, cap, chosen):
    """Pick at most ``cap`` of the ``count`` buffered points (module docstring); writes
    their row indices into ``chosen`` and returns how many."""
    if count == 0:
        return 0
    # drop duplicates (keep the first, which the kernels emit in feature order)
    alive = np.ones(count, dtype=np.bool_)
    for i in range(count):
        if alive[i]:
            for j in range(i + 1, count):
                if alive[j] and _dist2(buf, i, j) < MERGE_DIST * MERGE_DIST:
                    alive[j] = False
                    if buf[j, 9] < buf[i, 9]:
                        buf[i, 9] = buf[j, 9]
    first = -1
    for i in range(count):
        if alive[i] and (first < 0 or buf[i, 9] < buf[first, 9]):
            first = i
    chosen[0] = first
    m = 1
    if cap <= 1:
        return m
    n = buf[first, 6:9]
    alive[first] = False
    # 2: farthest from the first
    best, bi = -1.0, -1
    for i in range(count):
        if alive[i]:
            d = _dist2(buf, i, first)
            if d > best:
                best, bi = d, i
    if bi < 0:
        return m
    chosen[m] = bi
    alive[bi] = False
    m += 1
    if cap <= 2:
        return m
    # 3: largest triangle
    best, bi = -1.0, -1
    for i in range(count):
        if alive[i]:
            a = abs(_area2(buf, chosen[0], chosen[1], i, n))
            if a > best:
                best, bi = a, i
    if bi < 0:
        return m
    if _area2(buf, chosen[0], chosen[1], bi, n) < 0.0:
        # orient the triangle counter-clockwise so "outside an edge" is a negative area
        chosen[2] = chosen[1]
        chosen[1] = bi
    else:
        chosen[2] = bi
    alive[bi] = False
    m += 1
    if cap <= 3:
        return m
    # 4: most area added outside the triangle
    best, bi = 0.0, -1
    for i in range(count):
        if alive[i]:
            gain = 0.0
            for e in range(3):
                a = _area2(buf, chosen[e], chosen[(e + 1) % 3], i, n)
                if -a > gain:
                    gain = -a
            if gain > best:
                best, bi = gain, i
    if bi < 0:
        # all remaining points inside the triangle: take the farthest from its vertices
        best = -1.0
        for i in range(count):
            if alive[i]:
                d = min(_dist2(buf, i, chosen[0]), _dist2(buf, i, chosen[1]))
                d = min(d, _dist2(buf, i, chosen[2]))
                if d > best:
                    best, bi = d, i
        if bi < 0 or best < MERGE_DIST * MERGE_DIST:
            return m
    chosen[m] = bi
    alive[bi] = False
    m += 1
    # 5+: farthest-point sampling
    while m < cap:
        best, bi = -1.0, -1
        for i in range(count):
            if alive[i]:
                d = np.inf
                for c in range(m):
                    d = min(d, _dist2(buf, i, chosen[c]))
                if d > best:
                    best, bi = d, i
        if bi < 0:
            break
        chosen[m] = bi
        alive[bi] = False
        m += 1
    return m


@njit(cache=True)
def put(buf, keys, count, pa, pb, n, gap, key):
    """Append one candidate point to the pair buffer (if room); returns the new count."""
    if count >= buf.shape[0]:
        return count
    for k in range(3):
        buf[count, k] = pa[k]
        buf[count, 3 + k] = pb[k]
        buf[count, 6 + k] = n[k]
    buf[count, 9] = gap
    keys[count] = key
    return count + 1


def compose_key(kind: int, a: int = 0, b: int = 0, c: int = 0) -> int:
    """Python mirror of the kernels' key layout (for tests and documentation):
    bits 56-62 kind, 40-55 a, 20-39 b, 0-19 c."""
    return (kind << 56) | (a << 40) | (b << 20) | c


@njit(cache=True, inline="always")
def key_of(kind, a, b, c):
    """Feature key: kind (0-127) in bits 56-62, a (< 2^16) 40-55, b (< 2^20) 20-39,
    c (< 2^20) 0-19; larger ids wrap (they only need to be stable, not decodable)."""
    return (
        (np.int64(kind) << 56)
        | ((np.int64(a) & 0xFFFF) << 40)
        | ((np.int64(b) & 0xFFFFF) << 20)
        | (np.int64(c) & 0xFFFFF)
    )


@njit(cache=True)
def compact(buf, keys, count, keep):
    """Shrink a full pair buffer to at most ``keep`` rows chosen by :func:`reduce_manifold`
    (the deepest point, then the largest area, then farthest-point sampling), so a kernel
    that emits more candidates than the buffer holds never silently drops the deepest or
    outermost ones. Returns the new count."""
    chosen = np.empty(keep, dtype=np.int64)
    m = reduce_manifold(buf, keys, count, keep, chosen)
    rows = buf[chosen[:m]].copy()
    ks = keys[chosen[:m]].copy()
    for r in range(m):  # loops, not slice assignment: see primitives.copy3
        for k in range(buf.shape[1]):
            buf[r, k] = rows[r, k]
        keys[r] = ks[r]
    return m


#: Contact manifold scopes (``contact.manifold``): the reduction of :func:`reduce_manifold`
#: per shape pair only, or again per body pair (:func:`body_pair_keep`).
SHAPE_PAIR, BODY_PAIR = CONTACT_MANIFOLDS


#: Two contacts of one body pair whose normals are closer than this angle (cosine) lie on one
#: contact plane and share a manifold; a body pair touching on two faces at an angle (a box
#: of one body in a corner of another) keeps a manifold on each.
SAME_PLANE_COS = float(np.cos(np.radians(30.0)))


@njit(cache=True)
def body_pair_keep(body_a, body_b, geom_a, geom_b, point_a, point_b, normal, gap, cap, keep):
    """keep[i] = whether contact i survives the per-body-pair reduction; returns how many.

    The contacts of each unordered body pair (from any of their shape pairs) are split by
    contact plane (normals within SAME_PLANE_COS of the deepest remaining contact's, oriented
    from the pair's first body to its second) and each plane's contacts are reduced to at most
    ``cap`` by :func:`reduce_manifold` (the deepest point, then the largest area): a body made
    of k shapes resting on another body keeps its support polygon, not up to ``cap`` k points.
    The static world (body -1) counts as one body per shape, so a body touching the floor and
    a wall keeps both. Areas are measured on the midpoints of point_a and point_b (a contact of
    the pair may come from a shape pair listed either way round, so its "point on B" may lie on
    either body; a midpoint is within half the gap of both), projected along the deepest
    point's normal."""
    n = gap.shape[0]
    side_a = np.where(body_a >= 0, body_a, -1 - geom_a)
    side_b = np.where(body_b >= 0, body_b, -1 - geom_b)
    lo = np.minimum(side_a, side_b)
    hi = np.maximum(side_a, side_b)
    order = np.argsort(lo * (np.int64(1) << 32) + hi, kind="mergesort")
    buf = np.zeros((n, 10))
    keys = np.zeros(n, dtype=np.int64)
    rows = np.empty(n, dtype=np.int64)
    chosen = np.empty(max(cap, 1), dtype=np.int64)
    taken = np.zeros(n, dtype=np.bool_)
    kept = 0
    s = 0
    while s < n:
        e = s + 1
        while e < n and lo[order[e]] == lo[order[s]] and hi[order[e]] == hi[order[s]]:
            e += 1
        if e - s <= cap:
            for k in range(s, e):
                keep[order[k]] = True
            kept += e - s
            s = e
            continue
        for k in range(s, e):
            keep[order[k]] = False
            taken[order[k]] = False
        while True:
            # the deepest contact not yet on a plane opens the next plane
            first = -1
            for k in range(s, e):
                i = order[k]
                if not taken[i] and (first < 0 or gap[i] < gap[first]):
                    first = i
            if first < 0:
                break
            f = 1.0 if side_a[first] == lo[first] else -1.0
            count = 0
            for k in range(s, e):
                i = order[k]
                if taken[i]:
                    continue
                g = 1.0 if side_a[i] == lo[i] else -1.0
                cos = (
                    f
                    * g
                    * (
                        normal[i, 0] * normal[first, 0]
                        + normal[i, 1] * normal[first, 1]
                        + normal[i, 2] * normal[first, 2]
                    )
                )
                if cos < SAME_PLANE_COS:
                    continue
                taken[i] = True
                for c in range(3):
                    buf[count, c] = point_a[i, c]
                    buf[count, 3 + c] = 0.5 * (point_a[i, c] + point_b[i, c])
                    buf[count, 6 + c] = normal[i, c]
                buf[count, 9] = gap[i]
                rows[count] = i
                count += 1
            m = reduce_manifold(buf, keys, count, cap, chosen)
            for c in range(m):
                keep[rows[chosen[c]]] = True
            kept += m
        s = e
    return kept
