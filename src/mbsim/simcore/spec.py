"""Plain descriptions of robots as trees of links and joints, before they become a Model.

A :class:`RobotSpec` is what a URDF file says, in SI units, with no interpretation yet: links
(with optional inertia and collision geometry) joined by joints, fixed joints included. The
model builder (:mod:`mbsim.simcore.model`) merges fixed joints, attaches the root to the world
and flattens everything into arrays. Tests build random trees directly as specs, so the same
builder serves URDF robots and synthetic ones.

Frames follow URDF: a joint's ``origin`` is the pose of the joint frame in the parent link
frame at zero joint position, and the child link frame coincides with the joint frame after
the joint's motion. Poses are 4x4 homogeneous transforms (metres).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Joint types a spec may hold. ``floating`` is a 6-DoF free joint (unit quaternion),
#: ``spherical`` a 3-DoF ball joint (unit quaternion; PyBullet's URDF extension).
JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "spherical")


@dataclass
class Inertial:
    """Mass properties of a link.

    mass: kg. com: (3,) centre of mass in the link frame, m.
    inertia: (3, 3) rotational inertia about the centre of mass, expressed in the link
    frame axes, kg m^2 (a URDF ``<inertial>`` with a rotated origin is rotated into the
    link axes by the loader: I_link = R I_origin R^T).
    """

    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass
class GeometrySpec:
    """One collision shape attached to a link.

    kind: ``box`` | ``sphere`` | ``cylinder`` | ``capsule`` | ``mesh`` (``plane`` in
    :attr:`LinkSpec.planes` only).
    params: box -> (sx, sy, sz) full side lengths; sphere -> (r,); cylinder and capsule ->
    (r, length) along the shape's local z axis; mesh -> scale (sx, sy, sz); plane -> its unit
    normal (nx, ny, nz) in the shape frame, the half-space being behind the plane through the
    shape's origin. Metres.
    origin: 4x4 pose of the shape in the link frame.
    mesh_path: resolved absolute path for meshes (None otherwise); mesh_uri: as written.
    """

    kind: str
    params: tuple[float, ...]
    origin: np.ndarray
    name: str = ""
    mesh_path: str | None = None
    mesh_uri: str | None = None


@dataclass
class LinkSpec:
    """A URDF link: a name, optional mass properties and collision shapes; ``planes``:
    PyBullet's ``<plane>`` collisions (half-spaces, kind ``plane``), kept apart from the
    shapes because only the collision scene's ground takes them."""

    name: str
    inertial: Inertial | None = None
    collisions: list[GeometrySpec] = field(default_factory=list)
    planes: list[GeometrySpec] = field(default_factory=list)


@dataclass
class MimicSpec:
    """``q_joint = multiplier * q_master + offset`` (rad or m); enforced as a bilateral
    constraint by the stepper, recorded in the model."""

    master: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass
class JointSpec:
    """A URDF joint between two links.

    type: one of :data:`JOINT_TYPES`. origin: 4x4 pose of the joint frame in the parent link
    frame. axis: (3,) unit axis in the joint frame (ignored for fixed/floating/spherical).
    lower/upper (rad or m), effort (N m or N), velocity (rad/s or m/s), damping
    (N m s/rad or N s/m), friction (N m or N): NaN where the URDF gives none.
    spherical_limit: a spherical joint's (swing x, swing y, twist) spans (rad), from URDF
    lower, upper, twist when PyBullet would apply them (simcore/spherical_limits.py), or None.
    """

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray = field(default_factory=lambda: np.eye(4))
    axis: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0]))
    lower: float = float("nan")
    upper: float = float("nan")
    effort: float = float("nan")
    velocity: float = float("nan")
    damping: float = float("nan")
    friction: float = float("nan")
    mimic: MimicSpec | None = None
    spherical_limit: tuple[float, float, float] | None = None


@dataclass
class RobotSpec:
    """One tree: a robot or an environment as a URDF describes it.

    root: the name of the root link. If the root is called ``world`` and has no inertia it is
    the world frame itself (URDF convention) and the joint(s) leaving it attach the robot to
    the world. Otherwise the root link is attached to the world by ``base``: ``fixed`` (welded
    at ``base_pose``) or ``floating`` (a 6-DoF free joint whose zero is ``base_pose``; a root
    whose welded links have no mass stays fixed instead, see :mod:`mbsim.simcore.model`).
    Joints may also be ``planar`` (URDF): 3 DoF in the plane normal to ``axis``.
    source: the file the spec came from (used in messages). lint: repairs the loader made.
    urdf_dir, package_dirs: where relative and ``package://`` mesh paths were resolved from
    (so collision code can repeat the lookup and name every place it looked).
    """

    name: str
    links: list[LinkSpec]
    joints: list[JointSpec]
    root: str
    source: str = "<memory>"
    base: str = "fixed"
    base_pose: np.ndarray = field(default_factory=lambda: np.eye(4))
    lint: list[str] = field(default_factory=list)
    urdf_dir: str | None = None
    package_dirs: dict[str, str] = field(default_factory=dict)

    def link(self, name: str) -> LinkSpec:
        """The link called ``name`` (KeyError if absent)."""
        for link in self.links:
            if link.name == name:
                return link
        raise KeyError(name)
