"""The built-in ground plane (numba): contacts of any shape with the half-space n . x <= d.

Exact: a shape's contacts with a plane are the points of its core closest to the plane, so
the kernel keeps every core vertex (sphere centre, capsule ends, box and convex vertices, a
mesh's hull vertices: the lowest points of any point set are hull vertices) whose distance to
the plane, less the radius, is within the margin. A cylinder has no vertices: on each end cap,
its rim point deepest along -n (a smooth point: the rim's lowest point, scene.smooth_radii)
and those of the four rim points on its local +-x, +-y axes that are more than 45 deg round the
rim from it (the support polygon of a standing cylinder; when upright the deepest point is not
unique and the +x one is taken). A cylinder rolling on its rim is then one continuous contact
per cap, not material rim points reaching the bottom in turn. The plane is B, the shape A; the
normal is the plane normal (m, unit).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.collision.manifold import K_CYL_RIM, K_GROUND, key_of, put
from mbsim.collision.primitives import copy3, dot3
from mbsim.collision.table import BCX, BR, HLEN, RAD, V0, VN

#: cos 45 deg: rim points on the cylinder's axes closer than this to the deepest are dropped.
HALF_SQRT2 = 0.7071067811865476
#: Relative bound (of the pose's and shape's coordinates, m) on the difference between a
#: vertex height computed in the shape frame and in the world frame: both are a few float64
#: roundings (~1e-16 each) of the same sum, so 1e-12 is ~10^4 times what it needs to be.
GROUND_SLACK = 1e-12


@njit(cache=True, fastmath=True)
def _lowest(V, v0, vn, c0, c1, c2):
    """min over rows v0 .. v0 + vn - 1 of V of c . x (a lower bound for the exact heights up
    to rounding; fastmath lets LLVM vectorise the reduction, which only moves the result by
    rounding, covered by ground_contacts' slack). Cannot raise: ground_contacts keeps one
    exit and no reference counts."""
    m = np.inf
    for row in range(v0, v0 + vn):
        d = c0 * V[row, 0] + c1 * V[row, 1] + c2 * V[row, 2]
        m = min(m, d)
    return m


@njit(cache=True)
def ground_contacts(g, si, sf, V, Rw, pw, hn, hd, margin, buf, keys):
    """Shape g (A) against the half-space hn . x <= hd (B), g not a cylinder (the caller
    takes :func:`cylinder_plane` for those). Returns the point count.

    Written with scalars and indices (no work arrays, no views: each costs an allocation or
    a reference count, more than a vertex's arithmetic; issue 15): the vertex
    v = R V_i + p, h = hn . v - hd and the points v - r hn, v - h hn are the operations of
    ``dot3`` and ``put`` in their order. One exit, so numba prunes the reference counts of its
    array arguments."""
    count = np.int64(0)
    r = sf[g, RAD]
    n0, n1, n2 = hn[0], hn[1], hn[2]
    vs, vn = si[g, V0], si[g, VN]
    # the plane normal in the shape frame (c) and the origin's height (c3): h ~ c . x + c3 in
    # 3 products a vertex, not 12. It differs from h below by rounding only (~1e-16 of the
    # coordinates' size), so a vertex (or the lowest, ``_lowest``) more than the slack above
    # the margin by this measure is above it by h too: the contacts are h's, bit for bit.
    c0 = n0 * Rw[g, 0, 0] + n1 * Rw[g, 1, 0] + n2 * Rw[g, 2, 0]
    c1 = n0 * Rw[g, 0, 1] + n1 * Rw[g, 1, 1] + n2 * Rw[g, 2, 1]
    c2 = n0 * Rw[g, 0, 2] + n1 * Rw[g, 1, 2] + n2 * Rw[g, 2, 2]
    c3 = n0 * pw[g, 0] + n1 * pw[g, 1] + n2 * pw[g, 2] - hd
    size = abs(pw[g, 0]) + abs(pw[g, 1]) + abs(pw[g, 2]) + abs(hd) + 2.0 * sf[g, BR]
    size += abs(sf[g, BCX]) + abs(sf[g, BCX + 1]) + abs(sf[g, BCX + 2])
    reach = margin + r + GROUND_SLACK * (1.0 + size)
    if vn > 8 and _lowest(V, vs, vn, c0, c1, c2) + c3 > reach:
        vn = 0  # every vertex above the margin (a mesh hull held off the floor)
    for i in range(vn):
        row = vs + i
        x0, x1, x2 = V[row, 0], V[row, 1], V[row, 2]
        if c0 * x0 + c1 * x1 + c2 * x2 + c3 > reach:
            continue
        v0 = Rw[g, 0, 0] * x0 + Rw[g, 0, 1] * x1 + Rw[g, 0, 2] * x2 + pw[g, 0]
        v1 = Rw[g, 1, 0] * x0 + Rw[g, 1, 1] * x1 + Rw[g, 1, 2] * x2 + pw[g, 1]
        v2 = Rw[g, 2, 0] * x0 + Rw[g, 2, 1] * x1 + Rw[g, 2, 2] * x2 + pw[g, 2]
        h = n0 * v0 + n1 * v1 + n2 * v2 - hd
        if h - r <= margin and count < buf.shape[0]:  # put(): a full buffer keeps its rows
            buf[count, 0] = v0 - r * n0
            buf[count, 1] = v1 - r * n1
            buf[count, 2] = v2 - r * n2
            buf[count, 3] = v0 - h * n0
            buf[count, 4] = v1 - h * n1
            buf[count, 5] = v2 - h * n2
            buf[count, 6] = n0
            buf[count, 7] = n1
            buf[count, 8] = n2
            buf[count, 9] = h - r
            keys[count] = key_of(K_GROUND, i, 0, 0)
            count += 1
    return count


@njit(cache=True)
def cylinder_plane(g, sf, R, p, hn, hd, margin, buf, keys):
    """Cylinder rims against the plane: on each end cap, the rim point deepest along -hn and
    the rim points on the local +-x, +-y axes more than 45 deg from it (the support polygon
    of a standing cylinder); every one within the margin is a candidate."""
    r, h = sf[g, RAD], sf[g, HLEN]
    axis = R[:, 2]
    w = np.empty(3)
    na = dot3(hn, axis)
    for a in range(3):
        w[a] = -(hn[a] - na * axis[a])
    lw = np.sqrt(dot3(w, w))
    if lw < 1e-12:
        copy3(w, R[:, 0])  # upright: every rim point is equally deep; pick local +x
    else:
        w /= lw
    count = np.int64(0)  # not a literal 0: see round_pairs.round_pair
    q = np.empty(3)
    pb = np.empty(3)
    # a rim point on an axis within 45 deg of the deepest one is dropped: it would stand in
    # for that smooth point as a material point, arriving at the bottom as an impact every
    # quarter turn of a rolling cylinder (issue 14); the others (axes farther round the rim)
    # still make the support polygon of a standing cylinder
    near = np.empty(5)
    near[0] = 0.0
    near[1] = dot3(w, R[:, 0])
    near[2] = dot3(w, R[:, 1])
    near[3] = -near[1]
    near[4] = -near[2]
    for cap in range(2):
        zs = h if cap == 1 else -h
        for slot in range(5):
            if near[slot] > HALF_SQRT2:
                continue
            for a in range(3):
                e = p[a] + zs * axis[a]
                if slot == 0:
                    q[a] = e + r * w[a]
                elif slot == 1:
                    q[a] = e + r * R[a, 0]
                elif slot == 2:
                    q[a] = e + r * R[a, 1]
                elif slot == 3:
                    q[a] = e - r * R[a, 0]
                else:
                    q[a] = e - r * R[a, 1]
            gap = dot3(hn, q) - hd
            if gap <= margin:
                for a in range(3):
                    pb[a] = q[a] - gap * hn[a]
                count = put(buf, keys, count, q, pb, hn, gap, key_of(K_CYL_RIM, cap, slot, 0))
    return count
