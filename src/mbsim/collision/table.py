"""The shape table: every shape's kind, sizes and polytope packed into a few flat arrays.

Numba kernels take these arrays (few arguments keep the per-call dispatch cost low, about
0.1 us per array). Columns of ``si`` (int64, one row per shape): kind, body, then start and
count of the shape's vertices (rows of ``V``), faces (rows of ``FN``/``FD``/``FP``), edges (rows
of ``E``) and edge directions (rows of ``ED``). Columns of ``sf`` (float64): radius, half
length, box half extents (3), bounding-sphere radius and centre (3), bounding-box centre (3)
and half extents (3), all in metres in the shape frame. ``FP[f] = (start, count)`` of face
f's vertex ids in ``FV``; face vertex ids and ``E`` rows index the shape's own vertex block
(0 .. count-1). Non-convex meshes also keep their triangles: columns MV0/MVN (rows of
``MV``, vertices) and MT0/MTN (rows of ``MT``, triangles indexing the shape's own block of
``MV``; ``MB`` holds each triangle's bounding sphere, centre and radius, to prune
closest-point searches).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbsim.collision.geometry import ShapeRecord
from mbsim.collision.shapes import CAPSULE, SPHERE

KIND, BODY, V0, VN, F0, FN, E0, EN, D0, DN, MV0, MVN, MT0, MTN = range(14)
RAD, HLEN, HX, HY, HZ, BR, BCX, BCY, BCZ, OCX, OCY, OCZ, OHX, OHY, OHZ = range(15)


@dataclass
class ShapeTable:
    """Packed shape data (module docstring) plus each shape's fixed pose on its body."""

    si: np.ndarray
    sf: np.ndarray
    V: np.ndarray
    FN: np.ndarray
    FD: np.ndarray
    FP: np.ndarray
    FV: np.ndarray
    E: np.ndarray
    ED: np.ndarray
    MV: np.ndarray
    MT: np.ndarray
    MB: np.ndarray
    local_R: np.ndarray
    local_p: np.ndarray
    max_poly: int

    @property
    def n(self) -> int:
        return self.si.shape[0]

    def pack(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(floats, ints, counts): the arrays flattened into one float64 and one int64 array
        (unpacked by :func:`mbsim.collision.narrowphase.unpack`), fewer kernel arguments; the
        meshes' sphere trees (:func:`mbsim.collision.mesh_tree.build_trees`: TN after MB,
        TR, TI, TP after MT; counts 8 and 9 their node and leaf-triangle counts) last."""
        from mbsim.collision.mesh_tree import build_trees  # it imports this module

        TN, TI, TP, TR = build_trees(self)
        floats = np.concatenate(
            [a.ravel() for a in (self.sf, self.V, self.FN, self.FD, self.ED, self.MV, self.MB, TN)]
        )
        ints = np.concatenate(
            [a.ravel() for a in (self.si, self.FP, self.FV, self.E, self.MT, TR, TI, TP)]
        )
        counts = np.array(
            [self.n, len(self.V), len(self.FN), len(self.FV), len(self.E), len(self.ED),
             len(self.MV), len(self.MT), len(TN), len(TP)],
            dtype=np.int64,
        )  # fmt: skip
        return np.ascontiguousarray(floats), np.ascontiguousarray(ints, dtype=np.int64), counts


def build_table(records: list[ShapeRecord]) -> ShapeTable:
    """Pack ``records`` (see :mod:`mbsim.collision.geometry`) into a :class:`ShapeTable`."""
    n = len(records)
    si = np.zeros((n, 14), dtype=np.int64)
    sf = np.zeros((n, 15))
    vs: list[np.ndarray] = []
    fns: list[np.ndarray] = []
    fds: list[float] = []
    fps: list[tuple[int, int]] = []
    fvs: list[int] = []
    es: list[np.ndarray] = []
    eds: list[np.ndarray] = []
    mvs: list[np.ndarray] = []
    mts: list[np.ndarray] = []
    mbs: list[np.ndarray] = []
    nv = nf = ne = nd = nfv = nmv = nmt = 0
    max_poly = 2
    for i, rec in enumerate(records):
        si[i, KIND] = rec.kind
        si[i, BODY] = rec.body
        sf[i, RAD] = rec.radius
        sf[i, HLEN] = rec.halflen
        sf[i, HX : HZ + 1] = rec.half
        sf[i, BR] = rec.bound_radius
        sf[i, BCX : BCZ + 1] = rec.bound_center
        sf[i, OCX : OCZ + 1] = rec.aabb_center
        sf[i, OHX : OHZ + 1] = rec.aabb_half
        if rec.polytope is not None:
            poly = rec.polytope
            verts, faces, normals, offsets = poly.vertices, poly.faces, poly.normals, poly.offsets
            edges, dirs = poly.edges, poly.edge_dirs
        elif rec.kind == CAPSULE:
            verts = rec.hull
            faces, normals, offsets = [], np.zeros((0, 3)), np.zeros(0)
            edges, dirs = np.array([[0, 1]]), np.array([[0.0, 0.0, 1.0]])
        elif rec.kind == SPHERE:
            verts = np.zeros((1, 3))
            faces, normals, offsets = [], np.zeros((0, 3)), np.zeros(0)
            edges, dirs = np.zeros((0, 2), np.int64), np.zeros((0, 3))
        else:  # cylinder: no vertices; mesh: hull vertices only (for the ground plane)
            verts = rec.hull if rec.hull is not None else np.zeros((0, 3))
            faces, normals, offsets = [], np.zeros((0, 3)), np.zeros(0)
            edges, dirs = np.zeros((0, 2), np.int64), np.zeros((0, 3))
        si[i, V0], si[i, VN] = nv, len(verts)
        si[i, F0], si[i, FN] = nf, len(faces)
        si[i, E0], si[i, EN] = ne, len(edges)
        si[i, D0], si[i, DN] = nd, len(dirs)
        if rec.mesh is not None:
            si[i, MV0], si[i, MVN] = nmv, len(rec.mesh[0])
            si[i, MT0], si[i, MTN] = nmt, len(rec.mesh[1])
            mvs.append(np.asarray(rec.mesh[0], float))
            mts.append(np.asarray(rec.mesh[1], np.int64))
            mbs.append(_triangle_spheres(*rec.mesh))
            nmv += len(rec.mesh[0])
            nmt += len(rec.mesh[1])
        vs.append(np.asarray(verts, float).reshape(-1, 3))
        fns.append(np.asarray(normals, float).reshape(-1, 3))
        fds.extend(float(d) for d in offsets)
        for f in faces:
            fps.append((nfv, len(f)))
            fvs.extend(int(v) for v in f)
            nfv += len(f)
            max_poly = max(max_poly, len(f))
        es.append(np.asarray(edges, np.int64).reshape(-1, 2))
        eds.append(np.asarray(dirs, float).reshape(-1, 3))
        nv += len(verts)
        nf += len(faces)
        ne += len(edges)
        nd += len(dirs)
    local_R = np.array([r.pose[:3, :3] for r in records]).reshape(n, 3, 3)
    local_p = np.array([r.pose[:3, 3] for r in records]).reshape(n, 3)
    return ShapeTable(
        si=si,
        sf=sf,
        V=_stack(vs, (0, 3), float),
        FN=_stack(fns, (0, 3), float),
        FD=np.array(fds, dtype=float),
        FP=np.array(fps, dtype=np.int64).reshape(-1, 2),
        FV=np.array(fvs, dtype=np.int64),
        E=_stack(es, (0, 2), np.int64),
        ED=_stack(eds, (0, 3), float),
        MV=_stack(mvs, (0, 3), float),
        MT=_stack(mts, (0, 3), np.int64),
        MB=_stack(mbs, (0, 4), float),
        local_R=np.ascontiguousarray(local_R, dtype=float),
        local_p=np.ascontiguousarray(local_p, dtype=float),
        max_poly=max_poly,
    )


def _triangle_spheres(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(m, 4): per triangle a sphere containing it, centre = vertex mean, radius (m)."""
    tri = np.asarray(vertices, float)[np.asarray(triangles)]
    centre = tri.mean(axis=1)
    radius = np.linalg.norm(tri - centre[:, None, :], axis=2).max(axis=1)
    return np.column_stack([centre, radius * (1.0 + 1e-12) + 1e-15])


def _stack(parts, empty_shape, dtype):
    parts = [p for p in parts if len(p)]
    if not parts:
        return np.zeros(empty_shape, dtype=dtype)
    return np.ascontiguousarray(np.concatenate(parts), dtype=dtype)
