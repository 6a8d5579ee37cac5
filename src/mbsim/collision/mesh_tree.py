"""Trees of oriented boxes (each with a sphere) over the triangles of each non-convex mesh,
and a compiled test that two meshes are apart by more than the margin (numba).

A mesh - mesh pair too large for :func:`~mbsim.collision.mesh_pairs.mesh_mesh` (triangles x
triangles > MESH_PAIR_FACTOR x work_limit) whose convex hulls overlap (a robot's link against
its neighbour: solo12's base against each upper leg, 5,472 x 3,114 triangles) went to FCL on
every step, and a step with an FCL pair leaves the compiled loop (users19, slow path (i)).
:func:`mesh_trees_apart` proves such a pair apart without FCL, exactly in that direction:

* each mesh has a binary tree in its own frame (:func:`build_trees`): a node holds a box
  along the principal axes of its triangles' vertices and the sphere about the box's centre
  through the farthest vertex, both holding every vertex of its triangles, so the triangles;
  a leaf has one triangle (LEAF_SIZE), its box the triangle's flat rectangle;
* two nodes whose spheres are farther apart than r_a + r_b + tol, or whose boxes'
  projections on one of the 15 separating-axis candidates (:func:`_box_gap`) are more than
  tol apart, hold no two points within tol of each other; the traversal descends into the
  larger sphere of each overlapping pair;
* at two overlapping leaves, the triangle pair is apart if its triangle spheres (``MB``)
  are, or if a separating axis (:func:`~mbsim.collision.mesh_pairs._triangle_apart`: both
  face normals and the nine edge x edge axes, each projection gap > tol) shows it (the
  distance between two convex sets is at least their projections' gap on any unit axis),
  or else if their distance (the least over the six edges of an edge's distance to the
  other triangle, :func:`~mbsim.collision.primitives.segment_triangle`) exceeds tol.

With tol = margin + APART_TOL the pair is certified only when every triangle pair is more
than margin + 1e-6 m apart. FCL's answer for it (fcl_narrow.FclNarrowphase.pair: collide,
then distance compared with the margin) is then no contact: a BVH pair's collide tests the
triangle pairs for intersection and its distance is the exact smallest triangle-triangle
distance (FCL's TriangleDistance, no GJK), both on the same vertices and poses, so they
differ from the true values by rounding, ~1e-15 m for coordinates of metres, far below
APART_TOL (as for mesh_pairs.APART_TOL; tests/test_collision_mesh_tree.py checks the
certificate against FCL on random poses). A certified pair is therefore one FCL would have
returned no contact for, and every recorded number is the same bit for bit. An undecided
pair (some triangle pair within tol, or the traversal stack full) goes to FCL as before.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mbsim.collision.mesh_pairs import _triangle_apart
from mbsim.collision.primitives import cross3, dot3, segment_triangle
from mbsim.collision.table import MT0, MTN, MV0

#: Most triangles in a leaf of a mesh's tree: one makes the leaf boxes the triangles' own
#: rectangles, which reject far more triangle pairs than their spheres (solo12: the most
#: work a certificate needs 508 at one, 991 at two, 2,821 at four; docs/results.md "mtree3").
LEAF_SIZE = 1
#: Columns of a tree node (:func:`build_trees`): box centre (3), sphere radius, box axes (3 x 3,
#: rows), box half extents (3).
NODE_COLS = 16
#: Rows of the traversal's stack of node pairs. Each step pops one pair and pushes at most
#: two, so the stack never holds more than depth_a + depth_b + 1 pairs (trees of 2^30
#: triangles stay far below); a full stack leaves the pair undecided (FCL), never wrong.
STACK_ROWS = 128
#: :func:`mesh_trees_bound`'s answers when it proves nothing (a bound is > tol >= 0)
UNDECIDED, CAPPED = -1.0, -2.0
#: How far beyond the tolerance (m) the narrowphase's :func:`mesh_pair_apart` traverses the
#: trees, so that its certificate d0 (up to tol + BOUND_SLACK) leaves room for the shapes to
#: move before the next traversal; a larger slack costs more triangle pair tests per
#: traversal (solo12's recorded poses, docs/results.md "mrej2": 1-3 mm about equal, 5 mm
#: several times dearer).
BOUND_SLACK = 2e-3
#: Most work one traversal of the narrowphase's :func:`mesh_pair_apart` does (triangle pair
#: tests, separating axis or distance, plus box tests / BOX_TESTS) before it leaves the pair
#: to FCL: ~0.22 us a unit on solo12, so at most ~0.22 ms, under FCL's query on solo12's
#: pairs (0.24-1.2 ms); solo12's certificates need at most ~510 (docs/results.md "mtree3").
LEAF_BUDGET = 1000
#: Box tests (:func:`_box_gap`) counted as one triangle pair test in LEAF_BUDGET.
BOX_TESTS = 4
#: Shortest cross-product axis (the sine of the angle between the two box axes) a box test
#: uses: its unit direction then carries a rounding of ~1e-16 / MIN_AXIS, and the
#: projections of coordinates of metres ~1e-13 m, far below APART_TOL.
MIN_AXIS = 1e-3
#: Rows of a scene's certificate table (:func:`new_state`) and its columns.
STATE_ROWS = 64
STATE_COLS = 26
#: Allowance for rotation matrices orthonormal only to rounding (:func:`_moved`,
#: dimensionless, times the mesh's radius).
ORTHO_SLACK = 1e-9


def build_trees(table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The box trees of every mesh of ``table`` (:class:`~mbsim.collision.table.ShapeTable`):
    (TN (nn, NODE_COLS) float: per node, in the shape frame, its box's centre c (m), the
    radius (m) of a sphere about c holding the node's triangles, the box's unit axes (three
    rows) and half extents (m); TI (nn, 3) int: (left child, right child, 0) of an inner
    node, (start, count, 1) of a leaf, whose triangles are ``TP[start : start + count]``; TP:
    rows of MT / MB (global); TR (n,) int: each shape's root node, -1 for shapes without
    triangles). Each node's box is oriented along the principal axes of its triangles'
    vertices (:func:`_node`); a node splits its triangles at the median of their centroids
    along the box's longest axis (:func:`_build`)."""
    n = table.si.shape[0]
    TR = np.full(n, -1, dtype=np.int64)
    TNs, TIs, TPs = [], [], []
    nn = ntp = 0
    for g in range(n):
        tn = int(table.si[g, MTN])
        if tn == 0:
            continue
        t0, v0 = int(table.si[g, MT0]), int(table.si[g, MV0])
        tri = np.ascontiguousarray(table.MV[v0 + table.MT[t0 : t0 + tn]])  # (tn, 3, 3)
        tn_, ti, tp = _build(tri, LEAF_SIZE)
        ti[ti[:, 2] == 0, :2] += nn  # children: global rows
        ti[ti[:, 2] == 1, 0] += ntp  # leaves' first rows of TP
        TR[g] = nn
        TNs.append(tn_)
        TIs.append(ti)
        TPs.append(tp + t0)
        nn += len(tn_)
        ntp += len(tp)
    TN = np.concatenate(TNs) if TNs else np.zeros((0, NODE_COLS))
    TI = np.concatenate(TIs) if TIs else np.zeros((0, 3), dtype=np.int64)
    TP = np.concatenate(TPs) if TPs else np.zeros(0, dtype=np.int64)
    return TN, TI, TP, TR


