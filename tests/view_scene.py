"""A small scene for the `mbsim view` tests: a pendulum whose bar is an STL mesh (inline URDF
colour) and whose tip is a sphere on a fixed-joint child link (named URDF material), swinging
from 1.2 rad, and a ball dropped onto the floor beside it (contacts and an impact), 0.3 s at
dt = 1 ms."""

from __future__ import annotations

from pathlib import Path

PIVOT_Z = 0.5  # m; the swinging tip stays clear of the floor
BAR = (0.04, 0.04, 0.3)  # m, the mesh's box extents
BAR_RGBA = (0.9, 0.3, 0.1, 1.0)
TIP_RGBA = (0.1, 0.2, 0.9, 1.0)
TIP_RADIUS = 0.06
Q0 = 1.2  # rad

URDF = f"""<?xml version="1.0"?>
<robot name="pend">
  <material name="blue"><color rgba="{" ".join(map(str, TIP_RGBA))}"/></material>
  <link name="base">
    <visual><geometry><box size="0.1 0.1 0.02"/></geometry></visual>
  </link>
  <joint name="j1" type="revolute">
    <origin xyz="0 0 {PIVOT_Z}"/>
    <parent link="base"/><child link="bar"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="10"/>
  </joint>
  <link name="bar">
    <inertial><origin xyz="0 0 -0.15"/><mass value="1.0"/>
      <inertia ixx="0.0076" iyy="0.0076" izz="0.0003" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0 0 -0.15"/><geometry><mesh filename="bar.stl"/></geometry>
      <material name="orange"><color rgba="{" ".join(map(str, BAR_RGBA))}"/></material></visual>
    <collision><origin xyz="0 0 -0.15"/><geometry><box size="0.04 0.04 0.3"/></geometry></collision>
  </link>
  <joint name="tipj" type="fixed">
    <origin xyz="0 0 -0.3"/><parent link="bar"/><child link="tip"/>
  </joint>
  <link name="tip">
    <inertial><mass value="0.5"/>
      <inertia ixx="0.0007" iyy="0.0007" izz="0.0007" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><sphere radius="{TIP_RADIUS}"/></geometry><material name="blue"/></visual>
    <collision><geometry><sphere radius="{TIP_RADIUS}"/></geometry></collision>
  </link>
</robot>
"""


BALL = """<?xml version="1.0"?>
<robot name="ball">
  <link name="ball">
    <inertial><mass value="1.0"/>
      <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><sphere radius="0.05"/></geometry></visual>
    <collision><geometry><sphere radius="0.05"/></geometry></collision>
  </link>
</robot>
"""

SCENARIO = f"""
[simulation]
duration = 0.3
dt = 1e-3

[robot.pend]
urdf = "pend.urdf"
q0 = {{ j1 = {Q0} }}

[robot.ball]
urdf = "ball.urdf"
base = "floating"
q0 = {{ "root_joint.x" = 0.4, "root_joint.z" = 0.15 }}

[contact]
floor = true

[output]
record_contacts = true
"""


def make_results(folder: Path) -> Path:
    """Write the URDF, its STL and run it; returns the results file."""
    import trimesh

    from mbsim.io.scenario import load_scenario
    from mbsim.simulator import Simulator

    trimesh.creation.box(extents=BAR).export(folder / "bar.stl")
    (folder / "pend.urdf").write_text(URDF)
    (folder / "ball.urdf").write_text(BALL)
    (folder / "scene.toml").write_text(SCENARIO)
    out = folder / "pend.h5"
    sim = Simulator(load_scenario(folder / "scene.toml", overrides={"output.path": str(out)}))
    with sim.open_writer("test") as writer:
        sim.run(writer)
    return out
