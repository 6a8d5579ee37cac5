"""The dual-arm reference platform of the OS contact-dynamics paper and its wheel-removal task.

000 Sec. 3 (Fig. 1, Table 1): "This dual-arm platform has a 4 link sensor head, a pair of 7 link
arms, with each arm having a 3 finger hand for an overall system with 26 links and 26 degrees of
freedom. It has no loop closure bilateral constraints." 4 + 2 x 7 = 18, so the two hands have 8
moving links, 4 per hand. The paper gives no more detail. Platforms of this kind (e.g. the
DARPA ARM robot: two 7-DoF arms with BarrettHands under a sensor head) have 3-finger hands with
4 actuated degrees of freedom, one spread and three finger flexions; that split is assumed
here, each hand being 4 links on 4 revolute joints:

* ``X_f1_knuckle`` on ``X_f1_spread`` (about the hand axis): the spread of finger 1;
* ``X_f1`` (on the knuckle), ``X_f2``, ``X_f3`` on ``X_fK_joint``: the flexion of each finger,
  each finger one rigid link (the proximal and distal phalanges of a Barrett finger move with
  a fixed ratio, so one rigid link per finger keeps the count of actuated DoFs).

Totals: 4 (head) + 2 x 7 (arms) + 2 x 4 (hands) = 26 moving links, 26 revolute joints, 26 DoF;
the torso is welded to the world (fixed base) and merged into it, so n = N = 26 in Table 1.

Frames and geometry (SI units: m, kg, kg m^2, rad; z up; the robot faces +x):

* ``torso``: static box, shoulders at (0, +-:data:`SHOULDER_Y`, :data:`SHOULDER_Z`), neck on
  top at (0, 0, :data:`NECK_Z`).
* head: ``head_joint1`` yaw (z), ``head_joint2`` pitch (y), ``head_joint3`` pan (z),
  ``head_joint4`` camera tilt (y).
* arm ``X`` = ``l`` (left, +y) or ``r`` (right, -y), every joint frame parallel to its parent's
  at q = 0, the arm stretched along +x: ``X_joint1`` shoulder yaw (z), ``X_joint2`` shoulder
  pitch (y), ``X_joint3`` upper-arm roll (x), ``X_joint4`` elbow (y) :data:`UPPER_ARM` m out,
  ``X_joint5`` forearm roll (x), ``X_joint6`` wrist pitch (y) :data:`FOREARM` m further,
  ``X_joint7`` wrist roll (x) :data:`WRIST` m further; ``X_link7`` carries the palm.
* hand (in ``X_link7``): palm box from x = 0 to :data:`PALM_DEPTH`; finger hinges at
  x = :data:`FINGER_BASE_X`, fingers 1 and 2 at z = +:data:`FINGER_Z` (y = +-
  :data:`FINGER_Y`), finger 3 opposite them at z = -:data:`FINGER_Z`, y = 0; flexion axes
  +y (fingers 1, 2) and -y (finger 3), so a positive angle closes every finger toward the hand
  axis; straight fingers (q = 0) point along +x.

Masses are those of a light arm (about 10 kg an arm, 3.3 kg head, 0.29 kg a hand; 23.48 kg
moving in all); every link is a uniform solid primitive (box, cylinder, sphere or capsule)
whose closed-form inertia about its centre is the link's inertia, and whose shape is the
link's collision geometry. Joint limits follow a WAM-like arm and a Barrett-like hand. With all
joints at 0 the arms point forward (+x) at shoulder height and no two collision shapes touch.

Capsules (upper arms, forearms, fingers, the wheel) use mbsim's ``<capsule radius length>``
collision element, for which mbsim has exact contact kernels; urdfdom-based tools (ROS,
Pinocchio) do not know it and skip those collision elements with an error message, which
leaves their kinematics and inertias intact. Their visuals are plain cylinders.

The wheel task (000 Sec. 8: "the dual arm removal of a wheel from its hub"): a wheel
(:func:`wheel_urdf`, a free body) sits on the shaft of a hub fixed to the world
(:func:`hub_urdf`); :func:`wheel_scenario_toml` writes the scenario in which both hands hold
the rim and constant PD targets on the arms pull the wheel off along the shaft.

Regenerate the bundled files with::

    PYTHONPATH=src python -c "import mbsim.samples.dual_arm as d; \
d.write_bundled_dual_arm('src/mbsim/sample_robots')"
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mbsim.samples.generators import _HEADER, _num, _vec, write_texts
from mbsim.simcore.spatial import rpy_matrix

# --------------------------------------------------------------------------- dimensions (m)

#: Shoulder joints at (0, +-SHOULDER_Y, SHOULDER_Z) in the world, m.
SHOULDER_Y = 0.25
SHOULDER_Z = 1.0
#: The neck (head_joint1) at (0, 0, NECK_Z), m.
NECK_Z = 1.12
#: Shoulder (joints 1-3) to elbow (joint 4), elbow to wrist pitch (joint 6), wrist pitch to
#: wrist roll (joint 7), m.
UPPER_ARM = 0.35
FOREARM = 0.33
WRIST = 0.04
#: Palm box depth along the hand axis (x of link 7), width (y) and height (z), m.
PALM_DEPTH = 0.06
PALM_WIDTH = 0.09
PALM_HEIGHT = 0.09
#: Finger hinge position along the hand axis, offsets of the fingers across it, m.
FINGER_BASE_X = 0.07
FINGER_Y = 0.02
FINGER_Z = 0.035
#: Finger-1 spread axis is FINGER_KNUCKLE m behind its flexion hinge, m.
FINGER_KNUCKLE = 0.005
#: Finger capsule: radius, and its straight part from FINGER_START to FINGER_END along the
#: finger, m.
FINGER_RADIUS = 0.01
FINGER_START = 0.012
FINGER_END = 0.07

# --------------------------------------------------------------------------- the wheel (m, kg)

#: Rim: a torus of major radius WHEEL_RADIUS and tube radius RIM_TUBE, m; collision: a ring of
#: RIM_SEGMENTS capsules along the edges of a regular polygon whose apothem is WHEEL_RADIUS
#: (one edge centred on each of the +-y sides, where the hands hold it).
WHEEL_RADIUS = 0.18
RIM_TUBE = 0.015
RIM_SEGMENTS = 16
RIM_MASS = 1.2
#: Hub of the wheel: a tube with bore radius BORE_RADIUS and outer radius HUB_OUTER, length
#: HUB_LENGTH along the wheel axis x; collision: two octagonal rings of capsules (radius
#: BORE_CAPSULE) at x = +-BORE_RING_X whose inner faces are the bore.
BORE_RADIUS = 0.024
HUB_OUTER = 0.036
BORE_CAPSULE = 0.006
BORE_RING_X = 0.02
BORE_SEGMENTS = 8
HUB_LENGTH = 2.0 * (BORE_RING_X + BORE_CAPSULE)
HUB_MASS = 0.4
#: Spokes: 4 capsules of radius SPOKE_RADIUS, straight from SPOKE_IN to SPOKE_OUT from the
#: axis, at 45, 135, 225, 315 degrees in the wheel plane (clear of the hands at 0 and 180).
SPOKE_RADIUS = 0.008
SPOKE_IN = 0.044
SPOKE_OUT = 0.156
SPOKE_MASS = 0.1

# --------------------------------------------------------------------------- the hub (m)

#: Shaft: a capsule of radius SHAFT_RADIUS along x; its straight part runs from SHAFT_TIP (the
#: free end, toward the robot) to SHAFT_BASE (inside the back plate), in the hub frame, whose
#: origin is on the shaft axis in the wheel's starting plane. The bore clears the shaft by
#: BORE_RADIUS - SHAFT_RADIUS = 4 mm.
SHAFT_RADIUS = 0.02
SHAFT_TIP = -0.025
SHAFT_BASE = 0.07
#: Back plate: a box PLATE_THICKNESS x PLATE_SIZE x PLATE_SIZE whose front face is x =
#: PLATE_FRONT in the hub frame.
PLATE_FRONT = 0.05
PLATE_THICKNESS = 0.02
PLATE_SIZE = 0.3

# --------------------------------------------------------------------------- the task

#: Wheel centre in the world at the start, m: in front of the robot, at shoulder height (so the
#: arms hold it in the horizontal plane of the shoulders, see :func:`wheel_grasp`).
WHEEL_X = 0.5
WHEEL_Z = SHOULDER_Z
#: How far the PD targets of the arms move the hands back along -x, m.
PULL_DISTANCE = 0.15
#: Along the hand axis, the rim's tube centre sits GRASP_X from joint 7 (between the fingers).
GRASP_X = 0.115


# --------------------------------------------------------------------------- inertia formulas


def box_inertia(mass: float, sx: float, sy: float, sz: float) -> np.ndarray:
    """Principal moments (kg m^2) of a solid box (kg; full sides sx, sy, sz in m) about its
    centre: I_xx = m (sy^2 + sz^2) / 12 and cyclically."""
    return mass / 12.0 * np.array([sy * sy + sz * sz, sx * sx + sz * sz, sx * sx + sy * sy])


def sphere_inertia(mass: float, radius: float) -> np.ndarray:
    """Principal moments (kg m^2) of a solid sphere (kg, m) about its centre: 2/5 m r^2."""
    return np.full(3, 0.4 * mass * radius * radius)


def cylinder_inertia(mass: float, radius: float, length: float) -> np.ndarray:
    """Principal moments (kg m^2) of a solid cylinder (kg, m) about its centre, axis z:
    [m (3 r^2 + l^2) / 12, the same, m r^2 / 2]."""
    t = mass * (3.0 * radius * radius + length * length) / 12.0
    return np.array([t, t, 0.5 * mass * radius * radius])


def tube_inertia(mass: float, inner: float, outer: float, length: float) -> np.ndarray:
    """Principal moments (kg m^2) of a thick-walled tube (kg; radii and length in m) about its
    centre, axis z: [m (3 (a^2 + b^2) + l^2) / 12, the same, m (a^2 + b^2) / 2]."""
    s = inner * inner + outer * outer
    t = mass * (3.0 * s + length * length) / 12.0
    return np.array([t, t, 0.5 * mass * s])


def capsule_inertia(mass: float, radius: float, length: float) -> np.ndarray:
    """Principal moments (kg m^2) of a solid capsule (kg; radius r, straight part h in m)
    about its centre, axis z.

    The mass splits by volume between the cylinder (pi r^2 h) and the two hemispheres
    (4/3 pi r^3). Cylinder: r^2/2 (axial), r^2/4 + h^2/12 (transverse) times its mass; the two
    hemispheres: 2 r^2/5 (axial), 2 r^2/5 + h^2/4 + 3 h r/8 (transverse, each hemisphere's
    83/320 m r^2 about its centroid 3r/8 from its flat face, moved to the capsule centre).
    """
    v_cyl = math.pi * radius * radius * length
    v_sph = 4.0 / 3.0 * math.pi * radius**3
    m_cyl = mass * v_cyl / (v_cyl + v_sph)
    m_sph = mass - m_cyl
    r2, h = radius * radius, length
    axial = m_cyl * r2 / 2.0 + m_sph * 2.0 * r2 / 5.0
    trans = m_cyl * (r2 / 4.0 + h * h / 12.0) + m_sph * (
        2.0 * r2 / 5.0 + h * h / 4.0 + 3 * h * radius / 8
    )
    return np.array([trans, trans, axial])


def torus_inertia(mass: float, major: float, minor: float) -> np.ndarray:
    """Principal moments (kg m^2) of a solid torus (kg; major radius R, tube radius a in m)
    about its centre, axis z: [m (R^2/2 + 5 a^2/8), the same, m (R^2 + 3 a^2/4)]."""
    d = mass * (major * major / 2.0 + 5.0 * minor * minor / 8.0)
    return np.array([d, d, mass * (major * major + 0.75 * minor * minor)])


def _along_x(moments_z: np.ndarray) -> np.ndarray:
    """Principal moments of a body of revolution about z, re-expressed for its axis along x."""
    return np.array([moments_z[2], moments_z[0], moments_z[1]])


def _rotate(moments: np.ndarray, R: np.ndarray) -> np.ndarray:
    """R diag(moments) R^T (kg m^2), with rounding residue (cos(pi/2) = 6e-17) set to 0."""
    inertia = R @ np.diag(moments) @ R.T
    inertia[np.abs(inertia) < 1e-12 * np.abs(inertia).max()] = 0.0
    return inertia


# --------------------------------------------------------------------------- URDF writing

_X_AXIS_RPY = (0.0, math.pi / 2.0, 0.0)  # rpy that turns a shape's z axis onto x
_NOTICE = (
    "<!-- Generated by mbsim.samples.dual_arm.{func}; do not edit by hand."
    " SI units (m, kg, kg m^2, rad), z up. -->"
)


@dataclass
class _Shape:
    """One collision (and visual) primitive: kind (box, sphere, cylinder, capsule), URDF size
    attributes, origin in the link frame (m, rad)."""

    kind: str
    size: dict
    xyz: tuple = (0.0, 0.0, 0.0)
    rpy: tuple = (0.0, 0.0, 0.0)
    name: str = ""

    def geometry(self, visual: bool) -> str:
        kind = "cylinder" if (visual and self.kind == "capsule") else self.kind
        attrs = " ".join(
            f'{k}="{_vec(*v) if isinstance(v, tuple) else _num(v)}"' for k, v in self.size.items()
        )
        return f"<{kind} {attrs}/>"


@dataclass
class _Link:
    """A URDF link: mass (kg), com (m, link frame), inertia about the com (3x3, kg m^2, link
    axes), shapes; ``mass=None`` writes no ``<inertial>``."""

    name: str
    mass: float | None = None
    com: tuple = (0.0, 0.0, 0.0)
    inertia: np.ndarray | None = None
    shapes: list = field(default_factory=list)
    collide: bool = True


@dataclass
class _Joint:
    """A URDF joint: type, parent, child, origin (m, rad), axis; limits (rad, N m, rad/s)."""

    name: str
    jtype: str
    parent: str
    child: str
    xyz: tuple
    axis: tuple = (0.0, 0.0, 1.0)
    rpy: tuple = (0.0, 0.0, 0.0)
    lower: float = 0.0
    upper: float = 0.0
    effort: float = 0.0
    velocity: float = 0.0


def _write(robot: str, func: str, links: list[_Link], joints: list[_Joint]) -> str:
    """URDF text of ``links`` and ``joints`` (numbers at repr precision, \\n line ends)."""
    out = [_HEADER.rstrip("\n"), _NOTICE.format(func=func), f'<robot name="{robot}">']
    for link in links:
        if link.mass is None and not link.shapes:
            out.append(f'  <link name="{link.name}"/>')
            continue
        out.append(f'  <link name="{link.name}">')
        if link.mass is not None:
            I = link.inertia  # noqa: E741 (the inertia tensor's usual name)
            out += [
                "    <inertial>",
                f'      <origin xyz="{_vec(*link.com)}" rpy="0.0 0.0 0.0"/>',
                f'      <mass value="{_num(link.mass)}"/>',
                f'      <inertia ixx="{_num(I[0, 0])}" ixy="{_num(I[0, 1])}" ixz="{_num(I[0, 2])}"'
                f' iyy="{_num(I[1, 1])}" iyz="{_num(I[1, 2])}" izz="{_num(I[2, 2])}"/>',
                "    </inertial>",
            ]
        for tag in ("visual", "collision") if link.collide else ("visual",):
            for shape in link.shapes:
                named = f' name="{shape.name}"' if (shape.name and tag == "collision") else ""
                out += [
                    f"    <{tag}{named}>",
                    f'      <origin xyz="{_vec(*shape.xyz)}" rpy="{_vec(*shape.rpy)}"/>',
                    f"      <geometry>{shape.geometry(tag == 'visual')}</geometry>",
                    f"    </{tag}>",
                ]
        out.append("  </link>")
    for j in joints:
        out += [
            f'  <joint name="{j.name}" type="{j.jtype}">',
            f'    <parent link="{j.parent}"/>',
            f'    <child link="{j.child}"/>',
            f'    <origin xyz="{_vec(*j.xyz)}" rpy="{_vec(*j.rpy)}"/>',
        ]
        if j.jtype != "fixed":
            out += [
                f'    <axis xyz="{_vec(*j.axis)}"/>',
                f'    <limit lower="{_num(j.lower)}" upper="{_num(j.upper)}"'
                f' effort="{_num(j.effort)}" velocity="{_num(j.velocity)}"/>',
                '    <dynamics damping="0.0" friction="0.0"/>',
            ]
        out.append("  </joint>")
    out.append("</robot>")
    return "\n".join(out) + "\n"


def _solid(name: str, mass: float, shape: _Shape, collide: bool = True) -> _Link:
    """A link that is one uniform solid primitive: com at the shape's centre, closed-form
    inertia rotated into the link axes."""
    kind, s = shape.kind, shape.size
    if kind == "box":
        moments = box_inertia(mass, *s["size"])
    elif kind == "sphere":
        moments = sphere_inertia(mass, s["radius"])
    elif kind == "cylinder":
        moments = cylinder_inertia(mass, s["radius"], s["length"])
    else:
        moments = capsule_inertia(mass, s["radius"], s["length"])
    R = rpy_matrix(shape.rpy)
    return _Link(name, mass, shape.xyz, _rotate(moments, R), [shape], collide)


def _capsule_x(x0: float, x1: float, radius: float, name: str = "") -> _Shape:
    """A capsule whose straight part runs along the link's x axis from x0 to x1 (m)."""
    return _Shape(
        "capsule",
        {"radius": radius, "length": x1 - x0},
        ((x0 + x1) / 2, 0.0, 0.0),
        _X_AXIS_RPY,
        name,
    )