@njit(cache=True)
def _node(pts, row):
    """Fill the node row (NODE_COLS) holding the points ``pts`` (m, 3): a box along the
    principal axes of the points (eigenvectors of their covariance; the third axis the cross
    product of the first two, so the axes are orthonormal to rounding), its centre the middle
    of the points' extent along each axis and its half extents that extent's half, and the
    sphere about that centre through the farthest point. Half extents and radius are rounded
    up (by more than the rounding of the centre and axes, ~1e-16 of the coordinates), so the
    box and the sphere hold each point as computed in this frame."""
    m = pts.shape[0]
    mean = np.zeros(3)
    for k in range(m):
        for a in range(3):
            mean[a] += pts[k, a]
    mean /= m
    C = np.zeros((3, 3))
    for k in range(m):
        for a in range(3):
            for b in range(3):
                C[a, b] += (pts[k, a] - mean[a]) * (pts[k, b] - mean[b])
    _, vec = np.linalg.eigh(C)
    ax = np.empty((3, 3))
    for a in range(3):
        ax[0, a] = vec[a, 2]
        ax[1, a] = vec[a, 1]
    cross3(ax[0], ax[1], ax[2])
    ln = np.sqrt(dot3(ax[2], ax[2]))
    for a in range(3):
        ax[2, a] /= ln
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for k in range(m):
        for i in range(3):
            s = dot3(ax[i], pts[k])
            lo[i] = min(lo[i], s)
            hi[i] = max(hi[i], s)
    for a in range(3):
        row[a] = 0.0
        for i in range(3):
            row[a] += 0.5 * (lo[i] + hi[i]) * ax[i, a]
    r2 = 0.0
    for k in range(m):
        d2 = 0.0
        for a in range(3):
            d2 += (pts[k, a] - row[a]) ** 2
        r2 = max(r2, d2)
    row[3] = np.sqrt(r2) * (1.0 + 1e-12) + 1e-15
    for i in range(3):
        for a in range(3):
            row[4 + 3 * i + a] = ax[i, a]
        row[13 + i] = 0.5 * (hi[i] - lo[i]) * (1.0 + 1e-12) + 1e-15


