"""Shape kinds and convex polytopes as flat arrays (built once, read by the numba kernels).

Every collision shape is described in its own frame (URDF ``<collision><origin>``), metres:

* ``SPHERE``: radius r about the origin; core = the point 0.
* ``CAPSULE``: the segment z in [-h, h] (h = length / 2) swept by radius r; core = the segment.
* ``BOX``: half extents (hx, hy, hz) about the origin; core = the box (8 vertices).
* ``CYLINDER``: radius r, z in [-h, h]; not a polytope, handled by its own formulas or FCL.
* ``CONVEX``: a convex polytope (a convex mesh, or the hull of a mesh with ``convex=True``).
* ``MESH``: a non-convex triangle mesh; FCL holds it as a BVH, the kernels only keep its hull
  vertices (enough for contacts against a plane: the lowest points of any set are hull vertices).

Polytopes are stored the way the separating-axis and clipping kernels need them: vertices,
polygonal faces (coplanar hull triangles merged, vertices counter-clockwise seen from outside,
outward unit normal ``n`` and offset ``d`` so the solid is ``n . x <= d``), edges (vertex
pairs) and the distinct edge directions (unit vectors, one per direction up to sign).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from scipy.spatial import ConvexHull, QhullError

SPHERE, CAPSULE, BOX, CYLINDER, CONVEX, MESH = 0, 1, 2, 3, 4, 5
KIND_NAMES = ("sphere", "capsule", "box", "cylinder", "convex", "mesh")

#: Two hull facets are merged into one polygonal face when their unit normals differ by less
#: than this (rad) and their offsets by less than COPLANAR_DIST_RTOL times the shape size.
#: Real meshes carry float noise ~1e-7 relative (single-precision STL), far below both.
COPLANAR_ANGLE = 1e-6
COPLANAR_DIST_RTOL = 1e-6
#: Edge directions closer than this angle (rad) are the same direction for the SAT.
EDGE_DIR_ANGLE = 1e-9


@dataclass
class Polytope:
    """A convex polytope in its shape frame (all arrays float64/int64, metres).

    vertices (nv, 3); faces: list of vertex-index arrays (CCW seen from outside);
    normals (nf, 3) outward unit; offsets (nf,) with n . x <= d inside; edges (ne, 2) vertex
    index pairs; edge_dirs (nd, 3) unit.
    """

    vertices: np.ndarray
    faces: list[np.ndarray]
    normals: np.ndarray
    offsets: np.ndarray
    edges: np.ndarray
    edge_dirs: np.ndarray


def box_polytope(half: np.ndarray) -> Polytope:
    """The box with half extents ``half`` (m) centred at the origin."""
    hx, hy, hz = (float(v) for v in half)
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    vertices = signs * np.array([hx, hy, hz])
    # vertex index = 4 * (x>0) + 2 * (y>0) + (z>0); faces CCW seen from outside.
    faces = [
        np.array([0, 1, 3, 2]),  # -x
        np.array([4, 6, 7, 5]),  # +x
        np.array([0, 4, 5, 1]),  # -y
        np.array([2, 3, 7, 6]),  # +y
        np.array([0, 2, 6, 4]),  # -z
        np.array([1, 5, 7, 3]),  # +z
    ]
    normals = np.array(
        [[-1, 0, 0], [1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1]], dtype=float
    )
    offsets = np.array([hx, hx, hy, hy, hz, hz])
    return Polytope(vertices, faces, normals, offsets, _edges_of(faces), np.eye(3))


#: Hulls made in this process, by content (:func:`convex_polytope`); at most HULL_CACHE_SIZE.
_HULLS: dict[bytes, Polytope | None] = {}
HULL_CACHE_SIZE = 256


def convex_polytope(points: np.ndarray) -> Polytope | None:
    """The convex hull of ``points`` (m) as a polytope with merged coplanar faces.

    Returns None when the points span no volume (flat or degenerate meshes), which then stay
    meshes for FCL.

    A hull of the same points (the same float64 bytes, in the same order) made earlier in the
    process is copied rather than made again: a scene built twice (``--place-on-floor`` builds
    the model again at the placed pose), a robot loaded twice, a batch's runs. A robot with
    smooth meshes has hulls of thousands of faces, seconds each to merge and order; the copy
    (fresh arrays, so no caller can change another's) takes milliseconds.
    """
    points = np.ascontiguousarray(points, dtype=float)
    key = hashlib.blake2b(points.tobytes(), digest_size=20, person=b"mbsim-hull").digest()
    key += np.asarray(points.shape, dtype=np.int64).tobytes()
    if key not in _HULLS:
        if len(_HULLS) >= HULL_CACHE_SIZE:
            _HULLS.pop(next(iter(_HULLS)))  # the oldest: dicts keep insertion order
        _HULLS[key] = _hull_polytope(points)
    kept = _HULLS[key]
    if kept is None:
        return None
    return Polytope(
        kept.vertices.copy(),
        [f.copy() for f in kept.faces],
        kept.normals.copy(),
        kept.offsets.copy(),
        kept.edges.copy(),
        kept.edge_dirs.copy(),
    )


def _hull_polytope(points: np.ndarray) -> Polytope | None:
    """:func:`convex_polytope` without the cache."""
    try:
        hull = ConvexHull(points)
    except (QhullError, ValueError):
        return None
    size = float(np.ptp(points, axis=0).max())
    used = np.unique(hull.simplices)
    remap = np.full(len(points), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    vertices = points[used]
    # Qhull's equations: n . x + c <= 0 inside, n unit and outward.
    eq_n = hull.equations[:, :3]
    eq_d = -hull.equations[:, 3]
    groups = _coplanar_groups(eq_n, eq_d, COPLANAR_ANGLE, COPLANAR_DIST_RTOL * max(size, 1e-12))
    faces, normals, offsets = [], [], []
    for members in groups:
        n = eq_n[members].mean(axis=0)
        n /= np.linalg.norm(n)
        ids = remap[np.unique(hull.simplices[members])]
        faces.append(_ccw_polygon(vertices, ids, n))
        normals.append(n)
        offsets.append(float(np.max(vertices[ids] @ n)))
    edges = _edges_of(faces)
    dirs = vertices[edges[:, 1]] - vertices[edges[:, 0]]
    dirs /= np.linalg.norm(dirs, axis=1)[:, None]
    return Polytope(
        vertices, faces, np.array(normals), np.array(offsets), edges, _distinct_dirs(dirs)
    )


def hull_vertices(points: np.ndarray) -> np.ndarray:
    """Vertices of the convex hull of ``points`` (all unique points if they span no volume)."""
    points = np.asarray(points, dtype=float)
    try:
        return points[np.unique(ConvexHull(points).simplices)]
    except (QhullError, ValueError):
        return np.unique(points, axis=0)


def _coplanar_groups(normals, offsets, angle, dist) -> list[np.ndarray]:
    """Indices of hull facets grouped by plane (greedy; hull facets are few enough)."""
    cos_tol = np.cos(angle)
    left = np.ones(len(normals), dtype=bool)
    groups = []
    for i in range(len(normals)):
        if not left[i]:
            continue
        same = left & (normals @ normals[i] >= cos_tol) & (np.abs(offsets - offsets[i]) <= dist)
        members = np.flatnonzero(same)
        left[members] = False
        groups.append(members)
    return groups


def _ccw_polygon(vertices: np.ndarray, ids: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """The vertex ids of a planar convex face ordered counter-clockwise about ``normal``,
    dropping points that lie inside the polygon or on its edges (2-D monotone-chain hull)."""
    # normal x e_x, else normal x e_y, and w = normal x u, written out: np.cross's products and
    # differences (with the zero products it forms exactly), without its ~25 us of set-up a
    # call on hulls of thousands of faces
    n0, n1, n2 = float(normal[0]), float(normal[1]), float(normal[2])
    u = np.array([0.0, n2, -n1])
    if np.linalg.norm(u) < 0.5:
        u = np.array([-n2, 0.0, n0])
    u /= np.linalg.norm(u)
    u0, u1, u2 = float(u[0]), float(u[1]), float(u[2])
    w = np.array([n1 * u2 - n2 * u1, n2 * u0 - n0 * u2, n0 * u1 - n1 * u0])
    pts2 = np.column_stack([vertices[ids] @ u, vertices[ids] @ w])
    order = np.lexsort((pts2[:, 1], pts2[:, 0]))
    scale = max(float(np.ptp(pts2, axis=0).max()), 1e-300)

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    def chain(seq):
        out: list[int] = []
        for k in seq:
            while (
                len(out) >= 2 and cross(pts2[out[-2]], pts2[out[-1]], pts2[k]) <= 1e-12 * scale**2
            ):
                out.pop()
            out.append(k)
        return out

    lower = chain(order)
    upper = chain(order[::-1])
    loop = lower[:-1] + upper[:-1]
    return ids[np.array(loop, dtype=np.int64)]


def _edges_of(faces: list[np.ndarray]) -> np.ndarray:
    """Unique undirected edges (sorted vertex pairs) of polygon faces."""
    pairs = set()
    for f in faces:
        ring = f.tolist()
        for a, b in zip(ring, ring[1:] + ring[:1], strict=True):
            pairs.add((min(a, b), max(a, b)))
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)


def _distinct_dirs(dirs: np.ndarray) -> np.ndarray:
    """One unit vector per edge direction (parallel and anti-parallel are the same)."""
    out = np.empty((len(dirs), 3))
    count = 0
    cos_tol = np.cos(EDGE_DIR_ANGLE)
    for d in dirs:
        if count == 0 or np.max(np.abs(out[:count] @ d)) < cos_tol:
            out[count] = d
            count += 1
    return out[:count].copy()
