"""Non-convex meshes against convex shapes (numba), exact where FCL is not.

* mesh - box/convex (:func:`mesh_polytope`): mesh vertices against the polytope and polytope
  vertices against the mesh, exact for vertex-face contacts (a face resting on a face);
* capsule - mesh (:func:`capsule_mesh`): the signed mesh distance of three points of the
  capsule's segment;
* mesh - mesh (:func:`mesh_mesh`): facing triangle pairs clipped against each other, the
  reference face's normal (docs/collision.md, "Non-convex mesh pairs").

Both search every triangle (pruned by triangle bounding spheres) and every nearby vertex, so
they are limited by ``work_limit``; beyond it the pair goes to FCL.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.collision.manifold import (
    K_MESH_POINT,
    K_MESH_VERTEX,
    K_POLY_VERTEX,
    K_TRI_A,
    K_TRI_B,
    compact,
    key_of,
    put,
)
from mbsim.collision.polytope import point_to_core, shape_edges, shape_faces, world_poly
from mbsim.collision.primitives import copy3, cross3, dot3, point_mesh, segment_triangle
from mbsim.collision.table import BCX, BR, HLEN, MT0, MTN, MV0, MVN, RAD

#: A mesh vertex is out of the margin's reach when its height over the polytope's face
#: nearest the mesh, computed in the mesh's frame, exceeds the margin by more than this (m):
#: the rounding of that height against the world-frame one the exact test computes is ~1e-15
#: m for coordinates of metres (~1e-12 m at 1 km), so a vertex this pre-test drops is one
#: the exact test drops too, and the results are the same bit for bit.
HOT_FACE_SLACK = 1e-9
#: A triangle and a convex polytope count as apart when their projections on one axis are
#: more than this apart (m): FCL's GJK/MPR tolerance (1e-6), whose intersection tests err
#: towards "no intersection" within it, so a pair decided apart here is one FCL's collide
#: reports no contact for (tests/test_collision_mesh_apart.py checks it against FCL).
APART_TOL = 1e-6
#: A cross-product axis is used only if the sine of the angle between its factors exceeds
#: this: the unit axis then carries a rounding of ~1e-16 / MIN_SINE, and the projections of
#: coordinates of metres ~1e-10 m, well under APART_TOL
MIN_SINE = 1e-6


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
    mesh vertices x polytope faces, or polytope vertices x triangles) exceeds work_limit.
    When no vertex is within the margin, only an edge-edge crossing could still touch: 0
    when :func:`mesh_polytope_apart` proves every triangle apart from the polytope (FCL's
    collide would report nothing), else -2: the caller asks FCL's collide (not its ~8x
    slower distance).

    (:func:`mesh_polytope_in` with its own arrays.)
    """
    vP, nP, dP, edP = world_poly(gp, si, V, FN_, FD_, ED, Rw, pw)
    return mesh_polytope_in(
        gm, gp, si, sf, FP, FV, E, MV, MT, MB, Rw, pw, margin, work_limit, buf, keys, vP, nP,
        dP, edP, np.empty((8, 3)),
    )  # fmt: skip


