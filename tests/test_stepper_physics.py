"""The OS stepper against closed-form physics and conservation laws.

Contacts come from the hand-written detectors in analytic_contacts.py (exact geometry), so
these tests judge the dynamics and the complementarity step alone. Tolerances are stated per
test with the reason.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from analytic_contacts import BoxOnPlane, SpheresOnPlane, TwoSpheres
from mbsim.simcore.data import Data
from mbsim.simcore.dynamics import energy
from mbsim.simcore.kinematics import forward_kinematics
from mbsim.simcore.model import build_model
from mbsim.simcore.spec import Inertial, JointSpec, LinkSpec, RobotSpec
from mbsim.simcore.stepper import OSStepper, StepOptions

G = 9.81


def free_body(name, mass, inertia_diag):
    return RobotSpec(name, [LinkSpec(name, Inertial(mass, np.zeros(3), np.diag(inertia_diag)))],
                     [], name, base="floating")  # fmt: skip


def sphere(mass=1.0, r=0.1):
    return free_body("ball", mass, [0.4 * mass * r * r] * 3)


def run(stepper, q, v, steps, dt, every=None):
    t = 0.0
    hist = []
    reports = []
    for k in range(steps):
        q, v, rep = stepper.step(q, v, t)
        t += dt
        if every is not None and k % every == 0:
            hist.append((t, q.copy(), v.copy()))
        reports.append(rep)
    return q, v, hist, reports


def apexes(z, floor):
    """Local maxima of a height series that are clear of the floor."""
    return [z[i] for i in range(1, len(z) - 1) if z[i - 1] < z[i] >= z[i + 1] and z[i] > floor]


@pytest.mark.parametrize("eps", [0.5, 0.8])
def test_bounce_apex_heights_scale_with_restitution_squared(eps):
    """Drop from 0.9 m above contact: each rebound height is eps^2 times the previous, within
    1% (dt = 0.1 ms: the ball moves < 0.5 mm per step, below the 1 mm contact margin, so the
    collision is caught before it penetrates)."""
    r, dt = 0.1, 1e-4
    model = build_model([sphere(r=r)], gravity=(0, 0, -G))
    st = OSStepper(model, SpheresOnPlane({0: r}), StepOptions(dt=dt, restitution=eps, mu=0.5))
    q = model.neutral_q()
    q[2] = 1.0
    z = []
    t = 0.0
    v = np.zeros(6)
    for _ in range(int(1.8 / dt)):
        q, v, _ = st.step(q, v, t)
        t += dt
        z.append(q[2])
    heights = [a - r for a in apexes(np.array(z), r + 1e-3)]
    assert len(heights) >= 2
    drops = [0.9, *heights]
    for before, after in zip(drops[:2], drops[1:3], strict=False):
        assert after / before == pytest.approx(eps * eps, rel=0.01)


def test_elastic_bounce_keeps_99_percent_and_inelastic_does_not_bounce():
    r, dt = 0.1, 1e-4
    model = build_model([sphere(r=r)], gravity=(0, 0, -G))
    for eps in (1.0, 0.0):
        st = OSStepper(model, SpheresOnPlane({0: r}), StepOptions(dt=dt, restitution=eps))
        q = model.neutral_q()
        q[2] = 1.0
        v = np.zeros(6)
        z = []
        t = 0.0
        for _ in range(int(1.2 / dt)):
            q, v, _ = st.step(q, v, t)
            t += dt
            z.append(q[2])
        z = np.array(z)
        if eps == 1.0:
            assert (apexes(z, r + 1e-3)[0] - r) / 0.9 >= 0.99
        else:
            after = z[np.argmax(z < r + 1e-5) :]  # from first touch on
            assert after.max() < r + 1e-4  # no rebound beyond 0.1 mm
            assert abs(z[-1] - r) < 1e-4 and abs(v[2]) < 1e-6


def tilted_box(angle, mu, half=(0.1, 0.1, 0.05), mass=1.0):
    hx, hy, hz = half
    inertia = [mass / 3 * (hy**2 + hz**2), mass / 3 * (hx**2 + hz**2), mass / 3 * (hx**2 + hy**2)]
    model = build_model([free_body("box", mass, inertia)], gravity=(0, 0, -G))
    rot = Rotation.from_rotvec([0.0, angle, 0.0])
    n = rot.apply([0.0, 0.0, 1.0])  # incline normal: the box's own z axis
    q = model.neutral_q()
    q[:3] = hz * n  # resting exactly on the plane
    qx, qy, qz, qw = rot.as_quat()
    q[3:7] = qw, qx, qy, qz
    down = np.array([0.0, 0.0, -1.0])
    down = down - (down @ n) * n  # gravity's direction projected on the incline
    down /= max(np.linalg.norm(down), 1e-300)  # (undefined and unused on a flat floor)
    return model, BoxOnPlane(half, n), q, down


@pytest.mark.parametrize("angle_deg", [10.0, 20.0])
def test_box_sticks_on_an_incline_below_the_friction_angle(angle_deg):
    """tan(angle) < mu = 0.5: the box must not creep (< 1e-6 m over 1 s)."""
    angle = np.radians(angle_deg)
    model, det, q0, down = tilted_box(angle, 0.5)
    dt = 1e-3
    st = OSStepper(model, det, StepOptions(dt=dt, mu=0.5))
    q, v, _, reps = run(st, q0.copy(), np.zeros(6), int(1.0 / dt), dt)
    assert abs((q[:3] - q0[:3]) @ down) < 1e-6
    assert reps[-1].n_contacts == 4


@pytest.mark.parametrize("angle_deg", [35.0, 45.0])
def test_box_slides_with_coulomb_acceleration(angle_deg):
    """tan(angle) > mu = 0.5: the box accelerates at g (sin - mu cos) within 1%."""
    angle = np.radians(angle_deg)
    model, det, q0, down = tilted_box(angle, 0.5)
    dt = 1e-3
    st = OSStepper(model, det, StepOptions(dt=dt, mu=0.5))
    T = 0.5
    q, v, _, _ = run(st, q0.copy(), np.zeros(6), int(T / dt), dt)
    speed = v[:3] @ down  # a free joint's linear velocity is in the world frame
    expected = G * (np.sin(angle) - 0.5 * np.cos(angle))
    assert speed / T == pytest.approx(expected, rel=0.01)


def test_box_resting_on_floor_for_10_s_neither_creeps_nor_sinks():
    """Creep < 1e-6 m and penetration < 1e-5 m (the gap term removes 20% of any penetration per
    step, so it settles at the solver's float noise)."""
    model, det, q0, _ = tilted_box(0.0, 0.5)
    dt = 1e-3
    st = OSStepper(model, det, StepOptions(dt=dt, mu=0.5))
    q, v, _, reps = run(st, q0.copy(), np.zeros(6), int(10.0 / dt), dt)
    assert np.linalg.norm(q[:2] - q0[:2]) < 1e-6
    assert max(r.max_penetration for r in reps) < 1e-5


def test_sphere_slides_then_rolls_at_five_sevenths():
    """A solid sphere launched sliding without spin ends rolling at 5/7 of its launch speed
    (angular momentum about the contact point is conserved), within 1%."""
    r, dt = 0.1, 1e-3
    model = build_model([sphere(r=r)], gravity=(0, 0, -G))
    st = OSStepper(model, SpheresOnPlane({0: r}), StepOptions(dt=dt, mu=0.3, nf=8))
    q = model.neutral_q()
    q[2] = r
    v = np.zeros(6)
    v[0] = 2.0  # world-frame linear velocity
    q, v, _, _ = run(st, q, v, int(1.5 / dt), dt)
    R = Rotation.from_quat([q[4], q[5], q[6], q[3]]).as_matrix()
    vx = v[0]
    wy = (R @ v[3:])[1]  # angular velocity is in the body frame
    assert vx == pytest.approx(2.0 * 5 / 7, rel=0.01)
    assert wy * r == pytest.approx(vx, rel=1e-3)  # rolling without slipping


@pytest.mark.parametrize("eps", [1.0, 0.6, 0.0])
def test_two_spheres_conserve_momentum_and_reverse_by_restitution(eps):
    """Zero gravity, oblique hit: linear momentum conserved to 1e-9 relative; the normal
    relative velocity after the collision is -eps times the one before (1e-6 relative)."""
    r, dt = 0.1, 1e-4
    model = build_model([sphere(1.0, r), sphere(3.0, r)], gravity=(0, 0, 0))
    st = OSStepper(model, TwoSpheres(r, r), StepOptions(dt=dt, restitution=eps, mu=0.0))
    q = model.neutral_q()
    q[0:3] = [-0.3, 0.05, 0.0]
    q[7:10] = [0.3, 0.0, 0.0]
    v = np.zeros(12)
    v[0] = 2.0
    v[6] = -1.0
    masses = np.array([1.0, 3.0])
    p0 = masses[0] * v[0:3] + masses[1] * v[6:9]
    t = 0.0
    impact = None
    for _ in range(3000):
        q, v, rep = st.step(q, v, t)
        t += dt
        if rep.impacts:
            impact = rep.impacts[0]
    assert impact is not None
    p1 = masses[0] * v[0:3] + masses[1] * v[6:9]  # free-joint linear velocities: world frame
    assert np.linalg.norm(p1 - p0) <= 1e-9 * np.linalg.norm(p0)
    assert impact.normal_velocity_after == pytest.approx(
        -eps * impact.normal_velocity_before, rel=1e-6, abs=1e-9
    )


def test_frictionless_pendulum_energy_drift_is_bounded():
    """A 3-link pendulum swinging freely for 10 s (dt = 1 ms, semi-implicit Euler, no contact):
    the total energy stays within 2% of its initial value (symplectic Euler keeps the energy
    error bounded and O(dt) instead of letting it grow)."""
    links = [LinkSpec("world")]
    joints = []
    for k in range(3):
        links.append(LinkSpec(f"l{k}", Inertial(1.0, np.array([0, 0, -0.5]), np.eye(3) * 0.01)))
        T = np.eye(4)
        if k:
            T[2, 3] = -1.0
        parent = "world" if k == 0 else f"l{k - 1}"
        joints.append(JointSpec(f"j{k}", "revolute", parent, f"l{k}", T, np.array([0, 1.0, 0])))
    model = build_model([RobotSpec("p", links, joints, "world")], gravity=(0, 0, -G))
    data = Data(model)
    st = OSStepper(model, None, StepOptions(dt=1e-3))
    q = np.array([0.8, -0.3, 0.5])
    v = np.zeros(3)

    def total(q, v):
        forward_kinematics(model, data, q, v)
        return energy(model, data)[2]

    e0 = total(q, v)
    scale = 3 * G * 1.5  # potential energy range of the swing, J
    t = 0.0
    worst = 0.0
    for _ in range(10000):
        q, v, _ = st.step(q, v, t)
        t += 1e-3
        worst = max(worst, abs(total(q, v) - e0))
    assert worst / scale < 0.02


def box_on_heading(theta, psi, half=(0.1, 0.1, 0.05), mass=1.0):
    """A box resting on a plane inclined by theta whose downhill direction is turned by psi
    about the world z axis (so the slip is at psi to the world-axis friction basis)."""
    hx, hy, hz = half
    inertia = [mass / 3 * (hy**2 + hz**2), mass / 3 * (hx**2 + hz**2), mass / 3 * (hx**2 + hy**2)]
    model = build_model([free_body("box", mass, inertia)], gravity=(0, 0, -G))
    rot = Rotation.from_rotvec([0.0, 0.0, psi]) * Rotation.from_rotvec([0.0, theta, 0.0])
    n = rot.apply([0.0, 0.0, 1.0])
    q = model.neutral_q()
    q[:3] = hz * n
    qx, qy, qz, qw = rot.as_quat()
    q[3:7] = qw, qx, qy, qz
    down = np.array([0.0, 0.0, -1.0]) - (-n[2]) * n
    return model, BoxOnPlane(half, n), q, down / np.linalg.norm(down)


@pytest.mark.parametrize("heading_deg", [0.0, 22.5, 45.0])
@pytest.mark.parametrize("mu", [0.3, 0.7])
def test_friction_polyhedron_follows_the_slip_in_any_heading(heading_deg, mu):
    """Issue 14 sec. 4: a box on a 30 deg incline, nf = 4, the downhill direction at 0, 22.5
    and 45 deg to the world axes. mu = 0.3 < tan 30: a = g (sin - mu cos) = 2.3563 m/s^2
    within 0.5% (measured exact to 1e-12) and no sideways drift (< 1e-9 m); the world-axis
    polyhedron gives 3.082 at 45 deg (0.71 mu). mu = 0.7 > tan 30: no creep (< 1e-9 m over
    0.5 s; the world-axis polyhedron slides 86 mm at 45 deg)."""
    theta = np.radians(30.0)
    model, det, q0, down = box_on_heading(theta, np.radians(heading_deg))
    dt, T = 1e-3, 0.5
    st = OSStepper(model, det, StepOptions(dt=dt, mu=mu))
    q, v, _, _ = run(st, q0.copy(), np.zeros(6), int(T / dt), dt)
    disp = q[:3] - q0[:3]
    assert np.linalg.norm(disp - (disp @ down) * down) < 1e-9
    if mu < np.tan(theta):
        expected = G * (np.sin(theta) - mu * np.cos(theta))
        assert expected == pytest.approx(2.3563, abs=1e-4)
        assert (v[:3] @ down) / T == pytest.approx(expected, rel=0.005)
    else:
        assert abs(disp @ down) < 1e-9


@pytest.mark.parametrize("formulation", ["os", "rmc", "mc", "nmc", "nmc-os"])
@pytest.mark.parametrize(
    ("law", "mu", "vt", "dvt"),
    [
        # sliding throughout: Coulomb over the whole impulse, mu (1 + e) |v_n| = 0.150
        ("total", 0.1, 1.0, -0.150),
        # 000's law: friction capped at mu times the compression impulse, 0.100
        ("compression", 0.1, 1.0, -0.100),
        # the contact point sticks within the impulse: rolling, v_t = 5/7 of 0.2 m/s
        ("total", 0.5, 0.2, 0.2 * 5.0 / 7.0 - 0.2),
    ],
)
def test_friction_through_an_impact(formulation, law, mu, vt, dvt):
    """Issue 14 sec. 4: a sphere (no spin, no gravity) hits the plane at v_n = -1 m/s with
    tangential speed vt, e = 0.5. Closed form (Routh): the normal impulse is (1 + e) m |v_n|;
    while the contact slides the tangential impulse is mu times it (dv_t = -mu (1 + e) = -0.15
    for mu = 0.1; MuJoCo -0.152), unless the slip u = v_t - r w stops first (du = 7/2 dv_t for
    a solid sphere: rolling at 5/7 v_t). 000's law (``impact_friction = "compression"``)
    gives -0.100. Exact to 1e-9 (one impact, LCPs solved to rounding); the kinetic energy
    must not grow."""
    r = 0.1
    model = build_model([sphere(r=r)], gravity=(0, 0, 0))
    opts = StepOptions(dt=1e-3, mu=mu, restitution=0.5, impact_friction=law,
                       formulation=formulation)  # fmt: skip
    st = OSStepper(model, SpheresOnPlane({0: r}), opts)
    q = model.neutral_q()
    q[2] = r + 1e-4
    v = np.array([vt, 0.0, -1.0, 0.0, 0.0, 0.0])
    _, v1, rep = st.step(q, v, 0.0)
    assert len(rep.impacts) == 1
    assert v1[0] - vt == pytest.approx(dvt, abs=1e-9)
    assert v1[2] == pytest.approx(0.5, abs=1e-9)
    assert rep.impacts[0].energy_after <= rep.impacts[0].energy_before
