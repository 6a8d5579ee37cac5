"""Non-convex meshes against convex shapes (numba), exact where FCL is not.

* mesh - box/convex (:func:`mesh_polytope`): mesh vertices against the polytope and polytope
  vertices against the mesh, exact for vertex-face contacts (a face resting on a face);
* capsule - mesh (:func:`capsule_mesh`): the signed mesh distance of three points of the
  capsule's segment.

Both search every triangle (pruned by triangle bounding spheres) and every nearby vertex, so
they are limited by ``work_limit``; beyond it the pair goes to FCL.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.collision.manifold import K_MESH_POINT, K_MESH_VERTEX, K_POLY_VERTEX, key_of, put
from mbsim.collision.polytope import point_to_core, shape_edges, shape_faces, world_poly
from mbsim.collision.primitives import dot3, point_mesh, segment_triangle
from mbsim.collision.table import BCX, BR, HLEN, MT0, MTN, MV0, MVN, RAD


@njit(cache=True)
def mesh_polytope(
    gm, gp, si, sf, V, FN_, FD_, FP, FV, E, ED, MV, MT, MB, Rw, pw, margin, work_limit, buf, keys
):  # fmt: skip
    """Non-convex mesh A = gm against a box or convex polytope B = gp, by vertices:

    * every mesh vertex within the margin of the polytope: exact signed distance to a convex
      polytope (closest point on its face polygons outside; nearest face plane inside);
    * every polytope vertex within the margin of the mesh (:func:`point_mesh`).

    This is exact for vertex-face contacts, which is what a mesh face resting on a box (or a
    box resting on a mesh) produces. Returns the count; -1 (ask FCL) when the work (nearby
    mesh vertices x polytope faces, or polytope vertices x triangles) exceeds work_limit; -2
    when no vertex is within the margin: only an edge-edge crossing could still touch, so the
    caller asks FCL's collide (not its ~8x slower distance).

    """
    vP, nP, dP, _ = world_poly(gp, si, V, FN_, FD_, ED, Rw, pw)
    fpP = shape_faces(gp, si, FP)
    ePs = shape_edges(gp, si, E)
    R = Rw[gm]
    p = pw[gm]
    v0, vn = si[gm, MV0], si[gm, MVN]
    count = 0
    v = np.empty(3)
    q = np.empty(3)
    n = np.empty(3)
    tmp = np.empty(3)
    cx = pw[gp, 0] + Rw[gp, 0, 0] * sf[gp, BCX] + Rw[gp, 0, 1] * sf[gp, BCX + 1]
    cx += Rw[gp, 0, 2] * sf[gp, BCX + 2]
    cy = pw[gp, 1] + Rw[gp, 1, 0] * sf[gp, BCX] + Rw[gp, 1, 1] * sf[gp, BCX + 1]
    cy += Rw[gp, 1, 2] * sf[gp, BCX + 2]
    cz = pw[gp, 2] + Rw[gp, 2, 0] * sf[gp, BCX] + Rw[gp, 2, 1] * sf[gp, BCX + 1]
    cz += Rw[gp, 2, 2] * sf[gp, BCX + 2]
    reach = sf[gp, BR] + margin
    near = 0
    for i in range(vn):
        for a in range(3):
            v[a] = R[a, 0] * MV[v0 + i, 0] + R[a, 1] * MV[v0 + i, 1] + R[a, 2] * MV[v0 + i, 2]
            v[a] += p[a]
        if (v[0] - cx) ** 2 + (v[1] - cy) ** 2 + (v[2] - cz) ** 2 <= reach * reach:
            near += 1
    if near * nP.shape[0] > work_limit or vP.shape[0] * si[gm, MTN] > work_limit:
        return -1
    for i in range(vn):
        for a in range(3):
            v[a] = R[a, 0] * MV[v0 + i, 0] + R[a, 1] * MV[v0 + i, 1] + R[a, 2] * MV[v0 + i, 2]
            v[a] += p[a]
        if (v[0] - cx) ** 2 + (v[1] - cy) ** 2 + (v[2] - cz) ** 2 > reach * reach:
            continue
        inside = True
        depth, face = np.inf, 0
        for f in range(nP.shape[0]):
            h = dot3(nP[f], v) - dP[f]
            if h > 0.0:
                inside = False
                break
            if -h < depth:
                depth, face = -h, f
        if inside:
            gap = -depth
            n[:] = nP[face]
            for a in range(3):
                q[a] = v[a] + depth * n[a]
        else:
            d2, _ = point_to_core(v, vP, nP, dP, fpP, ePs, FV, q, tmp)
            gap = np.sqrt(d2)
            if gap > margin or gap <= 0.0:
                continue
            for a in range(3):
                n[a] = (v[a] - q[a]) / gap
        if gap <= margin:
            count = put(buf, keys, count, v, q, n, gap, key_of(K_MESH_VERTEX, i, 0, 0))
    ql = np.empty(3)
    closest = np.empty(3)
    nl = np.empty(3)
    for k in range(vP.shape[0]):
        for a in range(3):
            ql[a] = R[0, a] * (vP[k, 0] - p[0]) + R[1, a] * (vP[k, 1] - p[1])
            ql[a] += R[2, a] * (vP[k, 2] - p[2])
        sd = point_mesh(ql, MV, MT, MB, v0, si[gm, MT0], si[gm, MTN], closest, nl)
        if sd > margin:
            continue
        # the mesh's outward normal at the closest point; the normal from B to A is its
        # opposite, and the polytope vertex is B's point
        for a in range(3):
            n[a] = -(R[a, 0] * nl[0] + R[a, 1] * nl[1] + R[a, 2] * nl[2])
            q[a] = R[a, 0] * closest[0] + R[a, 1] * closest[1] + R[a, 2] * closest[2] + p[a]
        count = put(buf, keys, count, q, vP[k], n, sd, key_of(K_POLY_VERTEX, k, 0, 0))
    return count if count > 0 else -2


@njit(cache=True)
def capsule_mesh(gc, gm, si, sf, MV, MT, MB, Rw, pw, margin, buf, keys):
    """Capsule A = gc against non-convex mesh B = gm, exactly for end-face and segment-edge
    contacts: the signed mesh distance (:func:`point_mesh`) of three points of the core
    segment (both ends and the point nearest the mesh) less the radius."""
    R = Rw[gm]
    p = pw[gm]
    h = sf[gc, HLEN]
    r = sf[gc, RAD]
    s0 = np.empty(3)
    s1 = np.empty(3)
    for a in range(3):  # core segment in the mesh frame
        e = h * Rw[gc, a, 2]
        s0[a] = pw[gc, a] - e - p[a]
        s1[a] = pw[gc, a] + e - p[a]
    l0 = R.T @ s0
    l1 = R.T @ s1
    v0, t0, tn = si[gm, MV0], si[gm, MT0], si[gm, MTN]
    best, tbest = np.inf, 0.0
    cs = np.empty(3)
    ct = np.empty(3)
    work = np.empty((5, 3))
    for t in range(t0, t0 + tn):
        d2, tt = segment_triangle(
            l0, l1, MV, v0 + MT[t, 0], v0 + MT[t, 1], v0 + MT[t, 2], cs, ct, work
        )
        if d2 < best:
            best, tbest = d2, tt
    count = 0
    closest = np.empty(3)
    nl = np.empty(3)
    for k in range(3):
        t = 0.0 if k == 0 else (1.0 if k == 1 else tbest)
        if k == 2 and (tbest <= 0.0 or tbest >= 1.0):
            break
        q = l0 + t * (l1 - l0)
        sd = point_mesh(q, MV, MT, MB, v0, t0, tn, closest, nl)
        if sd - r > margin:
            continue
        n = R @ nl
        pb = R @ closest + p
        pa = R @ q + p - r * n
        count = put(buf, keys, count, pa, pb, n, sd - r, key_of(K_MESH_POINT, k, 0, 0))
    return count
