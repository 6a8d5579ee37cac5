"""Joint position limits and Coulomb joint friction as LCP rows (simcore/joint_rows.py).

Independent truth is closed-form physics: a pendulum of mass m = 1 kg at L = 1 m below its
hinge (I = m L^2 + 0.01 kg m^2 about the hinge) stops at a limit stop and stays there; with
restitution e it rises back to e^2 of its drop height (the impact reverses the speed with
factor e, energy conservation before and after); a joint with friction F (no gravity) holds
under a torque below F and accelerates as (tau - F)/I above it. The five formulations must
agree on v+ with limits and friction rows active, as tests/test_formulations.py checks for
contacts.

Tolerances. The limit row asks s v+ >= -g/dt and the Euler step moves q by dt v+, so a joint
never passes a limit in exact arithmetic (the gap is linear in q, unlike a contact's): the
bound 1e-9 rad leaves room for the LCP's 1e-9 relative residual. The restitution height ratio
is within 2e-3 of e^2 at dt = 1e-4 s (the impact is taken at the start-of-step speed, up to
one step before the stop: an O(dt) energy error, 3e-4 measured).
"""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from mbsim.errors import MbsimError
from mbsim.io.scenario import load_scenario, load_scenario_text
from mbsim.io.urdf import parse_urdf_string
from mbsim.simcore.formulations import lcp_dimension
from mbsim.simcore.joint_rows import JointLimits
from mbsim.simcore.model import build_model
from mbsim.simcore.stepper import OSStepper, StepOptions
from mbsim.simulator import Simulator

FORMS = ["os", "rmc", "mc", "nmc", "nmc-os"]
#: hinge inertia of each link of chain_urdf: m L^2 + I_yy (kg m^2)
INERTIA = 1.0 + 0.01
LIMIT_TOL = 1e-9


def chain_urdf(lower, upper, friction=0.0, n=1, velocity=3.0) -> str:
    """n links of 1 kg at 1 m below their hinge (about +y), each hinge limited to
    [lower, upper] rad with Coulomb friction ``friction`` N m."""
    links = ['<link name="world"/>']
    joints = []
    parent = "world"
    for i in range(n):
        links.append(
            f'<link name="l{i}"><inertial><origin xyz="0 0 -1"/><mass value="1"/>'
            '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>'
            "</inertial></link>"
        )
        origin = "0 0 0" if i == 0 else "0 0 -1"
        joints.append(
            f'<joint name="j{i}" type="revolute"><parent link="{parent}"/>'
            f'<child link="l{i}"/><origin xyz="{origin}"/><axis xyz="0 1 0"/>'
            f'<limit lower="{lower}" upper="{upper}" effort="10" velocity="{velocity}"/>'
            f'<dynamics friction="{friction}"/></joint>'
        )
        parent = f"l{i}"
    return '<robot name="chain">' + "".join(links + joints) + "</robot>"


def stepper(urdf, form="os", dt=1e-3, gravity=(0, 0, -9.81), torque=None, **limits):
    model = build_model([parse_urdf_string(urdf)], gravity=gravity)
    opts = StepOptions(dt=dt, formulation=form)
    return model, OSStepper(
        model, None, opts, torque=torque, joint_limits=JointLimits.from_model(model, **limits)
    )


def height(q):
    """Height of the bob (m) relative to the hinge at hinge angle q."""
    return -np.cos(q)


@pytest.mark.parametrize("form", FORMS)
def test_pendulum_released_above_its_limit_stops_there_and_rests(form):
    """Released at q = -1 rad, gravity swings it towards q = 0, past the upper stop at -0.3
    rad: it must stop at -0.3 (no overshoot beyond LIMIT_TOL) and stay there (no drift)."""
    _, st = stepper(chain_urdf(-2.0, -0.3), form)
    q, v, t = np.array([-1.0]), np.zeros(1), 0.0
    qs = []
    for _ in range(800):
        q, v, _ = st.step(q, v, t)
        t += 1e-3
        qs.append(q[0])
    qs = np.array(qs)
    assert qs.max() <= -0.3 + LIMIT_TOL
    # it reaches the stop at t ~ 0.45 s; at rest against it for the last 0.25 s, the gravity
    # torque pressing it there
    assert np.all(np.abs(qs[-250:] + 0.3) <= LIMIT_TOL)
    assert abs(v[0]) <= 1e-9


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("start", [0.8, -0.8])
def test_joint_started_past_its_stop_returns_to_it_and_stays(form, start):
    """No gravity, no damping, at rest 0.3 rad past a stop of [-0.5, 0.5]: the recovery
    brings it back to the stop and leaves it there (closed form: nothing moves a joint at
    rest inside its range), at most max_recovery_speed on the way and never past the bound
    into the range by more than what RECOVERY_END_SPEED leaves (1.5e-6 rad/s, joint_rows.py
    "Recovery"). Before the cap the joint kept the recovery speed and crossed to the other
    stop."""
    _, st = stepper(chain_urdf(-0.5, 0.5), form, gravity=(0, 0, 0))
    bound = np.sign(start) * 0.5
    q, v, t = np.array([start]), np.zeros(1), 0.0
    qs, vs = [], []
    for _ in range(1000):  # 0.3 rad at 0.5 rad/s: back after 0.6 s
        q, v, _ = st.step(q, v, t)
        t += 1e-3
        qs.append(q[0])
        vs.append(v[0])
    inside = np.sign(start) * (bound - np.array(qs))  # >= 0 inside the range
    assert np.max(np.abs(vs)) <= 0.5 + 1e-12
    assert inside.max() <= 1.5e-6 * 1.0 + 1e-12, "no further into the range than the end speed"
    assert np.all(np.abs(inside[-300:]) <= 1e-6) and abs(v[0]) <= 1.5e-6


