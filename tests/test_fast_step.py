"""The compiled free-motion path (simcore/fast_step.py) against the general step.

Truth: the general OS step (stepper.OSStepper._general_step), which every physics test checks
against Pinocchio and closed forms. The fast path claims the same floating-point operations in
the same order, so q and v must agree bit for bit over runs that go in and out of contact.
"""

from __future__ import annotations

import numpy as np
import pytest

from mbsim.bench import pendulum_scenario
from mbsim.io.scenario import load_scenario, load_scenario_text
from mbsim.samples.catalog import sample_path
from mbsim.simcore.fast_step import FreeStepper
from mbsim.simulator import Simulator


def _run(scenario, steps, fast, monkeypatch):
    with monkeypatch.context() as mp:
        if not fast:
            mp.setattr(FreeStepper, "eligible", staticmethod(lambda stepper: False))
        sim = Simulator(scenario)
        qs, vs, nc = [], [], []
        for _ in range(steps):
            rep = sim.step()
            qs.append(sim.q.copy())
            vs.append(sim.v.copy())
            nc.append(rep.n_contacts)
    return np.array(qs), np.array(vs), np.array(nc)


def test_pendulum_in_and_out_of_contact_bit_for_bit(monkeypatch):
    # pendulum-12 at dt = 1 ms meets the floor and itself from step ~2250 on: free steps,
    # contact steps and free steps between contacts all happen
    sc = pendulum_scenario(12, "os", 3.0, 1e-3)
    q1, v1, nc = _run(sc, 3000, True, monkeypatch)
    q0, v0, nc0 = _run(sc, 3000, False, monkeypatch)
    assert nc.any() and not nc.all(), "the run must contain free and contact steps"
    np.testing.assert_array_equal(nc, nc0)
    np.testing.assert_array_equal(q1, q0)
    np.testing.assert_array_equal(v1, v0)


def test_damped_floating_panda_bit_for_bit(monkeypatch):
    # free motion with implicit joint damping (data.armature = dt d) and a floating base (the
    # quaternion integration): no collision geometry is touched
    text = f"""[simulation]
duration = 0.2
dt = 1e-3
[robot.panda]
urdf = "{sample_path("panda")}"
base = "floating"
q0 = {{ panda_joint2 = 0.5, panda_joint4 = -1.0 }}
v0 = {{ panda_joint1 = 2.0 }}
[contact]
floor = false
self_collision = false
[output]
path = "/dev/null"
"""
    sc = load_scenario_text(text, source="<panda free>")
    q1, v1, _ = _run(sc, 200, True, monkeypatch)
    q0, v0, _ = _run(sc, 200, False, monkeypatch)
    np.testing.assert_array_equal(q1, q0)
    np.testing.assert_array_equal(v1, v0)


def test_panda_table_pd_and_contact_bit_for_bit(monkeypatch):
    # implicit PD gains (data.armature changed by the torque callback every step), free steps
    # until the hand lands at ~0.15 s, mesh-box contact steps after
    sc = load_scenario("sample:panda-table.toml", overrides={"simulation.duration": 0.25})
    q1, v1, nc = _run(sc, 250, True, monkeypatch)
    q0, v0, nc0 = _run(sc, 250, False, monkeypatch)
    assert nc.any() and not nc.all(), "the run must contain free and contact steps"
    np.testing.assert_array_equal(nc, nc0)
    np.testing.assert_array_equal(q1, q0)
    np.testing.assert_array_equal(v1, v0)


def test_controller_called_once_a_step_on_both_paths():
    sc = load_scenario("sample:panda-table.toml", overrides={"simulation.duration": 0.25})
    sim = Simulator(sc)
    calls = []

    def controller(t, q, v, s):
        calls.append(t)
        return np.zeros(s.model.nv)

    sim.run(controller=controller)
    assert len(calls) == 250
    assert len(set(calls)) == 250


def test_rk4_takes_the_general_path():
    sim = Simulator(pendulum_scenario(3, "os", 0.01, 1e-3))
    assert FreeStepper.eligible(sim.stepper)
    sim.stepper.configure(integrator="rk4", mu=0.0)
    assert not FreeStepper.eligible(sim.stepper)


@pytest.mark.parametrize("formulation", ["nmc"])
def test_always_solving_formulation_takes_the_general_path(formulation):
    sim = Simulator(pendulum_scenario(3, formulation, 0.01, 1e-3))
    assert not FreeStepper.eligible(sim.stepper)