@njit(cache=True)
def _build(tri, leaf_size):
    """One mesh's tree over its triangles ``tri`` ((tn, 3, 3) vertices, shape frame): (TN,
    TI, TP) with node rows, links and TP as local triangle rows (:func:`build_trees`), nodes
    in depth-first order (a node before its children). A node over more than ``leaf_size``
    triangles splits them at the median of their centroids along its box's longest axis."""
    tn = tri.shape[0]
    cap = 2 * tn
    TN = np.zeros((cap, NODE_COLS))
    TI = np.zeros((cap, 3), dtype=np.int64)
    idx = np.arange(tn)
    cen = np.empty((tn, 3))
    for t in range(tn):
        for a in range(3):
            cen[t, a] = (tri[t, 0, a] + tri[t, 1, a] + tri[t, 2, a]) / 3.0
    # pending nodes: (node row, first, end) of idx
    todo = np.empty((cap, 3), dtype=np.int64)
    todo[0] = (0, 0, tn)
    ntodo = 1
    nn = 1
    pts = np.empty((3 * tn, 3))
    while ntodo > 0:
        ntodo -= 1
        k, lo, hi = todo[ntodo, 0], todo[ntodo, 1], todo[ntodo, 2]
        m = hi - lo
        for q in range(m):
            for v in range(3):
                pts[3 * q + v] = tri[idx[lo + q], v]
        _node(pts[: 3 * m], TN[k])
        if m <= leaf_size:
            TI[k, 0], TI[k, 1], TI[k, 2] = lo, m, 1
            continue
        i = np.argmax(TN[k, 13:16])
        axis = TN[k, 4 + 3 * i : 7 + 3 * i]
        s = np.empty(m)
        for q in range(m):
            s[q] = dot3(axis, cen[idx[lo + q]])
        part = idx[lo:hi][np.argsort(s, kind="mergesort")]
        idx[lo:hi] = part
        half = lo + m // 2
        TI[k, 0], TI[k, 1], TI[k, 2] = nn, nn + 1, 0
        todo[ntodo] = (nn, lo, half)
        todo[ntodo + 1] = (nn + 1, half, hi)
        ntodo += 2
        nn += 2
    return TN[:nn].copy(), TI[:nn].copy(), idx


@njit(cache=True)
def _world(R, p, x, out):
    """out = R x + p."""
    for a in range(3):
        out[a] = R[a, 0] * x[0] + R[a, 1] * x[1] + R[a, 2] * x[2] + p[a]


@njit(cache=True, inline="always")
def _sphere_gap(ca, cb, ra, rb):
    """The gap (m) between spheres (ca, ra) and (cb, rb): |ca - cb| - ra - rb."""
    d2 = (ca[0] - cb[0]) ** 2 + (ca[1] - cb[1]) ** 2 + (ca[2] - cb[2]) ** 2
    return np.sqrt(d2) - ra - rb


