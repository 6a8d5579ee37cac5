"""The scenario's types: the frozen dataclasses a TOML scenario resolves into, the schema's
defaults and allowed keys, and :class:`ScenarioError`. Units are SI (see the package docstring)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mbsim.errors import MbsimError
from mbsim.names import BUILTIN_TREE, WORLD
from mbsim.simcore.spatial import rpy_matrix

__all__ = [
    "Closure",
    "Contact",
    "Environment",
    "JointControl",
    "Output",
    "PairOverride",
    "JointLimitOverride",
    "PdGain",
    "Pose",
    "Robot",
    "Scenario",
    "ScenarioError",
    "Signal",
    "Simulation",
]


class ScenarioError(MbsimError):
    """A scenario (file, override or flag) is malformed or names something that does not exist."""


_RESERVED_NAMES = (WORLD, BUILTIN_TREE)
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


_SIM_DEFAULTS: dict[str, Any] = {
    "duration": 1.0,
    "dt": 1e-3,
    "formulation": "os",
    "solver": "lemke",
    "gravity": [0.0, 0.0, -9.81],
    "integrator": "euler",
    "dynamics": "aba",
    "delassus": "upsilon",
    "joint_limits": True,
    "limit_restitution": 0.0,
    "lcp_max_seconds": 60.0,  # StepOptions.lcp_max_seconds; 0 = no limit
}
_CONTACT_DEFAULTS: dict[str, Any] = {
    "floor": False,
    "margin": 1e-3,
    "mu": 0.5,
    "restitution": 0.0,
    "friction_directions": 4,
    "self_collision": True,
    "ignore_initial_overlaps": True,
    "disabled_pairs": [],
    "srdf": "",
    "pairs": [],
    "gap_floor": None,  # absent: the stepper's rule (see docs/scenario-format.md)
    "energy_consistent_impacts": False,
    "impact_friction": "total",
    "friction_axes": "slip",
    "curvature_point": "core",
    "manifold": "shape-pair",  # shape-pair | body-pair (options.CONTACT_MANIFOLDS)
    "max_recovery_speed": 0.5,  # StepOptions.max_recovery_speed (m/s)
    "mesh_contact": "triangles",  # every link's non-convex meshes: "triangles" | "convex-hull"
    "mesh_contact_links": {},  # {"tree/link" = mode}: per-link override
}
_OUTPUT_DEFAULTS: dict[str, Any] = {
    "path": None,  # <scenario stem>.h5 in the current directory
    "record_every": 1,
    "record_contacts": False,
    "body_poses": True,
    "dump_lcp": "none",
}
_ROBOT_KEYS = (
    "urdf", "base", "base_pose", "q0", "v0", "torque", "pd", "control", "srdf", "joint_limits",
)  # fmt: skip
_LIMIT_KEYS = ("enabled", "restitution")
_ENV_KEYS = ("urdf", "base_pose")
_POSE_KEYS = ("xyz", "rpy", "on_floor")
_PD_KEYS = ("target", "kp", "kd")
#: control modes of ``[robot.NAME.control]`` and the keys each allows
CONTROL_MODES = ("torque", "position", "velocity")
_CONTROL_KEYS = {
    "torque": ("mode", "torque", "gravity_compensation"),
    "position": ("mode", "target", "kp", "kd", "gravity_compensation", "feedforward"),
    "velocity": ("mode", "target", "kd", "gravity_compensation", "feedforward"),
}
#: the waypoint key of a mode's target (its unit: N m, rad, rad/s; or N, m, m/s)
_SIGNAL_KEY = {"torque": "tau", "position": "q", "velocity": "v"}
#: interpolations of a waypoint or CSV signal, and the cubic spline's end conditions
INTERPOLATIONS = ("linear", "cubic")
SPLINE_ENDS = ("natural", "clamped")
_PAIR_KEYS = ("a", "b", "mu", "restitution", "margin")
_CLOSURE_KEYS = ("type", "a", "b", "point_a", "point_b", "distance")
_TOP_KEYS = ("simulation", "robot", "environment", "contact", "closure", "output")


@dataclass(frozen=True)
class Pose:
    """A rigid placement: ``xyz`` translation (m) and ``rpy`` roll-pitch-yaw (rad), URDF
    convention R = Rz(yaw) Ry(pitch) Rx(roll). ``on_floor``: the Simulator raises or lowers
    ``xyz``'s z so that the tree's lowest collision point at the initial state rests on the
    floor z = 0 (:mod:`mbsim.start_pose`)."""

    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)
    on_floor: bool = False

    def matrix(self) -> np.ndarray:
        """The 4x4 homogeneous transform."""
        T = np.eye(4)
        T[:3, :3] = rpy_matrix(self.rpy)
        T[:3, 3] = self.xyz
        return T


@dataclass(frozen=True)
class PdGain:
    """Joint PD control: force = kp (target - q) - kd v (N m or N); target in rad or m,
    kp in N m/rad or N/m, kd in N m s/rad or N s/m."""

    target: float
    kp: float
    kd: float


@dataclass(frozen=True)
class JointLimitOverride:
    """One joint's limit settings (``[robot.NAME.joint_limits]``): ``enabled`` enforces its
    URDF position limits (or not) whatever ``simulation.joint_limits`` says; ``restitution``
    (in [0, 1]) replaces ``simulation.limit_restitution`` at its stops, None keeps it."""

    enabled: bool = True
    restitution: float | None = None


@dataclass(frozen=True)
class Signal:
    """A scalar function of time (SI units of what it drives): a constant ``value``, or samples
    ``y`` at strictly increasing times ``t`` (s), from waypoints or from column ``column`` of
    the CSV file ``csv``, interpolated ``linear`` or ``cubic`` (a C2 cubic spline with
    ``natural`` or ``clamped`` ends: zero second or first derivative there). Before the first
    sample and from the last on the signal holds its end value (derivative 0); at the first
    sample the derivative is the first segment's (control/signals.py)."""

    value: float = 0.0
    t: tuple[float, ...] = ()
    y: tuple[float, ...] = ()
    interpolation: str = "linear"
    ends: str = "natural"
    csv: Path | None = None
    column: str = ""

    @property
    def constant(self) -> bool:
        return not self.t