#: Arm link masses (kg), joints 1..7 (link 7 = wrist flange and palm).
ARM_MASSES = (2.0, 1.5, 2.5, 1.0, 1.5, 0.5, 0.8)
#: Finger-1 knuckle and finger masses (kg).
KNUCKLE_MASS = 0.05
FINGER_MASS = 0.08
#: Head link masses (kg): neck yaw, neck pitch, sensor head, camera bar.
HEAD_MASSES = (0.8, 0.6, 1.5, 0.4)
#: Nominal torso mass (kg): welded to the world, so it never enters the dynamics.
TORSO_MASS = 15.0

#: (lower, upper, effort, velocity) per arm joint 1..7 (rad, N m, rad/s); the same for both
#: arms (the limits are symmetric wherever the mirrored arms need it).
ARM_LIMITS = (
    (-2.6, 2.6, 60.0, 2.0),
    (-2.0, 2.0, 60.0, 2.0),
    (-2.8, 2.8, 45.0, 2.5),
    (-2.6, 2.6, 45.0, 2.5),
    (-2.8, 2.8, 10.0, 3.0),
    (-1.8, 1.8, 10.0, 3.0),
    (-3.0, 3.0, 5.0, 3.0),
)
HEAD_LIMITS = (
    (-1.5, 1.5, 10.0, 2.0),
    (-0.5, 1.0, 10.0, 2.0),
    (-1.5, 1.5, 5.0, 2.0),
    (-0.8, 0.8, 2.0, 2.0),
)
#: Spread 0..pi, flexion 0 (straight) .. 2.44 rad (140 degrees), as a BarrettHand.
SPREAD_LIMITS = (0.0, math.pi, 2.0, 2.0)
FLEX_LIMITS = (0.0, 2.44, 2.0, 2.0)