def test_position_targets_outside_the_limits_are_noted(tmp_path):
    """A pd or position-control target past a joint's limits is named before the run (the
    stop, not the target, decides where the joint ends); targets inside give no note."""
    urdf = tmp_path / "chain.urdf"
    urdf.write_text(chain_urdf(-0.5, 0.5, n=2))
    scene = tmp_path / "s.toml"
    control = '{ mode = "position", kp = 10.0, target = { t = [0.0, 1.0], q = [-0.9, 0.2] } }'
    scene.write_text(
        f'[robot.c]\nurdf = "chain.urdf"\npd = {{ j0 = {{ target = 0.7, kp = 10.0 }} }}\n'
        f"[robot.c.control]\nj1 = {control}\n"
    )
    notes = [n for n in Simulator(load_scenario(scene)).lint if "position targets" in n]
    assert notes == [
        f"'c' ({urdf}) has position targets outside the joint limits: 'j0' to 0.7 rad, above "
        "its upper limit 0.5 rad; 'j1' to -0.9 rad, below its lower limit -0.5 rad; the stop "
        "holds such a joint at its limit while the PD presses it there (up to the effort limit)"
    ]
    scene.write_text(scene.read_text().replace("0.7", "0.3").replace("-0.9", "-0.4"))
    assert not [n for n in Simulator(load_scenario(scene)).lint if "position targets" in n]


def test_limit_restitution_gives_e_squared_in_height():
    """With e = 0.5 the rebound rises to e^2 = 0.25 of the drop height (closed form)."""
    e, dt = 0.5, 1e-4
    _, st = stepper(chain_urdf(-2.0, -0.3), dt=dt, restitution=e)
    q, v, t = np.array([-1.0]), np.zeros(1), 0.0
    hit, q_low = False, 0.0
    for _ in range(30000):
        q, v, rep = st.step(q, v, t)
        t += dt
        hit = hit or bool(np.any(rep.limit_impulse > 0))
        if hit:
            q_low = min(q_low, q[0])
            if v[0] > 0 and q_low < -0.3:  # turned back at the top of the rebound
                break
    assert hit
    ratio = (height(q_low) - height(-0.3)) / (height(-1.0) - height(-0.3))
    assert abs(ratio - e * e) < 2e-3


@pytest.mark.parametrize("form", FORMS)
def test_joint_friction_holds_below_and_slides_above(form):
    """F = 2 N m, no gravity: under 0.9 F the joint does not move at all; under 2 F it
    accelerates at (tau - F)/I exactly (Euler is exact for a constant acceleration)."""
    F, dt, n = 2.0, 1e-3, 100
    for tau, expected in ((0.9 * F, 0.0), (2.0 * F, (2.0 * F - F) / INERTIA)):
        _, st = stepper(
            chain_urdf(-20, 20, friction=F), form, dt=dt, gravity=(0, 0, 0),
            torque=lambda t, q, v, tau=tau: np.array([tau]),
        )  # fmt: skip
        q, v, t = np.zeros(1), np.zeros(1), 0.0
        for _ in range(n):
            q, v, _ = st.step(q, v, t)
            t += dt
        assert v[0] == pytest.approx(expected * n * dt, rel=1e-9, abs=1e-12)
        if expected == 0.0:
            assert abs(q[0]) <= 1e-12


def test_friction_opposes_motion_and_stops_a_coasting_joint():
    """A joint coasting at 1 rad/s with friction F decelerates at F/I and stops at
    t = I/F, then stays (no stick-slip chatter)."""
    F, dt = 2.0, 1e-3
    _, st = stepper(chain_urdf(-20, 20, friction=F), dt=dt, gravity=(0, 0, 0))
    q, v, t = np.zeros(1), np.array([1.0]), 0.0
    for _ in range(200):
        q, v, _ = st.step(q, v, t)
        t += dt
    assert v[0] == pytest.approx(1.0 - F / INERTIA * 0.2, rel=1e-9)
    for _ in range(400):
        q, v, _ = st.step(q, v, t)
        t += dt
    assert v[0] == 0.0 or abs(v[0]) < 1e-12


