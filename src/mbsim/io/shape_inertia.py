"""Rotational inertia of a link's collision shapes, for links whose URDF gives a mass but a
zero or missing inertia (what PyBullet does by default: it always derives the inertia from
the collision shapes).

Each shape is a solid of uniform density; the shapes' volumes add (overlaps are counted
twice, as in any sum of primitives). With V_k, c_k, J_k the volume, centroid and unit-density
inertia about c_k of shape k (link frame), the composite about the joint centroid
c = sum V_k c_k / V is ``J = sum (J_k + V_k (|d_k|^2 1 - d_k d_k^T))``, d_k = c_k - c, and
the link's inertia at mass m is ``I = (m / V) J`` (kg m^2). The inertia is taken about the
shapes' centroid and placed at the file's centre of mass, as PyBullet does (it never moves
the file's centre of mass either).

Unit-density closed forms (shape frame, z the cylinder/capsule axis):

* box (a, b, c): V = abc, J = V/12 diag(b^2 + c^2, a^2 + c^2, a^2 + b^2);
* sphere r: V = 4/3 pi r^3, J = 2/5 V r^2 1;
* cylinder (r, h): V = pi r^2 h, Jzz = V r^2 / 2, Jxx = Jyy = V (3 r^2 + h^2) / 12;
* capsule (r, h = cylinder length): the cylinder plus two hemispheres of volume
  Vh = 2/3 pi r^3 each: Jzz = Vc r^2/2 + 2 Vh 2r^2/5, Jxx = Vc (h^2/12 + r^2/4)
  + 2 Vh (2r^2/5 + h^2/4 + 3hr/8);
* mesh: trimesh's volume integrals of the closed mesh (its convex hull if the mesh is not
  closed), after scaling.
"""

from __future__ import annotations

import math

import numpy as np

from mbsim.simcore.spec import GeometrySpec

__all__ = ["shapes_inertia"]


def shapes_inertia(
    shapes: list[GeometrySpec], mass: float, where: str = "<URDF>"
) -> tuple[np.ndarray, float] | None:
    """Inertia (3x3, kg m^2, link axes, about the shapes' centroid) of ``shapes`` at ``mass``
    and the total volume (m^3); None if no shape has a volume (no shapes, or meshes that
    cannot be read). Raises GeometryError for unreadable mesh files (via load_mesh)."""
    parts = [_unit_density(shape, where) for shape in shapes]
    parts = [p for p in parts if p is not None and p[0] > 0.0]
    if not parts:
        return None
    volume = sum(v for v, _, _ in parts)
    centroid = sum(v * c for v, c, _ in parts) / volume
    total = np.zeros((3, 3))
    for v, c, j in parts:
        d = c - centroid
        total += j + v * (d @ d * np.eye(3) - np.outer(d, d))
    inertia = (mass / volume) * total
    return 0.5 * (inertia + inertia.T), volume


def _unit_density(shape: GeometrySpec, where: str) -> tuple[float, np.ndarray, np.ndarray] | None:
    """(volume, centroid in the link frame, unit-density inertia about it in link axes)."""
    p = shape.params
    if shape.kind == "box":
        a, b, c = p
        v = a * b * c
        local = v / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
        centre = np.zeros(3)
    elif shape.kind == "sphere":
        (r,) = p
        v = 4.0 / 3.0 * math.pi * r**3
        local = 0.4 * v * r * r * np.eye(3)
        centre = np.zeros(3)
    elif shape.kind in ("cylinder", "capsule"):
        r, h = p
        vc = math.pi * r * r * h
        jzz, jxx, v = vc * r * r / 2.0, vc * (3.0 * r * r + h * h) / 12.0, vc
        if shape.kind == "capsule":
            vh = 2.0 / 3.0 * math.pi * r**3
            jzz += 2.0 * vh * 0.4 * r * r
            jxx += 2.0 * vh * (0.4 * r * r + h * h / 4.0 + 3.0 * h * r / 8.0)
            v += 2.0 * vh
        local = np.diag([jxx, jxx, jzz])
        centre = np.zeros(3)
    elif shape.kind == "mesh":
        mesh = _mesh_solid(shape, where)
        if mesh is None:
            return None
        v, centre, local = mesh
    else:
        return None
    rot, t = shape.origin[:3, :3], shape.origin[:3, 3]
    return v, rot @ centre + t, rot @ local @ rot.T


def _mesh_solid(shape: GeometrySpec, where: str) -> tuple[float, np.ndarray, np.ndarray] | None:
    if shape.mesh_path is None:
        return None
    import trimesh

    from mbsim.collision.geometry import load_mesh

    vertices, faces = load_mesh(shape.mesh_path, tuple(shape.params), where=where)
    mesh = trimesh.Trimesh(vertices, faces, process=True)
    if not mesh.is_watertight or mesh.volume <= 0.0:
        try:
            mesh = mesh.convex_hull
        except Exception:  # qhull fails on flat meshes: they have no volume
            return None
    volume = float(mesh.volume)
    if not volume > 0.0:
        return None
    # trimesh's integrals assume density 1 (mass = volume), about the centre of mass
    return volume, np.asarray(mesh.center_mass, float), np.asarray(mesh.moment_inertia, float)