@njit(cache=True)
def _triangle_bound(ta, tb, ga, gb, si, MV, MT, Rw, pw, tol, reach, w, dP):
    """A lower bound (m) on the distance between triangle ``ta`` of mesh ga and ``tb`` of mesh
    gb (rows of MT): the float after ``reach`` when a separating axis shows a gap beyond it
    (triangle b as a flat polytope, two faces +n, -n and three edge directions, against
    triangle a:
    :func:`~mbsim.collision.mesh_pairs._triangle_apart`), else their distance (the least of
    each edge's :func:`~mbsim.collision.primitives.segment_triangle` distance to the other
    triangle), or the first edge distance found within ``tol`` (the caller stops there).
    ``w``: (16, 3) and ``dP``: (2,) scratch."""
    a, b, c = w[0], w[1], w[2]
    vP = w[3:6]
    nP = w[6:8]
    edP = w[8:11]
    tw = w[11:16]
    va, vb = si[ga, MV0], si[gb, MV0]
    _world(Rw[ga], pw[ga], MV[va + MT[ta, 0]], a)
    _world(Rw[ga], pw[ga], MV[va + MT[ta, 1]], b)
    _world(Rw[ga], pw[ga], MV[va + MT[ta, 2]], c)
    for k in range(3):
        _world(Rw[gb], pw[gb], MV[vb + MT[tb, k]], vP[k])
    for k in range(3):
        for m in range(3):
            edP[k, m] = vP[(k + 1) % 3, m] - vP[k, m]
    cross3(edP[0], edP[1], nP[0])
    ln = np.sqrt(dot3(nP[0], nP[0]))
    for m in range(3):
        # a degenerate triangle b gets zero normals: its face tests then never decide
        nP[0, m] = nP[0, m] / ln if ln > 0.0 else 0.0
        nP[1, m] = -nP[0, m]
    dP[0] = dot3(nP[0], vP[0])
    dP[1] = -dP[0]
    if _triangle_apart(a, b, c, vP, nP, dP, edP, reach, tw):
        return np.nextafter(reach, np.inf)  # a gap > reach: at least the next float
    # no axis shows it (a separating axis' gap can be less than the distance, e.g. between
    # two skew edges): the distance itself, the least of each edge's distance to the other
    # triangle (two triangles' closest points include a point of an edge; crossing
    # triangles have an edge through the other: 0). W = w[0:6]: a, b, c, then triangle b
    W = w[0:6]
    cs, ct, sw = w[6], w[7], w[8:13]
    tol2 = tol * tol
    best = np.inf
    for e in range(6):
        i = e if e < 3 else 3 + (e - 3)
        j = (e + 1) % 3 if e < 3 else 3 + (e - 2) % 3
        o = 3 if e < 3 else 0  # the other triangle's first row
        d2, _ = segment_triangle(W[i], W[j], W, o, o + 1, o + 2, cs, ct, sw)
        best = min(best, d2)
        if not d2 > tol2:
            break
    return np.sqrt(best)