@njit(cache=True)
def mesh_polytope_in(
    gm, gp, si, sf, FP, FV, E, MV, MT, MB, Rw, pw, margin, work_limit, buf, keys, vP, nP, dP, edP,
    work,
):  # fmt: skip
    """:func:`mesh_polytope` with the polytope in world coordinates given (vP, nP, dP, edP:
    :func:`~mbsim.collision.polytope.world_poly_into`) and ``work`` (8, 3) scratch rows: the
    narrowphase passes them as views of one allocation without reference counts (issue 15)."""
    fpP = shape_faces(gp, si, FP)
    ePs = shape_edges(gp, si, E)
    R = Rw[gm]
    p = pw[gm]
    v0, vn = si[gm, MV0], si[gm, MVN]
    nf = nP.shape[0]
    count = np.int64(0)  # not a literal 0: see round_pairs.round_pair
    v, q, n, tmp, ql, closest, nl, cm = (
        work[0], work[1], work[2], work[3], work[4], work[5], work[6], work[7]
    )  # fmt: skip
    cx = pw[gp, 0] + Rw[gp, 0, 0] * sf[gp, BCX] + Rw[gp, 0, 1] * sf[gp, BCX + 1]
    cx += Rw[gp, 0, 2] * sf[gp, BCX + 2]
    cy = pw[gp, 1] + Rw[gp, 1, 0] * sf[gp, BCX] + Rw[gp, 1, 1] * sf[gp, BCX + 1]
    cy += Rw[gp, 1, 2] * sf[gp, BCX + 2]
    cz = pw[gp, 2] + Rw[gp, 2, 0] * sf[gp, BCX] + Rw[gp, 2, 1] * sf[gp, BCX + 1]
    cz += Rw[gp, 2, 2] * sf[gp, BCX + 2]
    reach = sf[gp, BR] + margin
    if vn * nf > work_limit:  # else near x faces is within the limit whatever near is
        near = 0
        for i in range(vn):
            for a in range(3):  # the world position as the loop below computes it
                v[a] = R[a, 0] * MV[v0 + i, 0] + R[a, 1] * MV[v0 + i, 1] + R[a, 2] * MV[v0 + i, 2]
                v[a] += p[a]
            if (v[0] - cx) ** 2 + (v[1] - cy) ** 2 + (v[2] - cz) ** 2 <= reach * reach:
                near += 1
        if near * nf > work_limit:
            return -1
    if vP.shape[0] * si[gm, MTN] > work_limit:
        return -1
    for a in range(3):
        cm[a] = pw[gm, a] + Rw[gm, a, 0] * sf[gm, BCX] + Rw[gm, a, 1] * sf[gm, BCX + 1]
        cm[a] += Rw[gm, a, 2] * sf[gm, BCX + 2]
    # the face the mesh lies most outside of (for a mesh on a table, its top): its plane in
    # the mesh's frame, n_l = R^T n, d_l = d - n . p, rejects a vertex far above it in 3
    # products instead of the 9 of its world position (HOT_FACE_SLACK)
    hot, best = 0, -np.inf
    for f in range(nf):
        h = dot3(nP[f], cm) - dP[f]
        if h > best:
            hot, best = f, h
    nlx = nly = nlz = dl = 0.0
    if nf > 0:
        nlx = R[0, 0] * nP[hot, 0] + R[1, 0] * nP[hot, 1] + R[2, 0] * nP[hot, 2]
        nly = R[0, 1] * nP[hot, 0] + R[1, 1] * nP[hot, 1] + R[2, 1] * nP[hot, 2]
        nlz = R[0, 2] * nP[hot, 0] + R[1, 2] * nP[hot, 1] + R[2, 2] * nP[hot, 2]
        dl = dP[hot] - dot3(nP[hot], p)
    above = margin + HOT_FACE_SLACK
    for i in range(vn):
        if nf > 0:
            hl = nlx * MV[v0 + i, 0] + nly * MV[v0 + i, 1] + nlz * MV[v0 + i, 2] - dl
            if hl > above:
                continue
        for a in range(3):
            v[a] = R[a, 0] * MV[v0 + i, 0] + R[a, 1] * MV[v0 + i, 1] + R[a, 2] * MV[v0 + i, 2]
            v[a] += p[a]
        if (v[0] - cx) ** 2 + (v[1] - cy) ** 2 + (v[2] - cz) ** 2 > reach * reach:
            continue
        # the distance to a convex polytope is at least the height over any face plane: a
        # vertex more than the margin over one is out of reach (for a large box, a table,
        # nearly every vertex of the mesh), without the closest-point search
        inside = True
        far = False
        depth, face = np.inf, 0
        for f in range(nf):
            h = dot3(nP[f], v) - dP[f]
            if h > margin:
                far = True
                break
            if h > 0.0:
                inside = False
            elif inside and -h < depth:
                depth, face = -h, f
        if far:
            continue
        if inside:
            gap = -depth
            copy3(n, nP[face])
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
    out = sf[gm, BR] + margin
    for k in range(vP.shape[0]):
        # a polytope vertex outside the mesh's bounding sphere by more than the margin is
        # farther than the margin from the mesh: skip the search over every triangle
        dc2 = (vP[k, 0] - cm[0]) ** 2 + (vP[k, 1] - cm[1]) ** 2 + (vP[k, 2] - cm[2]) ** 2
        if dc2 > out * out:
            continue
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
    if count > 0:
        return count
    cp = np.array([cx, cy, cz])
    if mesh_polytope_apart(gm, si, MV, MT, MB, Rw, pw, vP, nP, dP, edP, cp, sf[gp, BR], APART_TOL):
        return 0
    return -2


