"""Closed-loop sample: a planar four-bar linkage built as a tree plus one loop closure.

URDF cannot describe a kinematic loop, so the four-bar is written as a tree -- the crank and
the coupler in series from the ground pivot O2, the rocker alone from the ground pivot O4 --
and the scenario ``fourbar.toml`` closes it with a ``ball`` closure joining the coupler's tip
to the rocker's tip. Same conventions as generators.py: SI units, z up, gravity along -z,
hinges about +y so the mechanism moves in the x-z plane.

Dimensions (m): ground O2-O4 = 0.4, crank 0.1, coupler 0.35, rocker 0.3. Grashof: the
shortest plus the longest (0.1 + 0.4) is less than the other two (0.35 + 0.3), and the
shortest is the crank, so this is a crank-rocker: the crank can turn full circles.

Regenerate the bundled file with::

    PYTHONPATH=src python -c "import mbsim.samples.linkages as g; \
g.write_bundled('src/mbsim/sample_robots')"
"""

from __future__ import annotations

from pathlib import Path

from mbsim.samples.generators import _HEADER, _NOTICE, _box_inertia, _inertial, _num, _shape

#: Four-bar link lengths (m): ground (O2 to O4), crank, coupler, rocker.
GROUND, CRANK, COUPLER, ROCKER = 0.4, 0.1, 0.35, 0.3
#: Height of the ground pivots above the floor (m) and the bars' mass per metre (kg/m).
PIVOT_HEIGHT = 1.0
BAR_DENSITY = 2.0
#: Square cross-section of every bar (m).
BAR_SECTION = 0.02


def _bar(name: str, length: float) -> list[str]:
    """A slender box bar along +x from its frame origin (the hinge) to x = length."""
    mass = BAR_DENSITY * length
    size = f'<box size="{_num(length)} {_num(BAR_SECTION)} {_num(BAR_SECTION)}"/>'
    centre = (length / 2.0, 0.0, 0.0)
    return [
        f'  <link name="{name}">',
        *_inertial(mass, centre, _box_inertia(mass, length, BAR_SECTION, BAR_SECTION)),
        *_shape("visual", centre, size),
        "  </link>",
    ]


def _hinge(name: str, parent: str, child: str, xyz: tuple[float, float, float]) -> list[str]:
    x, y, z = xyz
    return [
        f'  <joint name="{name}" type="continuous">',
        f'    <parent link="{parent}"/>',
        f'    <child link="{child}"/>',
        f'    <origin xyz="{_num(x)} {_num(y)} {_num(z)}" rpy="0.0 0.0 0.0"/>',
        '    <axis xyz="0.0 1.0 0.0"/>',
        "  </joint>",
    ]


def fourbar_urdf() -> str:
    """URDF text of the four-bar's spanning tree (robot ``fourbar``).

    ``crank_joint`` at O2 = (0, 0, PIVOT_HEIGHT) in the world, ``coupler_joint`` at the
    crank's tip (CRANK, 0, 0) in the crank frame, ``rocker_joint`` at O4 = (GROUND, 0,
    PIVOT_HEIGHT). A bar frame is at its hinge with the bar along +x, so a joint angle q
    about +y points the bar along (cos q, 0, -sin q). The loop is closed in the scenario:
    coupler tip (COUPLER, 0, 0) to rocker tip (ROCKER, 0, 0), both in their link frames.
    """
    lines = [
        _HEADER.rstrip("\n"),
        _NOTICE.replace("generators.{func}", "linkages.fourbar_urdf").rstrip("\n"),
    ]
    lines.append('<robot name="fourbar">')
    lines.append('  <link name="world"/>')
    lines += _bar("crank", CRANK)
    lines += _bar("coupler", COUPLER)
    lines += _bar("rocker", ROCKER)
    lines += _hinge("crank_joint", "world", "crank", (0.0, 0.0, PIVOT_HEIGHT))
    lines += _hinge("coupler_joint", "crank", "coupler", (CRANK, 0.0, 0.0))
    lines += _hinge("rocker_joint", "world", "rocker", (GROUND, 0.0, PIVOT_HEIGHT))
    lines.append("</robot>")
    return "\n".join(lines) + "\n"


def write_bundled(folder: str | Path) -> list[Path]:
    """Write ``fourbar.urdf`` into ``folder``; returns the paths written."""
    path = Path(folder) / "fourbar.urdf"
    path.write_text(fourbar_urdf(), encoding="utf-8")
    return [path]