def _hand(side: str) -> tuple[list[_Link], list[_Joint]]:
    """The 4 links and joints of one hand, attached to ``{side}_link7``."""
    p = f"{side}_"
    links = [
        # the knuckle: a small sphere inside finger 1's base, visual only (it would overlap
        # finger 1's hinge end and the palm, which it touches in a real hand anyway)
        _solid(f"{p}f1_knuckle", KNUCKLE_MASS, _Shape("sphere", {"radius": 0.008}), collide=False),
    ]
    for k in (1, 2, 3):
        finger = _capsule_x(FINGER_START, FINGER_END, FINGER_RADIUS, name=f"{p}f{k}")
        links.append(_solid(f"{p}f{k}", FINGER_MASS, finger))
    lo, hi, eff, vel = FLEX_LIMITS
    s_lo, s_hi, s_eff, s_vel = SPREAD_LIMITS
    joints = [
        _Joint(
            f"{p}f1_spread", "revolute", f"{p}link7", f"{p}f1_knuckle",
            (FINGER_BASE_X - FINGER_KNUCKLE, FINGER_Y, FINGER_Z), (1.0, 0.0, 0.0),
            lower=s_lo, upper=s_hi, effort=s_eff, velocity=s_vel,
        ),
        _Joint(
            f"{p}f1_joint", "revolute", f"{p}f1_knuckle", f"{p}f1", (FINGER_KNUCKLE, 0.0, 0.0),
            (0.0, 1.0, 0.0), lower=lo, upper=hi, effort=eff, velocity=vel,
        ),
        _Joint(
            f"{p}f2_joint", "revolute", f"{p}link7", f"{p}f2", (FINGER_BASE_X, -FINGER_Y, FINGER_Z),
            (0.0, 1.0, 0.0), lower=lo, upper=hi, effort=eff, velocity=vel,
        ),
        _Joint(
            f"{p}f3_joint", "revolute", f"{p}link7", f"{p}f3", (FINGER_BASE_X, 0.0, -FINGER_Z),
            (0.0, -1.0, 0.0), lower=lo, upper=hi, effort=eff, velocity=vel,
        ),
    ]  # fmt: skip
    return links, joints