@pytest.mark.parametrize("eps", [0.0, 0.5])
def test_every_formulation_gives_the_same_v_plus_with_limits_active(eps):
    """Three limited links with friction, one hitting its stop at 3 rad/s (an impact:
    compression and, with eps, decompression), one resting on a stop, one free: the same v+
    from all five formulations to 1e-8 (the limit and friction rows make v+ unique)."""
    urdf = chain_urdf(-0.5, 0.5, friction=0.3, n=3)
    q0 = np.array([0.4995, -0.5, 0.2])
    v0 = np.array([3.0, -0.2, 0.7])
    out = {}
    for form in FORMS:
        model, st = stepper(urdf, form, dt=1e-3, restitution=eps)
        seen = []
        st.dump_lcps("all", lambda name, M, q, res, n_free, s, t, seen=seen: seen.append(len(M)))
        _, v1, rep = st.step(q0.copy(), v0.copy(), 0.0)
        assert len(rep.limit_dof) == 2 and rep.limit_impulse.max() > 0.0
        # the LCP of the step has the joint block: 2 limits, 3 friction joints
        assert seen[-1] == lcp_dimension(form, 3, 3, 0, 0, 4, n_limits=2, n_friction=3)
        out[form] = v1
    ref = out["os"]
    assert ref[0] < 0.0 if eps > 0 else abs(ref[0]) < 1.0  # the stop acted
    for form in FORMS[1:]:
        np.testing.assert_allclose(out[form], ref, rtol=1e-8, atol=1e-9)


def test_prismatic_slider_falls_onto_its_lower_stop():
    """A 2 kg slider on a vertical prismatic joint, released 0.2 m above its lower stop at
    q = -0.1 m, reaches it at sqrt(2 g 0.2) m/s (e = 0: no rebound) and rests on it."""
    urdf = (
        '<robot name="s"><link name="world"/><link name="b"><inertial><mass value="2"/>'
        '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        '<joint name="z" type="prismatic"><parent link="world"/><child link="b"/>'
        '<axis xyz="0 0 1"/><limit lower="-0.1" upper="1" effort="1" velocity="1"/></joint>'
        "</robot>"
    )
    model, st = stepper(urdf)
    q, v, t = np.array([0.1]), np.zeros(1), 0.0
    low = np.inf
    for _ in range(400):
        q, v, _ = st.step(q, v, t)
        t += 1e-3
        low = min(low, q[0])
    assert low >= -0.1 - LIMIT_TOL
    assert q[0] == pytest.approx(-0.1, abs=LIMIT_TOL) and abs(v[0]) <= 1e-9


# ----------------------------------------------------------------- scenarios and results


def scenario(tmp_path, extra="", sim="", duration=1.0):
    (tmp_path / "chain.urdf").write_text(chain_urdf(-2.0, -0.3, velocity=0.5))
    text = f"""
[simulation]
duration = {duration}
dt = 1e-3
{sim}
[robot.p]
urdf = "chain.urdf"
q0 = {{ j0 = -1.0 }}
{extra}
[output]
path = "out.h5"
"""
    (tmp_path / "s.toml").write_text(text)
    return load_scenario(tmp_path / "s.toml")


def run(sc, tmp_path):
    sim = Simulator(sc)
    summary = sim.run_to_file("test", force=True)
    return sim, summary, h5py.File(tmp_path / "out.h5")


def test_scenario_limits_events_and_velocity_ratio(tmp_path):
    sim, summary, f = run(scenario(tmp_path), tmp_path)
    with f:
        q = f["trajectory/q"][:, 0]
        v = f["trajectory/v"][:, 0]
        kinds = h5py.check_enum_dtype(f["events/kind"].dtype)
        ev = f["events/kind"][:]
        assert q.max() <= -0.3 + LIMIT_TOL
        begins = np.flatnonzero(ev == kinds["limit_begin"])
        assert len(begins) >= 1
        first = begins[0]
        assert f["events/body_a"][first] == 0 and f["events/body_b"][first] == -1
        # the upper stop pushes towards -y-rotation: normal = -axis (world y)
        np.testing.assert_allclose(f["events/normal"][first], [0.0, -1.0, 0.0], atol=1e-12)
        assert f["events/normal_impulse"][first] > 0.0
        # the velocity-limit ratio is the recorded largest |v| / 0.5 rad/s (record_every 1)
        assert summary.max_velocity_ratio == pytest.approx(np.abs(v).max() / 0.5, rel=1e-12)
        assert summary.max_velocity_joint == "p/j0"
        assert f["summary"].attrs["max_velocity_ratio"] == summary.max_velocity_ratio
    assert summary.events["limit_begin"] >= 1