@njit(cache=True)
def _triangle_apart(a, b, c, vP, nP, dP, edP, tol, w):
    """Whether triangle (a, b, c) and the convex polytope (vertices vP, outward face normals
    nP and offsets dP, n . x <= d inside; edge directions edP) have projections more than
    ``tol`` apart on one of the separating-axis candidates of two convex polyhedra: the
    polytope's face normals, the triangle's normal, and the cross products of the
    triangle's edges with the polytope's edge directions. Any separating axis proves the
    two apart (the answer is sound); degenerate axes (a zero-area triangle, parallel edges)
    are skipped, so a pair may be apart and still get False. ``w``: (5, 3) scratch."""
    for f in range(nP.shape[0]):
        h = min(dot3(nP[f], a), dot3(nP[f], b), dot3(nP[f], c)) - dP[f]
        if h > tol:
            return True
    e0, e1, ax = w[0], w[1], w[2]
    for k in range(3):
        e0[k] = b[k] - a[k]
        e1[k] = c[k] - a[k]
    cross3(e0, e1, ax)
    if _axis_apart(ax, np.sqrt(dot3(e0, e0) * dot3(e1, e1)), a, b, c, vP, tol):
        return True
    e = w[3]
    for i in range(3):
        for k in range(3):
            if i == 0:
                e[k] = b[k] - a[k]
            elif i == 1:
                e[k] = c[k] - b[k]
            else:
                e[k] = a[k] - c[k]
        le = np.sqrt(dot3(e, e))
        for j in range(edP.shape[0]):
            cross3(e, edP[j], ax)
            if _axis_apart(ax, le * np.sqrt(dot3(edP[j], edP[j])), a, b, c, vP, tol):
                return True
    return False


@njit(cache=True)
def _axis_apart(ax, scale, a, b, c, vP, tol):
    """Whether the triangle's and the polytope's projections on ``ax`` are more than ``tol``
    apart. ``ax`` is the cross product of two vectors whose lengths multiply to ``scale``;
    below MIN_SINE x scale (nearly parallel) its direction is lost to rounding: False."""
    ln = np.sqrt(dot3(ax, ax))
    if not ln > MIN_SINE * scale:
        return False
    ta, tb, tc = dot3(ax, a) / ln, dot3(ax, b) / ln, dot3(ax, c) / ln
    tlo, thi = min(ta, tb, tc), max(ta, tb, tc)
    lo, hi = np.inf, -np.inf
    for k in range(vP.shape[0]):
        s = dot3(ax, vP[k]) / ln
        lo = min(lo, s)
        hi = max(hi, s)
    return lo - thi > tol or tlo - hi > tol


@njit(cache=True)
def mesh_polytope_apart(gm, si, MV, MT, MB, Rw, pw, vP, nP, dP, edP, cp, rp, tol):
    """Whether every triangle of mesh gm is more than ``tol`` (m) from the convex polytope
    (world vertices vP, outward face normals nP, offsets dP, edge directions edP; bounding
    sphere centre cp, radius rp) along a separating axis (:func:`_triangle_apart`): then the
    two do not intersect (FCL's collide finds nothing). A triangle whose bounding sphere is
    apart from the polytope's, or beyond one of its face planes, is apart without the
    axis tests. False (undecided) when some triangle may touch."""
    R = Rw[gm]
    p = pw[gm]
    v0, t0, tn = si[gm, MV0], si[gm, MT0], si[gm, MTN]
    w = np.empty((9, 3))
    sc, a, b, c = w[5], w[6], w[7], w[8]
    for t in range(t0, t0 + tn):
        for k in range(3):
            sc[k] = R[k, 0] * MB[t, 0] + R[k, 1] * MB[t, 1] + R[k, 2] * MB[t, 2] + p[k]
        sr = MB[t, 3]
        reach = sr + rp + tol
        if (sc[0] - cp[0]) ** 2 + (sc[1] - cp[1]) ** 2 + (sc[2] - cp[2]) ** 2 > reach * reach:
            continue
        beyond = False
        for f in range(nP.shape[0]):
            if dot3(nP[f], sc) - dP[f] > sr + tol:
                beyond = True
                break
        if beyond:
            continue
        for k in range(3):
            i0, i1, i2 = v0 + MT[t, 0], v0 + MT[t, 1], v0 + MT[t, 2]
            a[k] = R[k, 0] * MV[i0, 0] + R[k, 1] * MV[i0, 1] + R[k, 2] * MV[i0, 2] + p[k]
            b[k] = R[k, 0] * MV[i1, 0] + R[k, 1] * MV[i1, 1] + R[k, 2] * MV[i1, 2] + p[k]
            c[k] = R[k, 0] * MV[i2, 0] + R[k, 1] * MV[i2, 1] + R[k, 2] * MV[i2, 2] + p[k]
        if not _triangle_apart(a, b, c, vP, nP, dP, edP, tol, w):
            return False
    return True


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
    count = np.int64(0)  # not a literal 0: see round_pairs.round_pair
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


