"""FCL narrowphase for the pairs the exact kernels do not cover (cylinders, non-convex meshes,
and convex pairs too large for the exact enumeration).

Request settings, and why (python-fcl 0.7.0.11 exposes only the solver type and the
contact count; FCL's GJK/EPA tolerances are fixed at their defaults, 1e-6):

* ``gjk_solver_type = GST_LIBCCD``. With the mesh (BVH) as the first object and libccd,
  ``collide`` reports normals from object 1 to object 2 with positive depth and ``distance``
  returns world-frame nearest points in object order, for every shape pair tested
  (tests/test_collision_fcl.py). GST_INDEP flips normal and depth sign for some pairs, and
  with a primitive first and a BVH second both solvers swap the nearest points and flip the
  normal, so a mesh always goes first.
* ``collide(num_max_contacts=...)`` first: a BVH pair reports one contact per intersecting
  triangle pair; ``pos`` is the middle of the overlap, so A's and B's points are pos -/+
  depth/2 along the normal. Only if there is no intersection, ``distance`` with
  ``enable_nearest_points`` (not signed: a BVH distance returns 0 or -1 when intersecting).
* Sphere-mesh never comes here (FCL's sphere-triangle distance returns local-frame points);
  the kernels handle it exactly.

Accuracy measured (docs/collision.md): distances to ~3e-7 m, nearest points to ~3e-4 m on
curved surfaces (GJK stops at its tolerance). Where the normal lies within REFINE_ANGLE of a
face normal of a polytope (box, convex mesh) the result is replaced by exact contacts: face
clipping between polytopes (:func:`mbsim.collision.polytope.clip_manifold`), the rim points
of a cylinder standing or lying on the face.
"""

from __future__ import annotations

import math

import fcl
import numpy as np
from numba import njit

from mbsim.collision.ground import cylinder_plane
from mbsim.collision.manifold import K_FCL_COLLIDE, K_FCL_DISTANCE, key_of, put
from mbsim.collision.polytope import clip_manifold, shape_faces, world_poly
from mbsim.collision.primitives import cross3, dot3
from mbsim.collision.shapes import BOX, CAPSULE, CONVEX, CYLINDER, MESH, SPHERE
from mbsim.collision.table import F0, FN, KIND, RAD

#: An FCL normal within this angle (rad) of a polytope face normal is snapped to the face
#: and the contacts are recomputed by clipping (FCL's normals are good to ~1e-4 rad).
REFINE_ANGLE = 1e-3


def fcl_geometry(rec):
    """The FCL geometry of a shape record (None for kinds FCL never sees)."""
    if rec.kind == SPHERE:
        return fcl.Sphere(rec.radius)
    if rec.kind == CAPSULE:
        return fcl.Capsule(rec.radius, 2.0 * rec.halflen)
    if rec.kind == CYLINDER:
        return fcl.Cylinder(rec.radius, 2.0 * rec.halflen)
    if rec.kind == BOX:
        return fcl.Box(*(2.0 * np.asarray(rec.half)))
    if rec.kind == CONVEX:
        poly = rec.polytope
        flat = []
        for face in poly.faces:
            flat += [len(face), *(int(v) for v in face)]
        return fcl.Convex(poly.vertices, len(poly.faces), np.array(flat, dtype=np.int64))
    vertices, triangles = rec.mesh
    model = fcl.BVHModel()
    model.beginModel(len(vertices), len(triangles))
    model.addSubModel(vertices, triangles)
    model.endModel()
    return model


