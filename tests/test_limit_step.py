"""The compiled joint-limit step (simcore/limit_step.py) against the general step and closed forms.

Truth, first: the general OS step (stepper.OSStepper._general_step with ContactProblem, the OS
formulation, the LCP chain and stepper.impact_phase), which tests/test_joint_limits.py checks
against closed-form physics and the other formulations. The compiled step claims the same
floating-point operations in the same order, so whole runs must agree bit for bit: q, v and
every report field the run loop reads (limit rows and impulses, impacts, energy shares, LCP
size, pivots, residual and solver). The general runs are forced off the compiled step
(``LimitStepper.eligible`` False), as tests/test_fast_step.py forces off the free step.

Then closed forms, with the compiled step taking the steps: a 1-DoF pendulum without gravity
reaching its stop at speed w leaves it at e w (000 Eqs. 54-57 for one row: the compression
impulse stops the joint, the recovered eps lambda_c reverses it), to 1e-12 relative (a few
roundings of I w); at rest on its stop under gravity the limit impulse of a step is the
gravity torque times dt (the row holds v+ = 0 against dt M^-1 tau_g), to 1e-9 relative (the
LCP's acceptance tolerance).
"""

from __future__ import annotations

import numpy as np
import pytest

from mbsim.io.scenario import load_scenario_text
from mbsim.io.urdf import parse_urdf_string
from mbsim.samples.catalog import sample_path
from mbsim.simcore.joint_rows import JointLimits
from mbsim.simcore.limit_step import LimitStepper
from mbsim.simcore.model import build_model
from mbsim.simcore.stepper import OSStepper, StepOptions
from mbsim.simulator import Simulator
from test_fast_step import _panda_on_its_stops as panda_on_its_stops
from whole_runs import assert_same_runs

#: hinge inertia of the test pendulum: 1 kg at 1 m plus I_yy = 0.01 kg m^2
INERTIA = 1.01


def pendulum_urdf(lower, upper, n=1) -> str:
    """n links of 1 kg at 1 m below their hinge (about +y), hinges limited to [lower, upper]."""
    links, joints, parent = ['<link name="world"/>'], [], "world"
    for i in range(n):
        links.append(
            f'<link name="l{i}"><inertial><origin xyz="0 0 -1"/><mass value="1"/>'
            '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>'
            "</inertial></link>"
        )
        joints.append(
            f'<joint name="j{i}" type="revolute"><parent link="{parent}"/><child link="l{i}"/>'
            f'<origin xyz="0 0 {0 if i == 0 else -1}"/><axis xyz="0 1 0"/>'
            f'<limit lower="{lower}" upper="{upper}" effort="10" velocity="30"/></joint>'
        )
        parent = f"l{i}"
    return '<robot name="chain">' + "".join(links + joints) + "</robot>"


def make_stepper(urdf, gravity=(0, 0, -9.81), dt=1e-3, restitution=0.0, **options):
    model = build_model([parse_urdf_string(urdf)], gravity=gravity)
    limits = JointLimits.from_model(model, restitution=restitution)
    return OSStepper(model, None, StepOptions(dt=dt, **options), joint_limits=limits)


def report_fields(rep) -> tuple:
    """What the run loop reads of a step's report (Simulator.run, limit_events_of)."""
    return (
        rep.limit_dof.tolist(), rep.limit_side.tolist(), rep.limit_impulse.tolist(),
        rep.limit_impact, rep.energy_impacts, rep.energy_stabilisation, rep.lcp_size,
        rep.lcp_pivots, rep.lcp_residual, rep.solver, rep.n_contacts, rep.recovery_scale,
    )  # fmt: skip


def stepper_run(build, q0, v0, steps, compiled, monkeypatch):
    """(qs, vs, report fields, compiled steps) of ``steps`` steps of ``build()``'s stepper."""
    with monkeypatch.context() as mp:
        if not compiled:
            mp.setattr(LimitStepper, "eligible", staticmethod(lambda stepper: False))
        st = build()
        q, v, t = np.array(q0, dtype=float), np.array(v0, dtype=float), 0.0
        qs, vs, reps = [], [], []
        for _ in range(steps):
            q, v, rep = st.step(q, v, t)
            t += st.opt.dt
            qs.append(q.copy())
            vs.append(v.copy())
            reps.append(report_fields(rep))
    return np.array(qs), np.array(vs), reps, st._limit.steps