#: Mesh-mesh: a clipped point may lie below its reference triangle by at most this fraction
#: of the smaller mesh's bounding radius (beyond ``margin``). Deeper points belong to another
#: face (e.g. a side face of A against the far side face of B, both on one plane through a
#: touching interface) and are dropped. Real penetrations are far smaller than this.
DEPTH_FRACTION = 0.05
#: A point counts as inside or on a mesh when its signed distance is at most this (m).
INSIDE_TOL = 1e-9
#: A triangle pair is *facing* when n_inc . n_ref <= -FACING_COS (within 60 deg of opposed;
#: a cube corner pointing into a face has all three faces at 54.7 deg). Facing pairs give
#: touching and penetrating contacts; oblique ones only separated contacts (the incident
#: point strictly outside the reference mesh), because a point of an oblique face on or
#: inside the other mesh belongs to the face it penetrates, not to a side face it grazes.
FACING_COS = 0.5
#: An incident triangle within this cosine of perpendicular to the reference triangle
#: (|n_inc . n_ref| < EDGE_ON_COS, 0.057 deg) is seen edge-on and gives no contact: its
#: points nearest the reference plane are on its edge, which the face on the edge's other
#: side gives with a definite orientation; what the edge-on face adds is a sideways normal
#: at the rim of a face resting on a face (the side face of one L beside the top face of the
#: other, which it can slide over) or points down its own side under the other face, and
#: whether it counts flipped with the rounding of a resting body's tilt (1e-17 rad), so the
#: contact set of an L resting on an L changed from one step to the next.
EDGE_ON_COS = 1e-3


@njit(cache=True)
def _world_mesh(g, si, MV, MT, MB, Rw, pw):
    """World vertices, unit triangle normals (zero for degenerate triangles) and triangle
    bounding spheres (centre, radius) of mesh g."""
    R = Rw[g]
    p = pw[g]
    v0, vn, t0, tn = si[g, MV0], si[g, MVN], si[g, MT0], si[g, MTN]
    W = np.empty((vn, 3))
    for i in range(vn):
        for a in range(3):
            W[i, a] = R[a, 0] * MV[v0 + i, 0] + R[a, 1] * MV[v0 + i, 1]
            W[i, a] += R[a, 2] * MV[v0 + i, 2] + p[a]
    N = np.zeros((tn, 3))
    S = np.empty((tn, 4))
    for t in range(tn):
        i0, i1, i2 = MT[t0 + t, 0], MT[t0 + t, 1], MT[t0 + t, 2]
        ux, uy, uz = W[i1, 0] - W[i0, 0], W[i1, 1] - W[i0, 1], W[i1, 2] - W[i0, 2]
        wx, wy, wz = W[i2, 0] - W[i0, 0], W[i2, 1] - W[i0, 1], W[i2, 2] - W[i0, 2]
        nx, ny, nz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
        ln = np.sqrt(nx * nx + ny * ny + nz * nz)
        if ln > 0.0:
            N[t, 0], N[t, 1], N[t, 2] = nx / ln, ny / ln, nz / ln
        for a in range(3):
            S[t, a] = R[a, 0] * MB[t0 + t, 0] + R[a, 1] * MB[t0 + t, 1]
            S[t, a] += R[a, 2] * MB[t0 + t, 2] + p[a]
        S[t, 3] = MB[t0 + t, 3]
    return W, N, S


@njit(cache=True)
def _centre(g, sf, Rw, pw):
    """World centre of shape g's bounding sphere (radius sf[g, BR])."""
    c = np.empty(3)
    for a in range(3):
        c[a] = pw[g, a] + Rw[g, a, 0] * sf[g, BCX] + Rw[g, a, 1] * sf[g, BCX + 1]
        c[a] += Rw[g, a, 2] * sf[g, BCX + 2]
    return c


