"""The compiled contact step with joint rows (joint limits, joint friction) in its LCP.

contact_fused.py takes a contact step whose LCP has 1-DoF joint rows in front of the contact
rows (``_joint_columns``, ``_solve_joint_rows``). Truth:

* the dense formulations RMC and MC (G_j M^-1 G_j^T by CRBA and Cholesky, or the velocities
  as unknowns of Eq. 36), on one step of a chain pressing a floor and a wall with its stops
  near and Coulomb friction on every joint (tests/test_joint_limits.py's scene): frictionless
  contacts, so v+ is unique and every formulation must give it;
* the Python path of the OS step (``OS.prepare`` + ``joint_row_delassus``, ``OS.solve``) on
  whole runs of a real robot whose joints have friction and rest on their stops while its
  feet touch the floor (example-robot-data's go1). The two build the same LCP but not with
  the same floating-point operations: the Python path's K = R Lambda R^T + C + C^T + G W and
  M = T^T K T + E go through BLAS, the kernel sums each entry on its own. The LCP entries
  agree to ~1e-16 relative; the tolerances below (1e-10 m or rad on q, 1e-8 on v in m/s or
  rad/s over 0.3 s, ~300 LCPs of 60-68 rows) are ~100x the differences measured (q 1.2e-15,
  v 1.9e-12), and far below any physical effect;
* the step-by-step run, for the compiled loop of steps (free_loop.py, contact_loop.py) taking
  contact steps with joint rows: the same kernel on the same numbers, so bit for bit, limit
  events and their order among a step's contact events included.
"""

from __future__ import annotations

import numpy as np
import pytest

from mbsim.simcore.contact_fused import ContactFuser
from mbsim.simcore.joint_rows import JointLimits
from mbsim.simcore.stepper import OSStepper, StepOptions
from robot_files import erd_urdf
from whole_runs import file_run

#: q (m or rad) and v (m/s or rad/s) tolerances of whole runs (module docstring)
Q_TOL, V_TOL = 1e-10, 1e-8


def _chain_step(n, form, mu):
    """One step of tests/test_formulations.py's chain at rest against a floor and a wall,
    with the first joint near its lower stop, the second near its upper one and joint
    friction 0.3 N m on every joint: (v+, report, the stepper)."""
    from test_formulations import state_in_contact

    model, det, q, v = state_in_contact(n)
    lower = np.full(n, -np.inf)
    upper = np.full(n, np.inf)
    lower[0], upper[1] = q[0] - 2e-5, q[1] + 2e-5
    limits = JointLimits(lower, upper, np.zeros(n), np.full(n, 0.3))
    st = OSStepper(model, det, StepOptions(dt=1e-4, mu=mu, formulation=form), joint_limits=limits)
    _, v1, rep = st.step(q.copy(), np.zeros(n), 0.0)
    return v1, rep, st


@pytest.mark.parametrize("n", [3, 5])
def test_one_step_agrees_with_the_dense_formulations(n):
    v_os, rep, st = _chain_step(n, "os", 0.0)
    assert st._fused.steps == 1 and st._fused.fallbacks == 0  # the kernel took it
    assert rep.n_contacts >= 2 and len(rep.limit_dof) == 2 and not rep.limit_impact
    # the LCP: 2 limit rows, 2 rows and a sigma per friction joint, then the contacts
    assert rep.lcp_size == 2 + 3 * n + rep.n_contacts * 6
    for form in ("rmc", "mc"):
        v_ref, ref, _ = _chain_step(n, form, 0.0)
        np.testing.assert_allclose(v_os, v_ref, rtol=1e-8, atol=1e-9, err_msg=form)
        np.testing.assert_allclose(
            rep.limit_impulse, ref.limit_impulse, rtol=1e-7, atol=1e-10, err_msg=form
        )
        np.testing.assert_allclose(
            rep.normal_impulse, ref.normal_impulse, rtol=1e-7, atol=1e-10, err_msg=form
        )


