"""``mbsim view --format glb``: the replay as an animated glTF 2.0 binary (Blender, any glTF
viewer).

trimesh writes static glTF scenes but no animations, so this is a small writer of its own
(glTF 2.0, https://registry.khronos.org/glTF/specs/2.0/glTF-2.0.html): one node per moving body
(its children: one node per shape, placed by the recorded shape pose and mesh scale), static
shapes and the floor under a ``world`` node, and one animation ``replay`` with a translation
and a rotation channel per body (LINEAR interpolation between the recorded frames; glTF
quaternions are x y z w, the results file's w x y z). Visual shapes are written, or the
collision shapes when the scene has no visuals. Units: metres, seconds; the glTF convention
is y up, so the ``world`` node turns mbsim's z-up world by -90 degrees about x.
"""

from __future__ import annotations

import json
import math
import struct

import numpy as np

from mbsim.view.replay import MeshData, Replay

__all__ = ["glb_bytes"]

_DEFAULT_RGBA = (0.72, 0.74, 0.78, 1.0)
_STATIC_RGBA = (0.78, 0.66, 0.5, 1.0)
_FLOAT, _UINT = 5126, 5125
_ARRAY, _ELEMENTS = 34962, 34963


def _primitive(kind: str, params) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import trimesh

    if kind == "box":
        m = trimesh.creation.box(extents=params[:3])
    elif kind == "sphere":
        m = trimesh.creation.icosphere(subdivisions=3, radius=params[0])
    elif kind == "cylinder":
        m = trimesh.creation.cylinder(radius=params[0], height=params[1], sections=32)
    else:
        m = trimesh.creation.capsule(radius=params[0], height=params[1], count=[24, 24])
    return np.asarray(m.vertices), np.asarray(m.faces), np.asarray(m.vertex_normals)


