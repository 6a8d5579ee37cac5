"""A start pose outside the joint limits whose recovery a contact contradicts (issue 19, ERD
kinova in miniature): the step is solved again with softened recovery, the run goes on, the
start is named before the first step and the softened steps are counted in the summary
(simcore/stepper.py, "Softened recovery").

The set-up: an arm (a box of length L, width w, hinge at the origin about z, gravity along -z:
no gravity torque) starts at q = 0 below its lower limit 0.1 rad, its +y face parallel to a
static wall at gap g0 = 0.1 mm. The limit row asks the joint to turn back at the recovery speed
min(k |q - lower| / dt, v_max) = v_max = 0.5 rad/s, moving the arm's tip corner towards the
wall by L v_max dt = 0.25 mm in the step, while the contact row lets it close only g0: no
velocity meets both rows and the step's LCP has no solution (the test with the softening
switched off fails there). Closed form of what follows: each step at a tenth of the recovery
closes L v_max dt / 10 = 0.025 mm of the gap until that is more than is left, then the step at
scale 0 has v+ = 0 (no force drives the arm). The arm ends at rest with its tip corner against
the wall: angle theta with L sin theta + (w / 2)(cos theta - 1) = g0 - g_end, the gap left
g_end in [0, L v_max dt / 10], still below the lower limit.

Tolerances: angles 1e-6 rad (the LCP's 1e-9 relative residual on impulses of ~1e-3 N s, over
1000 steps), speed 1e-6 rad/s.
"""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from mbsim.io.scenario import load_scenario_text
from mbsim.simcore import stepper
from mbsim.simcore.stepper import SimulationError
from mbsim.simulator import Simulator

L, W, H = 0.5, 0.04, 0.04  # m, the arm box
G0 = 1e-4  # m, the start gap to the wall
LOWER, UPPER = 0.1, 1.0  # rad
V_MAX, DT = 0.5, 1e-3  # rad/s (contact.max_recovery_speed, its default), s
TOL = 1e-6

ARM = f"""<?xml version="1.0"?>
<robot name="arm">
  <link name="world"/>
  <link name="arm">
    <inertial><origin xyz="{L / 2} 0 0"/><mass value="1"/>
      <inertia ixx="0.0003" ixy="0" ixz="0" iyy="0.021" iyz="0" izz="0.021"/></inertial>
    <collision><origin xyz="{L / 2} 0 0"/><geometry><box size="{L} {W} {H}"/></geometry>
    </collision>
  </link>
  <joint name="hinge" type="revolute"><parent link="world"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="{LOWER}" upper="{UPPER}" effort="10" velocity="5"/>
  </joint>
</robot>
"""

WALL = """<?xml version="1.0"?>
<robot name="wall">
  <link name="wall">
    <collision><geometry><box size="1.0 0.1 0.2"/></geometry></collision>
  </link>
</robot>
"""


def _sim(tmp_path, duration=0.5) -> Simulator:
    (tmp_path / "arm.urdf").write_text(ARM)
    (tmp_path / "wall.urdf").write_text(WALL)
    text = f"""
[simulation]
duration = {duration}
dt = {DT}
[robot.arm]
urdf = "arm.urdf"
[environment.wall]
urdf = "wall.urdf"
base_pose = {{ xyz = [{L / 2}, {W / 2 + G0 + 0.05}, 0.0] }}
[output]
path = "{tmp_path / "run.h5"}"
"""
    return Simulator(load_scenario_text(text, base_dir=tmp_path))


def _touch_angle(gap_left: float) -> float:
    """theta with L sin theta + (w / 2)(cos theta - 1) = G0 - gap_left (Newton)."""
    theta = (G0 - gap_left) / L
    for _ in range(20):
        f = L * np.sin(theta) + W / 2 * (np.cos(theta) - 1.0) - (G0 - gap_left)
        theta -= f / (L * np.cos(theta) - W / 2 * np.sin(theta))
    return theta


def test_the_start_outside_the_limits_is_named_before_the_first_step(tmp_path):
    sim = _sim(tmp_path)
    (note,) = [n for n in sim.lint if "outside their limits" in n]
    assert "arm.urdf" in note and "'hinge' = 0 rad, below its lower limit 0.1 rad" in note
    assert "\n" not in note


def test_without_softening_the_step_has_no_solution(tmp_path, monkeypatch):
    """The premise: with full recovery the step's LCP fails (no solution exists)."""
    monkeypatch.setattr(stepper, "RECOVERY_RETRY_SCALES", ())
    sim = _sim(tmp_path)
    with pytest.raises(SimulationError):
        sim.step()


def test_softened_recovery_rests_the_arm_against_the_wall(tmp_path):
    sim = _sim(tmp_path)
    scales = []
    for _ in range(500):
        scales.append(sim.step().recovery_scale)
    # the first steps close the gap at a tenth of the recovery, then scale 0 holds the arm
    assert scales[0] == pytest.approx(0.1)
    assert 0.0 in scales and set(scales) <= {1.0, 0.1, 0.0}
    theta = float(sim.q[sim.q_index["arm/hinge"]])
    step = L * V_MAX * DT / 10  # m, the gap a step at a tenth of the recovery closes
    assert _touch_angle(step) - TOL <= theta <= _touch_angle(0.0) + TOL
    assert theta < LOWER
    assert abs(float(sim.v[0])) < TOL


def test_the_run_summary_counts_the_softened_steps(tmp_path):
    sim = _sim(tmp_path, duration=0.05)
    summary = sim.run(out=tmp_path / "run.h5")
    assert summary.status == "complete"
    assert summary.softened_steps == 50  # every step: the arm stays past its stop
    assert summary.softened_first.startswith("t = 0.001 s, recovery x 0.1 after: contact")
    assert summary.as_dict()["recovery_softened_steps"] == 50
    with h5py.File(tmp_path / "run.h5") as f:
        assert f["summary"].attrs["recovery_softened_steps"] == 50
        assert f["summary"].attrs["recovery_softened_first"] == summary.softened_first
