"""URDF collision shapes of a Model -> collision records (kinds, sizes, polytopes, meshes).

One :class:`ShapeRecord` per ``model.geometries`` entry, in the same order. Sizes are checked
again here (specs built in code bypass the URDF loader): every size must be finite and > 0 m,
every mesh scale finite and non-zero. Meshes are read with trimesh (STL, OBJ, DAE, ...),
scaled component-wise (a negative scale mirrors the mesh, so an odd number of negative
components, det(scale) < 0, reverses the triangle winding to keep normals outward), and
classified:

* convex (its hull volume exceeds its own volume by at most ``CONVEX_VOLUME_RTOL``, i.e. it is
  its own hull up to float noise), or ``convex=True`` for it: kind ``CONVEX``, the hull as a
  polytope, handled by the exact kernels like a box;
* **open** (not a closed surface: after merging coincident vertices some edge is traversed a
  different number of times in its two directions: a hole, a flipped triangle, a fin): it
  bounds no volume, so "inside" is undefined, and the triangle contacts (``mesh_pairs.mesh_mesh``,
  ``primitives.point_mesh``) need exactly that to tell a penetration from a separation. Such a
  mesh collides as its convex hull (kind ``CONVEX``; PyBullet's and MuJoCo's rule for every
  mesh), and its record's ``open_edges`` counts the edges at fault for the scene's note. A flat
  open mesh (no hull volume) stays a triangle mesh;
* otherwise kind ``MESH``: FCL holds the triangles as a BVH; the kernels keep its hull vertices.

Every problem raises :class:`~mbsim.errors.GeometryError` in one sentence naming the URDF file,
the link and the file or value at fault.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import numpy as np

from mbsim.collision.shapes import (
    BOX,
    CAPSULE,
    CONVEX,
    CYLINDER,
    MESH,
    SPHERE,
    Polytope,
    box_polytope,
    convex_polytope,
    hull_vertices,
)
from mbsim.errors import GeometryError

#: A closed mesh counts as convex when (hull volume - mesh volume) <= this times the hull
#: volume. Mesh files store float32 coordinates (relative rounding 6e-8), so the two triangles
#: of a flat quad are not quite coplanar: icub's boxes and cylinders (every hull vertex a mesh
#: vertex) differ from their hulls by 0.7e-7 to 6e-7 relative, which 1e-9 refused. A dent of
#: depth d over a face changes the volume by about d / size relative, so 1e-5 is a dent of
#: 1 um on a 10 cm part: nothing a user would call a dent.
CONVEX_VOLUME_RTOL = 1e-5


@dataclass
class ShapeRecord:
    """One collision shape placed on a body (see module docstring for ``kind``).

    body: moving body index, -1 for static geometry; pose: 4x4 pose of the shape frame in the
    body frame (world frame when static), m. radius/halflen (m): sphere, capsule, cylinder;
    half (3,) box half extents (m). polytope: box/convex; hull: (k, 3) hull vertices of any
    shape with vertices (box, convex, mesh); mesh: (vertices, triangles) for FCL (mesh kind).
    bound_center/bound_radius: a sphere containing the shape (shape frame, m).
    aabb_center/aabb_half: the shape's bounding box in its own frame (m).
    """

    index: int
    body: int
    tree: int
    link: str
    source: str
    kind: int
    pose: np.ndarray
    radius: float = 0.0
    halflen: float = 0.0
    half: np.ndarray = field(default_factory=lambda: np.zeros(3))
    polytope: Polytope | None = None
    hull: np.ndarray | None = None
    mesh: tuple[np.ndarray, np.ndarray] | None = None
    mesh_file: str | None = None
    bound_center: np.ndarray = field(default_factory=lambda: np.zeros(3))
    bound_radius: float = 0.0
    aabb_center: np.ndarray = field(default_factory=lambda: np.zeros(3))
    aabb_half: np.ndarray = field(default_factory=lambda: np.zeros(3))
    #: mesh edges whose triangles do not cancel (> 0: an open mesh, replaced by its convex
    #: hull; module docstring, ``_surface``)
    open_edges: int = 0


def build_records(
    model,
    *,
    convex: bool | Collection[str] = False,
    package_dirs: Mapping[str, str | os.PathLike[str]] | None = None,
    allow_outside_paths: bool = False,
) -> list[ShapeRecord]:
    """A :class:`ShapeRecord` for every ``model.geometries`` entry, in order.

    convex: True to replace every mesh by its convex hull, or a collection of link names
    (optionally ``tree_name/link``) whose meshes are replaced, or an object whose
    ``wants_hull(link, tree/link)`` decides (the scene's ``mesh_contact`` choice).
    package_dirs: ``{name: folder}`` for ``package://`` meshes the loader could not resolve;
    allow_outside_paths: let those paths reach outside the URDF's folder and the package
    folders (see :func:`mbsim.io.urdf.resolve_mesh_uri`; off by default).
    """
    paths = (package_dirs, allow_outside_paths)
    cache: dict[
        tuple[str, tuple[float, float, float]], tuple[np.ndarray, np.ndarray, int, bool]
    ] = {}
    records = []
    for index, geom in enumerate(model.geometries):
        source = model.tree_sources[geom.tree] if geom.tree < len(model.tree_sources) else "<?>"
        tree_name = model.tree_names[geom.tree] if geom.tree < len(model.tree_names) else ""
        if hasattr(convex, "wants_hull"):  # the scene's per-link mesh_contact choice
            want_hull = convex.wants_hull(geom.link, f"{tree_name}/{geom.link}")
        else:
            want_hull = convex is True or (
                not isinstance(convex, bool)
                and (geom.link in convex or f"{tree_name}/{geom.link}" in convex)
            )
        records.append(
            _record(index, geom, source, want_hull, paths, cache),
        )
    return records


def _record(index, geom, source, want_hull, paths, cache) -> ShapeRecord:
    shape = geom.shape
    pose = np.array(geom.pose, dtype=float)
    rec = ShapeRecord(index, int(geom.body), int(geom.tree), geom.link, source, SPHERE, pose)
    where = f"{source}: link '{geom.link}'"
    params = tuple(float(p) for p in shape.params)
    if shape.kind in ("sphere", "box", "cylinder", "capsule"):
        expected = {"sphere": 1, "box": 3, "cylinder": 2, "capsule": 2}[shape.kind]
        if len(params) != expected or not all(math.isfinite(p) and p > 0 for p in params):
            raise GeometryError(
                f"{where} has a collision {shape.kind} with size {_fmt(params)}; every size "
                "must be a finite positive number of metres."
            )
    if shape.kind == "sphere":
        rec.kind, rec.radius = SPHERE, params[0]
        rec.bound_radius = params[0]
        rec.aabb_half = np.full(3, params[0])
    elif shape.kind == "box":
        rec.kind, rec.half = BOX, 0.5 * np.array(params)
        rec.polytope = box_polytope(rec.half)
        rec.hull = rec.polytope.vertices
        rec.bound_radius = float(np.linalg.norm(rec.half))
        rec.aabb_half = rec.half.copy()
    elif shape.kind in ("cylinder", "capsule"):
        rec.kind = CYLINDER if shape.kind == "cylinder" else CAPSULE
        rec.radius, rec.halflen = params[0], 0.5 * params[1]
        cap = rec.radius if rec.kind == CAPSULE else 0.0
        rec.bound_radius = float(math.hypot(rec.radius, rec.halflen)) + cap
        rec.aabb_half = np.array([rec.radius, rec.radius, rec.halflen + cap])
        if rec.kind == CAPSULE:
            rec.hull = np.array([[0.0, 0.0, -rec.halflen], [0.0, 0.0, rec.halflen]])
    elif shape.kind == "mesh":
        _mesh_record(rec, shape, where, want_hull, paths, cache)
    else:
        raise GeometryError(f"{where} has a collision shape of unknown kind '{shape.kind}'.")
    return rec


def _mesh_record(rec, shape, where, want_hull, paths, cache) -> None:
    scale = tuple(float(s) for s in shape.params) if shape.params else (1.0, 1.0, 1.0)
    if len(scale) == 1:
        scale = scale * 3
    if len(scale) != 3 or not all(math.isfinite(s) and s != 0 for s in scale):
        raise GeometryError(
            f"{where} has a collision mesh '{shape.mesh_uri}' with scale {_fmt(scale)}; every "
            "scale factor must be finite and non-zero."
        )
    path = shape.mesh_path
    if path is None or not os.path.isfile(path):
        path = _resolve(shape.mesh_uri or path or "", rec.source, rec.link, *paths)
    key = (path, scale)
    if key not in cache:
        cache[key] = _read_mesh(path, scale, where)
    vertices, faces, open_edges, convex = cache[key]
    rec.mesh_file = path
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    rec.aabb_center, rec.aabb_half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    rec.bound_center = rec.aabb_center.copy()
    rec.bound_radius = float(np.linalg.norm(vertices - rec.bound_center, axis=1).max())
    poly = convex_polytope(vertices) if (want_hull or convex or open_edges) else None
    if poly is not None:
        rec.kind, rec.polytope, rec.hull = CONVEX, poly, poly.vertices
        rec.open_edges = 0 if (want_hull or convex) else open_edges
    else:
        rec.kind, rec.mesh, rec.hull = MESH, (vertices, faces), hull_vertices(vertices)


#: Meshes read in this process (:func:`_read_mesh`), by file, scale and the file's
#: modification time and size; at most MESH_CACHE_SIZE, the oldest dropped first.
_MESHES: dict[tuple, tuple[np.ndarray, np.ndarray, int, bool]] = {}
MESH_CACHE_SIZE = 256


def _read_mesh(path: str, scale, where: str) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """(vertices, faces, open_edges, convex) of the mesh file ``path`` at ``scale``:
    :func:`load_mesh` and :func:`_surface`, or fresh copies of what they gave for the same
    file earlier in this process while its modification time and size are unchanged. A scene
    built twice (``--place-on-floor`` builds the model again at the placed pose) or a batch's
    runs of one robot would otherwise parse and classify every mesh again (romeo's 24 meshes:
    ~0.5 s a build); the copies keep one build's records from sharing arrays with another's."""
    try:
        st = os.stat(path)
        key = (path, scale, st.st_mtime_ns, st.st_size)
    except OSError:  # load_mesh says why the file cannot be read
        key = None
    kept = _MESHES.get(key) if key is not None else None
    if kept is None:
        vertices, faces = load_mesh(path, scale, where=where)
        kept = (vertices, faces, *_surface(vertices, faces))
        if key is not None:
            if len(_MESHES) >= MESH_CACHE_SIZE:
                _MESHES.pop(next(iter(_MESHES)))  # the oldest: dicts keep insertion order
            _MESHES[key] = kept
    vertices, faces, open_edges, convex = kept
    return vertices.copy(), faces.copy(), open_edges, convex


def _resolve(uri: str, source: str, link: str, package_dirs, allow_outside_paths) -> str:
    """Find a mesh file the loader could not (raises GeometryError listing where it looked)."""
    from mbsim.io.urdf import resolve_mesh_uri

    # the Model keeps each tree's source path; its folder is where relative paths start
    folder = os.path.dirname(source)
    urdf_dir = folder if folder and os.path.isdir(folder) else None
    return resolve_mesh_uri(
        uri,
        urdf_dir,
        package_dirs,
        source=source,
        link=link,
        allow_outside_paths=allow_outside_paths,
    )


def load_mesh(
    path: str, scale: tuple[float, float, float] = (1.0, 1.0, 1.0), *, where: str = "<URDF>"
) -> tuple[np.ndarray, np.ndarray]:
    """Read a triangle mesh file: (vertices (n, 3) m, scaled; triangles (m, 3) int64).

    All meshes in a file (DAE scenes) are merged with their scene transforms. Raises
    GeometryError naming ``where`` and the file if it cannot be read or holds no triangles.
    """
    import trimesh

    try:
        loaded = trimesh.load(path, force="mesh", process=True)
    except Exception as exc:  # trimesh raises many types for unreadable files
        raise GeometryError(
            f"{where}: mesh file '{path}' could not be read ({type(exc).__name__}: {exc})."
        ) from exc
    vertices = np.asarray(getattr(loaded, "vertices", np.zeros((0, 3))), dtype=float)
    faces = np.asarray(getattr(loaded, "faces", np.zeros((0, 3))), dtype=np.int64)
    if len(faces) == 0 or len(vertices) < 3:
        raise GeometryError(f"{where}: mesh file '{path}' holds no triangles.")
    if not np.all(np.isfinite(vertices)):
        raise GeometryError(f"{where}: mesh file '{path}' has non-finite vertex coordinates.")
    vertices = vertices * np.asarray(scale, dtype=float)
    if float(np.prod(np.sign(scale))) < 0:
        faces = faces[:, ::-1].copy()  # mirroring flips orientation; keep normals outward
    if float(np.ptp(vertices, axis=0).max()) <= 0.0:
        raise GeometryError(f"{where}: mesh file '{path}' has zero size (all vertices coincide).")
    return vertices, faces


def _surface(vertices: np.ndarray, faces: np.ndarray) -> tuple[int, bool]:
    """(open_edges, convex) of a triangle mesh.

    open_edges: after merging coincident vertices (trimesh's process: a textured mesh repeats
    its vertices along its seams), the number of edges a -> b that the triangles traverse a
    different number of times in each direction. 0 means the mesh is a closed oriented
    surface (the boundary of its triangles cancels), so the winding number of every point off
    it is an integer and "inside" is defined: a watertight mesh, or several closed pieces that
    share edges (a convex decomposition: edges on four triangles). A hole edge (on one
    triangle), a flipped triangle or a three-triangle fin counts. convex: closed and equal to
    its convex hull up to CONVEX_VOLUME_RTOL in volume."""
    import trimesh

    mesh = trimesh.Trimesh(vertices, faces, process=True)
    f = np.asarray(mesh.faces, dtype=np.int64)
    directed = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    forward = directed[:, 0] < directed[:, 1]
    key = np.where(forward[:, None], directed, directed[:, ::-1])
    edges, inverse = np.unique(key, axis=0, return_inverse=True)
    balance = np.bincount(
        inverse.ravel(), weights=np.where(forward, 1.0, -1.0), minlength=len(edges)
    )
    open_edges = int(np.count_nonzero(balance))
    return open_edges, open_edges == 0 and _is_convex(mesh)


def _is_convex(mesh) -> bool:
    """True if the closed trimesh ``mesh`` equals its convex hull up to CONVEX_VOLUME_RTOL in
    volume."""
    try:
        hull_volume = float(mesh.convex_hull.volume)
    except Exception:  # qhull fails on flat meshes: not a solid, so not a convex solid
        return False
    return hull_volume > 0 and hull_volume - abs(float(mesh.volume)) <= CONVEX_VOLUME_RTOL * (
        hull_volume
    )


def _fmt(values) -> str:
    return "(" + ", ".join(f"{v:.6g}" for v in values) + ")"
