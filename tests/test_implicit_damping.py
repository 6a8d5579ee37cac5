"""Implicit joint damping (issue 20): URDF damping is integrated as (M + dt D) in the velocity
update, stable for any damping at any dt.

Independent truths: the closed-form backward-Euler decay of a damped slider and the exact
exponential it converges to (first order in dt); a dense reference step built from CRBA and
RNEA with numpy's solver; and the five formulations agreeing with each other.
"""

from __future__ import annotations

import numpy as np
import pytest

from mbsim.io.urdf import parse_urdf_string
from mbsim.samples.generators import pendulum_urdf
from mbsim.simcore.data import Data
from mbsim.simcore.dynamics import crba, rnea
from mbsim.simcore.model import build_model
from mbsim.simcore.spec import Inertial, JointSpec, LinkSpec, RobotSpec
from mbsim.simcore.stepper import OSStepper, StepOptions
from test_formulations import FORMS, state_in_contact


def slider(mass, damping):
    """A body on a horizontal prismatic joint (gravity along -z does no work on it)."""
    links = [
        LinkSpec("world"),
        LinkSpec("slider", Inertial(mass, np.zeros(3), np.diag([0.1, 0.1, 0.1]))),
    ]
    joint = JointSpec("x", "prismatic", "world", "slider", axis=np.array([1.0, 0.0, 0.0]))
    joint.damping = damping
    return build_model([RobotSpec("slider", links, [joint], "world")], gravity=(0, 0, -9.81))


def decay(mass, damping, dt, steps, v0=1.0, dynamics="aba"):
    model = slider(mass, damping)
    st = OSStepper(model, None, StepOptions(dt=dt, dynamics=dynamics))
    q, v = np.zeros(1), np.array([v0])
    out = [v0]
    for k in range(steps):
        q, v, _ = st.step(q, v, k * dt)
        out.append(float(v[0]))
    return np.array(out)


@pytest.mark.parametrize("dynamics", ["aba", "crba"])
def test_stiff_damping_decays_monotonically_as_backward_euler(dynamics):
    """dt d / m = 50: the explicit force gives v_k = (1 - 50)^k v_0 (diverges); implicit
    damping gives the backward-Euler value v_k = v_0 / (1 + dt d / m)^k (closed form)."""
    m, dt = 2.0, 1e-3
    d = 50.0 * m / dt
    v = decay(m, d, dt, 8, dynamics=dynamics)
    k = np.arange(len(v))
    np.testing.assert_allclose(v, 1.0 / (1.0 + dt * d / m) ** k, rtol=1e-12, atol=0)
    assert np.all(v > 0.0) and np.all(np.diff(v) < 0.0)


def test_damped_velocity_converges_to_the_exponential_at_first_order():
    """At T with d T / m = 1 the backward-Euler velocity differs from exp(-d T / m) by
    (d/m)^2 T dt / 2 exp(-d T / m) + O(dt^2): the error halves with dt and has that size
    (within 10%; the O(dt^2) term is ~ d dt / m = 2-8% of it here)."""
    m, d, T = 1.0, 20.0, 0.05
    exact = np.exp(-d * T / m)
    errs = []
    for dt in (1e-3, 5e-4, 2.5e-4):
        n = round(T / dt)
        err = decay(m, d, dt, n)[-1] - exact
        lead = (d / m) ** 2 * T * dt / 2.0 * exact
        assert err > 0.0 and err == pytest.approx(lead, rel=0.1)
        errs.append(err)
    assert errs[0] / errs[1] == pytest.approx(2.0, rel=0.05)
    assert errs[1] / errs[2] == pytest.approx(2.0, rel=0.05)


def damped_pendulum(n, damping):
    model = build_model([parse_urdf_string(pendulum_urdf(n))], gravity=(0, 0, -9.8))
    model.damping[:] = damping
    return model


@pytest.mark.parametrize("dynamics", ["aba", "crba"])
def test_a_step_solves_m_plus_dt_d_like_a_dense_reference(dynamics):
    """One free step of a 4-link pendulum with damping 100x the explicit stability bound:
    v+ from (M + dt D)(v+ - v) = dt (-D v - C(q, v)) with M by CRBA, C by RNEA at qdd = 0 and
    numpy's dense solve (the stepper uses ABA's O(N) factorisation or its own Cholesky)."""
    n, dt = 4, 1e-3
    rng = np.random.default_rng(3)
    model = damped_pendulum(n, 1.0)
    d0 = Data(model)
    q = rng.uniform(-1.0, 1.0, n)
    v = rng.normal(size=n)
    M = crba(model, d0, q)
    lam = np.linalg.eigvals(np.linalg.solve(M, np.eye(n))).real.max()
    damping = 200.0 / (dt * lam)  # dt * max eig(M^-1 D) = 200 (explicit needs <= 2)
    model.damping[:] = damping
    C = rnea(model, d0, q, v, np.zeros(n))
    D = damping * np.eye(n)
    ref = v + np.linalg.solve(M + dt * D, dt * (-D @ v - C))
    st = OSStepper(model, None, StepOptions(dt=dt, dynamics=dynamics))
    _, v1, _ = st.step(q.copy(), v.copy(), 0.0)
    np.testing.assert_allclose(v1, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("n", [3, 6])
def test_five_formulations_agree_with_implicit_damping_in_contact(n):
    """The chain pressing a floor and a wall (test_formulations' scene) with stiff damping:
    every formulation integrates M + dt D (ABA's articulated D_i, CRBA's Cholesky, the MC
    mass block, the NMC body block I + Jq^T dt D Jq) and they agree as without damping."""
    model, det, q, v = state_in_contact(n)
    model.damping[:] = 50.0
    results = {}
    for form in FORMS:
        for dyn in ("aba", "crba"):
            opts = StepOptions(dt=1e-4, mu=0.0, formulation=form, dynamics=dyn)
            st = OSStepper(model, det, opts)
            _, v1, rep = st.step(q.copy(), v.copy(), 0.0)
            assert rep.n_contacts >= 2
            results[form, dyn] = v1
    ref = results["os", "aba"]
    # damping 50 N m s at dt 1e-4 changes v+ measurably: the comparison would see a mismatch
    model.damping[:] = 0.0
    undamped = OSStepper(model, det, StepOptions(dt=1e-4, mu=0.0)).step(q.copy(), v.copy(), 0)
    assert np.max(np.abs(undamped[1] - ref)) > 1e-4 * np.max(np.abs(ref))
    for key, v1 in results.items():
        assert np.max(np.abs(v1 - ref)) <= 1e-8 * max(1.0, np.max(np.abs(ref))), key