def _chain_links(prefix: str, masses, shapes: list[_Shape]) -> list[_Link]:
    """Links ``{prefix}link1..n`` of a serial chain, one solid shape each, named as its link."""
    links = []
    for k, (mass, shape) in enumerate(zip(masses, shapes, strict=True)):
        link = _solid(f"{prefix}link{k + 1}", mass, shape)
        link.shapes[0].name = f"{prefix}link{k + 1}"
        links.append(link)
    return links


def _chain_joints(prefix: str, origins, axes, limits) -> list[_Joint]:
    """Revolute joints ``{prefix}joint1..n`` of a serial chain hung from the torso:
    joint k moves ``{prefix}link{k}`` on ``{prefix}link{k-1}`` (the torso for k = 1) with
    ``limits[k]`` = (lower rad, upper rad, effort N m, velocity rad/s)."""
    joints = []
    for k, (origin, axis, (lo, hi, eff, vel)) in enumerate(zip(origins, axes, limits, strict=True)):
        parent = "torso" if k == 0 else f"{prefix}link{k}"
        joints.append(
            _Joint(
                f"{prefix}joint{k + 1}",
                "revolute",
                parent,
                f"{prefix}link{k + 1}",
                origin,
                tuple(float(a) for a in axis),
                lower=lo,
                upper=hi,
                effort=eff,
                velocity=vel,
            )
        )
    return joints


