"""Closest-point primitives (numba): points, segments, convex polygons, boxes, cylinders.

All inputs and outputs are float64 world or local coordinates in metres. These are the exact
formulas (Ericson, *Real-Time Collision Detection*, ch. 5) the contact kernels are built from;
none iterates, so their error is float64 rounding (~1e-15 relative).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Below this squared length (m^2) a direction is treated as zero (degenerate segment, two
#: coincident points): 1e-24 m^2 = (1e-12 m)^2, well under any meaningful size.
TINY2 = 1e-24


@njit(cache=True, inline="always")
def copy3(dst, src):
    """dst[:] = src for 3-vectors, by a loop: numba's slice assignment compiles a formatter for
    its shape-mismatch error (~1.5 s of a cold first run per array rank, issue 15)."""
    for a in range(3):
        dst[a] = src[a]


@njit(cache=True)
def dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def cross3(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True)
def norm3(a):
    return np.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit(cache=True)
def any_perpendicular(n, out):
    """A unit vector perpendicular to unit ``n``."""
    if abs(n[0]) < 0.6:
        cross3(n, np.array([1.0, 0.0, 0.0]), out)
    else:
        cross3(n, np.array([0.0, 1.0, 0.0]), out)
    s = norm3(out)
    out[0] /= s
    out[1] /= s
    out[2] /= s


@njit(cache=True)
def closest_on_segment(p, a, b, out):
    """Closest point to ``p`` on segment [a, b] into ``out``; returns its parameter t."""
    ab0, ab1, ab2 = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    den = ab0 * ab0 + ab1 * ab1 + ab2 * ab2
    t = 0.0
    if den > TINY2:
        t = ((p[0] - a[0]) * ab0 + (p[1] - a[1]) * ab1 + (p[2] - a[2]) * ab2) / den
        t = min(max(t, 0.0), 1.0)
    out[0] = a[0] + t * ab0
    out[1] = a[1] + t * ab1
    out[2] = a[2] + t * ab2
    return t


@njit(cache=True)
def segment_segment(p1, q1, p2, q2, c1, c2):
    """Closest points c1 on [p1, q1] and c2 on [p2, q2] (Ericson 5.1.9); returns (s, t)."""
    d1x, d1y, d1z = q1[0] - p1[0], q1[1] - p1[1], q1[2] - p1[2]
    d2x, d2y, d2z = q2[0] - p2[0], q2[1] - p2[1], q2[2] - p2[2]
    rx, ry, rz = p1[0] - p2[0], p1[1] - p2[1], p1[2] - p2[2]
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    s = 0.0
    t = 0.0
    if a <= TINY2 and e <= TINY2:
        s, t = 0.0, 0.0
    elif a <= TINY2:
        t = min(max(f / e, 0.0), 1.0)
    else:
        c = d1x * rx + d1y * ry + d1z * rz
        if e <= TINY2:
            s = min(max(-c / a, 0.0), 1.0)
        else:
            b = d1x * d2x + d1y * d2y + d1z * d2z
            den = a * e - b * b
            if den > 1e-14 * a * e:
                s = min(max((b * f - c * e) / den, 0.0), 1.0)
            else:
                s = 0.0  # parallel: any s works, the clamp below finds the matching t
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = min(max(-c / a, 0.0), 1.0)
            elif t > 1.0:
                t = 1.0
                s = min(max((b - c) / a, 0.0), 1.0)
    c1[0], c1[1], c1[2] = p1[0] + s * d1x, p1[1] + s * d1y, p1[2] + s * d1z
    c2[0], c2[1], c2[2] = p2[0] + t * d2x, p2[1] + t * d2y, p2[2] + t * d2z
    return s, t


@njit(cache=True)
def closest_on_polygon(p, verts, ids, start, count, normal, out):
    """Closest point to ``p`` on the convex planar polygon verts[ids[start:start+count]]
    (counter-clockwise about ``normal``) into ``out``; returns the squared distance.
    Scalar reads only (row views cost a reference count each in this hot loop)."""
    nx, ny, nz = normal[0], normal[1], normal[2]
    i0 = ids[start]
    off = nx * (p[0] - verts[i0, 0]) + ny * (p[1] - verts[i0, 1]) + nz * (p[2] - verts[i0, 2])
    inside = True
    for i in range(count):
        ia = ids[start + i]
        ib = ids[start + (i + 1) % count]
        ax, ay, az = verts[ia, 0], verts[ia, 1], verts[ia, 2]
        ex, ey, ez = verts[ib, 0] - ax, verts[ib, 1] - ay, verts[ib, 2] - az
        # outward side normal of a CCW polygon: e x normal
        sx = ey * nz - ez * ny
        sy = ez * nx - ex * nz
        sz = ex * ny - ey * nx
        if (p[0] - ax) * sx + (p[1] - ay) * sy + (p[2] - az) * sz > 0.0:
            inside = False
            break
    if inside:
        out[0] = p[0] - off * nx
        out[1] = p[1] - off * ny
        out[2] = p[2] - off * nz
        return off * off
    best = np.inf
    for i in range(count):
        ia = ids[start + i]
        ib = ids[start + (i + 1) % count]
        ax, ay, az = verts[ia, 0], verts[ia, 1], verts[ia, 2]
        abx, aby, abz = verts[ib, 0] - ax, verts[ib, 1] - ay, verts[ib, 2] - az
        den = abx * abx + aby * aby + abz * abz
        t = 0.0
        if den > TINY2:
            t = ((p[0] - ax) * abx + (p[1] - ay) * aby + (p[2] - az) * abz) / den
            t = min(max(t, 0.0), 1.0)
        qx, qy, qz = ax + t * abx, ay + t * aby, az + t * abz
        d2 = (p[0] - qx) ** 2 + (p[1] - qy) ** 2 + (p[2] - qz) ** 2
        if d2 < best:
            best = d2
            out[0], out[1], out[2] = qx, qy, qz
    return best


@njit(cache=True)
def point_box(q, half, closest, normal):
    """Point ``q`` against the solid box |x_k| <= half_k (box frame, m).

    Writes the closest surface point and the outward unit normal there; returns the signed
    distance (negative inside: minus the distance to the nearest face).
    """
    outside = False
    for k in range(3):
        c = min(max(q[k], -half[k]), half[k])
        closest[k] = c
        if c != q[k]:
            outside = True
    if outside:
        d = 0.0
        for k in range(3):
            normal[k] = q[k] - closest[k]
            d += normal[k] * normal[k]
        d = np.sqrt(d)
        for k in range(3):
            normal[k] /= d
        return d
    best = np.inf
    axis = 0
    sign = 1.0
    for k in range(3):
        for s in (1.0, -1.0):
            depth = half[k] - s * q[k]
            if depth < best:
                best, axis, sign = depth, k, s
    copy3(closest, q)
    closest[axis] = sign * half[axis]
    normal[:] = 0.0
    normal[axis] = sign
    return -best


@njit(cache=True)
def point_cylinder(q, radius, halflen, closest, normal):
    """Point ``q`` against the solid cylinder x^2 + y^2 <= r^2, |z| <= h (its frame, m).

    Like :func:`point_box`: closest surface point, outward normal, signed distance.
    """
    rho = np.sqrt(q[0] * q[0] + q[1] * q[1])
    ux, uy = 1.0, 0.0
    if rho > 1e-300:
        ux, uy = q[0] / rho, q[1] / rho
    if rho <= radius and abs(q[2]) <= halflen:
        side = radius - rho
        cap = halflen - abs(q[2])
        copy3(closest, q)
        normal[:] = 0.0
        if side < cap:
            closest[0], closest[1] = radius * ux, radius * uy
            normal[0], normal[1] = ux, uy
            return -side
        s = 1.0 if q[2] >= 0.0 else -1.0
        closest[2] = s * halflen
        normal[2] = s
        return -cap
    r = min(rho, radius)
    closest[0], closest[1] = r * ux, r * uy
    closest[2] = min(max(q[2], -halflen), halflen)
    d = 0.0
    for k in range(3):
        normal[k] = q[k] - closest[k]
        d += normal[k] * normal[k]
    d = np.sqrt(d)
    for k in range(3):
        normal[k] /= d
    return d


@njit(cache=True)
def _lerp(out, a, b, t):
    out[0] = a[0] + t * (b[0] - a[0])
    out[1] = a[1] + t * (b[1] - a[1])
    out[2] = a[2] + t * (b[2] - a[2])


@njit(cache=True)
def closest_on_triangle(p, V, ia, ib, ic, out):
    """Closest point to ``p`` on triangle (V[ia], V[ib], V[ic]) into ``out`` (Ericson 5.1.5);
    returns the squared distance. Indices and scalar arithmetic only: this runs once per
    triangle of a mesh, and row views would cost a reference count each."""
    ax, ay, az = V[ia, 0], V[ia, 1], V[ia, 2]
    bx, by, bz = V[ib, 0], V[ib, 1], V[ib, 2]
    cx, cy, cz = V[ic, 0], V[ic, 1], V[ic, 2]
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    apx, apy, apz = p[0] - ax, p[1] - ay, p[2] - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        ox, oy, oz = ax, ay, az
    else:
        bpx, bpy, bpz = p[0] - bx, p[1] - by, p[2] - bz
        d3 = abx * bpx + aby * bpy + abz * bpz
        d4 = acx * bpx + acy * bpy + acz * bpz
        cpx, cpy, cpz = p[0] - cx, p[1] - cy, p[2] - cz
        d5 = abx * cpx + aby * cpy + abz * cpz
        d6 = acx * cpx + acy * cpy + acz * cpz
        vc = d1 * d4 - d3 * d2
        vb = d5 * d2 - d1 * d6
        va = d3 * d6 - d5 * d4
        if d3 >= 0.0 and d4 <= d3:
            ox, oy, oz = bx, by, bz
        elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
            t = d1 / (d1 - d3)
            ox, oy, oz = ax + t * abx, ay + t * aby, az + t * abz
        elif d6 >= 0.0 and d5 <= d6:
            ox, oy, oz = cx, cy, cz
        elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
            t = d2 / (d2 - d6)
            ox, oy, oz = ax + t * acx, ay + t * acy, az + t * acz
        elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
            t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
            ox, oy, oz = bx + t * (cx - bx), by + t * (cy - by), bz + t * (cz - bz)
        else:
            den = va + vb + vc
            if den <= 0.0:  # degenerate (zero-area) triangle
                ox, oy, oz = ax, ay, az
            else:
                v = vb / den
                w = vc / den
                ox, oy, oz = ax + v * abx + w * acx, ay + v * aby + w * acy, az + v * abz + w * acz
    out[0], out[1], out[2] = ox, oy, oz
    return (p[0] - ox) ** 2 + (p[1] - oy) ** 2 + (p[2] - oz) ** 2


@njit(cache=True)
def point_mesh(q, MV, MT, MB, v0, t0, tn, closest, normal):
    """Point ``q`` against a closed triangle mesh (mesh frame): closest surface point, the
    unit normal there pointing to the outside, and the signed distance (negative inside).

    Brute force over the tn triangles (exact), skipping triangles whose bounding sphere
    (MB: centre, radius) is farther than the best distance so far. Inside/outside is the side
    of the closest triangle's plane; when several triangles share the closest point (an edge
    or vertex), the sum of their unit normals decides (the angle-weighted pseudo-normal would
    be exact for every mesh; the plain sum is right for convex corners and ordinary dents).
    """
    best = np.inf
    tmp = np.empty(3)
    for t in range(t0, t0 + tn):
        lb = np.sqrt((q[0] - MB[t, 0]) ** 2 + (q[1] - MB[t, 1]) ** 2 + (q[2] - MB[t, 2]) ** 2)
        lb -= MB[t, 3]
        if lb > 0.0 and lb * lb > best:
            continue
        d2 = closest_on_triangle(q, MV, v0 + MT[t, 0], v0 + MT[t, 1], v0 + MT[t, 2], tmp)
        if d2 < best:
            best = d2
            copy3(closest, tmp)
    tol = max(best, 1e-30) * (1.0 + 1e-9) + 1e-24
    nsum = np.zeros(3)
    e1 = np.empty(3)
    for t in range(t0, t0 + tn):
        lb = np.sqrt((q[0] - MB[t, 0]) ** 2 + (q[1] - MB[t, 1]) ** 2 + (q[2] - MB[t, 2]) ** 2)
        lb -= MB[t, 3]
        if lb > 0.0 and lb * lb > tol:
            continue
        ia, ib, ic = v0 + MT[t, 0], v0 + MT[t, 1], v0 + MT[t, 2]
        if closest_on_triangle(q, MV, ia, ib, ic, tmp) <= tol:
            ux, uy, uz = MV[ib, 0] - MV[ia, 0], MV[ib, 1] - MV[ia, 1], MV[ib, 2] - MV[ia, 2]
            wx, wy, wz = MV[ic, 0] - MV[ia, 0], MV[ic, 1] - MV[ia, 1], MV[ic, 2] - MV[ia, 2]
            e1[0] = uy * wz - uz * wy
            e1[1] = uz * wx - ux * wz
            e1[2] = ux * wy - uy * wx
            ln = norm3(e1)
            if ln > 0.0:
                for k in range(3):
                    nsum[k] += e1[k] / ln
    d = np.sqrt(best)
    outside = dot3(q - closest, nsum) >= 0.0
    if d > 1e-12:
        for k in range(3):
            normal[k] = (q[k] - closest[k]) / d
        if not outside:
            copy3(normal, -normal)
    else:
        ln = norm3(nsum)
        for k in range(3):
            normal[k] = nsum[k] / ln if ln > 0.0 else (1.0 if k == 2 else 0.0)
    return d if outside else -d


@njit(cache=True)
def segment_triangle(p0, p1, V, ia, ib, ic, cs, ct, work):
    """Closest points cs on segment [p0, p1] and ct on triangle (V[ia], V[ib], V[ic]); returns
    (squared distance, segment parameter). Exact: the minimum over the segment's ends against
    the triangle, the segment against the triangle's edges, and the segment crossing the
    triangle's interior (distance 0). work: (5, 3) scratch."""
    best = np.inf
    tbest = 0.0
    q, x1, x2, u, v = work[0], work[1], work[2], work[3], work[4]
    for end in range(2):
        p = p0 if end == 0 else p1
        d2 = closest_on_triangle(p, V, ia, ib, ic, q)
        if d2 < best:
            best, tbest = d2, float(end)
            copy3(cs, p)
            copy3(ct, q)
    for e in range(3):
        i = ia if e == 0 else (ib if e == 1 else ic)
        j = ib if e == 0 else (ic if e == 1 else ia)
        for k in range(3):
            u[k] = V[i, k]
            v[k] = V[j, k]
        s, _ = segment_segment(p0, p1, u, v, x1, x2)
        d2 = (x1[0] - x2[0]) ** 2 + (x1[1] - x2[1]) ** 2 + (x1[2] - x2[2]) ** 2
        if d2 < best:
            best, tbest = d2, s
            copy3(cs, x1)
            copy3(ct, x2)
    # triangle normal (unnormalised) and the ends' heights above its plane
    ux, uy, uz = V[ib, 0] - V[ia, 0], V[ib, 1] - V[ia, 1], V[ib, 2] - V[ia, 2]
    wx, wy, wz = V[ic, 0] - V[ia, 0], V[ic, 1] - V[ia, 1], V[ic, 2] - V[ia, 2]
    nx, ny, nz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
    h0 = nx * (p0[0] - V[ia, 0]) + ny * (p0[1] - V[ia, 1]) + nz * (p0[2] - V[ia, 2])
    h1 = nx * (p1[0] - V[ia, 0]) + ny * (p1[1] - V[ia, 1]) + nz * (p1[2] - V[ia, 2])
    if h0 * h1 < 0.0:
        t = h0 / (h0 - h1)
        _lerp(x1, p0, p1, t)
        if closest_on_triangle(x1, V, ia, ib, ic, q) <= 1e-24:
            copy3(cs, x1)
            copy3(ct, x1)
            return 0.0, t
    return best, tbest
