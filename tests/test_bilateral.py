"""Loop closures (ball, weld, distance) and mimic joints as bilateral constraints.

Independent truth: the closed-form four-bar position analysis (circle intersection), the
pendulum ODE integrated by scipy to 1e-10, the rigid body a weld must reproduce (the same
bodies merged by a URDF fixed joint), and the closed-form motion of two geared disks.

Tolerances, all from the semi-implicit Euler scheme with position stabilisation k = 0.2
(bilateral.py): the velocity rows hold exactly, so the position error of a closure comes from
integrating q with v+ over a step, O(dt^2 |omega|^2 L) per step, balanced by the 20% per-step
correction: about 5 dt^2 |omega|^2 L. For the four-bar (|omega| <= ~15 rad/s, L ~ 0.3 m,
dt = 1 ms) that is ~3e-4 m; the tests allow 5e-4 m and check the dt^2 scaling separately.
Trajectories compared with a reference differ by the scheme's O(dt) global error.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from analytic_contacts import SpheresOnPlanes
from mbsim.io.scenario import load_scenario
from mbsim.io.urdf import parse_urdf_string
from mbsim.samples.catalog import bundled_dir
from mbsim.samples.generators import pendulum_urdf
from mbsim.samples.linkages import COUPLER, CRANK, GROUND, ROCKER, fourbar_urdf
from mbsim.simcore.bilateral import Bilateral, ClosureSpec, ConstraintError, independent_rows
from mbsim.simcore.data import Data
from mbsim.simcore.formulations import lcp_dimension
from mbsim.simcore.kinematics import forward_kinematics
from mbsim.simcore.model import build_model
from mbsim.simcore.stepper import OSStepper, StepOptions
from mbsim.simulator import Simulator

FORMS = ["os", "rmc", "mc", "nmc", "nmc-os"]
FOURBAR_CLOSURE_BOUND = 5e-4  # m, see module docstring


def rocker_angle(crank: float, near: float) -> float:
    """Closed-form rocker angle of the four-bar for a crank angle (both about +y, so a bar at
    angle q points along (cos q, -sin q) in (x, z)): the rocker tip is where the circle of
    radius ROCKER about O4 meets the circle of radius COUPLER about the crank tip; of the two
    intersections, the one nearest ``near`` (the assembly branch)."""
    a = np.array([CRANK * np.cos(crank), -CRANK * np.sin(crank)])
    o4 = np.array([GROUND, 0.0])
    d = o4 - a
    dist = np.linalg.norm(d)
    u = d / dist
    perp = np.array([-u[1], u[0]])
    x = (dist**2 + COUPLER**2 - ROCKER**2) / (2.0 * dist)
    h = np.sqrt(max(COUPLER**2 - x**2, 0.0))
    best = None
    for s in (1.0, -1.0):
        b = a + x * u + s * h * perp - o4
        t4 = float(np.arctan2(-b[1], b[0]))
        err = abs(np.angle(np.exp(1j * (t4 - near))))
        if best is None or err < best[0]:
            best = (err, t4)
    return best[1]


def wrap(x):
    return np.angle(np.exp(1j * np.asarray(x)))


def fourbar(dt=1e-3, formulation="os"):
    model = build_model([parse_urdf_string(fourbar_urdf())], gravity=(0, 0, -9.81))
    q = np.array([0.3, 0.0, 0.0])
    q[2] = rocker_angle(0.3, 1.8)
    # coupler angle from the crank tip to the rocker tip
    a = np.array([CRANK * np.cos(0.3), -CRANK * np.sin(0.3)])
    b = np.array([GROUND + ROCKER * np.cos(q[2]), -ROCKER * np.sin(q[2])])
    q[1] = np.arctan2(-(b - a)[1], (b - a)[0]) - 0.3
    closure = ClosureSpec("ball", 1, 2, np.array([COUPLER, 0, 0]), np.array([ROCKER, 0, 0]))
    bil = Bilateral(model, [closure], q0=q)
    st = OSStepper(model, None, StepOptions(dt=dt, formulation=formulation), bilateral=bil)
    return model, st, q


def run(st, q, v, n, dt):
    errs, traj = [], []
    rep = None
    for k in range(n):
        q, v, rep = st.step(q, v, k * dt)
        errs.append(rep.constraint_error)
        traj.append(q.copy())
    return q, v, np.array(errs), np.array(traj), rep


def test_bundled_fourbar_matches_generator():
    assert (bundled_dir() / "fourbar.urdf").read_text(encoding="utf-8") == fourbar_urdf()


def test_fourbar_follows_closed_form_kinematics():
    dt = 1e-3
    model, st, q = fourbar(dt)
    _, _, errs, traj, rep = run(st, q, np.zeros(3), 2000, dt)
    assert rep.redundant_rows == 1  # the out-of-plane row of the ball joint
    assert np.ptp(traj[:, 0]) > 1.0  # the crank really swings (rad)
    assert errs.max() < FOURBAR_CLOSURE_BOUND
    near = q[2]
    worst = 0.0
    for qk in traj:
        t4 = rocker_angle(qk[0], near)
        near = t4
        worst = max(worst, abs(wrap(qk[2] - t4)))
    # a closure error e moves the rocker tip by e, i.e. its angle by e / ROCKER
    assert worst < 2 * FOURBAR_CLOSURE_BOUND / ROCKER


def test_fourbar_closure_error_scales_with_dt_squared():
    worst = []
    for dt in (1e-3, 2.5e-4):
        _, st, q = fourbar(dt)
        n = int(round(0.4 / dt))
        worst.append(run(st, q, np.zeros(3), n, dt)[2].max())
    assert worst[0] / worst[1] > 8.0  # 16 for exact dt^2 scaling


def test_fourbar_energy_is_nearly_conserved():
    """Closures do no work: the energy drift is the Euler scheme's, not the constraint's."""
    from mbsim.simcore.dynamics import energy

    dt = 2.5e-4
    model, st, q = fourbar(dt)
    d = Data(model)
    forward_kinematics(model, d, q, np.zeros(3))
    e0 = energy(model, d)[2]
    q1, v1, *_ = run(st, q, np.zeros(3), 2000, dt)
    forward_kinematics(model, d, q1, v1)
    e1 = energy(model, d)[2]
    ke_scale = 0.5 * 2.0 * 9.81 * 0.3  # ~ the potential energy swing of the bars (J)
    assert abs(e1 - e0) < 0.02 * ke_scale


def test_distance_closure_is_a_massless_coupler():
    """Crank and rocker joined by a distance constraint move like the four-bar."""
    text = fourbar_urdf()
    # drop the coupler body: crank and rocker only
    start = text.index('  <link name="coupler">')
    end = text.index("</link>", start) + len("</link>\n")
    text = text[:start] + text[end:]
    start = text.index('  <joint name="coupler_joint"')
    end = text.index("</joint>", start) + len("</joint>\n")
    text = text[:start] + text[end:]
    model = build_model([parse_urdf_string(text)], gravity=(0, 0, -9.81))
    assert model.nv == 2
    q = np.array([0.3, rocker_angle(0.3, 1.8)])
    closure = ClosureSpec(
        "distance", 0, 1, np.array([CRANK, 0, 0]), np.array([ROCKER, 0, 0]), COUPLER
    )
    dt = 1e-3
    st = OSStepper(model, None, StepOptions(dt=dt), bilateral=Bilateral(model, [closure], q))
    _, _, errs, traj, rep = run(st, q, np.array([3.0, 0.0]), 1500, dt)
    assert rep.redundant_rows == 0
    assert np.ptp(traj[:, 0]) > 1.0
    assert errs.max() < FOURBAR_CLOSURE_BOUND
    near = q[1]
    for qk in traj:
        t4 = rocker_angle(qk[0], near)
        near = t4
        assert abs(wrap(qk[1] - t4)) < 2 * FOURBAR_CLOSURE_BOUND / ROCKER


FREE_BOX = """<robot name="box"><link name="box"><inertial><mass value="2.0"/>
<inertia ixx="0.02" iyy="0.03" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>"""


def _rot_y_quat(a):
    """[qw qx qy qz] of a rotation by ``a`` about +y."""
    return np.array([np.cos(a / 2), 0.0, np.sin(a / 2), 0.0])


def test_ball_closure_pendulum_matches_ode():
    """A free body hung from the world by a ball closure is a physical pendulum:
    (I_yy + m L^2) theta'' = -m g L sin(theta), integrated by scipy to 1e-10."""
    mass, L, Iyy, g = 2.0, 0.5, 0.03, 9.81
    model = build_model([parse_urdf_string(FREE_BOX, base="floating")], gravity=(0, 0, -g))
    theta0 = 0.8
    # the pivot is at the body point (0, 0, L): place it at the world origin
    R0 = np.array(
        [[np.cos(theta0), 0, np.sin(theta0)], [0, 1, 0], [-np.sin(theta0), 0, np.cos(theta0)]]
    )
    q = np.concatenate([-R0 @ np.array([0, 0, L]), _rot_y_quat(theta0)])
    closure = ClosureSpec("ball", 0, -1, np.array([0, 0, L]), np.zeros(3))
    dt, T = 2.5e-4, 0.6
    st = OSStepper(model, None, StepOptions(dt=dt), bilateral=Bilateral(model, [closure], q))
    v = np.zeros(6)
    n = int(round(T / dt))
    thetas = []
    worst = 0.0
    for k in range(n):
        q, v, rep = st.step(q, v, k * dt)
        worst = max(worst, rep.constraint_error)
        qw, qy = q[3], q[5]
        thetas.append(2 * np.arctan2(qy, qw))
    ipiv = Iyy + mass * L * L
    sol = solve_ivp(
        lambda t, y: [y[1], -mass * g * L * np.sin(y[0]) / ipiv],
        (0, T),
        [theta0, 0.0],
        t_eval=dt * np.arange(1, n + 1),
        rtol=1e-10,
        atol=1e-12,
    )
    assert np.ptp(thetas) > 1.0
    assert worst < 1e-4
    # Euler's global error over 0.6 s at dt = 0.25 ms: ~ dt * T * max|theta''| ~ 1e-3 rad
    assert np.max(np.abs(np.array(thetas) - sol.y[0])) < 3e-3


WELD_PAIR = """<robot name="pend"><link name="world"/>
<link name="arm"><inertial><origin xyz="0 0 -0.25"/><mass value="1.0"/>
<inertia ixx="0.006" iyy="0.006" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="hinge" type="continuous"><parent link="world"/><child link="arm"/>
<origin xyz="0 0 1"/><axis xyz="0 1 0"/></joint>
{tip}
</robot>"""
TIP_LINK = """<link name="tip"><inertial><mass value="0.5"/>
<inertia ixx="0.002" iyy="0.001" izz="0.003" ixy="0" ixz="0" iyz="0"/></inertial></link>"""


def test_weld_closure_equals_the_merged_body():
    """A free body welded to a pendulum moves as the same body attached by a fixed joint."""
    fixed = (
        TIP_LINK
        + """<joint name="weld" type="fixed"><parent link="arm"/>
