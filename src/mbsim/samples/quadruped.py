"""A small quadruped with box legs: the Python API's standing example (docs/python-api.md).

A box trunk (floating base) and four legs, each a hip hinge and a knee hinge about +y with a
box thigh and a box shin ending in a collision sphere (the foot); only the trunk and the feet
collide. Same conventions as generators.py: SI units, z up, gravity along -z. Standing
posture: hip = STAND_HIP, knee = -2 STAND_HIP puts each foot straight under its hip, the hips
LEG * 2 cos(STAND_HIP) + FOOT_RADIUS above the floor.

Regenerate the bundled file with::

    PYTHONPATH=src python -c "import mbsim.samples.quadruped as g; \
g.write_bundled('src/mbsim/sample_robots')"
"""

from __future__ import annotations

import math
from pathlib import Path

from mbsim.samples.generators import _HEADER, _NOTICE, _box_inertia, _inertial, _num, _shape

#: Trunk box (m) and mass (kg); leg segment length (m), section (m) and masses (kg).
TRUNK = (0.4, 0.2, 0.08)
TRUNK_MASS = 6.0
LEG = 0.18
SECTION = 0.03
THIGH_MASS, SHIN_MASS = 0.6, 0.3
#: Foot sphere radius (m) and mass (kg, part of the shin).
FOOT_RADIUS = 0.02
#: Joint limits (rad), efforts (N m) and speed limits (rad/s) of every hip and knee.
HIP_LIMITS, KNEE_LIMITS = (-1.6, 1.6), (-2.8, 0.0)
EFFORT, SPEED = 40.0, 20.0
#: Hip angle of the standing posture (rad); knees at -2 STAND_HIP.
STAND_HIP = 0.6
LEGS = {"fl": (0.15, 0.1), "fr": (0.15, -0.1), "hl": (-0.15, 0.1), "hr": (-0.15, -0.1)}


def stand_height() -> float:
    """Height of the hips (trunk frame origin) above the floor when standing (m)."""
    return 2.0 * LEG * math.cos(STAND_HIP) + FOOT_RADIUS


def _segment(name: str, mass: float, foot: bool) -> list[str]:
    centre = (0.0, 0.0, -LEG / 2.0)
    box = f'<box size="{_num(SECTION)} {_num(SECTION)} {_num(LEG)}"/>'
    lines = [f'  <link name="{name}">']
    lines += _inertial(mass, centre, _box_inertia(mass, SECTION, SECTION, LEG))
    lines += _shape("visual", centre, box)
    if foot:
        sphere = f'<sphere radius="{_num(FOOT_RADIUS)}"/>'
        lines += _shape("collision", (0.0, 0.0, -LEG), sphere, name=f"{name}_foot")
    lines.append("  </link>")
    return lines


def _hinge(name, parent, child, xyz, limits) -> list[str]:
    return [
        f'  <joint name="{name}" type="revolute">',
        f'    <parent link="{parent}"/>',
        f'    <child link="{child}"/>',
        f'    <origin xyz="{" ".join(_num(x) for x in xyz)}" rpy="0.0 0.0 0.0"/>',
        '    <axis xyz="0.0 1.0 0.0"/>',
        f'    <limit lower="{_num(limits[0])}" upper="{_num(limits[1])}" effort="{_num(EFFORT)}"'
        f' velocity="{_num(SPEED)}"/>',
        "  </joint>",
    ]


def quadruped_urdf() -> str:
    """URDF text of the quadruped (robot ``quadruped``): trunk, then per leg L in fl, fr, hl,
    hr the joints ``L_hip`` (trunk -> ``L_thigh``, at the trunk's corner) and ``L_knee``
    (thigh -> ``L_shin``, LEG below the hip). Segments hang along -z from their hinge."""
    lines = [
        _HEADER.rstrip("\n"),
        _NOTICE.replace("generators.{func}", "quadruped.quadruped_urdf").rstrip("\n"),
        '<robot name="quadruped">',
        '  <link name="trunk">',
        *_inertial(TRUNK_MASS, (0.0, 0.0, 0.0), _box_inertia(TRUNK_MASS, *TRUNK)),
        *_shape("visual", (0.0, 0.0, 0.0), f'<box size="{" ".join(_num(x) for x in TRUNK)}"/>'),
        *_shape("collision", (0.0, 0.0, 0.0), f'<box size="{" ".join(_num(x) for x in TRUNK)}"/>'),
        "  </link>",
    ]
    for leg, (x, y) in LEGS.items():
        lines += _segment(f"{leg}_thigh", THIGH_MASS, foot=False)
        lines += _segment(f"{leg}_shin", SHIN_MASS, foot=True)
        lines += _hinge(f"{leg}_hip", "trunk", f"{leg}_thigh", (x, y, 0.0), HIP_LIMITS)
        lines += _hinge(f"{leg}_knee", f"{leg}_thigh", f"{leg}_shin", (0.0, 0.0, -LEG), KNEE_LIMITS)
    lines.append("</robot>")
    return "\n".join(lines) + "\n"


def write_bundled(folder: str | Path) -> list[Path]:
    """Write ``quadruped.urdf`` into ``folder``; returns the paths written."""
    path = Path(folder) / "quadruped.urdf"
    path.write_bytes(quadruped_urdf().encode("utf-8"))
    return [path]