@njit(cache=True)
def _clip_triangle(W_ref, T_ref, n_ref, W_inc, T_inc, poly, tmp):
    """The incident triangle clipped to the prism over the reference triangle (its three
    side planes, Sutherland-Hodgman) into ``poly``; returns the vertex count (<= 6)."""
    for k in range(3):
        for a in range(3):
            poly[k, a] = W_inc[T_inc[k], a]
    m = 3
    side = np.empty(3)
    e = np.empty(3)
    for s in range(3):
        ia, ib = T_ref[s], T_ref[(s + 1) % 3]
        for a in range(3):
            e[a] = W_ref[ib, a] - W_ref[ia, a]
        side[0] = e[1] * n_ref[2] - e[2] * n_ref[1]  # outward for counter-clockwise triangles
        side[1] = e[2] * n_ref[0] - e[0] * n_ref[2]
        side[2] = e[0] * n_ref[1] - e[1] * n_ref[0]
        out = 0
        for k in range(m):
            j = (k + 1) % m
            dk = 0.0
            dj = 0.0
            for a in range(3):
                dk += side[a] * (poly[k, a] - W_ref[ia, a])
                dj += side[a] * (poly[j, a] - W_ref[ia, a])
            if dk <= 0.0:
                tmp[out] = poly[k]
                out += 1
            if (dk < 0.0 < dj) or (dj < 0.0 < dk):
                t = dk / (dk - dj)
                for a in range(3):
                    tmp[out, a] = poly[k, a] + t * (poly[j, a] - poly[k, a])
                out += 1
        m = out
        for k in range(m):
            poly[k] = tmp[k]
        if m == 0:
            return 0
    return m