@njit(cache=True, inline="always")
def _box_gap(TN, na, nb, Rab, cb, reach, w):
    """A separating-axis lower bound (m) on the distance between node na's box (mesh a's
    frame) and node nb's box (its centre ``cb`` in a's frame; Rab: b's frame to a's): the
    first gap above ``reach`` on one of the 15 axes of two boxes (a's three axes, b's three,
    the nine cross products), or -inf when none shows one. On a unit axis L the boxes
    project to intervals about L . c of half width sum_k h_k |L . u_k|, so the gap between
    the intervals, |L . (c_b - c_a)| minus both half widths, is at most the boxes' distance
    (Gottschalk, Lin, Manocha 1996, "OBBTree", eq. 1, there as a 0/1 test). With R_ij = a_i .
    b_j and T_i = a_i . (c_b - c_a), for L = a_i x b_j (length sqrt(R_i1j^2 + R_i2j^2), i1, i2
    the other two indices cyclic, likewise j1, j2) the projection is T_i2 R_i1j - T_i1 R_i2j,
    a's half width ha_i1 |R_i2j| + ha_i2 |R_i1j| and b's hb_j1 |R_ij2| + hb_j2 |R_ij1|. A cross
    axis shorter than MIN_AXIS (nearly parallel edges) is skipped: its direction is lost to
    rounding. ``w``: (7, 3) scratch."""
    R = w[0:3]
    bj = w[3]
    T = w[4]
    ha = TN[na, 13:16]
    hb = TN[nb, 13:16]
    for k in range(3):
        T[k] = 0.0
    for j in range(3):
        o = 4 + 3 * j
        for m in range(3):
            bj[m] = Rab[m, 0] * TN[nb, o] + Rab[m, 1] * TN[nb, o + 1] + Rab[m, 2] * TN[nb, o + 2]
        for i in range(3):
            o = 4 + 3 * i
            R[i, j] = TN[na, o] * bj[0] + TN[na, o + 1] * bj[1] + TN[na, o + 2] * bj[2]
    for i in range(3):
        o = 4 + 3 * i
        T[i] = (TN[na, o] * (cb[0] - TN[na, 0]) + TN[na, o + 1] * (cb[1] - TN[na, 1])
                + TN[na, o + 2] * (cb[2] - TN[na, 2]))  # fmt: skip
        g = abs(T[i]) - ha[i] - hb[0] * abs(R[i, 0]) - hb[1] * abs(R[i, 1]) - hb[2] * abs(R[i, 2])
        if g > reach:
            return g
    for j in range(3):
        t = R[0, j] * T[0] + R[1, j] * T[1] + R[2, j] * T[2]
        g = abs(t) - hb[j] - ha[0] * abs(R[0, j]) - ha[1] * abs(R[1, j]) - ha[2] * abs(R[2, j])
        if g > reach:
            return g
    for i in range(3):
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        for j in range(3):
            j1, j2 = (j + 1) % 3, (j + 2) % 3
            ln2 = R[i1, j] * R[i1, j] + R[i2, j] * R[i2, j]
            if not ln2 > MIN_AXIS * MIN_AXIS:
                continue
            g = abs(T[i2] * R[i1, j] - T[i1] * R[i2, j])
            g -= ha[i1] * abs(R[i2, j]) + ha[i2] * abs(R[i1, j])
            g -= hb[j1] * abs(R[i, j2]) + hb[j2] * abs(R[i, j1])
            ln = np.sqrt(ln2)
            if g > reach * ln:
                return g / ln
    return -np.inf


