"""PyBullet's ``<plane>`` collision (pybullet_data/plane_implicit.urdf) as a half-space: a box
dropped on a plane environment rests at the closed-form height, on a flat and on a tilted
plane, and a scene takes any number of different ground half-spaces, each with its contacts
(issue 19): a box on a raised plane above the floor, a sphere in the wedge of two planes.

Closed form: a box of height h resting on a face over the plane n . x = d has its centre at
signed distance h / 2 from the plane. Tolerance 1e-3 m: the contact margin (1e-3 m, contact
pairs closer than that are in contact) bounds the gap at rest, and the Euler stepper's
penetration correction keeps the penetration far below it (the built-in floor's own tests use
the same bound).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mbsim.io.scenario import load_scenario_text
from mbsim.io.urdf import load_urdf
from mbsim.simcore.spatial import rpy_matrix
from mbsim.simulator import Simulator

TOL = 1e-3  # m (module docstring)
BOX = (0.2, 0.3, 0.1)  # m, full sides; it rests on its 0.2 x 0.3 face, h = 0.1

PLANE_URDF = """<?xml version="1.0"?>
<robot name="plane">
  <link name="planeLink">
    <inertial><mass value="0"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>
    </inertial>
    <collision><origin xyz="0 0 0" rpy="0 0 0"/><geometry><plane normal="{normal}"/></geometry>
    </collision>
  </link>
</robot>
"""

BOX_URDF = f"""<?xml version="1.0"?>
<robot name="box">
  <link name="box">
    <inertial><mass value="1.0"/>
      <inertia ixx="0.00833" ixy="0" ixz="0" iyy="0.00417" iyz="0" izz="0.01083"/></inertial>
    <collision><geometry><box size="{BOX[0]} {BOX[1]} {BOX[2]}"/></geometry></collision>
  </link>
</robot>
"""


def _files(tmp_path, normal="0 0 1"):
    (tmp_path / "plane.urdf").write_text(PLANE_URDF.format(normal=normal))
    (tmp_path / "box.urdf").write_text(BOX_URDF)
    return tmp_path / "plane.urdf"


def _drop(tmp_path, plane: Path, plane_xyz, plane_rpy, box_xyz, floor=False, duration=1.0):
    text = f"""
[simulation]
duration = {duration}
dt = 1e-3
[robot.box]
urdf = "box.urdf"
base = "floating"
base_pose = {{ xyz = {[float(v) for v in box_xyz]}, rpy = {list(plane_rpy)} }}
[environment.ground]
urdf = "{plane}"
base_pose = {{ xyz = {list(plane_xyz)}, rpy = {list(plane_rpy)} }}
[contact]
floor = {str(floor).lower()}
mu = 0.5
"""
    sim = Simulator(load_scenario_text(text, base_dir=tmp_path))
    for _ in range(int(round(duration / 1e-3))):
        sim.step()
    return sim


def test_loader_keeps_the_plane_as_a_half_space(tmp_path):
    plane = _files(tmp_path, normal="0 0 2")
    spec = load_urdf(plane)
    link = spec.link("planeLink")
    assert link.collisions == []
    (half,) = link.planes
    assert half.kind == "plane" and half.params == (0.0, 0.0, 1.0)  # normalised


@pytest.mark.parametrize("height", [0.0, 0.25])
def test_box_rests_on_a_plane_environment(tmp_path, height):
    plane = _files(tmp_path)
    h = BOX[2]
    sim = _drop(tmp_path, plane, (0.0, 0.0, height), (0.0, 0.0, 0.0), (0.1, -0.2, height + 0.1))
    z = sim.q[sim.q_index["box/root_joint.z"]] + height + 0.1
    assert abs(z - (height + h / 2)) < TOL
    assert np.abs(sim.v).max() < 1e-3
    assert "ground" in sim.scene.links[sim.scene.ground_index]


def test_box_rests_on_a_tilted_plane(tmp_path):
    """A plane turned 0.15 rad about x: the box (mu 0.5 > tan 0.15) sticks, its centre h/2
    from the plane along the plane's normal."""
    plane = _files(tmp_path)
    rpy = (0.15, 0.0, 0.0)
    R = rpy_matrix(rpy)
    n = R[:, 2]
    start = n * (BOX[2] / 2 + 0.02)
    sim = _drop(tmp_path, plane, (0.0, 0.0, 0.0), rpy, start)
    offset = np.array([sim.q[sim.q_index[f"box/root_joint.{c}"]] for c in "xyz"])
    centre = start + offset
    assert abs(n @ centre - BOX[2] / 2) < TOL
    assert np.abs(sim.v).max() < 1e-3


def test_plane_at_z0_is_the_floor(tmp_path):
    """--floor and a <plane> at z = 0 are the same half-space: one ground."""
    plane = _files(tmp_path)
    sim = _drop(tmp_path, plane, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.1), floor=True)
    z = sim.q[sim.q_index["box/root_joint.z"]] + 0.1
    assert abs(z - BOX[2] / 2) < TOL


