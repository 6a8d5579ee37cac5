"""PyBullet's ``<plane>`` collision (pybullet_data/plane_implicit.urdf) as a half-space: a box
dropped on a plane environment rests at the closed-form height, on a flat and on a tilted
plane, and a scene refuses two different ground half-spaces (issue 19).

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

from mbsim.errors import MbsimError
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


def test_two_different_ground_planes_are_refused(tmp_path):
    plane = _files(tmp_path)
    with pytest.raises(MbsimError, match=r"one ground half-space.*ground/planeLink") as info:
        _drop(tmp_path, plane, (0.0, 0.0, 0.25), (0.0, 0.0, 0.0), (0.0, 0.0, 0.4), floor=True,
              duration=0.001)  # fmt: skip
    assert "\n" not in str(info.value)


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
