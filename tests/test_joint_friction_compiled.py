"""Coulomb joint friction in the compiled joint-row step (simcore/limit_step.py) and loop.

Truth, first: the general OS step (stepper.OSStepper._general_step: ContactProblem with the
joint rows, ``assembly.delassus_lcp``'s M = T^T K T + E, the LCP chain, the impact phase),
which tests/test_joint_limits.py checks against closed forms and the other formulations. The
compiled step builds the same LCP (``joint_rows.joint_lcp_into``: the general path's BLAS
products there have one nonzero term per entry, a product by 1, so they are exact) and solves
it as the chain's first attempt does (``chain.lemke_regularised`` with its polish, proximal
iterations, active-set corrections and restricted LCP; islands block by block), so whole
runs agree bit for bit: the documented tolerance is zero. The general runs are forced off the
compiled step (``LimitStepper.eligible`` and ``FreeLoop.eligible`` False).

Then closed forms with the compiled step taking every step: a joint with friction F under a
constant torque tau < F stays put, under tau > F accelerates at (tau - F)/I; a joint coasting
with friction stops at t = I w / F and stays.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mbsim.simcore.free_loop import FreeLoop
from mbsim.simcore.limit_step import LimitStepper
from test_joint_limits import INERTIA, chain_urdf, stepper
from test_limit_step import assert_same, stepper_run
from whole_runs import assert_same_runs, file_run


def _erd() -> Path:
    """example-robot-data's robots directory (the cmeel package's share), or skip."""
    import sys

    for base in map(Path, sys.path):
        d = base / "cmeel.prefix/share/example-robot-data/robots"
        if d.is_dir():
            return d
    pytest.skip("example-robot-data is not installed")


@pytest.mark.parametrize("ratio", [0.9, 2.0])
def test_constant_torque_below_friction_holds_above_it_accelerates(ratio):
    # F = 2 N m, no gravity: tau = 0.9 F leaves the joint at rest; tau = 2 F accelerates it
    # at (tau - F)/I, exactly with Euler (a constant acceleration); every step compiled
    F, dt, n = 2.0, 1e-3, 200
    tau = ratio * F
    _, st = stepper(
        chain_urdf(-20, 20, friction=F), dt=dt, gravity=(0, 0, 0),
        torque=lambda t, q, v: np.array([tau]),
    )  # fmt: skip
    q, v, t = np.zeros(1), np.zeros(1), 0.0
    for _ in range(n):
        q, v, rep = st.step(q, v, t)
        t += dt
    assert st._limit.steps == n, "every step by the compiled joint-row step"
    assert rep.lcp_size == 3  # beta+, beta-, sigma
    expected = max(0.0, tau - F) / INERTIA
    assert v[0] == pytest.approx(expected * n * dt, rel=1e-9, abs=1e-12)
    if expected == 0.0:
        assert abs(q[0]) <= 1e-12


def test_coasting_joint_stops_at_i_w_over_f_compiled():
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
    assert abs(v[0]) < 1e-12
    assert st._limit.steps == 600


@pytest.mark.parametrize(("eps", "selection"), [(0.0, "least_norm"), (0.5, "least_norm"),
                                                (0.5, "vertex")])  # fmt: skip
def test_chain_with_friction_and_stops_bit_for_bit(eps, selection, monkeypatch):
    # three links under gravity with friction on every hinge and stops at +-0.5 rad, one
    # driven into its stop at 3 rad/s: limit rows with the friction triples in one LCP,
    # impacts (compression, with eps decompression: the friction bound 0 there), rests
    def build_opts():
        from mbsim.io.urdf import parse_urdf_string
        from mbsim.simcore.joint_rows import JointLimits
        from mbsim.simcore.model import build_model
        from mbsim.simcore.stepper import OSStepper, StepOptions

        model = build_model([parse_urdf_string(chain_urdf(-0.5, 0.5, friction=0.3, n=3))],
                            gravity=(0, 0, -9.81))  # fmt: skip
        limits = JointLimits.from_model(model, restitution=eps)
        opts = StepOptions(dt=1e-3, lcp_selection=selection)
        return OSStepper(model, None, opts, joint_limits=limits)

    q0, v0 = [0.45, -0.2, 0.3], [3.0, -1.0, 2.0]
    a = stepper_run(build_opts, q0, v0, 800, True, monkeypatch)
    b = stepper_run(build_opts, q0, v0, 800, False, monkeypatch)
    assert a[3] == 800 and b[3] == 0, "every step compiled, in one run"
    assert any(r[3] for r in a[2]), "some step must be an impact"
    assert max(len(r[0]) for r in a[2]) >= 1 and min(r[6] for r in a[2]) >= 9
    assert_same(a, b)


def test_two_trees_with_friction_solved_block_by_block(monkeypatch):
    # two separate pendulums with friction: the LCP splits into two blocks (islands), which
    # the kernel solves one by one as lcp/islands.py does
    from mbsim.io.urdf import parse_urdf_string
    from mbsim.simcore.joint_rows import JointLimits
    from mbsim.simcore.model import build_model
    from mbsim.simcore.stepper import OSStepper, StepOptions

    def build():
        specs = [
            parse_urdf_string(chain_urdf(-0.4, 0.4, friction=0.5, n=2).replace("chain", f"p{i}"))
            for i in range(2)
        ]
        model = build_model(specs, gravity=(0, 0, -9.81))
        return OSStepper(
            model, None, StepOptions(dt=1e-3), joint_limits=JointLimits.from_model(model)
        )

    q0, v0 = [0.3, -0.1, -0.35, 0.2], [1.0, 0.0, -2.0, 1.0]
    a = stepper_run(build, q0, v0, 600, True, monkeypatch)
    b = stepper_run(build, q0, v0, 600, False, monkeypatch)
    assert a[3] == 600
    assert_same(a, b)


def _robot_runs(tmp_path, monkeypatch, urdf, duration, **flags):
    """(compiled, general) whole runs of ``urdf`` recorded every step: the first with the
    compiled loop and joint-row step, the second with neither."""
    from mbsim.cli.run import _scenario

    sc = _scenario(str(urdf), None, {"duration": duration, "record_every": 1, **flags}, {})
    a = file_run(sc, tmp_path / "compiled.h5", monkeypatch)
    off = [
        (FreeLoop, "eligible", staticmethod(lambda sim: False)),
        (LimitStepper, "eligible", staticmethod(lambda stepper: False)),
    ]
    b = file_run(sc, tmp_path / "general.h5", monkeypatch, off)
    return a, b


@pytest.mark.parametrize(
    ("urdf", "flags", "compiled_min"),
    [
        ("xarm_description/urdf/xarm7.urdf", {"self_collision": False}, 1.0),
        ("talos_data/robots/talos_left_arm.urdf", {"self_collision": False}, 1.0),
        ("allegro_hand_description/urdf/allegro_right_hand.urdf", {"self_collision": False},
         0.9),
        ("go1_description/urdf/go1.urdf", {"base": "fixed", "self_collision": False}, 1.0),
    ],
)  # fmt: skip
def test_robots_with_joint_friction_bit_for_bit(urdf, flags, compiled_min, tmp_path,
                                                monkeypatch):  # fmt: skip
    # example-robot-data's robots with <dynamics friction>: the whole run with the compiled
    # loop and joint-row step is the general path's, every dataset of the results file
    path = _erd() / urdf
    a, b = _robot_runs(tmp_path, monkeypatch, path, 0.3, **flags)
    steps = a[2].stepper.step_index
    assert steps == 300
    assert a[2].stepper._limit.steps >= compiled_min * steps - 1  # (allegro: contacts)
    assert b[2].stepper._limit.steps == 0
    assert_same_runs(a, b)
