"""A contact the joints can hardly move along its normal (stepper.RECOVERY_ENERGY_FACTOR):
its penetration recovery is bounded in energy, and the step that would exceed the bound is
named (pybullet_data's laikago rotated upright in miniature, docs/results.md, "robust").

The set-up: a pendulum (hinge about y at height h, a point mass m = 1 kg at distance L = 0.5 m,
a sphere of radius R there) hangs at theta = 0.01 rad from the vertical with its sphere
D = 1 mm into the floor, no friction. The contact's normal is z; the hinge moves the sphere's
centre along z at L sin(theta) per rad/s, so the contact's Delassus entry is
K = (L sin theta)^2 / I (I ~ m L^2 about the hinge): 1e-4 / m. Asking the row to open at the
recovery speed r = min(k D / dt, v_max) = 0.2 m/s takes the impulse r / K and gives the
pendulum 1/2 r^2 / K ~ 200 J (energy_sources.py), against the bound
RECOVERY_ENERGY_FACTOR x 1/2 m v_max^2 = 1.25 J. A hinge at theta = 0 exactly cannot open
the contact at all (K = 0: no solution, the softened retries take it).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mbsim.io.scenario import load_scenario_text
from mbsim.simcore import stepper
from mbsim.simulator import Simulator

L, R, D, THETA, M = 0.5, 0.02, 1e-3, 0.01, 1.0  # m, m, m, rad, kg
H = L * math.cos(THETA) + R - D  # hinge height: the sphere's bottom D below z = 0

PENDULUM = f"""<?xml version="1.0"?>
<robot name="p">
  <link name="world"/>
  <link name="arm">
    <inertial><origin xyz="0 0 {-L}"/><mass value="{M}"/>
      <inertia ixx="1e-5" ixy="0" ixz="0" iyy="1e-5" iyz="0" izz="1e-5"/></inertial>
    <collision><origin xyz="0 0 {-L}"/><geometry><sphere radius="{R}"/></geometry></collision>
  </link>
  <joint name="hinge" type="continuous"><parent link="world"/><child link="arm"/>
    <origin xyz="0 0 {H}" rpy="0 {THETA} 0"/><axis xyz="0 1 0"/>
  </joint>
</robot>
"""


def _sim(tmp_path) -> Simulator:
    (tmp_path / "p.urdf").write_text(PENDULUM)
    text = f"""
[simulation]
duration = 0.2
dt = 0.001
[robot.p]
urdf = "p.urdf"
[contact]
floor = true
mu = 0.0
[output]
path = "{tmp_path / "run.h5"}"
"""
    return Simulator(load_scenario_text(text, base_dir=tmp_path))


def _kinetic(sim) -> float:
    st = sim.stepper
    return st._kinetic(sim.q, sim.v)


def test_without_the_bound_the_first_step_injects_hundreds_of_joules(tmp_path, monkeypatch):
    """The premise: full recovery of the nearly locked contact is accepted by the LCP and
    gives the pendulum 1/2 r^2 / K (module docstring) in one step."""
    monkeypatch.setattr(stepper, "RECOVERY_ENERGY_FACTOR", math.inf)
    sim = _sim(tmp_path)
    report = sim.step()
    r = 0.2  # m/s: k D / dt, below v_max
    inertia = M * L * L + 1e-5
    expected = 0.5 * r * r * inertia / (L * math.sin(THETA)) ** 2  # ~200 J
    assert report.recovery_scale == 1.0
    assert report.energy_stabilisation == pytest.approx(expected, rel=0.05)
    assert _kinetic(sim) > 100.0


def test_the_recovery_energy_is_bounded_and_the_step_named(tmp_path):
    sim = _sim(tmp_path)
    bound = sim.stepper.recovery_energy_bound()
    assert bound == pytest.approx(stepper.RECOVERY_ENERGY_FACTOR * 0.5 * M * 0.5**2)
    first = sim.step()
    assert first.recovery_scale < 1.0
    reason = first.softened_reason
    assert "at step 0" in reason and "'arm' on world" in reason and "hardly move" in reason
    assert f"{bound:.3g} J" in reason
    energies = [first.energy_stabilisation]
    for _ in range(199):
        energies.append(sim.step().energy_stabilisation)
    assert max(energies) <= bound
    # the pendulum stays in its small swing about the vertical: no energy from the floor
    assert _kinetic(sim) < 0.05
    assert np.all(np.isfinite(sim.v))