<child link="tip"/><origin xyz="0.1 0 -0.5" rpy="0 0.3 0"/></joint>"""
    )
    merged = build_model([parse_urdf_string(WELD_PAIR.format(tip=fixed))])
    two = build_model(
        [
            parse_urdf_string(WELD_PAIR.format(tip="")),
            parse_urdf_string(f'<robot name="tip">{TIP_LINK}</robot>', base="floating"),
        ]
    )
    assert merged.nv == 1 and two.nv == 7
    theta0 = 0.7
    # the tip's pose from the fixed joint: R_y(theta0) [(0, 0, 1) + R_y(theta0)(0.1, 0, -0.5)]
    Ra = np.array(
        [[np.cos(theta0), 0, np.sin(theta0)], [0, 1, 0], [-np.sin(theta0), 0, np.cos(theta0)]]
    )
    p_tip = np.array([0, 0, 1.0]) + Ra @ np.array([0.1, 0, -0.5])
    q_two = np.concatenate([[theta0], p_tip, _rot_y_quat(theta0 + 0.3)])
    weld = ClosureSpec("weld", 0, 1, np.array([0.1, 0, -0.5]), np.zeros(3))
    dt, n = 5e-4, 1200
    st_m = OSStepper(merged, None, StepOptions(dt=dt))
    st_w = OSStepper(two, None, StepOptions(dt=dt), bilateral=Bilateral(two, [weld], q_two))
    qm, vm = np.array([theta0]), np.zeros(1)
    qw, vw = q_two, np.zeros(7)
    worst = 0.0
    swing = []
    for k in range(n):
        qm, vm, _ = st_m.step(qm, vm, k * dt)
        qw, vw, rep = st_w.step(qw, vw, k * dt)
        worst = max(worst, rep.constraint_error)
        swing.append(qm[0])
        assert abs(qw[0] - qm[0]) < 2e-3  # rad: the two schemes' O(dt) difference
    assert rep.redundant_rows == 0
    assert np.ptp(swing) > 1.0
    assert worst < 1e-4


MIMIC_DISKS = """<robot name="gears"><link name="world"/>
<link name="d1"><inertial><mass value="1"/>
<inertia ixx="0.01" iyy="0.01" izz="{i1}" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="d2"><inertial><mass value="1"/>
<inertia ixx="0.01" iyy="0.01" izz="{i2}" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="j1" type="continuous"><parent link="world"/><child link="d1"/>
<axis xyz="0 0 1"/></joint>
<joint name="j2" type="continuous"><parent link="world"/><child link="d2"/>
<origin xyz="0.5 0 0"/><axis xyz="0 0 1"/>
<mimic joint="j1" multiplier="{mult}" offset="0.1"/></joint>
</robot>"""


@pytest.mark.parametrize("formulation", FORMS)
def test_mimic_gears_follow_closed_form(formulation):
    """Two disks on vertical axes geared by a mimic (q2 = r q1 + 0.1), torque tau on disk 1:
    (I1 + r^2 I2) q1'' = tau, so q1(t) = tau t^2 / (2 (I1 + r^2 I2))."""
    i1, i2, r, tau = 0.02, 0.05, -2.0, 0.3
    model = build_model([parse_urdf_string(MIMIC_DISKS.format(i1=i1, i2=i2, mult=r))])
    assert len(model.mimics) == 1
    q = np.array([0.0, 0.1])
    st = OSStepper(
        model, None, StepOptions(dt=1e-3, formulation=formulation),
        torque=lambda t, q, v: np.array([tau, 0.0]), bilateral=Bilateral(model, [], q),
    )  # fmt: skip
    v = np.zeros(2)
    for k in range(500):
        q, v, rep = st.step(q, v, k * 1e-3)
        assert rep.constraint_error < 1e-9
    t = 0.5
    acc = tau / (i1 + r * r * i2)
    assert v[0] == pytest.approx(acc * t, rel=1e-9)  # Euler is exact for constant qdd
    assert q[0] == pytest.approx(0.5 * acc * t * t, rel=5e-3)  # O(dt) in position
    assert q[1] == pytest.approx(r * q[0] + 0.1, abs=1e-9)


def test_formulations_agree_with_closures_and_contacts():
    """One step of a 6-link pendulum pressing a floor and a wall, with its tip tied to the
    world by a distance closure and links 2 and 5 pinned together by a ball closure (a loop
    within the tree): all five formulations give the same v+ (frictionless, independent
    rows) and Table 1's sizes with nb rows."""
    n = 6
    model = build_model([parse_urdf_string(pendulum_urdf(n))], gravity=(0, 0, -9.8))
    r = 6.0 / n
    q = np.array([-1.2, 0.5, 0.4, 0.3, 0.2, 0.1])
    v = np.array([0.3, -0.2, 0.5, -0.4, 0.2, 0.1])
    d = Data(model)
    forward_kinematics(model, d, q)
    centres = np.array([d.p_world[k] + d.R_world[k] @ np.array([0, 0, -r]) for k in range(n)])
    floor = centres[:, 2].min() - r + 2e-4
    wall = centres[:, 0].max() + r - 2e-4
    det = SpheresOnPlanes(
        [(k, (0.0, 0.0, -r), r) for k in range(n)], [((0, 0, 1), floor), ((-1, 0, 0), -wall)], []
    )
    tip = d.p_world[5] + d.R_world[5] @ np.array([0, 0, -2 * r])
    anchor = tip + np.array([-0.5, 0.0, 0.5])
    closures = [
        ClosureSpec("distance", 5, -1, np.array([0, 0, -2 * r]), anchor,
                    float(np.linalg.norm(anchor - tip))),
        ClosureSpec("ball", 1, 4, np.array([0, 0, -r]),
                    d.R_world[4].T @ (centres[1] - d.p_world[4])),
    ]  # fmt: skip
    out = {}
    for form in FORMS:
        bil = Bilateral(model, closures, q)
        st = OSStepper(model, det, StepOptions(dt=1e-4, mu=0.0, formulation=form), bilateral=bil)
        _, v1, rep = st.step(q.copy(), v.copy(), 0.0)
        assert rep.n_contacts >= 2
        assert rep.redundant_rows == 1  # the ball's out-of-plane row
        nb = 1 + 3 - 1
        # (RMC's size has no nb: Eq. 41 eliminates the bilateral rows through Y, Eq. 39)
        assert rep.lcp_size == lcp_dimension(form, n, n, nb, rep.n_contacts, 4)
        out[form] = v1
    for form in FORMS[1:]:
        np.testing.assert_allclose(out[form], out["os"], rtol=1e-8, atol=1e-9)