def test_one_step_with_friction_agrees_with_the_python_path(monkeypatch):
    """mu = 0.5: the same OS step by the kernel and by the Python path."""
    v_os, rep, st = _chain_step(5, "os", 0.5)
    assert st._fused.steps == 1
    with monkeypatch.context() as mp:
        mp.setattr(ContactFuser, "eligible", staticmethod(lambda stepper: False))
        v_py, ref, _ = _chain_step(5, "os", 0.5)
    np.testing.assert_allclose(v_os, v_py, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rep.limit_impulse, ref.limit_impulse, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rep.tangent_impulse, ref.tangent_impulse, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(rep.sliding, ref.sliding)


def _go1():
    """example-robot-data's go1 (joint friction 0.2 N m on all 12 joints, its calf joints
    starting at 0 rad, past their -0.888 rad stops) on the floor, or skip."""
    return erd_urdf("go1_description/urdf/go1.urdf")


def test_go1_on_the_floor_against_the_python_path(tmp_path, monkeypatch):
    from mbsim.io.scenario import scenario_from_urdf

    sc = scenario_from_urdf(
        str(_go1()), {}, duration=0.3, floor=True, place_on_floor=True, record_every=1,
        output=str(tmp_path / "x.h5"),
    )  # fmt: skip
    off = [(ContactFuser, "eligible", staticmethod(lambda stepper: False))]
    ra, sa, sim_a = file_run(sc, tmp_path / "a.h5", monkeypatch)
    rb, sb, sim_b = file_run(sc, tmp_path / "b.h5", monkeypatch, off)
    fused = sim_a.stepper._fused
    assert fused.steps >= 250 and sim_b.stepper._fused.steps == 0
    # every contact step had joint rows: 24 friction rows and 12 sigma, 8 limit rows
    sizes = np.asarray(ra.diagnostics["lcp_size"])
    assert (sizes[sizes > 0] >= 44).all()
    np.testing.assert_array_equal(sizes, np.asarray(rb.diagnostics["lcp_size"]))
    np.testing.assert_allclose(ra.q, rb.q, rtol=0, atol=Q_TOL)
    np.testing.assert_allclose(ra.v, rb.v, rtol=0, atol=V_TOL)
    for col in ("step", "kind", "body_a", "body_b"):
        np.testing.assert_array_equal(ra.events[col], rb.events[col], err_msg=col)
    assert sa.status == sb.status == "complete"


ARM = """<?xml version="1.0"?>
<robot name="arm">
  <link name="base"/>
  <link name="upper">
    <inertial><origin xyz="0.2 0 0"/><mass value="1.0"/>
      <inertia ixx="0.001" iyy="0.014" izz="0.014" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0.2 0 0"/><geometry><box size="0.4 0.04 0.04"/></geometry></collision>
  </link>
  <link name="fore">
    <inertial><origin xyz="0.15 0 0"/><mass value="0.5"/>
      <inertia ixx="0.0005" iyy="0.004" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0.3 0 0"/><geometry><sphere radius="0.05"/></geometry></collision>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/><origin xyz="0 0 0.45"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="50" velocity="10"/><dynamics friction="0.3"/>
  </joint>
  <joint name="elbow" type="revolute">
    <parent link="upper"/><child link="fore"/><origin xyz="0.4 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="50" velocity="10"/><dynamics friction="0.2"/>
  </joint>
</robot>
"""


def _arm_runs(text, tmp_path, monkeypatch):
    """(results, summary, simulator) of 0.6 s of the arm URDF ``text`` on the floor, recorded
    every step with its contacts: by the compiled loop of steps, and step by step."""
    from mbsim.io.scenario import scenario_from_urdf
    from mbsim.simcore.free_loop import FreeLoop

    urdf = tmp_path / "arm.urdf"
    urdf.write_text(text)
    sc = scenario_from_urdf(
        str(urdf), {}, duration=0.6, floor=True, record_every=1, record_contacts=True,
        output=str(tmp_path / "x.h5"),
    )  # fmt: skip
    loop = file_run(sc, tmp_path / "loop.h5", monkeypatch)
    off = [(FreeLoop, "eligible", staticmethod(lambda sim: False))]
    return loop, file_run(sc, tmp_path / "step.h5", monkeypatch, off)


def test_friction_arm_on_the_floor_in_the_compiled_loop_bit_for_bit(tmp_path, monkeypatch):
    """A two-link arm with joint friction (primitive shapes: the numba narrowphase) swings
    down onto the floor and rests there: its contact steps, with the friction rows and no
    stop near, are taken in the compiled loop of steps (free_loop.py, contact_loop.py) and
    must equal the step-by-step run's (the same contact step kernel on the same numbers)."""
    from whole_runs import assert_same_runs

    loop, step = _arm_runs(ARM, tmp_path, monkeypatch)
    assert loop[2]._free_loop.contact_steps >= 100
    assert step[2]._free_loop.steps == 0 and step[2].stepper._fused.steps >= 100
    # the LCP of a contact step: 2 friction joints (2 rows and a sigma each), then contacts
    sizes = np.asarray(loop[0].diagnostics["lcp_size"])
    assert (sizes[sizes > 0] % 6 == 0).all() and sizes.max() >= 12
    assert_same_runs(loop, step)


@pytest.mark.parametrize("friction", [True, False])
def test_arm_on_its_stop_and_the_floor_in_the_compiled_loop_bit_for_bit(
    tmp_path, monkeypatch, friction
):
    """The arm above with its elbow limited to +-0.05 rad: it falls onto the floor with the
    elbow pressed on a stop, so its resting contact steps have limit rows (and, with joint
    friction, the friction rows). The compiled loop takes them (contact_loop.stage_joint_rows:
    JointLimits.rows' rule in the loop) and the run, limit events included, must equal the
    step-by-step run's."""
    from whole_runs import assert_same_runs

    text = ARM.replace(
        '<limit lower="-3" upper="3" effort="50" velocity="10"/><dynamics friction="0.2"/>',
        '<limit lower="-0.05" upper="0.05" effort="50" velocity="10"/><dynamics friction="0.2"/>',
    )
    if not friction:
        text = text.replace('<dynamics friction="0.3"/>', "").replace(
            '<dynamics friction="0.2"/>', ""
        )
    loop, step = _arm_runs(text, tmp_path, monkeypatch)
    res = loop[0]
    # the elbow rests on a stop while the arm lies on the floor: limit rows in contact steps
    elbow = np.asarray(res.q)[-100:, 1]
    assert (np.abs(np.abs(elbow) - 0.05) < 1e-3).all()
    assert np.asarray(res.diagnostics["n_contacts"])[-100:].min() >= 1
    assert loop[1].events.get("limit_begin", 0) >= 1
    assert loop[2]._free_loop.contact_steps >= 100
    # the Python path's contact steps (ContactFuser.step counts the loop's too): the landing
    # (collisions with joint rows are Python's) and the step after each
    python_steps = loop[2].stepper._fused.steps - loop[2]._free_loop.contact_steps
    assert python_steps < 20, python_steps
    assert_same_runs(loop, step)