def rows_steps(run) -> int:
    """The steps of a run with limit rows (LCP size > 0)."""
    return sum(r[6] > 0 for r in run[2])


def assert_same(a, b):
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    for k, (ra, rb) in enumerate(zip(a[2], b[2], strict=True)):
        assert ra == rb, f"step {k + 1}: {ra} != {rb}"


@pytest.mark.parametrize("eps", [0.0, 0.5])
def test_pendulum_released_onto_a_stop_bit_for_bit(eps, monkeypatch):
    # released at -1 rad, gravity swings it onto the upper stop at -0.3 rad at ~1.5 rad/s (an
    # impact, with restitution a rebound and more impacts), then it comes to rest there
    def build():
        return make_stepper(pendulum_urdf(-2.0, -0.3), restitution=eps)

    a = stepper_run(build, [-1.0], [0.0], 1500, True, monkeypatch)
    b = stepper_run(build, [-1.0], [0.0], 1500, False, monkeypatch)
    impacts = sum(r[3] for r in a[2])
    assert impacts >= (2 if eps else 1), "the run must hit the stop (and again after the rebound)"
    assert a[3] == rows_steps(a) > 30 and b[3] == 0, "every limit step compiled, in one run"
    assert_same(a, b)


def test_pendulum_started_past_its_stop_bit_for_bit(monkeypatch):
    # started 0.2 rad past its stop: the recovery pushes it out at max_recovery_speed, the
    # rows past the stop have energy shares (energy_sources.step_shares)
    def build():
        return make_stepper(pendulum_urdf(-2.0, -0.3))

    a = stepper_run(build, [-0.1], [0.0], 400, True, monkeypatch)
    b = stepper_run(build, [-0.1], [0.0], 400, False, monkeypatch)
    assert sum(r[5] > 0 for r in a[2]) > 10, "the recovery must add energy in some steps"
    assert a[3] == rows_steps(a) > 300
    assert_same(a, b)


def test_started_past_its_stop_without_gravity_bit_for_bit(monkeypatch):
    # at rest 0.3 rad past its upper stop, nothing else acting: pushed back at
    # max_recovery_speed, then the stop's cap row (joint_rows.py "Recovery", in the lower
    # stop's slot) pulls the speed down with the violation, so it stays at the stop
    def build():
        return make_stepper(pendulum_urdf(-0.5, 0.5), gravity=(0, 0, 0))

    a = stepper_run(build, [0.8], [0.0], 800, True, monkeypatch)
    b = stepper_run(build, [0.8], [0.0], 800, False, monkeypatch)
    capped = [r for r in a[2] if r[0] == [0, 0] and r[2][0] > 0.0]
    assert len(capped) > 5, "the cap row must pull in some steps"
    assert a[3] == rows_steps(a) > 600
    assert_same(a, b)
    assert 0.5 - 1e-6 <= a[0][-1, 0] <= 0.5 and abs(a[1][-1, 0]) <= 1.5e-6


@pytest.mark.parametrize(("eps", "selection"), [(0.0, "least_norm"), (0.3, "least_norm"),
                                                (0.3, "vertex")])  # fmt: skip
def test_chain_on_several_stops_bit_for_bit(eps, selection, monkeypatch):
    # a 3-link chain falling onto stops at +-0.2 rad on every hinge: LCPs of 2-3 coupled rows
    # (the W p products of more than one row, several stops hit in one step); both LCP
    # selections of the chain (lcp/selection.py)
    def build():
        return make_stepper(pendulum_urdf(-0.2, 0.2, n=3), restitution=eps, lcp_selection=selection)

    a = stepper_run(build, [0.15, -0.1, 0.1], [3.0, -2.0, 4.0], 1200, True, monkeypatch)
    b = stepper_run(build, [0.15, -0.1, 0.1], [3.0, -2.0, 4.0], 1200, False, monkeypatch)
    assert max(r[6] for r in a[2]) >= 2, "some step must hold two or more rows"
    assert a[3] == rows_steps(a) > 300
    assert_same(a, b)


