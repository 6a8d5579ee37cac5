"""The scene a replay needs, stored in the results file's ``/visual`` group.

``mbsim run`` records, next to the body poses, every shape to draw: the URDF ``<visual>``
elements and the collision shapes, each placed on its model body (fixed-joint children are
merged into their parent body, so a link's pose is its body's pose times a constant offset,
:attr:`~mbsim.simcore.model.Model.link_frames`), and the identity of each mesh file (absolute
path and sha256). ``mbsim view`` rebuilds the scene from that table plus the mesh files, and
refuses a mesh that moved or changed since the run (docs/hdf5-format.md, ``/visual``).

Layout of ``/visual`` (S shapes, M mesh files; attributes ``floor`` (1: the built-in floor
z <= 0 is in the scene), ``notes`` (visuals left out at run time, one sentence a line) and
``description``):

========== ========= ============================================================
``role``   (S) str   ``visual`` or ``collision``
``tree``   (S) int   tree index (into ``/model/tree_names``)
``link``   (S) str   the URDF link the shape belongs to
``body``   (S) int   model body carrying it (index into ``/model/body_names``), -1 = world
``kind``   (S) str   ``box``, ``sphere``, ``cylinder``, ``capsule``, ``mesh``
``params`` (S, 3)    box: side lengths; sphere: r; cylinder/capsule: r, length; mesh: scale
``pose``   (S, 4, 4) pose in the body frame (world frame when ``body`` = -1), m
``rgba``   (S, 4)    URDF colour in [0, 1], NaN when the URDF gives none
``mesh``   (S) int   index into ``mesh_files`` (-1: not a mesh)
``mesh_files``, ``mesh_sha256`` (M) str: absolute paths and their sha256 at run time
========== ========= ============================================================
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

import h5py
import numpy as np

from mbsim.errors import MbsimError
from mbsim.view.visuals import read_visuals

__all__ = [
    "SceneRecord",
    "Shape",
    "check_meshes",
    "read_scene",
    "record_scene",
    "scene_of",
    "write_scene",
]

GROUP = "visual"
_STR = h5py.string_dtype("utf-8")


@dataclass(frozen=True)
class Shape:
    """One shape to draw (see the module docstring for the fields)."""

    role: str
    tree: int
    link: str
    body: int
    kind: str
    params: tuple[float, ...]
    pose: np.ndarray
    rgba: tuple[float, ...] | None = None
    mesh: int = -1


@dataclass
class SceneRecord:
    """The ``/visual`` group as plain data."""

    shapes: list[Shape] = field(default_factory=list)
    mesh_files: list[str] = field(default_factory=list)
    mesh_sha256: list[str] = field(default_factory=list)
    floor: bool = False
    #: visuals left out at run time, one sentence each (printed by ``mbsim view``)
    notes: list[str] = field(default_factory=list)


def file_sha256(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def scene_of(model, floor: bool) -> SceneRecord:
    """Visual and collision shapes of ``model`` on its bodies, meshes hashed now."""
    rec = SceneRecord(floor=bool(floor))
    index: dict[str, int] = {}

    def mesh_index(path: str | None) -> int:
        if path is None:
            return -1
        if path not in index:
            index[path] = len(rec.mesh_files)
            rec.mesh_files.append(path)
            rec.mesh_sha256.append(file_sha256(path))
        return index[path]

    for tree, source in enumerate(model.tree_sources):
        if not os.path.isfile(source):  # a spec built in memory: nothing to read visuals from
            continue
        for v in read_visuals(source, rec.notes):
            frame = model.link_frames.get((tree, v.link))
            if frame is None:
                continue
            body, T = frame
            rec.shapes.append(
                Shape("visual", tree, v.link, body, v.kind, _params3(v.params), T @ v.origin,
                      v.rgba, mesh_index(v.mesh_path))
            )  # fmt: skip
    for g in model.geometries:
        s = g.shape
        mesh = mesh_index(s.mesh_path) if s.kind == "mesh" else -1
        if s.kind == "mesh" and mesh < 0:
            continue  # unresolved: the collision scene reported it already
        rec.shapes.append(
            Shape("collision", g.tree, g.link, g.body, s.kind, _params3(s.params), g.pose,
                  None, mesh)
        )  # fmt: skip
    return rec


def _params3(p) -> tuple[float, float, float]:
    return tuple(float(x) for x in (*p, 0.0, 0.0, 0.0)[:3])


def record_scene(writer, rec: SceneRecord) -> None:
    """Write ``rec`` (from :func:`scene_of`) as ``/visual`` of an open ResultsWriter."""
    write_scene(writer.group(GROUP), rec)


def write_scene(g: h5py.Group, rec: SceneRecord) -> None:
    s = rec.shapes
    g.attrs["floor"] = np.int64(rec.floor)
    g.attrs["notes"] = "\n".join(rec.notes)
    g.attrs["description"] = (
        "shapes to draw (URDF visuals and collision shapes) on their bodies, and the mesh "
        "files with their sha256 at run time (docs/hdf5-format.md)"
    )

    def put(name, data, dtype, units, description):
        ds = g.create_dataset(name, data=np.asarray(data, dtype=dtype))
        ds.attrs["units"] = units
        ds.attrs["description"] = description

    put("role", [x.role for x in s], _STR, "1", "visual or collision")
    put("tree", [x.tree for x in s], np.int64, "1", "tree index into /model/tree_names")
    put("link", [x.link for x in s], _STR, "1", "URDF link of the shape")
    put("body", [x.body for x in s], np.int64, "1", "body index; -1 = the static world")
    put("kind", [x.kind for x in s], _STR, "1", "box, sphere, cylinder, capsule or mesh")
    put(
        "params",
        np.reshape([x.params for x in s], (len(s), 3)),
        np.float64,
        "m (mesh: 1)",
        "box: side lengths; sphere: radius; cylinder, capsule: radius, length; mesh: scale",
    )
    put(
        "pose",
        np.reshape([x.pose for x in s], (len(s), 4, 4)),
        np.float64,
        "m",
        "4x4 pose in the body frame (world frame for body -1)",
    )
    rgba = [x.rgba if x.rgba is not None else (np.nan,) * 4 for x in s]
    put("rgba", np.reshape(rgba, (len(s), 4)), np.float64, "1", "URDF colour; NaN = none")
    put("mesh", [x.mesh for x in s], np.int64, "1", "index into mesh_files; -1 = not a mesh")
    put("mesh_files", rec.mesh_files, _STR, "1", "absolute mesh paths at run time")
    put("mesh_sha256", rec.mesh_sha256, _STR, "1", "sha256 of each mesh file at run time")


def read_scene(path: str | os.PathLike[str]) -> SceneRecord | None:
    """The ``/visual`` group of a results file, None if it has none."""
    with h5py.File(path, "r", locking=False) as f:
        if GROUP not in f:
            return None
        g = f[GROUP]

        def strs(name):
            return [str(x) for x in g[name].asstr()[...]]

        role, link, kind = strs("role"), strs("link"), strs("kind")
        tree, body, mesh = g["tree"][...], g["body"][...], g["mesh"][...]
        params, pose, rgba = g["params"][...], g["pose"][...], g["rgba"][...]
        shapes = [
            Shape(role[i], int(tree[i]), link[i], int(body[i]), kind[i],
                  tuple(float(x) for x in params[i]), pose[i],
                  None if np.isnan(rgba[i]).any() else tuple(float(x) for x in rgba[i]),
                  int(mesh[i]))
            for i in range(len(role))
        ]  # fmt: skip
        notes = str(g.attrs.get("notes", ""))
        return SceneRecord(
            shapes,
            strs("mesh_files"),
            strs("mesh_sha256"),
            bool(g.attrs.get("floor", 0)),
            [n for n in notes.split("\n") if n],
        )


def check_meshes(rec: SceneRecord, results_path: str, link_of: dict[int, str]) -> None:
    """Refuse a mesh file that is missing or whose sha256 differs from the recorded one:
    one sentence naming the results file, the link and the mesh (MbsimError)."""
    for i, (path, digest) in enumerate(zip(rec.mesh_files, rec.mesh_sha256, strict=True)):
        link = link_of.get(i, "?")
        if not os.path.isfile(path):
            raise MbsimError(
                f"{results_path}: the mesh {path} of link '{link}' has moved or been deleted "
                "since the run; put it back or rerun the simulation."
            )
        if file_sha256(path) != digest:
            raise MbsimError(
                f"{results_path}: the mesh {path} of link '{link}' has changed since the run "
                f"(sha256 {digest[:12]}... recorded); restore it or rerun the simulation."
            )