def _arm(side: str) -> tuple[list[_Link], list[_Joint]]:
    """The 7 links and joints of one arm (``side`` = "l" at +y, "r" at -y), hand excluded."""
    p = f"{side}_"
    y = SHOULDER_Y if side == "l" else -SHOULDER_Y
    m = ARM_MASSES
    shapes = [
        _Shape("cylinder", {"radius": 0.05, "length": 0.12}),  # shoulder yaw housing
        _Shape("sphere", {"radius": 0.06}),  # shoulder pitch
        _capsule_x(0.11, 0.27, 0.04),  # upper arm
        _Shape("sphere", {"radius": 0.045}),  # elbow
        _capsule_x(0.09, 0.25, 0.035),  # forearm
        _Shape("sphere", {"radius": 0.035}),  # wrist pitch
        _Shape("box", {"size": (PALM_DEPTH, PALM_WIDTH, PALM_HEIGHT)}, (PALM_DEPTH / 2, 0.0, 0.0)),
    ]
    links = _chain_links(p, m, shapes)
    origins = [
        (0.0, y, SHOULDER_Z),
        (0.0, 0.0, 0.0),
        (0.0, 0.0, 0.0),
        (UPPER_ARM, 0.0, 0.0),
        (0.0, 0.0, 0.0),
        (FOREARM, 0.0, 0.0),
        (WRIST, 0.0, 0.0),
    ]
    axes = [(0, 0, 1), (0, 1, 0), (1, 0, 0), (0, 1, 0), (1, 0, 0), (0, 1, 0), (1, 0, 0)]
    return links, _chain_joints(p, origins, axes, ARM_LIMITS)


