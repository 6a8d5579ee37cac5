"""A results file turned into what a replay draws: shapes with triangle meshes, frames of body
poses, events and per-frame contacts (shared by the HTML page and the glTF writer).

Budgets (documented in docs/view.md):

* :data:`FRAME_BUDGET` frames at most: a longer run is subsampled evenly in recorded-row index
  (first and last rows always kept); the replay shows recorded states only, never
  interpolated ones.
* :data:`FACE_BUDGET` triangles per mesh file at most: a larger mesh is decimated by vertex
  clustering (vertices merged on a cubic grid whose cell doubles until the mesh fits; shape
  and size are kept to about one cell, which is reported).
* :data:`EVENT_BUDGET` timeline marks at most (events subsampled evenly beyond it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mbsim.errors import MbsimError
from mbsim.io.results import Results, load_results
from mbsim.view.record import SceneRecord, check_meshes, file_sha256, read_scene, scene_of

__all__ = ["EVENT_BUDGET", "FACE_BUDGET", "FRAME_BUDGET", "MeshData", "Replay", "load_replay"]

FRAME_BUDGET = 2000
FACE_BUDGET = 20000
EVENT_BUDGET = 5000


@dataclass
class MeshData:
    """Triangles of one mesh file (its own units and frame; the shape's scale and pose apply
    on top). ``color``: the file's own material colour (RGBA in [0, 1]) or None.
    ``cell``: the clustering cell (mesh units) if it was decimated, else 0."""

    path: str
    vertices: np.ndarray
    faces: np.ndarray
    color: tuple[float, float, float, float] | None = None
    faces_before: int = 0
    cell: float = 0.0


@dataclass
class Replay:
    """Everything a replay shows. ``poses`` (F, B, 7) world poses ``[x y z qw qx qy qz]`` of
    the model bodies at ``times`` (F); ``frame_rows`` their row indices in the file;
    ``contacts``: per frame, ``start`` offsets (F + 1) into ``point``, ``normal``,
    ``impulse`` (total impulse on body_a, N s, world frame)."""

    path: Path
    results: Results
    scene: SceneRecord
    meshes: list[MeshData]
    times: np.ndarray
    frame_rows: np.ndarray
    poses: np.ndarray
    contacts: dict[str, np.ndarray]
    events: dict[str, np.ndarray]
    notes: list[str] = field(default_factory=list)


def frame_rows(n_rows: int, budget: int = FRAME_BUDGET) -> np.ndarray:
    """Indices of the recorded rows shown: all of them, or ``budget`` evenly spaced ones
    (first and last included)."""
    if n_rows <= budget:
        return np.arange(n_rows)
    return np.unique(np.round(np.linspace(0, n_rows - 1, budget)).astype(np.int64))


def decimate(vertices: np.ndarray, faces: np.ndarray, budget: int) -> tuple:
    """Vertex clustering: merge the vertices in each cell of a cubic grid into their mean
    and drop the faces that collapse, doubling the cell until at most ``budget`` faces
    remain. Returns (vertices, faces, cell); cell = 0 when nothing had to be done."""
    if len(faces) <= budget:
        return vertices, faces, 0.0
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    cell = float(np.linalg.norm(hi - lo)) / np.sqrt(budget)
    if not cell > 0:  # every vertex in one point: nothing to draw anyway
        return vertices[:1], faces[:0], 0.0
    while True:
        keys = np.floor((vertices - lo) / cell).astype(np.int64)
        _, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        n = int(inverse.max()) + 1
        merged = np.zeros((n, 3))
        np.add.at(merged, inverse, vertices)
        merged /= np.bincount(inverse, minlength=n)[:, None]
        f = inverse[faces]
        f = f[(f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])]
        f = np.unique(f, axis=0)
        if len(f) <= budget:
            return merged, f, cell
        cell *= 2.0


def load_mesh(path: str, budget: int = FACE_BUDGET) -> MeshData:
    """Triangles of an STL/OBJ/DAE (anything trimesh reads), scenes flattened into one mesh."""
    import trimesh

    if path.lower().endswith(".dae"):
        try:
            import collada  # noqa: F401  (trimesh reads COLLADA through pycollada)
        except ImportError:
            raise MbsimError(
                f"{path}: reading COLLADA (.dae) meshes needs pycollada: "
                "pip install pycollada (it is in mbsim's `view` extra)."
            ) from None
    try:
        mesh = trimesh.load(path, force="mesh", process=False)
    except Exception as exc:  # trimesh raises many kinds on unreadable files
        raise MbsimError(f"{path}: the mesh cannot be read ({exc}).") from exc
    vertices = np.asarray(mesh.vertices, dtype=np.float64)
    faces = np.asarray(mesh.faces, dtype=np.int64).reshape(-1, 3)
    color = None
    try:
        vis = mesh.visual
        # face/vertex colours (OBJ, PLY) or a material (DAE, glTF, OBJ with .mtl)
        rgba = vis.main_color if vis.kind in ("face", "vertex") else vis.material.main_color
        color = tuple(float(c) / 255.0 for c in rgba)
    except Exception:  # no usable colour: the viewer picks one
        color = None
    n0 = len(faces)
    v, f, cell = decimate(vertices, faces, budget)
    return MeshData(path, v, f, color, n0, cell)


def load_replay(
    path: str | os.PathLike[str],
    *,
    max_frames: int = FRAME_BUDGET,
    face_budget: int = FACE_BUDGET,
) -> Replay:
    """Read a results file and its meshes for a replay. A file without ``/visual`` (written
    before the viewer existed) or without body poses gets them from the model rebuilt from its
    scenario (:func:`rebuild_model`). MbsimError (one sentence) when a mesh or, for such a
    rebuild, a URDF moved or changed since the run."""
    r = load_results(path)
    p = r.path
    if len(r.time) == 0:
        raise MbsimError(f"{p}: holds no recorded state to replay.")
    scene = read_scene(p)
    rows = frame_rows(len(r.time), max_frames)
    notes = []
    model = None
    if scene is None or r.body_pose is None:
        model, floor = rebuild_model(r)
        if scene is None:
            scene = scene_of(model, floor)
            notes.append("no /visual group in the file: scene rebuilt from the scenario's URDFs")
    poses = r.body_pose[rows] if r.body_pose is not None else poses_from_q(model, r.q[rows])
    link_of = {}
    for s in scene.shapes:
        if s.mesh >= 0:
            link_of.setdefault(s.mesh, s.link)
    check_meshes(scene, str(p), link_of)
    meshes = [load_mesh(m, face_budget) for m in scene.mesh_files]
    notes += scene.notes
    for m in meshes:
        if m.cell:
            notes.append(
                f"{m.path}: {m.faces_before} faces decimated to {len(m.faces)} "
                f"(vertices merged within {m.cell:.3g} mesh units)"
            )
    if len(rows) < len(r.time):
        notes.append(f"{len(r.time)} recorded states subsampled to {len(rows)} frames")
    return Replay(
        path=p,
        results=r,
        scene=scene,
        meshes=meshes,
        times=r.time[rows],
        frame_rows=rows,
        poses=poses,
        contacts=_frame_contacts(r, rows),
        events=_events(r, notes),
        notes=notes,
    )


def rebuild_model(r: Results):
    """The run's model, rebuilt from the scenario recorded in the file (for files without
    ``/visual`` or body poses); the URDFs must be those of the run (sha256 as recorded).
    Returns (model, floor)."""
    from mbsim.io.scenario import build_scenario_model, load_scenario_text

    for f, digest in r.input_files.items():
        if not os.path.isfile(f):
            raise MbsimError(
                f"{r.path}: has no /visual group or body poses, and its input file {f} has "
                "moved or been deleted, so the scene cannot be rebuilt."
            )
        if file_sha256(f) != digest:
            raise MbsimError(
                f"{r.path}: has no /visual group or body poses, and its input file {f} has "
                "changed since the run, so the scene cannot be rebuilt."
            )
    sc = load_scenario_text(r.scenario_toml, source=r.path)
    model, _, sc = build_scenario_model(sc)
    if list(model.body_names) != list(r.body_names):
        raise MbsimError(f"{r.path}: the rebuilt model's bodies differ from the file's.")
    return model, sc.contact.floor


def poses_from_q(model, q: np.ndarray) -> np.ndarray:
    """(F, B, 7) body poses ``[x y z qw qx qy qz]`` of the configurations ``q`` (F, nq), by
    the simulator's own forward kinematics."""
    from mbsim.simcore.data import Data
    from mbsim.simcore.kinematics import body_poses_kernel, forward_kinematics

    data = Data(model)
    out = np.empty((len(q), model.nb, 7))
    for k in range(len(q)):
        forward_kinematics(model, data, q[k])
        body_poses_kernel(data.R_world, data.p_world, out[k])
    return out


