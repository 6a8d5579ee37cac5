"""Energy gained per source (issue 20, simcore/energy_sources.py): impacts, penetration
recovery (stabilisation) and loop closures, checked against kinetic energies computed
independently from the recorded velocities (1/2 m v^2 by hand, Pinocchio's kinetic energy for
the four-bar) and against closed-form impact laws."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from analytic_contacts import SpheresOnPlane
from mbsim.io.results import load_results
from mbsim.io.scenario import load_scenario_text
from mbsim.io.urdf import parse_urdf_string
from mbsim.samples.catalog import bundled_dir
from mbsim.samples.linkages import COUPLER, CRANK, GROUND, ROCKER, fourbar_urdf
from mbsim.simcore.bilateral import Bilateral, ClosureSpec
from mbsim.simcore.energy_sources import GAIN_TOL_ABS, EnergyGains
from mbsim.simcore.model import build_model
from mbsim.simcore.spec import Inertial, LinkSpec, RobotSpec
from mbsim.simcore.stepper import OSStepper, StepOptions
from mbsim.simulator import Simulator

G = 9.81  # m/s^2
M_BALL, R_BALL = 2.0, 0.1  # kg, m

BALL_URDF = f"""\
<robot name="ball">
  <link name="ball">
    <inertial>
      <mass value="{M_BALL}"/>
      <inertia ixx="{0.4 * M_BALL * R_BALL**2}" iyy="{0.4 * M_BALL * R_BALL**2}"
               izz="{0.4 * M_BALL * R_BALL**2}" ixy="0" ixz="0" iyz="0"/>
    </inertial>
    <collision><geometry><sphere radius="{R_BALL}"/></geometry></collision>
  </link>
</robot>
"""


def _ball_scenario(tmp_path, z0: float, restitution: float, duration: float) -> str:
    urdf = tmp_path / "ball.urdf"
    urdf.write_text(BALL_URDF)
    return f"""\
[simulation]
duration = {duration!r}
dt = 1e-3
gravity = [0.0, 0.0, {-G!r}]

[robot.ball]
urdf = "{urdf}"
base = "floating"
q0 = {{ "root_joint.z" = {z0!r} }}

[contact]
floor = true
mu = 0.0
restitution = {restitution!r}