@njit(cache=True)
def _mesh_clip_pass(gr, gi, ref_is_b, si, sf, MV, MT, MB, Rw, pw, margin, buf, keys, count):
    """Every triangle of mesh gi facing a triangle of mesh gr, clipped to that triangle's
    prism; each clipped vertex p within the margin of the reference plane is a contact with
    the reference face normal (see :func:`mesh_mesh`). Appends to the buffer; returns the
    count."""
    Wr, Nr, Sr = _world_mesh(gr, si, MV, MT, MB, Rw, pw)
    Wi, Ni, Si = _world_mesh(gi, si, MV, MT, MB, Rw, pw)
    tr0, trn, ti0, tin = si[gr, MT0], si[gr, MTN], si[gi, MT0], si[gi, MTN]
    vr0 = si[gr, MV0]
    R = Rw[gr]
    pr = pw[gr]
    depth_cap = margin + DEPTH_FRACTION * min(sf[gr, BR], sf[gi, BR])
    poly = np.empty((9, 3))
    tmp = np.empty((9, 3))
    ql = np.empty(3)
    closest = np.empty(3)
    nl = np.empty(3)
    pa = np.empty(3)
    pb = np.empty(3)
    n = np.empty(3)
    room = buf.shape[0] - 8
    kind = K_TRI_B if ref_is_b else K_TRI_A
    # only triangles near the other mesh's bounding sphere can touch it: O(tr + ti) pruning
    # before the O(tr x ti) pair loop
    cr = _centre(gr, sf, Rw, pw)
    ci = _centre(gi, sf, Rw, pw)
    near = np.empty(tin, dtype=np.int64)
    nnear = 0
    for i in range(tin):
        reach = Si[i, 3] + sf[gr, BR] + margin
        if (Si[i, 0] - cr[0]) ** 2 + (Si[i, 1] - cr[1]) ** 2 + (Si[i, 2] - cr[2]) ** 2 <= reach**2:
            near[nnear] = i
            nnear += 1
    for r in range(trn):
        nr = Nr[r]
        if nr[0] == 0.0 and nr[1] == 0.0 and nr[2] == 0.0:
            continue
        reach = Sr[r, 3] + sf[gi, BR] + margin
        if (Sr[r, 0] - ci[0]) ** 2 + (Sr[r, 1] - ci[1]) ** 2 + (Sr[r, 2] - ci[2]) ** 2 > reach**2:
            continue
        Tr = MT[tr0 + r]
        off = dot3(nr, Wr[Tr[0]])
        for ii in range(nnear):
            i = near[ii]
            c = dot3(nr, Ni[i])
            if c > -EDGE_ON_COS:  # turned away from the reference triangle, or edge-on
                continue
            facing = c <= -FACING_COS
            dx = Sr[r, 0] - Si[i, 0]
            dy = Sr[r, 1] - Si[i, 1]
            dz = Sr[r, 2] - Si[i, 2]
            reach = Sr[r, 3] + Si[i, 3] + margin
            if dx * dx + dy * dy + dz * dz > reach * reach:
                continue
            m = _clip_triangle(Wr, Tr, nr, Wi, MT[ti0 + i], poly, tmp)
            for k in range(m):
                h = dot3(nr, poly[k]) - off
                if h > margin or h < -depth_cap:
                    continue
                if h < -INSIDE_TOL or not facing:
                    for a in range(3):
                        ql[a] = R[0, a] * (poly[k, 0] - pr[0]) + R[1, a] * (poly[k, 1] - pr[1])
                        ql[a] += R[2, a] * (poly[k, 2] - pr[2])
                    sd = point_mesh(ql, MV, MT, MB, vr0, tr0, trn, closest, nl)
                    if not facing:
                        if sd <= INSIDE_TOL or h < 0.0:  # oblique: separated contacts only
                            continue
                    elif sd > INSIDE_TOL or h < sd - depth_cap:
                        # below the reference plane: a penetration only if the point is
                        # inside the reference mesh, no deeper than the cap past its nearest
                        # surface
                        continue
                if count >= room:
                    count = compact(buf, keys, count, max(buf.shape[0] // 4, 1))
                if ref_is_b:  # A's point on its triangle, B's its projection; normal B's
                    for a in range(3):
                        pa[a] = poly[k, a]
                        pb[a] = poly[k, a] - h * nr[a]
                        n[a] = nr[a]
                else:  # B's point on its triangle, A's its projection; normal -(A's)
                    for a in range(3):
                        pb[a] = poly[k, a]
                        pa[a] = poly[k, a] - h * nr[a]
                        n[a] = -nr[a]
                count = put(buf, keys, count, pa, pb, n, h, key_of(kind, r, i, k))
    return count


@njit(cache=True)
def mesh_mesh(ga, gb, si, sf, MV, MT, MB, Rw, pw, margin, buf, keys):
    """Non-convex mesh A = ga against non-convex mesh B = gb from the triangles' own geometry.

    For every pair of a reference triangle (normal n, outward) and an incident triangle of
    the other mesh facing it (n_inc . n < 0) whose bounding spheres are within the margin, the
    incident triangle is clipped to the prism over the reference triangle (its three side
    planes). Each clipped vertex p at height h = n . (p - v0) above the reference plane, with
    h < margin, is a contact: gap h, normal n (from the reference mesh to the other), points p
    and its projection p - h n, which lies on the reference triangle. Both directions are
    run (B's triangles as reference, then A's), so vertices of either mesh resting on a face
    of the other are found. h is linear over the clipped polygon, so its vertices hold the
    polygon's closest points: the gaps are exact for face-face and vertex-face contacts, and
    a face resting on a face gives the corners of the overlap region (the support polygon).

    Facing pairs (within 60 deg of opposed, FACING_COS) give touching and penetrating
    contacts: a point below the reference plane (h < 0) is kept only if it is inside the
    reference mesh (signed distance sd, :func:`point_mesh`, at most INSIDE_TOL) and
    h >= sd - (margin + DEPTH_FRACTION x the smaller bounding radius): otherwise the reference
    face is not the surface it penetrates. Oblique pairs give only separated contacts (sd >
    INSIDE_TOL), so a face grazing a side face never adds a sideways normal.
    Edge-edge crossings are found where an incident edge crosses a side plane of the
    reference prism (a point on the reference triangle's edge), with the face normal.

    Returns the count (0 = no contact).
    """
    # np.bool_/np.int64 constants, not literals: one compile of the callee (see round_pair)
    count = _mesh_clip_pass(
        gb, ga, np.bool_(True), si, sf, MV, MT, MB, Rw, pw, margin, buf, keys, np.int64(0)
    )
    return _mesh_clip_pass(
        ga, gb, np.bool_(False), si, sf, MV, MT, MB, Rw, pw, margin, buf, keys, count
    )