@njit(cache=True)
def _cylinder_on_face(gc, gp, face, flip, si, sf, V, FN_, FD_, FP, FV, ED, Rw, pw, margin, buf,
                      keys):  # fmt: skip
    """Cylinder gc against face ``face`` of polytope gp: the rim candidates of
    :func:`cylinder_plane` against the face's plane, kept if inside the face polygon.
    flip: the cylinder is B (points and normal swapped after)."""
    vP, nP, dP, _ = world_poly(gp, si, V, FN_, FD_, ED, Rw, pw)
    fp = shape_faces(gp, si, FP)
    count = cylinder_plane(gc, sf, Rw[gc], pw[gc], nP[face], dP[face], margin, buf, keys)
    start, m = fp[face, 0], fp[face, 1]
    kept = 0
    e = np.empty(3)
    side = np.empty(3)
    for k in range(count):
        inside = True
        for s in range(m):
            a = vP[FV[start + s]]
            b = vP[FV[start + (s + 1) % m]]
            for c in range(3):
                e[c] = b[c] - a[c]
            cross3(e, nP[face], side)
            if dot3(side, buf[k, 3:6] - a) > 1e-12 * np.sqrt(dot3(side, side)):
                inside = False
                break
        if inside:
            buf[kept] = buf[k]
            keys[kept] = keys[k]
            kept += 1
    if flip:
        for k in range(kept):
            for c in range(3):
                t = buf[k, c]
                buf[k, c] = buf[k, 3 + c]
                buf[k, 3 + c] = t
                buf[k, 6 + c] = -buf[k, 6 + c]
    return kept


@njit(cache=True)
def refine(ga, gb, n, si, sf, V, FN_, FD_, FP, FV, ED, Rw, pw, margin, cos_tol, buf, keys):
    """Exact contacts for normal n (B to A) when it lies within acos(cos_tol) of a face normal
    of a polytope: face clipping between polytopes, rim points for a cylinder on a polytope
    face. Returns the count (0 = not applicable)."""
    ka, kb = si[ga, KIND], si[gb, KIND]
    if ka == CYLINDER and (kb == BOX or kb == CONVEX):
        face, c = _best_face(gb, n, 1.0, si, FN_, Rw)
        if c >= cos_tol:
            return _cylinder_on_face(ga, gb, face, False, si, sf, V, FN_, FD_, FP, FV, ED, Rw,
                                     pw, margin, buf, keys)  # fmt: skip
        return 0
    if kb == CYLINDER and (ka == BOX or ka == CONVEX):
        face, c = _best_face(ga, n, -1.0, si, FN_, Rw)
        if c >= cos_tol:
            return _cylinder_on_face(gb, ga, face, True, si, sf, V, FN_, FD_, FP, FV, ED, Rw,
                                     pw, margin, buf, keys)  # fmt: skip
        return 0
    poly_a = ka == BOX or ka == CONVEX or ka == SPHERE or ka == CAPSULE
    poly_b = kb == BOX or kb == CONVEX or kb == SPHERE or kb == CAPSULE
    if not (poly_a and poly_b):
        return 0
    vA, nA, dA, _ = world_poly(ga, si, V, FN_, FD_, ED, Rw, pw)
    vB, nB, dB, _ = world_poly(gb, si, V, FN_, FD_, ED, Rw, pw)
    fb, cb = np.int64(-1), -np.inf  # not literals: see round_pairs.round_pair
    for f in range(nB.shape[0]):
        c = nB[f, 0] * n[0] + nB[f, 1] * n[1] + nB[f, 2] * n[2]
        if c > cb:
            cb, fb = c, f
    fa, ca = np.int64(-1), -np.inf
    for f in range(nA.shape[0]):
        c = -(nA[f, 0] * n[0] + nA[f, 1] * n[1] + nA[f, 2] * n[2])
        if c > ca:
            ca, fa = c, f
    fpA, fpB = shape_faces(ga, si, FP), shape_faces(gb, si, FP)
    if cb >= cos_tol and cb >= ca:
        return clip_manifold(
            np.bool_(True), vB, nB, dB, fpB, fb, sf[gb, RAD], vA, nA, fpA, sf[ga, RAD], FV, margin,
            buf, keys, np.int64(0),
        )  # fmt: skip
    if ca >= cos_tol:
        return clip_manifold(
            np.bool_(False), vA, nA, dA, fpA, fa, sf[ga, RAD], vB, nB, fpB, sf[gb, RAD], FV, margin,
            buf, keys, np.int64(0),
        )  # fmt: skip
    return 0