@dataclass(frozen=True)
class JointControl:
    """The controller of one 1-DoF joint (``[robot.NAME.control]``; docs/scenario-format.md).

    ``torque``: the joint force is the signal ``torque`` (N m or N). ``position``: PD to the
    target trajectory, tau = kp (q* - q) + kd (v* - v) + feedforward, with v* the target's
    time derivative; ``velocity``: tau = kd (v* - v) + feedforward. Both are integrated
    implicitly (stable for stiff gains; mbsim.control.actuation). ``gravity_compensation``
    adds the joint's gravity torque by RNEA. Every joint force is clamped to the URDF effort.
    """

    mode: str
    torque: Signal | None = None
    target: Signal | None = None
    kp: float = 0.0
    kd: float = 0.0
    gravity_compensation: bool = False
    feedforward: Signal | None = None


@dataclass(frozen=True)
class Robot:
    """One robot: a URDF tree attached by ``base`` at ``base_pose``.

    q0 / v0: initial values by coordinate name (``Model.q_names`` / ``v_names``; free joints
    as ``root_joint.x`` .. ``root_joint.qz`` and ``root_joint.vx`` .. ``root_joint.wz``,
    spherical joints as ``NAME.qw`` .. ``NAME.qz`` and ``NAME.wx`` .. ``NAME.wz``);
    unnamed coordinates start at the neutral configuration and at rest. torque: constant joint
    forces by v name. pd: PD gains by 1-DoF joint name (added to ``torque``). srdf: optional
    SRDF whose ``<disable_collisions>`` pairs apply within this robot. control: a
    :class:`JointControl` by 1-DoF joint name (a joint is in ``pd`` or ``control``, not both).
    Treat the dicts as read-only.
    """

    name: str
    urdf: Path
    base: str = "fixed"
    base_pose: Pose = field(default_factory=Pose)
    q0: dict[str, float] = field(default_factory=dict)
    v0: dict[str, float] = field(default_factory=dict)
    torque: dict[str, float] = field(default_factory=dict)
    pd: dict[str, PdGain] = field(default_factory=dict)
    srdf: Path | None = None
    joint_limits: dict[str, JointLimitOverride] = field(default_factory=dict)
    control: dict[str, JointControl] = field(default_factory=dict)


@dataclass(frozen=True)
class Environment:
    """A static URDF (everything welded to the world at ``base_pose``)."""

    name: str
    urdf: Path
    base_pose: Pose = field(default_factory=Pose)


@dataclass(frozen=True)
class PairOverride:
    """Contact parameters for one link pair; ``None`` keeps the global value."""

    a: str
    b: str
    mu: float | None = None
    restitution: float | None = None
    margin: float | None = None


@dataclass(frozen=True)
class Simulation:
    """Time stepping: ``duration`` and ``dt`` in s, ``gravity`` in m/s^2 (world frame);
    ``lcp_max_seconds``: wall-time budget (s) of one step's LCP solves, 0 = no limit."""

    duration: float = 1.0
    dt: float = 1e-3
    formulation: str = "os"
    solver: str = "lemke"
    gravity: tuple[float, float, float] = (0.0, 0.0, -9.81)
    integrator: str = "euler"
    dynamics: str = "aba"
    delassus: str = "upsilon"
    #: enforce the URDF position limits of revolute and prismatic joints (simcore/joint_rows)
    joint_limits: bool = True
    #: restitution at the limit stops, in [0, 1] (per joint: Robot.joint_limits)
    limit_restitution: float = 0.0
    lcp_max_seconds: float = 60.0

    @property
    def n_steps(self) -> int:
        """Number of time steps (duration / dt, rounded to the nearest integer)."""
        return max(1, int(round(self.duration / self.dt)))