def _mesh_arrays(m: MeshData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import trimesh

    tm = trimesh.Trimesh(m.vertices, m.faces, process=False)
    return m.vertices, m.faces, np.asarray(tm.vertex_normals)


class _Builder:
    def __init__(self) -> None:
        self.bin = bytearray()
        self.doc: dict = {
            "asset": {"version": "2.0", "generator": "mbsim view"},
            "buffers": [],
            "bufferViews": [],
            "accessors": [],
            "meshes": [],
            "materials": [],
            "nodes": [],
            "scenes": [{"nodes": []}],
            "scene": 0,
        }
        self._materials: dict[tuple, int] = {}

    def accessor(self, data: np.ndarray, type_: str, target: int | None, bounds=False) -> int:
        uint = data.dtype.kind in "ui"
        arr = np.ascontiguousarray(data, dtype="<u4" if uint else "<f4")
        while len(self.bin) % 4:
            self.bin.append(0)
        view = {"buffer": 0, "byteOffset": len(self.bin), "byteLength": arr.nbytes}
        if target is not None:
            view["target"] = target
        self.bin += arr.tobytes()
        self.doc["bufferViews"].append(view)
        count = arr.shape[0] if type_ != "SCALAR" else arr.size
        acc = {
            "bufferView": len(self.doc["bufferViews"]) - 1,
            "componentType": _UINT if uint else _FLOAT,
            "count": int(count),
            "type": type_,
        }
        if bounds:
            flat = arr.reshape(count, -1)
            acc["min"] = [float(x) for x in flat.min(axis=0)]
            acc["max"] = [float(x) for x in flat.max(axis=0)]
        self.doc["accessors"].append(acc)
        return len(self.doc["accessors"]) - 1

    def material(self, rgba) -> int:
        key = tuple(round(float(c), 6) for c in rgba)
        if key not in self._materials:
            mat = {
                "pbrMetallicRoughness": {
                    "baseColorFactor": list(key),
                    "metallicFactor": 0.1,
                    "roughnessFactor": 0.6,
                }
            }
            if key[3] < 1.0:
                mat["alphaMode"] = "BLEND"
            self.doc["materials"].append(mat)
            self._materials[key] = len(self.doc["materials"]) - 1
        return self._materials[key]

    def mesh(self, name: str, arrays, rgba) -> int:
        v, f, n = arrays
        attrs = {
            "POSITION": self.accessor(v, "VEC3", _ARRAY, bounds=True),
            "NORMAL": self.accessor(n, "VEC3", _ARRAY),
        }
        prim = {
            "attributes": attrs,
            "indices": self.accessor(np.asarray(f, np.uint32).reshape(-1), "SCALAR", _ELEMENTS),
            "material": self.material(rgba),
        }
        self.doc["meshes"].append({"name": name, "primitives": [prim]})
        return len(self.doc["meshes"]) - 1

    def node(self, **fields) -> int:
        self.doc["nodes"].append(fields)
        return len(self.doc["nodes"]) - 1

    def glb(self) -> bytes:
        while len(self.bin) % 4:
            self.bin.append(0)
        self.doc["buffers"] = [{"byteLength": len(self.bin)}]
        text = json.dumps(self.doc, separators=(",", ":")).encode("utf-8")
        text += b" " * (-len(text) % 4)
        total = 12 + 8 + len(text) + 8 + len(self.bin)
        return b"".join(
            [
                struct.pack("<4sII", b"glTF", 2, total),
                struct.pack("<I4s", len(text), b"JSON"),
                text,
                struct.pack("<I4s", len(self.bin), b"BIN\x00"),
                bytes(self.bin),
            ]
        )


def glb_bytes(rp: Replay) -> bytes:
    """The animated glTF binary of a replay (see the module docstring)."""
    r = rp.results
    b = _Builder()
    moving_trees = {int(t) for t in r.body_trees}
    shapes = [s for s in rp.scene.shapes if s.role == "visual"]
    if not shapes:
        shapes = [s for s in rp.scene.shapes if s.role == "collision"]
    world = b.node(name="world", rotation=[-math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)])
    b.doc["scenes"][0]["nodes"].append(world)
    children: dict[int, list[int]] = {world: []}
    body_nodes = []
    p0 = rp.poses[0]
    for i, name in enumerate(r.body_names):
        n = b.node(
            name=name,
            translation=[float(x) for x in p0[i, :3]],
            rotation=[float(x) for x in (*p0[i, 4:7], p0[i, 3])],
        )
        body_nodes.append(n)
        children[world].append(n)
        children[n] = []
    mesh_cache: dict[tuple, int] = {}
    for s in shapes:
        rgba = s.rgba
        if rgba is None and s.mesh >= 0 and rp.meshes[s.mesh].color is not None:
            rgba = rp.meshes[s.mesh].color
        if rgba is None:
            rgba = _DEFAULT_RGBA if s.tree in moving_trees else _STATIC_RGBA
        if s.kind == "mesh":
            key = ("mesh", s.mesh, tuple(rgba))
            if key not in mesh_cache:
                m = rp.meshes[s.mesh]
                mesh_cache[key] = b.mesh(m.path.rsplit("/", 1)[-1], _mesh_arrays(m), rgba)
            T = np.asarray(s.pose) @ np.diag([*s.params[:3], 1.0])
        else:
            key = (s.kind, tuple(s.params), tuple(rgba))
            if key not in mesh_cache:
                mesh_cache[key] = b.mesh(s.kind, _primitive(s.kind, s.params), rgba)
            T = np.asarray(s.pose)
        placed = {} if np.array_equal(T, np.eye(4)) else {"matrix": [float(x) for x in T.T.ravel()]}
        n = b.node(name=s.link, mesh=mesh_cache[key], **placed)
        children[world if s.body < 0 else body_nodes[s.body]].append(n)
    if rp.scene.floor:
        half = max(2.0, 2.0 * float(np.ptp(rp.poses[..., :3], axis=(0, 1)).max(initial=0.0)))
        v = np.array([[-half, -half, 0], [half, -half, 0], [half, half, 0], [-half, half, 0]])
        f = np.array([[0, 1, 2], [0, 2, 3]])
        nrm = np.tile([0.0, 0.0, 1.0], (4, 1))
        floor = b.mesh("floor", (v, f, nrm), (0.72, 0.76, 0.79, 1.0))
        children[world].append(b.node(name="floor", mesh=floor))
    for n, kids in children.items():
        if kids:
            b.doc["nodes"][n]["children"] = kids
    if r.body_names:
        times = np.asarray(rp.times - rp.times[0], dtype=np.float64)
        t_acc = b.accessor(times, "SCALAR", None, bounds=True)
        samplers, channels = [], []
        for i, n in enumerate(body_nodes):
            tr = b.accessor(rp.poses[:, i, :3], "VEC3", None)
            rot = b.accessor(rp.poses[:, i, [4, 5, 6, 3]], "VEC4", None)
            for acc, path in ((tr, "translation"), (rot, "rotation")):
                samplers.append({"input": t_acc, "output": acc, "interpolation": "LINEAR"})
                channels.append({"sampler": len(samplers) - 1, "target": {"node": n, "path": path}})
        b.doc["animations"] = [{"name": "replay", "samplers": samplers, "channels": channels}]
    return b.glb()
