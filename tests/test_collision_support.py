"""Helpers for the collision tests: scenes of free bodies placed by hand.

A "part" is one rigid body carrying one shape: a floating single-link robot (its pose set
directly in R_world/p_world, no kinematics involved) or, with ``static=True``, a link welded to
the world at ``pose``. Everything the tests compare against is computed by hand from these
poses, never by the code under test.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mbsim.collision import CollisionScene
from mbsim.simcore.model import build_model
from mbsim.simcore.spec import GeometrySpec, Inertial, LinkSpec, RobotSpec

DATA = Path(__file__).parent / "data" / "meshes"


def rot(axis: str, angle: float) -> np.ndarray:
    """Rotation matrix about x, y or z by ``angle`` rad."""
    c, s = np.cos(angle), np.sin(angle)
    if axis == "x":
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == "y":
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def pose(R=None, p=(0.0, 0.0, 0.0)) -> np.ndarray:
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    T[:3, 3] = p
    return T


def shape(kind: str, params, origin=None, mesh_path: str | None = None) -> GeometrySpec:
    return GeometrySpec(
        kind,
        tuple(float(x) for x in params),
        pose() if origin is None else origin,
        mesh_path=mesh_path,
        mesh_uri=mesh_path,
    )


def part(name: str, *shapes: GeometrySpec, static: bool = False, at=None) -> RobotSpec:
    """A one-link robot carrying ``shapes``: floating, or welded to the world at ``at``."""
    link = LinkSpec(name, Inertial(1.0, np.zeros(3), 0.1 * np.eye(3)), list(shapes))
    return RobotSpec(
        name=name,
        links=[link],
        joints=[],
        root=name,
        source=f"<{name}.urdf>",
        base="fixed" if static else "floating",
        base_pose=pose() if at is None else at,
    )


class Scene:
    """A scene of parts; ``detect({name: 4x4 pose})`` places the floating ones."""

    def __init__(self, *parts: RobotSpec, **options) -> None:
        self.model = build_model(list(parts))
        self.scene = CollisionScene.from_model(self.model, **options)
        self.R = np.zeros((self.model.nb, 3, 3))
        self.p = np.zeros((self.model.nb, 3))

    def detect(self, poses: dict | None = None):
        for name, T in (poses or {}).items():
            b = self.model.body_index(name)
            self.R[b] = T[:3, :3]
            self.p[b] = T[:3, 3]
        return self.scene.detect(self.R, self.p)


def rows(contacts) -> list[tuple]:
    """Contacts as sortable tuples (point_b, point_a, normal, gap), rounded to 1e-9 m."""
    out = []
    for i in range(len(contacts)):
        out.append(
            (
                tuple(np.round(contacts.point_b[i], 9)),
                tuple(np.round(contacts.point_a[i], 9)),
                tuple(np.round(contacts.normal[i], 9)),
                round(float(contacts.gap[i]), 9),
            )
        )
    return sorted(out)


def assert_contacts(contacts, expected, atol=1e-6):
    """``expected``: list of (point_a, point_b, normal, gap) in any order; compares as sets."""
    assert len(contacts) == len(expected), (len(contacts), expected, rows(contacts))
    used = set()
    for pa, pb, n, g in expected:
        found = None
        for i in range(len(contacts)):
            if i in used:
                continue
            if (
                np.allclose(contacts.point_a[i], pa, atol=atol)
                and np.allclose(contacts.point_b[i], pb, atol=atol)
                and np.allclose(contacts.normal[i], n, atol=atol)
                and abs(contacts.gap[i] - g) <= atol
            ):
                found = i
                break
        assert found is not None, (f"expected {pa} {pb} {n} {g}", rows(contacts))
        used.add(found)


def write_cube_stl(path: Path, size: float = 1.0) -> Path:
    """An axis-aligned cube of side ``size`` m centred at the origin, as ASCII STL."""
    import trimesh

    path.parent.mkdir(parents=True, exist_ok=True)
    trimesh.creation.box((size, size, size)).export(path)
    return path