def _frame_contacts(r: Results, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Contacts recorded at each shown frame's step (``/contacts``, if recorded)."""
    n = len(rows)
    empty = {
        "start": np.zeros(n + 1, np.int64),
        "point": np.zeros((0, 3)),
        "normal": np.zeros((0, 3)),
        "impulse": np.zeros((0, 3)),
    }
    c = r.contacts
    if c is None or len(c["step"]) == 0:
        return empty
    steps = r.step[rows]
    order = np.argsort(c["step"], kind="stable")
    cs = c["step"][order]
    lo = np.searchsorted(cs, steps, side="left")
    hi = np.searchsorted(cs, steps, side="right")
    pick = np.concatenate([order[a:b] for a, b in zip(lo, hi, strict=True)] or [[]]).astype(int)
    start = np.concatenate([[0], np.cumsum(hi - lo)]).astype(np.int64)
    impulse = c["normal_impulse"][pick, None] * c["normal"][pick] + c["tangent_impulse"][pick]
    return {
        "start": start,
        "point": c["point"][pick],
        "normal": c["normal"][pick],
        "impulse": impulse,
    }


def _events(r: Results, notes: list[str]) -> dict[str, np.ndarray]:
    e = r.events
    n = len(e["time"])
    keep = frame_rows(n, EVENT_BUDGET)
    if len(keep) < n:
        notes.append(f"{n} events: {len(keep)} of them marked on the timeline")
    return {k: v[keep] for k, v in e.items()}