def test_joint_limits_switch_and_per_joint_override(tmp_path):
    """simulation.joint_limits = false lets the pendulum swing through the stop to +1 rad
    (energy conservation: the mirror of its start); the per-joint table turns it back on."""
    _, _, f = run(scenario(tmp_path, sim="joint_limits = false"), tmp_path)
    with f:
        assert f["trajectory/q"][:, 0].max() > 0.9
    _, _, f = run(
        scenario(tmp_path, sim="joint_limits = false", extra="[robot.p.joint_limits]\nj0 = true"),
        tmp_path,
    )
    with f:
        assert f["trajectory/q"][:, 0].max() <= -0.3 + LIMIT_TOL
    sc = scenario(tmp_path, extra="[robot.p.joint_limits]\nj0 = { restitution = 0.5 }")
    assert Simulator(sc).joint_limits.restitution[0] == 0.5
    assert "joint_limits" in sc.to_toml()


@pytest.mark.parametrize(
    "extra, sim, fragment",
    [
        ("[robot.p.joint_limits]\nnope = false", "", "robot.p.joint_limits.nope"),
        ("[robot.p.joint_limits]\nj0 = { restitution = 2.0 }", "", "must be at most 1"),
        ("[robot.p.joint_limits]\nj0 = { stiff = 1 }", "", "unknown key"),
        ("", "limit_restitution = -1", "simulation.limit_restitution"),
        ("", 'joint_limits = "yes"', "must be true or false"),
    ],
)
def test_bad_limit_settings_are_one_sentence_errors(tmp_path, extra, sim, fragment):
    with pytest.raises(MbsimError) as err:
        Simulator(scenario(tmp_path, extra=extra, sim=sim))
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


PANDA_SCENARIO = """
[simulation]
duration = {duration}
dt = 1e-3
[robot.panda]
urdf = "{urdf}"
q0 = {{ panda_joint4 = -0.8, panda_joint6 = 0.8 }}
[output]
path = "{out}"
"""


def panda_stays_inside(tmp_path, duration):
    from importlib.resources import files

    urdf = files("mbsim") / "sample_robots" / "panda.urdf"
    sc = load_scenario_text(
        PANDA_SCENARIO.format(duration=duration, urdf=urdf, out=tmp_path / "p.h5"),
        source=tmp_path / "p.toml",
    )
    sim = Simulator(sc)
    m = sim.model
    lo, hi = m.lower, m.upper
    worst = 0.0
    engaged = 0
    for _ in range(sc.simulation.n_steps):
        rep = sim.step()
        engaged += len(rep.limit_dof)
        worst = max(worst, float(np.max(lo - sim.q)), float(np.max(sim.q - hi)))
    assert engaged > 0  # the passive arm does reach its stops
    assert worst <= 1e-6  # rad; LIMIT_TOL plus the LCP residual of a 7-DoF arm


def test_passive_panda_stays_inside_its_limits_1s(tmp_path):
    panda_stays_inside(tmp_path, 1.0)


@pytest.mark.slow
def test_passive_panda_stays_inside_its_limits_5s(tmp_path):
    panda_stays_inside(tmp_path, 5.0)


@pytest.mark.parametrize("n", [3, 5])
def test_formulations_agree_with_limits_friction_and_contacts(n):
    """The contact scene of tests/test_formulations.py (a chain pressing a floor and a wall,
    frictionless contacts) with stops just behind the two first joints' motion and Coulomb
    friction on every joint: the joint block and the contact block in one LCP, same v+."""
    from test_formulations import FORMS as ALL_FORMS
    from test_formulations import state_in_contact

    model, det, q, v = state_in_contact(n)
    lower = np.full(n, -np.inf)
    upper = np.full(n, np.inf)
    lower[0], upper[1] = q[0] - 2e-5, q[1] + 2e-5
    v = v.copy()
    v[0], v[1] = -0.5, 0.5  # both approach their stop
    limits = JointLimits(lower, upper, np.full(n, 0.3), np.full(n, 0.05))
    out = {}
    for form in ALL_FORMS:
        st = OSStepper(
            model, det, StepOptions(dt=1e-4, mu=0.0, formulation=form), joint_limits=limits
        )
        _, v1, rep = st.step(q.copy(), v.copy(), 0.0)
        assert rep.n_contacts > 0 and len(rep.limit_dof) == 2
        assert rep.limit_impact and rep.limit_impulse.max() > 0.0
        out[form] = v1
    for form in ALL_FORMS[1:]:
        np.testing.assert_allclose(out[form], out["os"], rtol=1e-8, atol=1e-9)
