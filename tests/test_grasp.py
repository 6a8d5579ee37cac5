"""Grasping with redundant face contacts (issue 14, section 1), against closed-form statics.

The set-up is the bundled sample ``sample:gripper-lift.toml``: a palm on a prismatic z joint,
two prismatic fingers squeezing a 0.5 kg cube with F = 10 N each (PD, kp 1000 N/m, 0.01 m past
the face), box pads touching the cube's faces at 4 coplanar corners, the cube on the floor
at 4 more. Holding needs mu >= m g / (2 F) (Coulomb on the two faces), 0.245 here; the palm's
largest acceleration, a = 1 m/s^2 at the start of the lift, raises that to m (g + a) / (2 F)
= 0.27 for a moment, still below 1.2 x 0.245.
"""

import numpy as np
import pytest

from mbsim.io.scenario import load_scenario
from mbsim.simulator import Simulator

M_BOX, G, SQUEEZE = 0.5, 9.81, 10.0
MU_NEEDED = M_BOX * G / (2 * SQUEEZE)


def gripper(mu, **overrides):
    sc = load_scenario("sample:gripper-lift.toml", overrides={"contact.mu": mu, **overrides})
    sim = Simulator(sc)
    m = sim.model
    names = list(m.q_names)
    box = m.qi[[i for i in range(m.nb) if m.body_names[i].endswith("box")][0]]
    palm = [i for i, n in enumerate(names) if n.endswith("palm_lift")][0]
    return sim, box + 2, palm


def run(sim, duration, box_z, palm):
    """Step to ``duration`` (s); returns (box z, palm z, stick/slip events after the first
    contact of each pair) as arrays/counts."""
    zs, ps, chatter = [], [], 0
    while sim.t < duration - 1e-12:
        report = sim.step()
        rows, _ = sim.events_of(report)
        chatter += sum(1 for r in rows if r[0] in ("slip", "stick"))
        zs.append(sim.q[box_z])
        ps.append(sim.q[palm])
    return np.array(zs), np.array(ps), chatter


@pytest.mark.parametrize("factor", [1.2, 2.45, 4.1])  # mu = 0.294, 0.6, 1.0
def test_the_grasp_holds_without_creep(factor):
    """mu >= 1.2 x the needed mu: the cube rides with the fingers; its height relative to the
    palm changes by less than 0.1 mm over 2 s (before: 6.9 mm at mu 1.0, 25 mm at 0.3)."""
    sim, box_z, palm = gripper(factor * MU_NEEDED)
    z, p, _ = run(sim, 2.0, box_z, palm)
    rel = z - p
    assert np.max(np.abs(rel - rel[0])) < 1e-4
    assert z[-1] > 0.045  # lifted (the palm's target is 0.05 m)


@pytest.mark.parametrize("factor", [0.6, 0.8])
def test_below_the_needed_mu_the_fingers_slide_and_the_box_stays(factor):
    sim, box_z, palm = gripper(factor * MU_NEEDED)
    z, p, _ = run(sim, 1.0, box_z, palm)
    assert np.max(np.abs(z)) < 1e-4  # on the floor (z relative to its start)
    assert p[-1] > 0.05  # the palm and fingers slid up along the cube


def schedule(duration, mu=0.6):
    """Grasp, lift, hold, lower, release and leave, over ``duration`` s: the joint forces
    (N) of the gripper as a function of (t, q, v), phases in fractions of the duration."""
    sim, box_z, palm = gripper(mu)
    m = sim.model
    idx = {n.split("/")[-1]: i for i, n in enumerate(m.q_names)}
    pl, fl, fr = idx["palm_lift"], idx["finger_left"], idx["finger_right"]
    vpl, vfl, vfr = (m.vi[[i for i in range(m.nb) if m.joint_names[i].endswith(n)][0]]
                     for n in ("palm_lift", "finger_left", "finger_right"))  # fmt: skip

    def ramp(s, a, b, lo, hi):
        x = np.clip((s - a) / (b - a), 0.0, 1.0)
        return lo + (hi - lo) * 0.5 * (1.0 - np.cos(np.pi * x))

    def torque(t, q, v):
        s = t / duration
        up = ramp(s, 0.05, 0.25, 0.0, 0.04) - ramp(s, 0.6, 0.7, 0.0, 0.04)
        up = up + ramp(s, 0.8, 0.95, 0.0, 0.05)  # after the release: leave
        carrying = 0.05 <= s < 0.75
        finger = 0.01 if s < 0.72 else -0.02
        tau = -m.damping * v
        tau[vpl] += (1.0 if carrying else 0.5) * G + 200.0 * (up - q[pl]) - 30.0 * v[vpl]
        tau[vfl] += 1000.0 * (finger - q[fl]) - 20.0 * v[vfl]
        tau[vfr] += 1000.0 * (finger - q[fr]) - 20.0 * v[vfr]
        return tau

    sim.stepper.torque = torque
    return sim, box_z, palm


def check_pick_and_place(duration):
    sim, box_z, palm = schedule(duration)
    z, p, _ = run(sim, duration, box_z, palm)  # a solver failure would raise here
    n = len(z)
    held = slice(int(0.45 * n), int(0.6 * n))  # after the ramp and the PD lag (~0.15 s)
    assert np.min(z[held]) > 0.035  # lifted by the 0.04 m ramp and held
    assert abs(z[-1]) < 1e-3  # put back on the floor and left there
    assert p[-1] > 0.04  # the gripper went away


def test_grasp_lift_hold_release_short():
    check_pick_and_place(2.0)


@pytest.mark.slow
def test_grasp_lift_hold_release_10s():
    check_pick_and_place(10.0)


def test_box_squeezed_between_two_pads_shows_no_chatter():
    """No floor: the cube hangs between the pads (4 corners each) on friction alone, mu 0.6:
    no stick/slip event and no slip (< 1 um) in 1 s."""
    sim, box_z, palm = gripper(
        0.6, **{"contact.floor": False, "robot.gripper.pd.palm_lift.target": 0.0}
    )
    z, p, chatter = run(sim, 1.0, box_z, palm)
    assert chatter == 0
    rel = z - p
    assert np.max(np.abs(rel - rel[0])) < 1e-6


def test_box_resting_on_four_corners_shows_no_chatter(tmp_path):
    """The cube alone on the floor with a 1 N push along x, below mu m g = 2.45 N: it sticks
    on its 4 corners, no stick/slip events, no motion (< 1 um) in 1 s."""
    toml = tmp_path / "rest.toml"
    toml.write_text(
        '[simulation]\nduration = 1.0\ndt = 1e-3\n\n[robot.box]\nurdf = "sample:gripper-box"\n'
        'base = "floating"\nbase_pose = { xyz = [0.0, 0.0, 0.025], rpy = [0.0, 0.0, 0.0] }\n'
        'torque = { "root_joint.vx" = 1.0 }\n\n[contact]\nfloor = true\nmu = 0.5\n'
    )
    sim = Simulator(load_scenario(toml))
    chatter, xs = 0, []
    while sim.t < 1.0 - 1e-12:
        rows, _ = sim.events_of(sim.step())
        chatter += sum(1 for r in rows if r[0] in ("slip", "stick"))
        xs.append(sim.q[0])
    assert chatter == 0
    assert np.max(np.abs(xs)) < 1e-6


def test_the_gripper_sample_is_listed():
    from typer.testing import CliRunner

    from mbsim.cli.main import app

    out = CliRunner().invoke(app, ["samples", "list"])
    assert out.exit_code == 0
    lines = out.output.split()
    assert {"gripper", "gripper-box", "sample:gripper-lift.toml"} <= set(lines)