def _head() -> tuple[list[_Link], list[_Joint]]:
    """The 4 links and joints of the sensor head."""
    m = HEAD_MASSES
    shapes = [
        _Shape("cylinder", {"radius": 0.04, "length": 0.1}, (0.0, 0.0, 0.05)),  # neck
        _Shape("box", {"size": (0.06, 0.1, 0.06)}, (0.0, 0.0, 0.04)),  # neck pitch bracket
        _Shape("box", {"size": (0.12, 0.2, 0.1)}, (0.02, 0.0, 0.05)),  # sensor head
        _Shape("box", {"size": (0.04, 0.24, 0.04)}, (0.0, 0.0, 0.0)),  # stereo camera bar
    ]
    links = _chain_links("head_", m, shapes)
    origins = [(0.0, 0.0, NECK_Z), (0.0, 0.0, 0.1), (0.0, 0.0, 0.08), (0.1, 0.0, 0.13)]
    axes = [(0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (0.0, 1.0, 0.0)]
    return links, _chain_joints("head_", origins, axes, HEAD_LIMITS)


#: Torso box: size (m) and centre (m, world): from z = 0.35 to NECK_Z - 0.02, between the arms.
TORSO_SIZE = (0.2, 0.3, 0.75)
TORSO_CENTRE = (-0.05, 0.0, 0.725)


def dual_arm_urdf() -> str:
    """URDF text of the 26-link, 26-DoF dual-arm platform (robot ``dual-arm``); see the module
    docstring for its structure, frames, masses and limits.

    Tree: ``world`` -fixed- ``torso`` -> ``head_link1..4`` (a chain), and for X in (l, r)
    ``X_link1..7`` (a chain) -> ``X_f1_knuckle`` -> ``X_f1``, ``X_f2``, ``X_f3``. All moving
    joints are ``revolute`` with limits; SI units throughout.
    """
    torso = _solid("torso", TORSO_MASS, _Shape("box", {"size": TORSO_SIZE}, TORSO_CENTRE))
    torso.shapes[0].name = "torso"
    links = [_Link("world"), torso]
    joints = [_Joint("torso_joint", "fixed", "world", "torso", (0.0, 0.0, 0.0))]
    for part in (_head(), _arm("l"), _hand("l"), _arm("r"), _hand("r")):
        links += part[0]
        joints += part[1]
    return _write("dual-arm", "dual_arm_urdf", links, joints)


# --------------------------------------------------------------------------- wheel and hub


def _ring(
    n: int, apothem: float, radius: float, x: float, phase: float, prefix: str
) -> list[_Shape]:
    """Capsules (radius m) along the n edges of a regular polygon in the plane x = const of
    the wheel (the y-z plane), apothem m, edge k centred at angle phase + 2 pi k / n from +y
    toward +z."""
    half = apothem * math.tan(math.pi / n)
    shapes = []
    for k in range(n):
        a = phase + 2.0 * math.pi * k / n
        centre = (x, apothem * math.cos(a), apothem * math.sin(a))
        # the capsule's axis (z before rotation) must be the edge direction (0, -sin a, cos a):
        # a roll by a about x turns z into exactly that
        shapes.append(
            _Shape(
                "capsule",
                {"radius": radius, "length": 2.0 * half},
                centre,
                (a, 0.0, 0.0),
                f"{prefix}{k}",
            )
        )
    return shapes


def wheel_inertia() -> tuple[float, np.ndarray]:
    """(mass kg, inertia about the centre 3x3 kg m^2, wheel axes) of the wheel: a solid torus
    rim (:data:`RIM_MASS`), a tube hub (:data:`HUB_MASS`) and 4 capsule spokes
    (:data:`SPOKE_MASS` each, parallel-axis theorem), all axisymmetric about x."""
    total = np.diag(_along_x(torus_inertia(RIM_MASS, WHEEL_RADIUS, RIM_TUBE)))
    total = total + np.diag(_along_x(tube_inertia(HUB_MASS, BORE_RADIUS, HUB_OUTER, HUB_LENGTH)))
    length = SPOKE_OUT - SPOKE_IN
    d = (SPOKE_IN + SPOKE_OUT) / 2.0
    own = capsule_inertia(SPOKE_MASS, SPOKE_RADIUS, length)  # axis z = the spoke's direction
    for k in range(4):
        a = math.pi / 4.0 + k * math.pi / 2.0
        u = np.array([0.0, math.cos(a), math.sin(a)])
        R = rpy_matrix((a - math.pi / 2.0, 0.0, 0.0))  # z -> u
        c = d * u
        total = total + _rotate(own, R) + SPOKE_MASS * (c @ c * np.eye(3) - np.outer(c, c))
    mass = RIM_MASS + HUB_MASS + 4 * SPOKE_MASS
    return mass, total


def wheel_urdf() -> str:
    """URDF text of the wheel (robot ``dual-arm-wheel``, one link ``wheel``; give it
    ``base = "floating"`` to make it a free body). Its frame is at the centre, x the axle.

    Mass and inertia: :func:`wheel_inertia` (2.0 kg). Collision: the rim as
    :data:`RIM_SEGMENTS` capsules of radius :data:`RIM_TUBE` on a polygon of apothem
    :data:`WHEEL_RADIUS` (edges centred at 0 and 180 degrees, i.e. +-y, where the fingers
    hold it), the bore as two octagonal rings of capsules whose inner faces are at
    :data:`BORE_RADIUS` (an edge at the top, where it rests on the shaft), and the 4 spokes.
    """
    mass, inertia = wheel_inertia()
    rim = _ring(RIM_SEGMENTS, WHEEL_RADIUS, RIM_TUBE, 0.0, 0.0, "rim")
    apothem = BORE_RADIUS + BORE_CAPSULE
    bore = _ring(BORE_SEGMENTS, apothem, BORE_CAPSULE, -BORE_RING_X, math.pi / 2, "bore_front")
    bore += _ring(BORE_SEGMENTS, apothem, BORE_CAPSULE, BORE_RING_X, math.pi / 2, "bore_back")
    spokes = []
    for k in range(4):
        a = math.pi / 4.0 + k * math.pi / 2.0
        d = (SPOKE_IN + SPOKE_OUT) / 2.0
        spokes.append(
            _Shape(
                "capsule",
                {"radius": SPOKE_RADIUS, "length": SPOKE_OUT - SPOKE_IN},
                (0.0, d * math.cos(a), d * math.sin(a)),
                (a - math.pi / 2.0, 0.0, 0.0),
                f"spoke{k}",
            )
        )
    wheel = _Link("wheel", mass, (0.0, 0.0, 0.0), inertia, rim + bore + spokes)
    return _write("dual-arm-wheel", "wheel_urdf", [wheel], [])


def hub_urdf() -> str:
    """URDF text of the hub (robot ``dual-arm-hub``), static: ``world`` -fixed- ``hub_plate``
    (the back plate, a box) and ``hub_shaft`` (a capsule along x of radius
    :data:`SHAFT_RADIUS`, straight from x = :data:`SHAFT_TIP` to :data:`SHAFT_BASE`). Hub frame:
    origin on the shaft axis in the plane where the wheel starts, the free end toward -x.
    The masses (1 kg each) are nominal: static links never enter the dynamics."""
    plate_box = (PLATE_THICKNESS, PLATE_SIZE, PLATE_SIZE)
    plate_centre = (PLATE_FRONT + PLATE_THICKNESS / 2, 0.0, 0.0)
    plate = _solid("hub_plate", 1.0, _Shape("box", {"size": plate_box}, plate_centre))
    plate.shapes[0].name = "hub_plate"
    shaft = _solid("hub_shaft", 1.0, _capsule_x(SHAFT_TIP, SHAFT_BASE, SHAFT_RADIUS, "hub_shaft"))
    links = [_Link("world"), plate, shaft]
    joints = [
        _Joint("hub_plate_joint", "fixed", "world", "hub_plate", (0.0, 0.0, 0.0)),
        _Joint("hub_shaft_joint", "fixed", "world", "hub_shaft", (0.0, 0.0, 0.0)),
    ]
    return _write("dual-arm-hub", "hub_urdf", links, joints)


# --------------------------------------------------------------------------- the wheel task


def _planar_arm(side: str, grasp_x: float) -> dict[str, float]:
    """Arm joint angles (rad) holding the rim's side at world x = ``grasp_x`` (m).

    Joints 2, 5, 7 stay at 0 and joint 3 at -pi/2 (left) or +pi/2 (right): that turns the
    elbow and wrist-pitch axes vertical (-z left, +z right), so joints 1, 4, 6 make a planar
    3R arm in the shoulders' horizontal plane, solved in closed form: the hand axis points at
    the wheel's axle (-y for the left hand, +y for the right), the rim's tube centre lies
    :data:`GRASP_X` along it from joint 7 (between the fingers), the elbow bends outward.
    With joint 3 at -+pi/2 the fingers' closing direction (the hand's z) is world x, fingers 1
    and 2 behind the rim (+x) and finger 3 in front of it.
    """
    sgn = 1.0 if side == "l" else -1.0
    sigma = -sgn  # joint-3 angle sign: the elbow axis becomes sigma z
    phi = -sgn * math.pi / 2.0  # world heading of the hand axis
    reach = WRIST + GRASP_X  # joint 6 to the grasp point, m
    wx, wy = grasp_x, sgn * (WHEEL_RADIUS + reach)  # joint 6 (m)
    dx, dy = wx, wy - sgn * SHOULDER_Y
    dist2 = dx * dx + dy * dy
    c = (dist2 - UPPER_ARM**2 - FOREARM**2) / (2.0 * UPPER_ARM * FOREARM)
    if not -1.0 < c < 1.0:
        raise ValueError(f"the wheel at x = {grasp_x} m is out of the arms' reach")
    psi = -sgn * math.acos(c)  # elbow angle about +z (elbow outward)
    theta1 = math.atan2(dy, dx) - math.atan2(
        FOREARM * math.sin(psi), UPPER_ARM + FOREARM * math.cos(psi)
    )
    theta4 = sigma * psi
    theta6 = sigma * (phi - theta1) - theta4
    p = f"{side}_"
    return {
        f"{p}joint1": theta1,
        f"{p}joint2": 0.0,
        f"{p}joint3": sigma * math.pi / 2.0,
        f"{p}joint4": theta4,
        f"{p}joint5": 0.0,
        f"{p}joint6": theta6,
        f"{p}joint7": 0.0,
    }


def finger_contact_angle() -> float:
    """Flexion (rad) at which a finger's capsule touches the rim's tube held at :data:`GRASP_X`.

    In the hand's x-z plane the finger's axis runs from its hinge (FINGER_BASE_X, FINGER_Z)
    along (cos t, -sin t); its distance to the tube's centre (GRASP_X, 0) is
    FINGER_Z cos t - (GRASP_X - FINGER_BASE_X) sin t, which must equal the sum of the radii.
    """
    a, b = FINGER_Z, GRASP_X - FINGER_BASE_X
    need = RIM_TUBE + FINGER_RADIUS
    return math.acos(need / math.hypot(a, b)) - math.atan2(b, a)


def wheel_grasp(pull: float = 0.0) -> dict[str, float]:
    """Joint angles (rad) of the 26 joints with both hands on the rim of a wheel whose centre
    is at (:data:`WHEEL_X` - ``pull``, 0, :data:`WHEEL_Z`) m: arms from :func:`_planar_arm`,
    fingers touching the rim (:func:`finger_contact_angle`), spreads and head at 0."""
    q = {f"head_joint{k}": 0.0 for k in range(1, 5)}
    t = finger_contact_angle()
    for side in ("l", "r"):
        q.update(_planar_arm(side, WHEEL_X - pull))
        q[f"{side}_f1_spread"] = 0.0
        for k in (1, 2, 3):
            q[f"{side}_f{k}_joint"] = t
    return q


#: PD gains of the wheel task, (kp N m/rad, kd N m s/rad): arm joints 1..7, head joints 1..4,
#: finger-1 spread, fingers 1-2 (behind the rim) and finger 3 (in front, twice the gain so its
#: squeeze balances the other two).
ARM_GAINS = (
    (100.0, 40.0),
    (400.0, 40.0),
    (200.0, 20.0),
    (100.0, 40.0),
    (30.0, 1.0),
    (20.0, 4.0),
    (10.0, 0.2),
)
HEAD_GAINS = ((20.0, 1.0), (20.0, 1.0), (10.0, 0.5), (5.0, 0.1))
SPREAD_GAIN = (2.0, 0.005)
FINGER_GAIN = (2.0, 0.005)
THUMB_GAIN = (4.0, 0.01)
#: How far past the touching angle the finger targets close, rad.
SQUEEZE = 0.15
#: Task parameters written into the scenario: time step (s), duration (s), friction
#: coefficients fingers-rim (and default) and bore-shaft.
TASK_DT = 1e-3
TASK_DURATION = 1.0
GRIP_MU = 0.9
SHAFT_MU = 0.3


def _gravity_torques(q: dict[str, float]) -> dict[str, float]:
    """Joint torques (N m) holding the robot still at ``q`` against gravity (-9.81 z m/s^2):
    RNEA at zero velocity and acceleration on the robot alone (the wheel's weight is on the
    hub while the hands hold it)."""
    from mbsim.io.urdf import parse_urdf_string
    from mbsim.simcore.data import Data
    from mbsim.simcore.dynamics import rnea
    from mbsim.simcore.model import build_model

    model = build_model(
        [parse_urdf_string(dual_arm_urdf(), name="dual-arm")], gravity=(0.0, 0.0, -9.81)
    )
    qv = np.array([q[name] for name in model.q_names])
    tau = rnea(model, Data(model), qv, np.zeros(model.nv), np.zeros(model.nv))
    return dict(zip(model.v_names, tau.tolist(), strict=True))


def _toml_num(x: float, digits: int) -> str:
    """x rounded to ``digits`` decimals, printed so TOML reads a float (never -0.0)."""
    return repr(round(float(x), digits) + 0.0)


def wheel_scenario_toml() -> str:
    """Scenario text of the wheel-removal task (``dual-arm-wheel.toml``), SI units.

    * ``dual-arm`` (fixed base) starts in :func:`wheel_grasp` (``q0``): both hands on the rim,
      fingers touching it; constant joint torques cancel gravity at q0
      (:func:`_gravity_torques`); PD targets: the arms at ``wheel_grasp(PULL_DISTANCE)`` (the
      hands :data:`PULL_DISTANCE` m further back, same heading), the fingers :data:`SQUEEZE`
      rad past touching (they squeeze the rim), head and spreads at their start values.
    * ``wheel``: a free body on the hub's shaft, its bore resting on the shaft's top.
    * ``hub``: the environment, its frame :data:`BORE_RADIUS` - :data:`SHAFT_RADIUS` above the
      wheel's centre so the shaft touches the bore's top edge.
    * contact: mu = :data:`GRIP_MU` (fingers on the rim), :data:`SHAFT_MU` between the bore and
      the shaft; no self-collision (the task's contacts are between the robot, the wheel and
      the hub).

    Angles are written to 1e-6 rad and torques to 1e-4 N m.
    """
    q0 = wheel_grasp()
    target = wheel_grasp(PULL_DISTANCE)
    squeeze = {f"{s}_f{k}_joint": q0[f"{s}_f{k}_joint"] + SQUEEZE for s in "lr" for k in (1, 2, 3)}
    target.update(squeeze)
    tau = _gravity_torques(q0)
    gains = {}
    for s in "lr":
        for k in range(7):
            gains[f"{s}_joint{k + 1}"] = ARM_GAINS[k]
        gains[f"{s}_f1_spread"] = SPREAD_GAIN
        gains[f"{s}_f1_joint"] = FINGER_GAIN
        gains[f"{s}_f2_joint"] = FINGER_GAIN
        gains[f"{s}_f3_joint"] = THUMB_GAIN
    for k in range(4):
        gains[f"head_joint{k + 1}"] = HEAD_GAINS[k]

    hub_z = _toml_num(WHEEL_Z + BORE_RADIUS - SHAFT_RADIUS, 9)
    out = [
        "# The dual-arm platform of the OS paper (000 Sec. 3, Fig. 1) pulls a wheel off a hub",
        "# (000 Sec. 8). Generated by mbsim.samples.dual_arm.wheel_scenario_toml; do not edit.",
        "# Both hands start closed on the rim (fingers 1-2 behind it, finger 3 in front); constant",
        "# PD targets move the hands 0.15 m back along -x while the fingers squeeze; the wheel",
        "# slides along the shaft (mu 0.3) and comes off its free end after about 0.06 m.",
        "# SI units (s, m, rad, kg, N m). Run: mbsim run sample:dual-arm-wheel.toml --out wheel.h5",
        "",
        "[simulation]",
        f"duration = {_num(TASK_DURATION)}   # s",
        f"dt = {_num(TASK_DT)}           # s",
        'formulation = "os"',
        'solver = "lemke"',
        "gravity = [0.0, 0.0, -9.81]   # m/s^2",
        "",
        "[robot.dual-arm]",
        'urdf = "dual-arm.urdf"',
        'base = "fixed"',
        "",
        "[robot.dual-arm.q0]   # rad",
    ]
    out += [f"{name} = {_toml_num(v, 6)}" for name, v in q0.items() if v != 0.0]
    out += ["", "[robot.dual-arm.torque]   # N m, gravity compensation at q0"]
    out += [f"{name} = {_toml_num(v, 4)}" for name, v in tau.items() if round(v, 4) != 0.0]
    out += ["", "[robot.dual-arm.pd]   # target rad, kp N m/rad, kd N m s/rad"]
    for name, (kp, kd) in gains.items():
        aim = _toml_num(target[name], 6)
        out.append(f"{name} = {{ target = {aim}, kp = {_num(kp)}, kd = {_num(kd)} }}")
    out += [
        "",
        "[robot.wheel]",
        'urdf = "dual-arm-wheel.urdf"',
        'base = "floating"',
        f"base_pose = {{ xyz = [{_num(WHEEL_X)}, 0.0, {_num(WHEEL_Z)}], rpy = [0.0, 0.0, 0.0] }}",
        "",
        "[environment.hub]",
        'urdf = "dual-arm-hub.urdf"',
        f"base_pose = {{ xyz = [{_num(WHEEL_X)}, 0.0, {hub_z}], rpy = [0.0, 0.0, 0.0] }}",
        "",
        "[contact]",
        "margin = 1e-3   # m",
        f"mu = {_num(GRIP_MU)}",
        "restitution = 0.0",
        "friction_directions = 4",
        "self_collision = false",
        f'pairs = [{{ a = "hub_shaft", b = "wheel", mu = {_num(SHAFT_MU)} }}]',
        "",
        "[output]",
        "record_every = 10",
        "record_contacts = true",
        "body_poses = true",
    ]
    return "\n".join(out) + "\n"


def table1_scenario_toml(formulation: str = "os", nf: int = 4) -> str:
    """Scenario text of the Table 1 state (000 Sec. 3-6): the robot alone (26 links, 26 DoF)
    holding the wheel, which is an environment here (welded to the world, so it adds no
    DoF), with exactly 4 contacts: fingers 1 and 2 of each hand touching the rim (their
    :func:`wheel_grasp` angles) and both fingers 3 open (q = 0, 9 mm clear of the rim). No
    self-collision, no hub. One step of 1 ms with ``formulation`` and ``nf`` friction
    directions. Relative URDF paths: load it with ``base_dir`` = the bundled samples folder.
    """
    q0 = wheel_grasp()
    lines = [
        "# The Table 1 state of 000: dual-arm robot, 4 contacts, generated by",
        "# mbsim.samples.dual_arm.table1_scenario_toml.",
        "[simulation]",
        "duration = 0.001",
        "dt = 0.001",
        f'formulation = "{formulation}"',
        "",
        "[robot.dual-arm]",
        'urdf = "dual-arm.urdf"',
        'base = "fixed"',
        "",
        "[robot.dual-arm.q0]",
    ]
    lines += [
        f"{name} = {_num(v)}"
        for name, v in q0.items()
        if v != 0.0 and not name.endswith("f3_joint")
    ]
    lines += [
        "",
        "[environment.wheel]",
        'urdf = "dual-arm-wheel.urdf"',
        f"base_pose = {{ xyz = [{_num(WHEEL_X)}, 0.0, {_num(WHEEL_Z)}], rpy = [0.0, 0.0, 0.0] }}",
        "",
        "[contact]",
        f"friction_directions = {nf}",
        "self_collision = false",
    ]
    return "\n".join(lines) + "\n"


def bundled_dual_arm_samples() -> dict[str, str]:
    """The bundled files of this module as {file name: text}: the robot, wheel and hub URDFs
    and the wheel scenario."""
    return {
        "dual-arm.urdf": dual_arm_urdf(),
        "dual-arm-wheel.urdf": wheel_urdf(),
        "dual-arm-hub.urdf": hub_urdf(),
        "dual-arm-wheel.toml": wheel_scenario_toml(),
    }


def write_bundled_dual_arm(dest_dir: str | Path) -> list[Path]:
    """Write :func:`bundled_dual_arm_samples` into ``dest_dir`` (UTF-8, \\n line ends)."""
    return write_texts(dest_dir, bundled_dual_arm_samples())