def test_box_rests_on_a_raised_plane_above_the_floor(tmp_path):
    """The floor and a <plane> 0.25 m above it are two half-spaces: the box, dropped onto the
    raised one, rests on it (centre at 0.25 + h / 2), every contact against that plane."""
    plane = _files(tmp_path)
    height = 0.25
    sim = _drop(tmp_path, plane, (0.0, 0.0, height), (0.0, 0.0, 0.0), (0.0, 0.0, height + 0.1),
                floor=True)  # fmt: skip
    scene = sim.scene
    assert len(scene.ground_indices) == 2
    assert [scene.links[g] for g in scene.ground_indices] == ["builtin/floor", "ground/planeLink"]
    z = sim.q[sim.q_index["box/root_joint.z"]] + height + 0.1
    assert abs(z - (height + BOX[2] / 2)) < TOL
    assert np.abs(sim.v).max() < 1e-3
    result = sim.step()
    points = result.contact_points
    assert len(points) == 4  # the box's four bottom corners
    assert set(result.contacts.geom_b) == {scene.ground_indices[1]}
    assert sum(p.normal_force for p in points) == pytest.approx(9.81, rel=1e-3)


SPHERE_URDF = """<?xml version="1.0"?>
<robot name="ball">
  <link name="ball">
    <inertial><mass value="{m}"/>
      <inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial>
    <collision><geometry><sphere radius="{r}"/></geometry></collision>
  </link>
</robot>
"""


def test_sphere_rests_in_a_wedge_of_two_planes(tmp_path):
    """Two <plane>s through the x axis, turned by -+theta about x, make a V-shaped trough
    with unit normals n1,2 = (0, +-sin theta, cos theta). A frictionless sphere (radius r,
    mass m) rests on its floor with its centre at z = r / cos theta on the x axis, touching
    each plane at one point with that plane's normal and a normal force N = m g /
    (2 cos theta) (vertical balance 2 N cos theta = m g; frictionless, so the solution is
    unique). Tolerances: position 1e-3 m (TOL), normals 1e-9 (exact kernel), forces 1e-3
    relative (the rest state's residual velocity, < 1e-3 m/s, over a step)."""
    theta, r, m, g = 0.4, 0.1, 2.0, 9.81
    _files(tmp_path)
    (tmp_path / "ball.urdf").write_text(SPHERE_URDF.format(m=m, r=r, i=0.4 * m * r * r))
    plane = tmp_path / "plane.urdf"
    z0 = r / np.cos(theta) + 0.02
    text = f"""
[simulation]
duration = 1.0
dt = 1e-3
[robot.ball]
urdf = "ball.urdf"
base = "floating"
base_pose = {{ xyz = [0.0, 0.0, {z0}] }}
[environment.left]
urdf = "{plane}"
base_pose = {{ rpy = [{-theta}, 0.0, 0.0] }}
[environment.right]
urdf = "{plane}"
base_pose = {{ rpy = [{theta}, 0.0, 0.0] }}
[contact]
mu = 0.0
"""
    sim = Simulator(load_scenario_text(text, base_dir=tmp_path))
    for _ in range(1000):
        sim.step()
    centre = np.array([sim.q[sim.q_index[f"ball/root_joint.{c}"]] for c in "xyz"])
    centre[2] += z0
    assert np.allclose(centre, [0.0, 0.0, r / np.cos(theta)], atol=TOL)
    assert np.abs(sim.v).max() < 1e-3
    points = sim.step().contact_points
    expected = {
        "left/planeLink": np.array([0.0, np.sin(theta), np.cos(theta)]),
        "right/planeLink": np.array([0.0, -np.sin(theta), np.cos(theta)]),
    }
    by_plane = {sim.scene.links[g]: g for g in sim.scene.ground_indices}
    assert set(by_plane) == set(expected)
    assert len(points) == 2
    normals = {tuple(np.round(p.normal, 9)) for p in points}
    assert normals == {tuple(np.round(n, 9)) for n in expected.values()}
    for p in points:
        assert p.normal_force == pytest.approx(m * g / (2 * np.cos(theta)), rel=1e-3)


def test_pybullet_plane_implicit(tmp_path):
    """The file itself, from pybullet_data (when pybullet is installed)."""
    pybullet_data = pytest.importorskip("pybullet_data", reason="pybullet is not installed")
    plane = Path(pybullet_data.getDataPath()) / "plane_implicit.urdf"
    _files(tmp_path)
    sim = _drop(tmp_path, plane, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.1))
    z = sim.q[sim.q_index["box/root_joint.z"]] + 0.1
    assert abs(z - BOX[2] / 2) < TOL


def test_info_lists_the_plane(tmp_path):
    import json

    from typer.testing import CliRunner

    from mbsim.cli.main import app

    plane = _files(tmp_path, normal="0 0 1")
    result = CliRunner().invoke(app, ["info", str(plane), "--json"])
    assert result.exit_code == 0, result.output
    text = result.output
    summary = json.loads(text[text.index("{") :])
    assert summary["planes"] == [{"link": "planeLink", "static": True, "normal": [0.0, 0.0, 1.0]}]
    text = CliRunner().invoke(app, ["info", str(plane)]).output
    assert "<plane> on link 'planeLink' (a ground half-space)" in text