@dataclass(frozen=True)
class Contact:
    """Contact model: ``margin`` (m) is the distance below which a pair is a contact, ``mu``
    the Coulomb friction coefficient, ``restitution`` Newton's coefficient in [0, 1],
    ``friction_directions`` the number of edges of the friction polyhedron, ``friction_axes``
    its orientation (options.FRICTION_AXES), ``impact_friction`` the friction law of an
    impact (options.IMPACT_FRICTION), ``curvature_point`` where a smooth contact's gap
    prediction is taken (options.CURVATURE_POINTS), ``manifold`` the scope of the contact
    manifold reduction (options.CONTACT_MANIFOLDS), ``max_recovery_speed`` (m/s) the fastest
    a penetration is pushed out (and a joint past its stop, read as rad/s or m/s).
    ``ignore_initial_overlaps``: link pairs of one robot that already overlap at the initial
    state are not checked (:mod:`mbsim.start_pose`). Link references are ``tree/link``
    (bare ``link`` before :func:`validate_against_model` canonicalises them).
    """

    floor: bool = False
    margin: float = 1e-3
    mu: float = 0.5
    restitution: float = 0.0
    friction_directions: int = 4
    self_collision: bool = True
    ignore_initial_overlaps: bool = True
    disabled_pairs: tuple[tuple[str, str], ...] = ()
    srdf: Path | None = None
    pairs: tuple[PairOverride, ...] = ()
    gap_floor: float | None = None
    energy_consistent_impacts: bool = False
    impact_friction: str = "total"
    friction_axes: str = "slip"
    curvature_point: str = "core"
    manifold: str = "shape-pair"
    max_recovery_speed: float = 0.5
    mesh_contact: str = "triangles"
    mesh_contact_links: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Closure:
    """A loop closure between two link frames (``tree/link`` or ``world``): ``ball`` makes the
    points coincide, ``weld`` also holds their relative orientation at its initial value,
    ``distance`` keeps ``|p_a - p_b| = distance`` (m). Points in the link frames (m)."""

    type: str
    a: str
    b: str = WORLD
    point_a: tuple[float, float, float] = (0.0, 0.0, 0.0)
    point_b: tuple[float, float, float] = (0.0, 0.0, 0.0)
    distance: float | None = None


@dataclass(frozen=True)
class Output:
    """Results file: ``path`` (absolute), record every ``record_every``-th step."""

    path: Path
    record_every: int = 1
    record_contacts: bool = False
    body_poses: bool = True
    dump_lcp: str = "none"


@dataclass(frozen=True)
class Scenario:
    """A fully resolved scenario. ``source`` is the scenario file (None when built from flags).

    Robots and environments keep the order of the file; their names are the tree names of the
    model (``load_urdf(..., name=robot.name)``).
    """

    simulation: Simulation
    robots: tuple[Robot, ...]
    environments: tuple[Environment, ...]
    contact: Contact
    closures: tuple[Closure, ...]
    output: Output
    source: Path | None = None
    # Kept for error messages after loading (line lookup); not part of the scenario's value.
    _text: str = field(default="", repr=False, compare=False)
    _overridden: frozenset = field(default=frozenset(), repr=False, compare=False)
    _override_values: tuple = field(default=(), repr=False, compare=False)

    def robot(self, name: str) -> Robot:
        """The robot called ``name`` (KeyError if none)."""
        for r in self.robots:
            if r.name == name:
                return r
        raise KeyError(name)

    def input_files(self) -> list[Path]:
        """Every file the run reads (scenario, URDFs, SRDFs), without duplicates, in order.
        Mesh files are not included: they are known only once the URDFs are loaded."""
        files: list[Path] = [self.source] if self.source is not None else []
        files += [r.urdf for r in self.robots] + [e.urdf for e in self.environments]
        files += [r.srdf for r in self.robots if r.srdf is not None]
        for r in self.robots:
            for c in r.control.values():
                for sig in (c.torque, c.target, c.feedforward):
                    if sig is not None and sig.csv is not None:
                        files.append(sig.csv)
        if self.contact.srdf is not None:
            files.append(self.contact.srdf)
        return list(dict.fromkeys(files))

    def to_dict(self) -> dict:
        """The scenario as plain TOML-shaped data (what :meth:`to_toml` writes)."""
        from mbsim.io.scenario.emit import scenario_dict

        return scenario_dict(self)

    def to_toml(self) -> str:
        """The fully resolved scenario as TOML text; loading it gives an equal Scenario."""
        from mbsim.io.scenario.emit import scenario_toml

        return scenario_toml(self)
