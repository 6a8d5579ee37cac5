"""URDF ``<visual>`` elements: shape, placement in the link frame and colour.

mbsim's URDF loader (:mod:`mbsim.io.urdf`) hands yourdfpy a copy without visuals (the
simulation never needs them), so they are read here from the raw XML, parsed with the same
precautions (no entity expansion, no DTD, no network). Only what a viewer needs is read:

* ``<origin xyz rpy>`` (m, rad; URDF convention R = Rz(yaw) Ry(pitch) Rx(roll));
* ``<geometry>``: ``box size`` (full side lengths, m), ``sphere radius``, ``cylinder`` and
  ``capsule`` ``radius length`` (along the local z axis), ``mesh filename scale``;
* ``<material>``: an inline ``<color rgba>`` or the name of a material defined at the robot
  level (its colour), else no colour (the viewer picks one).

A visual this reader cannot use (a bad number, an unknown shape tag) is an error naming the
file, the link and the value: a replay that silently drops a part is a wrong result.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from mbsim.errors import GeometryError, UrdfError
from mbsim.io.urdf import read_urdf_xml, resolve_mesh_uri
from mbsim.simcore.spatial import rpy_matrix

__all__ = ["VisualSpec", "read_visuals"]

SHAPES = ("box", "sphere", "cylinder", "capsule", "mesh")


@dataclass(frozen=True)
class VisualSpec:
    """One ``<visual>`` of ``link``: ``kind`` in :data:`SHAPES`; ``params`` as
    :class:`~mbsim.simcore.spec.GeometrySpec` (box: side lengths; sphere: (r,); cylinder and
    capsule: (r, length); mesh: scale), m; ``origin`` 4x4 pose in the link frame; ``rgba`` in
    [0, 1] or None; ``mesh_path`` the resolved absolute file of a mesh."""

    link: str
    kind: str
    params: tuple[float, ...]
    origin: np.ndarray
    rgba: tuple[float, float, float, float] | None = None
    mesh_path: str | None = None


def _local(tag: object) -> str:
    return tag.split("}", 1)[-1] if isinstance(tag, str) else ""


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, text: str) -> UrdfError:
        return UrdfError(f"{self.source}: {text}.")

    def numbers(self, el, attr: str, count: int, default, where: str) -> tuple[float, ...]:
        raw = el.get(attr)
        if raw is None:
            if default is None:
                raise self.error(f"{where}: <{_local(el.tag)}> has no '{attr}' attribute")
            return tuple(default)
        try:
            values = tuple(float(v) for v in raw.replace(",", " ").split())
        except ValueError:
            raise self.error(f"{where}: {attr}='{raw}' is not a list of numbers") from None
        if len(values) != count or not all(math.isfinite(v) for v in values):
            raise self.error(f"{where}: {attr}='{raw}' must be {count} finite number(s)")
        return values

    def rgba(self, material, named: dict, where: str):
        if material is None:
            return None
        color = next((c for c in material if _local(c.tag) == "color"), None)
        if color is not None:
            rgba = self.numbers(color, "rgba", 4, None, where)
            if not all(0.0 <= c <= 1.0 for c in rgba):
                raise self.error(f"{where}: rgba='{color.get('rgba')}' must lie in [0, 1]")
            return rgba
        return named.get(material.get("name"))

    def visual(self, link: str, el, named: dict, urdf_dir: str | None) -> VisualSpec:
        where = f"link '{link}' <visual>"
        origin = np.eye(4)
        for child in el:
            if _local(child.tag) == "origin":
                origin[:3, :3] = rpy_matrix(self.numbers(child, "rpy", 3, (0, 0, 0), where))
                origin[:3, 3] = self.numbers(child, "xyz", 3, (0, 0, 0), where)
        geometry = next((c for c in el if _local(c.tag) == "geometry"), None)
        shape = None if geometry is None else next((c for c in geometry if _local(c.tag)), None)
        if shape is None:
            raise self.error(f"{where} has no <geometry> shape")
        kind = _local(shape.tag)
        material = next((c for c in el if _local(c.tag) == "material"), None)
        rgba = self.rgba(material, named, where)
        if kind == "box":
            params = self.numbers(shape, "size", 3, None, where)
        elif kind == "sphere":
            params = self.numbers(shape, "radius", 1, None, where)
        elif kind in ("cylinder", "capsule"):
            params = self.numbers(shape, "radius", 1, None, where)
            params += self.numbers(shape, "length", 1, None, where)
        elif kind == "mesh":
            params = self.numbers(shape, "scale", 3, (1.0, 1.0, 1.0), where)
            uri = shape.get("filename")
            if not uri:
                raise self.error(f"{where}: <mesh> has no 'filename' attribute")
            try:
                path = resolve_mesh_uri(uri, urdf_dir, None, source=self.source, link=link)
            except GeometryError as exc:
                raise UrdfError(str(exc).replace("mesh", "visual mesh", 1)) from None
            return VisualSpec(link, kind, params, origin, rgba, path)
        else:
            raise self.error(f"{where}: <{kind}> is not a URDF shape ({', '.join(SHAPES)})")
        if not all(v > 0 for v in params):
            raise self.error(f"{where}: the {kind} sizes {params} must be positive")
        return VisualSpec(link, kind, params, origin, rgba)


def read_visuals(
    path: str | os.PathLike[str], problems: list[str] | None = None
) -> list[VisualSpec]:
    """Every ``<visual>`` of the URDF at ``path``, links in file order.

    Raises UrdfError naming the file, the link and the value for a visual that cannot be
    shown, and for a file that cannot be read or parsed. With a ``problems`` list, a visual
    that cannot be shown is left out and its message appended there instead (a run must
    not fail over a part only a viewer needs; the viewer prints the messages)."""
    source = os.path.abspath(os.fspath(path))
    reader = _Reader(source)
    # the loader's parse: the same repairs (XML declaration, trailing content) and refusals
    root = read_urdf_xml(source)
    named = {}
    for m in root:
        if _local(m.tag) == "material" and m.get("name"):
            rgba = reader.rgba(m, {}, f"material '{m.get('name')}'")
            if rgba is not None:
                named[m.get("name")] = rgba
    urdf_dir = os.path.dirname(source)
    out = []
    for link in root:
        if _local(link.tag) != "link":
            continue
        name = link.get("name", "")
        for el in link:
            if _local(el.tag) != "visual":
                continue
            try:
                out.append(reader.visual(name, el, named, urdf_dir))
            except UrdfError as exc:
                if problems is None:
                    raise
                problems.append(str(exc))
    return out