@njit(cache=True)
def _best_face(g, n, sign, si, FN_, Rw):
    """(face of shape g whose world normal is most aligned with sign * n, that cosine)."""
    f0, fn = si[g, F0], si[g, FN]
    best, bf = -np.inf, -1
    R = Rw[g]
    for f in range(fn):
        c = 0.0
        for a in range(3):
            c += sign * n[a] * (R[a, 0] * FN_[f0 + f, 0] + R[a, 1] * FN_[f0 + f, 1]
                                + R[a, 2] * FN_[f0 + f, 2])  # fmt: skip
        if c > best:
            best, bf = c, f
    return bf, best


class FclNarrowphase:
    """FCL queries for (A, B) pairs; see the module docstring for the conventions."""

    def __init__(self, records, table, margin: float, cap: int) -> None:
        self.records = records
        self.table = table
        self.margin = margin
        self._geoms: dict[int, object] = {}
        self._objects: dict[int, fcl.CollisionObject] = {}
        self._collide = fcl.CollisionRequest(
            num_max_contacts=max(16, 4 * cap),
            enable_contact=True,
            gjk_solver_type=fcl.GJKSolverType.GST_LIBCCD,
        )
        self._distance = fcl.DistanceRequest(
            enable_nearest_points=True,
            enable_signed_distance=False,
            gjk_solver_type=fcl.GJKSolverType.GST_LIBCCD,
        )
        self._cos = math.cos(REFINE_ANGLE)

    def _object(self, g: int, Rw, pw) -> fcl.CollisionObject:
        obj = self._objects.get(g)
        if obj is None:
            geom = fcl_geometry(self.records[g])
            obj = fcl.CollisionObject(geom, fcl.Transform())
            self._geoms[g] = geom  # FCL holds raw pointers: keep the geometry alive
            self._objects[g] = obj
        obj.setRotation(Rw[g])
        obj.setTranslation(pw[g])
        return obj

    def pair(self, ga: int, gb: int, Rw, pw, buf, keys, collide_only: bool = False) -> int:
        """Contacts of A = ga and B = gb into the pair buffer; returns the count.
        collide_only: skip the distance query when they do not intersect."""
        t = self.table
        a_first = not (t.si[gb, KIND] == MESH and t.si[ga, KIND] != MESH)
        o1 = self._object(ga if a_first else gb, Rw, pw)
        o2 = self._object(gb if a_first else ga, Rw, pw)
        result = fcl.CollisionResult()
        fcl.collide(o1, o2, self._collide, result)
        count = 0
        normal = None
        if result.contacts:
            for c in result.contacts:
                n = -np.asarray(c.normal) if a_first else np.asarray(c.normal)
                depth = abs(float(c.penetration_depth))
                pos = np.asarray(c.pos)
                count = put(
                    buf, keys, count, pos - 0.5 * depth * n, pos + 0.5 * depth * n, n, -depth,
                    key_of(K_FCL_COLLIDE, c.b1, c.b2, 0),
                )  # fmt: skip
            normal = buf[int(np.argmin(buf[:count, 9])), 6:9].copy()
        elif collide_only:
            return 0
        else:
            dres = fcl.DistanceResult()
            d = fcl.distance(o1, o2, self._distance, dres)
            if d > self.margin:
                return 0
            p1, p2 = (np.asarray(p) for p in dres.nearest_points)
            pa, pb = (p1, p2) if a_first else (p2, p1)
            n = pa - pb
            ln = float(np.linalg.norm(n))
            if ln <= 1e-12:
                n = _centre_direction(self.records, ga, gb, Rw, pw)
            else:
                n = n / ln
            count = put(buf, keys, 0, pa, pb, n, max(d, 0.0), key_of(K_FCL_DISTANCE, 0, 0, 0))
            normal = n
        refined = refine(
            ga, gb, normal, t.si, t.sf, t.V, t.FN, t.FD, t.FP, t.FV, t.ED, Rw, pw, self.margin,
            self._cos, buf[count:], keys[count:],
        )  # fmt: skip
        if refined > 0:
            buf[:refined] = buf[count : count + refined]
            keys[:refined] = keys[count : count + refined]
            return refined
        return count


def _centre_direction(records, ga, gb, Rw, pw) -> np.ndarray:
    d = pw[ga] - pw[gb]
    ln = float(np.linalg.norm(d))
    return d / ln if ln > 0 else np.array([0.0, 0.0, 1.0])