[output]
path = "{tmp_path / "ball.h5"}"
"""


def test_a_ball_started_5cm_in_the_floor_reports_the_stabilisation_gain(tmp_path):
    """A 2 kg ball at rest with its centre 5 cm below the floor's surface distance (gap -5 cm).
    Step 1: the recovery row asks for n . v+ = max_recovery_speed (0.5 m/s). Truth from the
    recorded velocities: the kinetic energy 1/2 m v1^2 (0.25 J), and the exact share of the
    recovery row, impulse m (v1 - v0 + g dt) times the mean normal velocity (v0 - g dt + v1)/2
    (energy_sources.py), which differs from 1/2 m v1^2 by 1/2 m (g dt)^2 (4e-4 relative). The
    summary names stabilisation with its largest gain at t = dt, and nothing else."""
    text = _ball_scenario(tmp_path, R_BALL - 0.05, 0.0, 0.2)
    sim = Simulator(load_scenario_text(text))
    out = tmp_path / "ball.h5"
    summary = sim.run(out=out)
    assert summary.status == "complete", summary.message
    r = load_results(out)
    vz = r.v[:, 2]  # root_joint.vz
    dt = 1e-3
    assert r.step[1] == 1 and vz[0] == 0.0
    kinetic_1 = 0.5 * M_BALL * vz[1] ** 2
    assert kinetic_1 == pytest.approx(0.25, rel=1e-9)  # the capped speed, 0.5 m/s
    share_1 = 0.5 * M_BALL * (vz[1] - vz[0] + G * dt) * (vz[0] - G * dt + vz[1])
    stab = summary.energy_sources.sources["stabilisation"]
    assert stab.largest == pytest.approx(share_1, rel=1e-9)
    assert stab.largest == pytest.approx(kinetic_1, rel=5e-4)
    assert stab.time == pytest.approx(dt)
    # while it rises at the capped speed, every step's share is m g dt (r - g dt / 2), the
    # potential energy of its rise (hand formula on the recorded speed): counted too
    r_cap = vz[1]
    rising = int(np.count_nonzero(np.isclose(vz[1:], r_cap, rtol=1e-12)))
    assert stab.steps >= rising > 50
    assert summary.energy_sources.sources["impacts"].steps == 0
    assert summary.energy_sources.sources["closures"].steps == 0
    d = summary.as_dict()["energy_gained"]
    assert d["stabilisation"]["max_J"] == stab.largest and d["impacts"]["steps"] == 0
    with h5py.File(out, "r") as f:
        attrs = f["summary"].attrs
        assert attrs["energy_gain_steps_stabilisation"] == stab.steps
        assert attrs["energy_gain_max_stabilisation"] == pytest.approx(share_1, rel=1e-9)
        assert attrs["energy_gain_time_stabilisation"] == pytest.approx(dt)
        assert attrs["energy_gain_steps_impacts"] == 0
    assert "stabilisation" in summary.energy_sources.text()
    # `mbsim inspect` reads the same tally back from the file
    from mbsim.cli.inspect import render, summarize

    seen = summarize(r)
    assert seen["energy_gained"]["stabilisation"]["max_J"] == pytest.approx(share_1, rel=1e-9)
    assert seen["energy_gained"]["impacts"]["steps"] == 0
    assert f"energy gained: {summary.energy_sources.text()}" in render(seen).splitlines()


def test_an_elastic_bounce_gains_no_impact_energy(tmp_path):
    """A ball dropped from 0.3 m onto the floor with restitution 1: Newton's law reverses its
    normal velocity, so the collision keeps 1/2 m v^2 (closed form): the impact step's gain is
    zero to rounding and the summary counts no impact step that gained energy."""
    text = _ball_scenario(tmp_path, R_BALL + 0.3, 1.0, 0.4)
    sim = Simulator(load_scenario_text(text))
    impacts, worst = 0, 0.0
    for _ in range(sim.scenario.simulation.n_steps):
        rep = sim.step()
        if rep.impacts:
            impacts += 1
            ke = rep.impacts[0].energy_before
            assert ke > 1.0  # 2 kg from 0.3 m: ~5.9 J
            worst = max(worst, abs(rep.energy_impacts) / ke)
    assert impacts >= 1
    assert worst < 1e-12
    summary = Simulator(load_scenario_text(text)).run()  # the same run through the summary
    assert summary.events.get("impact", 0) >= 1
    assert summary.energy_sources.sources["impacts"].steps == 0


def test_a_superelastic_impact_reports_its_gain():
    """Restitution 1.5 (the scenario refuses it; the stepper takes it): the ball leaves at
    1.5 times its approach speed, gaining 1/2 m v^2 (1.5^2 - 1) in the collision (closed form
    from the pre-impact speed), and the tally names impacts."""
    link = LinkSpec("ball", Inertial(M_BALL, np.zeros(3), np.diag([0.4 * M_BALL * R_BALL**2] * 3)))
    model = build_model([RobotSpec("ball", [link], [], "ball", base="floating")], gravity=(0, 0, 0))
    dt = 1e-3
    st = OSStepper(model, SpheresOnPlane({0: R_BALL}), StepOptions(dt=dt, mu=0.0, restitution=1.5))
    q = model.neutral_q()
    q[2] = R_BALL  # touching, approaching at 2 m/s
    v = np.zeros(6)
    v[2] = -2.0
    _, v1, rep = st.step(q, v, 0.0)
    assert len(rep.impacts) == 1
    expected = 0.5 * M_BALL * 2.0**2 * (1.5**2 - 1.0)
    assert rep.energy_impacts == pytest.approx(expected, rel=1e-9)
    assert 0.5 * M_BALL * v1[2] ** 2 - 0.5 * M_BALL * 2.0**2 == pytest.approx(expected, rel=1e-9)
    gains = EnergyGains()
    gains.add_step(rep, dt, lambda: 0.5 * M_BALL * v1[2] ** 2)
    assert gains.sources["impacts"].steps == 1
    assert gains.sources["impacts"].largest == pytest.approx(expected, rel=1e-9)
    assert gains.sources["stabilisation"].steps == 0


@pytest.mark.parametrize("formulation", ["os", "rmc", "mc", "nmc", "nmc-os"])
def test_a_fourbar_started_off_its_closure_reports_the_closure_gain(formulation):
    """The bundled four-bar without gravity, at rest, its rocker turned 0.05 rad off the loop
    (a closure error of ~1.5 cm). Without the drift correction its step would leave it at
    rest; with it the step ends with the kinetic energy Pinocchio computes from the recorded
    v1, 1/2 v1^T M(q) v1: the closure share equals it (every formulation), and the tally names
    closures."""
    import pinocchio as pin

    from pin_oracle import PinTwin
    from test_bilateral import rocker_angle

    urdf = bundled_dir() / "fourbar.urdf"
    model = build_model([parse_urdf_string(fourbar_urdf())], gravity=(0, 0, 0))
    q = np.array([0.3, 0.0, rocker_angle(0.3, 1.8)])  # closed (test_bilateral.fourbar)
    a = np.array([CRANK * np.cos(0.3), -CRANK * np.sin(0.3)])
    b = np.array([GROUND + ROCKER * np.cos(q[2]), -ROCKER * np.sin(q[2])])
    q[1] = np.arctan2(-(b - a)[1], (b - a)[0]) - 0.3
    q[2] += 0.05  # off the loop
    closure = ClosureSpec("ball", 1, 2, np.array([COUPLER, 0, 0]), np.array([ROCKER, 0, 0]))
    st = OSStepper(
        model, None, StepOptions(dt=1e-3, formulation=formulation),
        bilateral=Bilateral(model, [closure], q0=q),
    )  # fmt: skip
    _, v1, rep = st.step(q, np.zeros(model.nv), 0.0)
    assert rep.constraint_error > 1e-2
    twin = PinTwin(model, urdf)
    kinetic = pin.computeKineticEnergy(twin.pm, twin.pd, twin.q(q), twin.v(q, v1))
    assert kinetic > 1e-3
    assert rep.energy_closures == pytest.approx(kinetic, rel=1e-8)
    assert rep.energy_stabilisation == 0.0 and rep.energy_impacts == 0.0
    gains = EnergyGains()
    gains.add_step(rep, 1e-3, lambda: kinetic)
    assert gains.sources["closures"].steps == 1 and gains.sources["stabilisation"].steps == 0


def test_a_resting_body_gains_nothing_above_the_tolerance():
    """A ball resting on the floor (gap 0) under gravity: its contact row's share is
    -1/2 m (g dt)^2 < 0 each step (it absorbs what the free motion gave), so no source is
    counted (the tally's tolerance GAIN_TOL_ABS)."""
    link = LinkSpec("ball", Inertial(M_BALL, np.zeros(3), np.diag([0.4 * M_BALL * R_BALL**2] * 3)))
    model = build_model(
        [RobotSpec("ball", [link], [], "ball", base="floating")], gravity=(0, 0, -G)
    )
    st = OSStepper(model, SpheresOnPlane({0: R_BALL}), StepOptions(dt=1e-3, mu=0.0))
    q = model.neutral_q()
    q[2] = R_BALL
    v = np.zeros(6)
    gains = EnergyGains()
    for k in range(200):
        q, v, rep = st.step(q, v, k * 1e-3)
        assert rep.energy_stabilisation <= GAIN_TOL_ABS
        kinetic = 0.5 * M_BALL * v[2] ** 2
        gains.add_step(rep, (k + 1) * 1e-3, lambda kinetic=kinetic: kinetic)
    assert all(s.steps == 0 for s in gains.sources.values())


def test_links_of_one_robot_overlapping_at_the_start_report_the_stabilisation_gain():
    """The UR5-gripper case (its 48.5 mm self-overlap gained 182 J in one step while the summary
    said nothing): pendulum-3 folded so spheres 1 and 3 overlap by 2 cm, initial overlaps kept,
    no gravity, at rest. Without recovery the step would leave it at rest, so everything it
    moves with comes from the recovery row: the stabilisation share equals the kinetic energy
    Pinocchio computes at the start configuration from the recorded v1 (the UR5 files are not
    in pybullet_data, so this stands in for them), and the run's summary names stabilisation."""
    import pinocchio as pin

    from pin_oracle import PinTwin

    urdf = bundled_dir() / "pendulum-3.urdf"
    text = f"""\
[simulation]
duration = 0.005
dt = 1e-3
gravity = [0.0, 0.0, 0.0]

[robot.a]
urdf = "{urdf}"
q0 = {{ joint_2 = {np.pi / 2!r}, joint_3 = {np.pi / 2 + 0.01!r} }}

[contact]
mu = 0.0
ignore_initial_overlaps = false

[output]
path = "unused.h5"
"""
    sim = Simulator(load_scenario_text(text))
    q0 = sim.q.copy()
    rep = sim.step()
    assert rep.n_contacts == 1 and rep.max_penetration > 0.01
    twin = PinTwin(sim.model, urdf)
    kinetic = pin.computeKineticEnergy(twin.pm, twin.pd, twin.q(q0), twin.v(q0, sim.v))
    assert kinetic > 0.1
    assert rep.energy_stabilisation == pytest.approx(kinetic, rel=1e-9)
    summary = Simulator(load_scenario_text(text)).run()
    stab = summary.energy_sources.sources["stabilisation"]
    assert stab.steps >= 1 and stab.time == pytest.approx(1e-3)
    assert stab.largest == pytest.approx(kinetic, rel=1e-9)
    assert summary.energy_sources.sources["impacts"].steps == 0
    assert summary.energy_sources.sources["closures"].steps == 0


def test_a_joint_started_past_its_stop_reports_the_stabilisation_gain():
    """A 1 kg bob 1 m below a hinge limited to [-1, 0.5] rad, started at rest 0.05 rad past
    its upper stop, without gravity: the limit row drives the joint back at the recovery
    speed, so the step's whole kinetic energy change is the stabilisation share. Truth: the
    closed-form kinetic energy 1/2 I qd^2 of the recorded speed, I = m L^2 + I_yy = 1.01 kg m^2
    about the hinge; the share is exact (energy_sources.py), so the tolerance is rounding."""
    from test_joint_limits import INERTIA, chain_urdf, stepper

    _, st = stepper(chain_urdf(-1.0, 0.5), gravity=(0.0, 0.0, 0.0))
    q, v, report = st.step(np.array([0.55]), np.zeros(1), 0.0)
    assert v[0] < 0.0  # back towards the stop
    kinetic = 0.5 * INERTIA * v[0] ** 2
    assert kinetic > GAIN_TOL_ABS
    assert report.energy_stabilisation == pytest.approx(kinetic, rel=1e-9)
    assert report.energy_impacts == 0.0 and report.energy_closures == 0.0
    gains = EnergyGains()
    gains.add_step(report, 1e-3, lambda: kinetic)
    assert gains.sources["stabilisation"].steps == 1
    assert gains.sources["impacts"].steps == gains.sources["closures"].steps == 0