@njit(cache=True)
def mesh_trees_bound(ga, gb, si, MV, MT, MB, TN, TI, TP, TR, Rw, pw, tol, reach, budget):
    """A certified lower bound d0 > ``tol`` (m) on the distance between meshes ga and gb at
    shape poses Rw, pw, or UNDECIDED (some triangle pair within ``tol``, or the stack full),
    or CAPPED (more than ``budget`` units of work: a triangle pair's separating-axis or
    distance test one unit, BOX_TESTS box tests one).

    The traversal (module docstring), in mesh a's frame (b's node centres and axes turned by
    Rab = R_a^T R_b and moved by R_a^T (p_b - p_a)), drops a node pair whose spheres' gap
    |c_a - c_b| - r_a - r_b or whose boxes' separating-axis gap (:func:`_box_gap`) exceeds
    ``reach`` (>= tol) and tests the triangle pairs of two leaves whose triangle spheres are
    within ``reach``: :func:`_triangle_bound`, a lower bound on their distance (capped at
    ``reach``). d0 is the least of those gaps and bounds, so it bounds every triangle pair's
    distance from below; a larger ``reach`` than ``tol`` costs more tests and gives a d0 up
    to ``reach`` (the room :func:`mesh_pair_apart`'s motion bound spends)."""
    na, nb = TR[ga], TR[gb]
    if na < 0 or nb < 0:
        return UNDECIDED
    Ra, pa, Rb, pb = Rw[ga], pw[ga], Rw[gb], pw[gb]
    stack = np.empty((STACK_ROWS, 2), dtype=np.int64)
    w = np.empty((18, 3))
    bw = np.empty((7, 3))
    Rab = np.empty((3, 3))
    pab = np.empty(3)
    dP = np.empty(2)
    ca, cb = w[16], w[17]
    for i in range(3):
        pab[i] = (
            Ra[0, i] * (pb[0] - pa[0]) + Ra[1, i] * (pb[1] - pa[1]) + Ra[2, i] * (pb[2] - pa[2])
        )
        for j in range(3):
            Rab[i, j] = Ra[0, i] * Rb[0, j] + Ra[1, i] * Rb[1, j] + Ra[2, i] * Rb[2, j]
    stack[0, 0], stack[0, 1] = na, nb
    top = 1
    d0 = np.inf
    tests = 0
    boxes = 0
    # in quarter units of work (BOX_TESTS a triangle pair test); a budget too large to scale
    # is no limit
    limit = budget * BOX_TESTS if budget < (np.int64(1) << 58) else np.int64(1) << 62
    lim = reach
    while top > 0:
        top -= 1
        na, nb = stack[top, 0], stack[top, 1]
        _world(Rab, pab, TN[nb], cb)
        gap = _sphere_gap(TN[na], cb, TN[na, 3], TN[nb, 3])
        if gap > lim:
            d0 = min(d0, gap)
            continue
        boxes += 1
        if tests * BOX_TESTS + boxes > limit:
            return CAPPED
        gap = _box_gap(TN, na, nb, Rab, cb, lim, bw)
        if gap > lim:
            d0 = min(d0, gap)
            continue
        leaf_a, leaf_b = TI[na, 2] == 1, TI[nb, 2] == 1
        if leaf_a and leaf_b:
            for i in range(TI[na, 0], TI[na, 0] + TI[na, 1]):
                ta = TP[i]
                _world(Ra, pa, MB[ta], ca)
                for j in range(TI[nb, 0], TI[nb, 0] + TI[nb, 1]):
                    tb = TP[j]
                    _world(Rb, pb, MB[tb], cb)
                    gap = _sphere_gap(ca, cb, MB[ta, 3], MB[tb, 3])
                    if gap > lim:
                        d0 = min(d0, gap)
                        continue
                    tests += 1
                    if tests * BOX_TESTS + boxes > limit:
                        return CAPPED
                    d = _triangle_bound(ta, tb, ga, gb, si, MV, MT, Rw, pw, tol, lim, w, dP)
                    if not d > tol:
                        return UNDECIDED
                    d0 = min(d0, d)
                    lim = min(lim, d0)
            continue
        if top + 2 > STACK_ROWS:
            return UNDECIDED
        if leaf_b or (not leaf_a and TN[na, 3] >= TN[nb, 3]):
            stack[top, 0], stack[top, 1] = TI[na, 0], nb
            stack[top + 1, 0], stack[top + 1, 1] = TI[na, 1], nb
        else:
            stack[top, 0], stack[top, 1] = na, TI[nb, 0]
            stack[top + 1, 0], stack[top + 1, 1] = na, TI[nb, 1]
        top += 2
    return d0


@njit(cache=True)
def mesh_trees_apart(ga, gb, si, MV, MT, MB, TN, TI, TP, TR, Rw, pw, tol):
    """Whether every triangle of mesh ga is more than ``tol`` (m) from every triangle of
    mesh gb (module docstring): True proves it, False is undecided. Rw, pw: shape poses.
    :func:`mesh_trees_bound` with reach = tol and no budget."""
    big = np.int64(1) << 62
    return mesh_trees_bound(ga, gb, si, MV, MT, MB, TN, TI, TP, TR, Rw, pw, tol, tol, big) > tol


def new_state(rows: int = STATE_ROWS) -> np.ndarray:
    """An empty table of :func:`mesh_pair_apart`'s certificates: (rows, STATE_COLS) floats,
    a row (key = ga * n + gb, d0 (m), R_a (9), p_a (3, m), R_b (9), p_b (3, m)); key -1:
    free. Rows 0: no memory (every pair traversed each time)."""
    state = np.zeros((rows, STATE_COLS))
    state[:, 0] = -1.0
    return state