def test_independent_rows_drops_exactly_the_dependent_ones():
    G = np.array([[1.0, 0, 0], [0, 1.0, 0], [1.0, 1.0, 0], [0, 0, 2.0]])
    keep = independent_rows(G)
    assert len(keep) == 3
    assert np.linalg.matrix_rank(G[keep]) == 3


def test_closure_errors_are_clear():
    model = build_model([parse_urdf_string(fourbar_urdf())])
    with pytest.raises(ConstraintError, match="both sides"):
        Bilateral(model, [ClosureSpec("ball", -1, -1, np.zeros(3), np.zeros(3))])
    with pytest.raises(ConstraintError, match="unknown closure type"):
        Bilateral(model, [ClosureSpec("hinge", 0, -1, np.zeros(3), np.zeros(3))])
    # a distance closure whose two points coincide has no direction
    q = np.zeros(3)
    d = Data(model)
    forward_kinematics(model, d, q)
    crank_origin = d.p_world[0]
    bil = Bilateral(model, [ClosureSpec("distance", 0, -1, np.zeros(3), crank_origin, 0.1)])
    with pytest.raises(ConstraintError, match="coincide"):
        bil.rows(d, q)


def test_fourbar_scenario_runs_and_records_the_closure_error(tmp_path):
    sc = load_scenario(bundled_dir() / "fourbar.toml", {"simulation.duration": 0.5})
    sim = Simulator(sc)
    summary = sim.run()
    assert summary.status == "complete"
    assert 0.0 < summary.max_constraint_error < FOURBAR_CLOSURE_BOUND
    _, t4 = sim.q[0], rocker_angle(sim.q[0], 1.8)
    assert abs(wrap(sim.q[2] - t4)) < 2 * FOURBAR_CLOSURE_BOUND / ROCKER


def test_bad_closure_is_one_sentence_naming_the_file(tmp_path):
    """A closure between two static links (an environment's wall and the world) cannot
    move anything: the CLI says so in one line naming the scenario file, exit code 2."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    for name in ("fourbar.urdf", "pendulum-environment.urdf"):
        shutil.copy(bundled_dir() / name, tmp_path / name)
    text = (bundled_dir() / "fourbar.toml").read_text()
    text = text.replace('a = "coupler"\nb = "rocker"', 'a = "room/wall"\nb = "world"')
    text += '\n[environment.room]\nurdf = "pendulum-environment.urdf"\n'
    scenario = tmp_path / "bad.toml"
    scenario.write_text(text)
    mbsim = Path(sys.executable).with_name("mbsim")
    proc = subprocess.run(
        [str(mbsim), "run", str(scenario), "--out", str(tmp_path / "x.h5")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert str(scenario) in lines[0] and "both sides are fixed to the world" in lines[0]