def test_independent_stops_solved_block_by_block(monkeypatch):
    # two separate pendulums (two trees) on their stops at once: K is block diagonal, the
    # chain solves it island by island (lcp/islands.py), and so does the kernel (the blocks
    # in the chain's order, the whole LCP's regularisation, the assembled z verified on the
    # whole): every step compiled, and the run is the general one bit for bit.
    def build():
        specs = [parse_urdf_string(pendulum_urdf(-2.0, -0.3).replace("chain", f"p{i}"))
                 for i in range(2)]  # fmt: skip
        model = build_model(specs, gravity=(0, 0, -9.81))
        limits = JointLimits.from_model(model)
        return OSStepper(model, None, StepOptions(dt=1e-3), joint_limits=limits)

    a = stepper_run(build, [-1.0, -0.8], [0.0, 0.0], 900, True, monkeypatch)
    b = stepper_run(build, [-1.0, -0.8], [0.0, 0.0], 900, False, monkeypatch)
    two = sum(r[6] == 2 for r in a[2])
    assert two > 300, "both must rest on their stops"
    assert a[3] == rows_steps(a), "every step with rows compiled, the two-stop ones too"
    assert_same(a, b)


def _panda_on_its_stops(restitution: float):
    return panda_on_its_stops(1.5, 'path = "/dev/null"', restitution)


def _compiled_and_general(sc, tmp_path, monkeypatch, prepare=None) -> list:
    """(results, summary, FreeLoop) of ``sc`` run to a file with the compiled loop and limit
    step, then with neither (every step through the general path); ``prepare(sim)`` is
    called on each Simulator before its run."""
    import dataclasses

    from mbsim.io.results.reader import load_results
    from mbsim.simcore.free_loop import FreeLoop

    runs = []
    for compiled in (True, False):
        path = tmp_path / ("compiled.h5" if compiled else "general.h5")
        out = dataclasses.replace(sc.output, path=path)
        with monkeypatch.context() as mp:
            if not compiled:
                mp.setattr(FreeLoop, "eligible", staticmethod(lambda sim: False))
                mp.setattr(LimitStepper, "eligible", staticmethod(lambda stepper: False))
            sim = Simulator(dataclasses.replace(sc, output=out, source=None))
            if prepare is not None:
                prepare(sim)
            summary = sim.run(out=path)
        assert summary.status == "complete", summary.message
        runs.append((load_results(path), summary, sim._free_loop))
    return runs


@pytest.mark.parametrize("eps", [0.0, 0.4])
def test_panda_on_its_stops_bit_for_bit(eps, monkeypatch):
    # the Panda falling under gravity with URDF damping onto its stops: limit impacts,
    # limit_begin / limit_end events, rows coming and going
    def run(compiled):
        with monkeypatch.context() as mp:
            if not compiled:
                mp.setattr(LimitStepper, "eligible", staticmethod(lambda stepper: False))
            sim = Simulator(_panda_on_its_stops(eps))
            qs, vs, reps, events = [], [], [], []
            for _ in range(1500):
                r = sim.step()
                qs.append(sim.q.copy())
                vs.append(sim.v.copy())
                reps.append(report_fields(r.report))
                events += [(sim.step_index, *row[:4]) for row in r._limit_rows]
        return np.array(qs), np.array(vs), reps, sim.stepper._limit.steps, events

    a, b = run(True), run(False)
    assert a[3] == rows_steps(a) > 1000 and b[3] == 0
    assert {"limit_begin", "limit_end"} <= {e[1] for e in a[4]}
    assert sum(r[3] for r in a[2]) >= 5, "joints must hit their stops"
    assert a[4] == b[4]
    assert_same(a, b)


@pytest.mark.parametrize("eps", [0.0, 0.25, 1.0])
def test_stop_reached_at_speed_w_leaves_at_e_w(eps):
    # no gravity, no damping: the pendulum coasts at w onto its upper stop at 0 rad
    w = 2.0
    st = make_stepper(pendulum_urdf(-1.0, 0.0), gravity=(0, 0, 0), restitution=eps)
    q, v, t = np.array([-0.1]), np.array([w]), 0.0
    hit = None
    for _ in range(200):
        q, v, rep = st.step(q, v, t)
        t += st.opt.dt
        if rep.limit_impact:
            hit = rep
            break
    assert hit is not None and st._limit.steps > 0
    assert v[0] == pytest.approx(-eps * w, rel=1e-12, abs=1e-12)
    # the impulse of the whole collision: I w (1 + e), the momentum reversed
    assert hit.limit_impulse[0] == pytest.approx(INERTIA * w * (1 + eps), rel=1e-12)