@njit(cache=True)
def _moved(R, p, row, o, c, r):
    """A bound (m) on how far any point of a mesh moved between pose (R0, p0) (``row[o : o +
    9]`` row-major, ``row[o + 9 : o + 12]``) and (R, p): the mesh lies in the sphere (c, r)
    of its frame (its root node), so a point x moved (R - R0) x + p - p0 = (R - R0)(x - c) +
    ((R - R0) c + p - p0), at most ||R - R0||_2 r + |(R - R0) c + p - p0|. For rotations,
    ||R - R0||_2 = ||R0^T R - I||_2 = 2 sin(theta / 2) (theta the angle of R0^T R; <= theta)
    and ||R - R0||_F = 2 sqrt(2) sin(theta / 2), so ||R - R0||_2 = ||R - R0||_F / sqrt(2);
    ORTHO_SLACK r covers matrices orthonormal only to rounding (an error E moves both norms
    by at most ~2 ||E||_F)."""
    f2 = 0.0
    m2 = 0.0
    for a in range(3):
        da = p[a] - row[o + 9 + a]
        for b in range(3):
            dR = R[a, b] - row[o + 3 * a + b]
            f2 += dR * dR
            da += dR * c[b]
        m2 += da * da
    return np.sqrt(m2) + (np.sqrt(0.5 * f2) + ORTHO_SLACK) * r


@njit(cache=True)
def _keep_pose(R, p, row, o):
    for a in range(3):
        row[o + 9 + a] = p[a]
        for b in range(3):
            row[o + 3 * a + b] = R[a, b]


@njit(cache=True)
def mesh_pair_apart(ga, gb, si, MV, MT, MB, TN, TI, TP, TR, Rw, pw, tol, slack, budget, state):
    """Whether meshes ga and gb are proved more than ``tol`` (m) apart at shape poses Rw, pw
    (True: FCL would find no contact; False: undecided, FCL's), remembering each certificate.

    ``state`` (:func:`new_state`) keeps, per pair, the last certified lower bound d0 on the
    meshes' distance (:func:`mesh_trees_bound` with reach = tol + ``slack``, m) and the two
    shapes' poses then. Rigid motion moves each point of mesh a by at most m_a
    (:func:`_moved`, against its pose at the certificate) and each of mesh b by at most m_b,
    so every distance between a point of a and one of b changed by at most m_a + m_b (the
    triangle inequality), and the distance now is at least d0 - m_a - m_b: while that
    exceeds ``tol`` the pair is certified without a traversal. Otherwise the trees are
    traversed (at most ``budget`` triangle pair tests: past it the pair is left to FCL) and
    a new certificate kept. A pair left undecided is remembered too (d0 < 0), and handed to
    FCL without a traversal while it has moved less than ``slack`` since (a speed rule: FCL
    answers as it would anyway). Rows are found by linear
    probing from a hash of the pair; a full table replaces the hashed row (a lost
    certificate costs a traversal, never a wrong answer)."""
    rows = state.shape[0]
    reach = tol + slack
    if rows == 0:
        d = mesh_trees_bound(ga, gb, si, MV, MT, MB, TN, TI, TP, TR, Rw, pw, tol, reach,
                             budget)  # fmt: skip
        return d > tol
    key = float(ga * si.shape[0] + gb)
    h = (ga * 7919 + gb) % rows
    s = h
    for k in range(rows):
        r = (h + k) % rows
        if state[r, 0] == key or state[r, 0] < 0.0:
            s = r
            break
    row = state[s]
    if row[0] == key:
        na, nb = TR[ga], TR[gb]
        moved = _moved(Rw[ga], pw[ga], row, 2, TN[na, :3], TN[na, 3]) + _moved(
            Rw[gb], pw[gb], row, 14, TN[nb, :3], TN[nb, 3]
        )
        if row[1] > tol and row[1] - moved > tol:
            return True
        if row[1] < 0.0 and moved < slack:
            # left to FCL at a pose this near: another traversal would most likely stop
            # the same way (a speed rule only: FCL's answer is the same either way)
            return False
    d = mesh_trees_bound(ga, gb, si, MV, MT, MB, TN, TI, TP, TR, Rw, pw, tol, reach,
                         budget)  # fmt: skip
    row[0] = key
    row[1] = d
    _keep_pose(Rw[ga], pw[ga], row, 2)
    _keep_pose(Rw[gb], pw[gb], row, 14)
    return d > tol
