"""The five formulations are the same physics: one step from the same state agrees.

Independent truth: the OS result is itself checked against closed-form physics elsewhere; here
every other formulation (built from different matrices: dense M^-1, the mixed LCP with
velocities, per-body coordinates with hinge constraints) must reproduce it. With frictionless
contacts and independent constraints v+ is unique, so agreement is to 1e-8 relative (the LCP
tolerance is 1e-9 relative; the mixed solves add LU rounding on matrices of size <= ~200).
"""

from __future__ import annotations

import numpy as np
import pytest

from analytic_contacts import SpheresOnPlanes
from mbsim.io.urdf import parse_urdf_string
from mbsim.samples.generators import pendulum_urdf
from mbsim.simcore.formulations import lcp_dimension
from mbsim.simcore.model import build_model
from mbsim.simcore.stepper import OSStepper, StepOptions

FORMS = ["os", "rmc", "mc", "nmc", "nmc-os"]


def pendulum_scene(n, with_self=True):
    model = build_model([parse_urdf_string(pendulum_urdf(n))], gravity=(0, 0, -9.8))
    r = 6.0 / n
    spheres = [(k, (0.0, 0.0, -r), r) for k in range(n)]
    pairs = [(i, j) for i in range(n) for j in range(i + 2, n)] if with_self else []
    return model, spheres, pairs, r


def state_in_contact(n):
    """A pose where the chain presses the floor and the wall and folds onto itself."""
    model, spheres, pairs, r = pendulum_scene(n)
    q = np.zeros(n)
    q[0] = -1.2
    q[1:] = 1.4 / max(n - 1, 1)
    rng = np.random.default_rng(n)
    v = rng.normal(size=n) * 0.5
    # planes placed through the current sphere positions so several touch at once
    from mbsim.simcore.data import Data
    from mbsim.simcore.kinematics import forward_kinematics

    d = Data(model)
    forward_kinematics(model, d, q)
    centres = np.array([d.p_world[k] + d.R_world[k] @ np.array([0, 0, -r]) for k in range(n)])
    floor = centres[:, 2].min() - r + 2e-4
    wall = centres[:, 0].max() + r - 2e-4
    planes = [((0, 0, 1), floor), ((-1, 0, 0), -wall)]
    return model, SpheresOnPlanes(spheres, planes, pairs), q, v


@pytest.mark.parametrize("n", [3, 6])
def test_one_step_agrees_across_formulations_frictionless(n):
    model, det, q, v = state_in_contact(n)
    results = {}
    for form in FORMS:
        st = OSStepper(model, det, StepOptions(dt=1e-4, mu=0.0, formulation=form))
        q1, v1, rep = st.step(q.copy(), v.copy(), 0.0)
        assert rep.n_contacts >= 2
        results[form] = (v1, rep)
    ref = results["os"][0]
    for form in FORMS[1:]:
        v1 = results[form][0]
        assert np.max(np.abs(v1 - ref)) <= 1e-8 * max(1.0, np.max(np.abs(ref))), form


@pytest.mark.parametrize("n", [3, 6])
def test_lcp_dimensions_match_table_1_formulas(n):
    model, det, q, v = state_in_contact(n)
    for form in FORMS:
        st = OSStepper(model, det, StepOptions(dt=1e-4, mu=0.5, nf=4, formulation=form))
        _, _, rep = st.step(q.copy(), v.copy(), 0.0)
        assert rep.lcp_size == lcp_dimension(form, model.nb, model.nv, 0, rep.n_contacts, 4)


def test_table_1_dual_arm_and_table_2_pendulum_sizes():
    """The paper's numbers: dual-arm (26 links, 26 DoF, 4 contacts, nf = 4) 310/50/24/24 and
    the pendulum's NMC/OS and NMC columns of Table 2."""
    dims = [lcp_dimension(f, 26, 26, 0, 4, 4) for f in ("nmc", "mc", "rmc", "os")]
    assert dims == [310, 50, 24, 24]
    table2 = {
        3: (39, 57),
        6: (54, 90),
        12: (84, 156),
        15: (99, 189),
        24: (144, 288),
        30: (174, 354),
    }
    for n, (nmcos, nmc) in table2.items():
        assert lcp_dimension("os", n, n, 0, 4, 4) == 24
        assert lcp_dimension("nmc-os", n, n, 0, 4, 4) == nmcos
        assert lcp_dimension("nmc", n, n, 0, 4, 4) == nmc


def test_friction_steps_agree_on_active_set_and_sliding():
    """With friction v+ need not be unique; the formulations must agree on which contacts
    push (normal impulse > 0) and which slide, and on v+ to 1e-6 here (a generic state)."""
    model, det, q, v = state_in_contact(4)
    out = {}
    for form in FORMS:
        st = OSStepper(model, det, StepOptions(dt=1e-4, mu=0.5, formulation=form))
        _, v1, rep = st.step(q.copy(), v.copy(), 0.0)
        out[form] = (v1, rep.normal_impulse > 1e-12, rep.sliding)
    for form in FORMS[1:]:
        assert np.array_equal(out[form][1], out["os"][1]), form
        assert np.array_equal(out[form][2], out["os"][2]), form
        assert np.allclose(out[form][0], out["os"][0], rtol=1e-6, atol=1e-8), form


def test_nonminimal_formulations_solve_the_hinges_every_step():
    """Without any contact NMC and NMC/OS still solve their hinge-constrained LCP (sizes 6n +
    (6n - N) and 6n - N) and reproduce the ABA free motion to 1e-10."""
    model = build_model([parse_urdf_string(pendulum_urdf(4))], gravity=(0, 0, -9.8))
    q = np.array([0.5, -0.2, 0.3, 0.1])
    v = np.array([0.3, 0.1, -0.2, 0.5])
    ref = OSStepper(model, None, StepOptions(dt=1e-3, formulation="os")).step(q, v, 0.0)[1]
    for form, size in (("nmc", 24 + 20), ("nmc-os", 20)):
        _, v1, rep = OSStepper(model, None, StepOptions(dt=1e-3, formulation=form)).step(q, v, 0.0)
        assert rep.lcp_size == size
        assert np.allclose(v1, ref, rtol=0, atol=1e-10)


@pytest.mark.parametrize("dynamics", ["aba", "crba"])
def test_delassus_algorithms_give_the_same_step(dynamics):
    """OS with Lambda by Upsilon (000 Appendix), PV-OSIMr (003 Alg. 3) or the dense J M^-1 J^T:
    the same v+ to 1e-9 (the three matrices agree to ~1e-12, tests/test_pv_osimr.py)."""
    model, det, q, v = state_in_contact(6)
    out = {}
    for delassus in ("upsilon", "pv-osimr", "dense"):
        opts = StepOptions(dt=1e-4, mu=0.5, delassus=delassus, dynamics=dynamics)
        st = OSStepper(model, det, opts)
        _, v1, rep = st.step(q.copy(), v.copy(), 0.0)
        assert rep.n_contacts >= 2
        out[delassus] = v1
    for name in ("pv-osimr", "dense"):
        np.testing.assert_allclose(out[name], out["upsilon"], rtol=1e-9, atol=1e-10)
