"""Round shapes (numba): sphere and capsule pairs, and a sphere against a box, cylinder or mesh.

Exact formulas: two cores (a sphere is a point, a capsule a segment) touch where their
closest points are (Ericson 5.1.9), the contact is that of two spheres at those points; parallel
overlapping capsules (axes parallel to within ``PARALLEL_SIN``) add both ends of their overlap,
a line contact. A sphere against a solid uses the solid's closest point to the centre (box:
clamping; cylinder: radial and axial clamping; mesh: all triangles). Metres, unit normals from
B to A.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.collision.manifold import K_BOX_POINT, K_CYL_POINT, K_MESH_POINT, K_SPHERES, key_of, put
from mbsim.collision.primitives import (
    copy3,
    cross3,
    dot3,
    point_box,
    point_cylinder,
    point_mesh,
    segment_segment,
)
from mbsim.collision.shapes import BOX, CYLINDER, MESH
from mbsim.collision.table import HLEN, HX, KIND, MT0, MTN, MV0, RAD

#: capsules whose axes are parallel to within this sine also get the ends of their overlap
PARALLEL_SIN = 1e-6


@njit(cache=True)
def _sphere_sphere(ca, ra, cb, rb, margin, buf, keys, count, key, hint):
    """Spheres (or the closest points of two core segments) -> one contact. ``hint`` is the
    normal to use when the centres coincide."""
    n = ca - cb
    d = np.sqrt(dot3(n, n))
    gap = d - ra - rb
    if gap > margin:
        return count
    if d > 1e-12:
        n /= d
    else:
        copy3(n, hint)
    return put(buf, keys, count, ca - ra * n, cb + rb * n, n, gap, key)


@njit(cache=True)
def _core_segment(g, sf, Rw, pw, p0, p1):
    h = sf[g, HLEN]
    for a in range(3):
        p0[a] = pw[g, a] - h * Rw[g, a, 2]
        p1[a] = pw[g, a] + h * Rw[g, a, 2]


@njit(cache=True)
def round_pair(ga, gb, si, sf, Rw, pw, margin, buf, keys):
    """Sphere/capsule A against sphere/capsule B (module docstring)."""
    a0, a1, b0, b1 = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    _core_segment(ga, sf, Rw, pw, a0, a1)  # a sphere has h = 0: both ends at the centre
    _core_segment(gb, sf, Rw, pw, b0, b1)
    ra, rb = sf[ga, RAD], sf[gb, RAD]
    c1, c2 = np.empty(3), np.empty(3)
    segment_segment(a0, a1, b0, b1, c1, c2)
    hint = np.empty(3)
    da, db = a1 - a0, b1 - b0
    cross3(da, db, hint)
    ln = np.sqrt(dot3(hint, hint))
    la, lb = np.sqrt(dot3(da, da)), np.sqrt(dot3(db, db))
    centre = 0.5 * (a0 + a1) - 0.5 * (b0 + b1)
    if ln > PARALLEL_SIN * la * lb:
        hint /= ln
        if dot3(hint, centre) < 0.0:
            hint = -hint
    elif np.sqrt(dot3(centre, centre)) > 1e-12:
        hint = centre / np.sqrt(dot3(centre, centre))
    else:
        hint[:] = 0.0
        hint[2] = 1.0  # coincident centres: any direction is as good; +z by convention
    # np.int64(0), not 0: a literal argument makes numba compile the callee once for the
    # literal type and once for int64 (compile time only, issue 15)
    count = _sphere_sphere(
        c1, ra, c2, rb, margin, buf, keys, np.int64(0), key_of(K_SPHERES, 0, 0, 0), hint
    )
    if la > 0.0 and lb > 0.0 and ln <= PARALLEL_SIN * la * lb:
        # parallel capsules: a line contact, represented by both ends of the overlap
        u = da / la
        t0 = max(0.0, min(dot3(b0 - a0, u), dot3(b1 - a0, u)))
        t1 = min(la, max(dot3(b0 - a0, u), dot3(b1 - a0, u)))
        if t1 > t0:
            q = np.empty(3)
            for end in range(2):
                t = t0 if end == 0 else t1
                pa_core = a0 + t * u
                s = dot3(pa_core - b0, u) / lb
                s = min(max(s, 0.0), 1.0)
                for k in range(3):
                    q[k] = b0[k] + s * db[k]
                count = _sphere_sphere(
                    pa_core, ra, q, rb, margin, buf, keys, count,
                    key_of(K_SPHERES, 1 + end, 0, 0), hint,
                )  # fmt: skip
    return count


@njit(cache=True)
def sphere_solid(ga, gb, si, sf, MV, MT, MB, Rw, pw, margin, buf, keys, cylinders, meshes):
    """Sphere A against box, cylinder or mesh B, exactly (closest point on the solid).

    cylinders, meshes: True, or None when B is never a cylinder (a mesh): numba then leaves
    that search out."""
    R = Rw[gb]
    c = pw[ga]
    q = np.empty(3)
    for a in range(3):
        q[a] = (
            R[0, a] * (c[0] - pw[gb, 0])
            + R[1, a] * (c[1] - pw[gb, 1])
            + R[2, a] * (c[2] - pw[gb, 2])
        )
    closest = np.empty(3)
    nl = np.empty(3)
    if si[gb, KIND] == BOX:
        sd = point_box(q, sf[gb, HX : HX + 3], closest, nl)
        key = key_of(K_BOX_POINT, 0, 0, 0)
    elif cylinders is not None and si[gb, KIND] == CYLINDER:
        sd = point_cylinder(q, sf[gb, RAD], sf[gb, HLEN], closest, nl)
        key = key_of(K_CYL_POINT, 0, 0, 0)
    elif meshes is not None and si[gb, KIND] == MESH:
        sd = point_mesh(q, MV, MT, MB, si[gb, MV0], si[gb, MT0], si[gb, MTN], closest, nl)
        key = key_of(K_MESH_POINT, 0, 0, 0)
    else:
        return -1  # a kind whose search the caller left out: FCL's pair
    r = sf[ga, RAD]
    gap = sd - r
    if gap > margin:
        return 0
    n = R @ nl
    pb = R @ closest + pw[gb]
    return put(buf, keys, np.int64(0), c - r * n, pb, n, gap, key)  # see round_pair