def test_resting_on_a_stop_the_impulse_is_the_gravity_torque_times_dt():
    # released at -1 rad onto the stop at -0.3 rad, it rests there by t = 1 s; the gravity
    # torque at q about the hinge is m g L sin(q) (the bob at L below it), held by the stop
    dt, m, g, L, stop = 1e-3, 1.0, 9.81, 1.0, -0.3
    st = make_stepper(pendulum_urdf(-2.0, stop), dt=dt)
    q, v, t = np.array([-1.0]), np.zeros(1), 0.0
    before = st._limit.steps
    for _ in range(1500):
        q, v, rep = st.step(q, v, t)
        t += dt
    assert st._limit.steps - before > 900, "the steps on the stop must run compiled"
    assert rep.limit_dof.tolist() == [0] and rep.limit_side.tolist() == [-1.0]
    torque = m * g * L * abs(np.sin(stop))
    assert rep.limit_impulse[0] == pytest.approx(torque * dt, rel=1e-9)
    assert q[0] == pytest.approx(stop, abs=1e-9)


# --------------------------------------------------------------------------- whole runs to file
# Simulator.run into a results file with the compiled loop taking free and limit steps
# (simcore/free_loop.py) against the run with neither the loop nor the compiled limit step:
# every recorded row, event, diagnostic (but the wall time of a step) and summary number.


@pytest.mark.parametrize("eps", [0.0, 0.4])
def test_loop_with_limit_steps_agrees_with_the_general_path(eps, tmp_path, monkeypatch):
    import dataclasses

    sc = _panda_on_its_stops(eps)
    sc = dataclasses.replace(
        sc, output=dataclasses.replace(sc.output, body_poses=True, record_every=7)
    )
    a, b = _compiled_and_general(sc, tmp_path, monkeypatch)
    loop = a[2]
    assert loop.limit_steps > 500, "the limit steps must run in the compiled loop"
    assert b[2].steps == 0
    assert {"limit_begin", "limit_end"} <= set(a[1].events)
    assert np.any(a[0].diagnostics["lcp_size"] > 0), "recorded limit steps have an LCP row"
    assert_same_runs(a, b)


def test_panda_started_past_a_stop_loop_agrees_with_the_general_path(tmp_path, monkeypatch):
    # no gravity, the Panda's neutral pose: joint4 at 0 rad starts 0.07 rad above its upper
    # limit -0.0698 rad; the recovery and then its cap row (joint_rows.py "Recovery") bring it
    # back, in the compiled loop as in the general path, and it stays at the stop
    sc = load_scenario_text(
        "[simulation]\nduration = 0.4\ndt = 1e-3\ngravity = [0.0, 0.0, 0.0]\n"
        f'[robot.panda]\nurdf = "{sample_path("panda")}"\n'
        '[contact]\nself_collision = false\n[output]\npath = "/dev/null"\n'
    )
    a, b = _compiled_and_general(sc, tmp_path, monkeypatch)
    assert a[2].limit_steps > 300 and b[2].steps == 0
    assert_same_runs(a, b)
    k = a[0].v_names.index("panda_joint4")
    upper = -0.0698132  # the Panda URDF's panda_joint4 upper limit, rad
    # near the stop: the recovery's reaction set the other joints moving (mm/s), which carries
    # joint4 by ~1e-5 rad over the run; without the cap it would leave at 0.5 rad/s
    np.testing.assert_allclose(a[0].q[-1, k], upper, atol=1e-4)
    assert abs(a[0].v[-1, k]) <= 1e-3


def _fixed_panda(duration: float, q0: str, extra: str = "") -> str:
    """The bundled Panda on a fixed base for ``duration`` s at dt = 1 ms, from ``q0`` (TOML
    table body), with ``extra`` TOML after the robot; no floor or self-collision, recording
    every 5 steps."""
    return f"""[simulation]
duration = {duration!r}
dt = 1e-3
[robot.panda]
urdf = "{sample_path("panda")}"
base = "fixed"
q0 = {{ {q0} }}
{extra}[contact]
floor = false
self_collision = false
[output]
path = "/dev/null"
record_every = 5
"""


def test_pd_driven_into_its_stops_loop_agrees_with_the_general_path(tmp_path, monkeypatch):
    # joint PD targets beyond two stops (joint4 above its upper limit -0.07 rad, joint6 below
    # its lower one -0.0175 rad): the actuators press the joints onto the stops and hold them
    # there, with the implicit PD gain on the armature of every limit step
    text = _fixed_panda(
        0.6,
        "panda_joint2 = 0.5, panda_joint4 = -0.5, panda_joint6 = 0.4, panda_joint7 = -0.785",
        """[robot.panda.pd]
panda_joint2 = { target = 0.5, kp = 300.0, kd = 40.0 }
panda_joint4 = { target = 0.3, kp = 300.0, kd = 40.0 }
panda_joint6 = { target = -0.5, kp = 100.0, kd = 3.0 }
""",
    )
    sc = load_scenario_text(text, source="<panda pd stops>")
    a, b = _compiled_and_general(sc, tmp_path, monkeypatch)
    assert a[2].limit_steps > 200, "the PD-held limit steps must run in the compiled loop"
    assert np.any(a[0].diagnostics["lcp_size"] > 0)
    assert np.any(a[0].tau != 0), "the actuators act"
    assert_same_runs(a, b)


def test_recovery_from_past_a_stop_loop_agrees_with_the_general_path(tmp_path, monkeypatch):
    # joint4 started 0.17 rad past its upper stop (-0.0698 rad; set on the Simulator, as a
    # scenario's q0 may not be): the stop's recovery pushes it back over hundreds of steps,
    # each a stabilisation energy gain the summary counts (energy_sources.py), with
    # limit_begin / limit_end events on the way; the compiled loop takes those steps and
    # hands their gains and events to the run loop (free_loop.py, step 5c)
    text = _fixed_panda(
        0.5, "panda_joint2 = 0.5, panda_joint4 = -0.1, panda_joint6 = 0.2, panda_joint7 = -0.785"
    )

    def past_the_stop(sim):
        sim.q = sim.q.copy()
        sim.q[sim.q_index["panda/panda_joint4"]] = 0.1

    sc = load_scenario_text(text, source="<panda past its stop>")
    a, b = _compiled_and_general(sc, tmp_path, monkeypatch, past_the_stop)
    assert a[2].limit_steps > 300, "the recovering limit steps must run in the compiled loop"
    assert a[1].energy_sources.sources["stabilisation"].steps > 100, "recovery gains energy"
    assert {"limit_begin", "limit_end"} <= set(a[1].events)
    assert_same_runs(a, b)


def test_spherical_joint_limits_keep_the_python_path():
    # a ball joint with a swing/twist <limit>: its rows are built in Python
    # (simcore/spherical_limits.py), so neither compiled step may take the model's steps;
    # the same joint without its limit may
    text = """<robot name="rod"><link name="a"/>
      <link name="b"><inertial><origin xyz="0 0 0.4"/><mass value="2"/><inertia ixx="0.01"
        iyy="0.01" izz="0.002" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="ball" type="spherical"><parent link="a"/><child link="b"/>{limit}</joint>
      <link name="c"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01"
        ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="hinge" type="revolute"><parent link="b"/><child link="c"/>
        <axis xyz="0 1 0"/><limit lower="-0.5" upper="0.5" effort="10" velocity="1"/></joint>
    </robot>"""
    limit = '<limit lower="0.3" upper="0.5" twist="0.4" effort="100"/>'
    for lim, compiled in ((limit, False), ("", True)):
        model = build_model([parse_urdf_string(text.format(limit=lim), source="rod.urdf")])
        opts = StepOptions(dt=1e-3)
        st = OSStepper(model, None, opts, joint_limits=JointLimits.from_model(model))
        assert bool(st.joint_limits.spherical) is not compiled
        assert LimitStepper.eligible(st) is compiled
