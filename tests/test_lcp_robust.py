"""The LCP layer's robustness (issue 20): an acceptance test that scales with the problem and
accepts a verified solution whichever solver found it, failure messages that name the contacts,
and a time budget / stop flag that no solver can ignore."""

from __future__ import annotations

import importlib
import time

import numpy as np
import pytest

from mbsim.simcore.lcp import Status, check, lemke, pgs, solve_lcp
from mbsim.simcore.lcp import budget as lcp_budget
from mbsim.simcore.lcp.problem import evaluate

# the package re-exports functions named like these modules
lcp_chain = importlib.import_module("mbsim.simcore.lcp.chain")
lemke_module = importlib.import_module("mbsim.simcore.lcp.lemke")

G = 9.81


def stack_lcp(m_light, m_heavy, dt=1e-3):
    """Frictionless vertical stack: a light link on the floor (contact 0), a heavy body on it
    (contact 1), both falling at g dt after the free motion. W is the relative-velocity
    compliance of the two contacts; the exact impulses hold both bodies: (closed form)
    z0 = (m_light + m_heavy) g dt, z1 = m_heavy g dt."""
    a, b = 1.0 / m_light, 1.0 / m_heavy
    M = np.array([[a, -a], [-a, a + b]])
    q = np.array([-G * dt, 0.0])
    z = np.array([(m_light + m_heavy) * G * dt, m_heavy * G * dt])
    return M, q, z


def test_an_exact_solution_to_eleven_digits_is_accepted_on_a_badly_scaled_stack():
    """A 50 kg body on a 1 g link: ||M|| ||z|| is 1e5 ||q||, so a z exact to 1e-11 (relative)
    leaves a residual of ~1e-8 m/s. The old absolute floor (1e-9 m/s) refused it; the
    tolerance relative to |M| |z| + |q| accepts it, and still refuses a z wrong by 1e-4."""
    M, q, z_exact = stack_lcp(1e-3, 50.0)
    assert np.allclose(M @ z_exact + q, 0.0, atol=1e-12)  # the closed form solves it
    z = z_exact * (1.0 + 1e-11 * np.array([1.0, -1.0]))
    r = evaluate(M, q, z, Status.SOLVED, 2, "lemke")
    assert r.residual > 1e-9  # above the old absolute floor
    assert r.ok and check(r) is None
    wrong = z_exact * (1.0 + 1e-4 * np.array([1.0, -1.0]))
    assert not evaluate(M, q, wrong, Status.SOLVED, 2, "lemke").ok


def test_the_verdict_does_not_depend_on_units():
    """Impulses in mN s and velocities in mm/s describe the same problem: same verdict."""
    M, q, z_exact = stack_lcp(1e-3, 50.0)
    for rel in (1e-11, 1e-4):
        z = z_exact * (1.0 + rel * np.array([1.0, -1.0]))
        verdicts = {
            evaluate(M * cv / ci, q * cv, z * ci, Status.SOLVED, 2, "lemke").ok
            for cv in (1.0, 1e3, 1e-3)
            for ci in (1.0, 1e3)
        }
        assert len(verdicts) == 1


def test_a_verified_solution_is_accepted_whichever_way_the_solver_ended():
    """Three contacts on one direction of motion (M = J J^T of rank 1, plus 1e-12 I), feasible
    by construction. Lemke's path ends on a ray, but the z it holds solves the LCP to 1e-12
    (checked here independently on (M, q)): it is accepted from Lemke, not thrown away for
    the regularised attempts (before: ``lemke_reg`` after a failed ``lemke``)."""
    rng = np.random.default_rng(94)
    n = int(rng.integers(3, 8))
    k = int(rng.integers(1, n))
    J = rng.standard_normal((n, k))
    M = J @ J.T + 10.0 ** (-rng.integers(12, 17)) * np.eye(n)
    q = -M @ rng.random(n)
    r = solve_lcp(M, q)
    assert r.ok and r.solver == "lemke" and len(r.attempts) == 1
    assert "accepted on verification (lemke ended ray_termination" in r.message
    w = M @ r.z + q
    worst = max(np.abs(np.minimum(w, r.z)).max(), -w.min(), -r.z.min())
    scale = np.abs(M).sum(axis=1).max() * np.abs(r.z).max() + np.abs(q).max()
    assert worst <= 1e-11 * scale


def test_failure_message_names_the_worst_rows():
    M = np.array([[1.0, -1.0], [-1.0, 1.0]])
    q = np.array([-1.0, -1.0])  # infeasible
    r = solve_lcp(M, q, pgs_max_iter=20)
    reason = check(r, step=4, labels=["contact 0 ('a' on world, gap -0.01 m)", "contact 1"])
    assert reason is not None and "worst rows: contact " in reason
    assert "'a' on world, gap -0.01 m" in reason


# ------------------------------------------------------------------ budget and stop flag


def hard_lcp(n, seed=0):
    """A dense SPD LCP whose every row is active: Lemke needs n pivots."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((n, n))
    return B @ B.T + n * np.eye(n), -1.0 - rng.random(n)


def test_lemke_polls_the_stop_flag_between_chunks():
    n = 300
    M, q = hard_lcp(n)
    assert lcp_budget.chunk_pivots(n) < n  # several chunks
    calls = []

    def stop():
        calls.append(1)
        return len(calls) >= 2

    with lcp_budget.limits(stop=stop), pytest.raises(lcp_budget.SolveInterrupted):
        lemke(M, q)
    assert len(calls) == 2  # asked after each chunk, stopped at once
    assert lemke(M, q).ok  # without a context nothing is polled


def test_pgs_polls_the_stop_flag_between_chunks():
    M, q = hard_lcp(20)
    M = M + 1e3 * np.ones((20, 20))  # ill-conditioned: PGS creeps
    with lcp_budget.limits(stop=lambda: True), pytest.raises(lcp_budget.SolveInterrupted):
        pgs(M, q, max_iter=10 * lcp_budget.PGS_CHUNK)


def test_an_exhausted_time_budget_ends_the_chain_with_the_cause():
    n = 300
    M, q = hard_lcp(n)
    t0 = time.perf_counter()
    with lcp_budget.limits(seconds=0.0):
        r = solve_lcp(M, q)
    assert time.perf_counter() - t0 < 1.0
    assert r.status == Status.FAILED and not r.ok
    assert [a.status for a in r.attempts] == [Status.TIME_LIMIT]
    assert "time budget of 0 s ran out" in r.message
    assert "lemke time_limit" in r.describe()


def test_pgs_time_budget():
    M, q = hard_lcp(20)
    M = M + 1e3 * np.ones((20, 20))
    with lcp_budget.limits(seconds=0.0):
        r = pgs(M, q, max_iter=10 * lcp_budget.PGS_CHUNK)
    assert r.status == Status.TIME_LIMIT and r.pivots == lcp_budget.PGS_CHUNK and not r.ok


def test_nested_limits_keep_the_earlier_deadline_and_both_flags():
    flags = {"outer": False}
    with lcp_budget.limits(seconds=0.0, stop=lambda: flags["outer"]):
        with lcp_budget.limits(seconds=100.0):
            b = lcp_budget.current()
            assert b.seconds == 0.0 and b.expired()
            flags["outer"] = True
            with pytest.raises(lcp_budget.SolveInterrupted):
                lcp_budget.poll()
    assert lcp_budget.current() is None


def _failing_solvers(monkeypatch):
    """Make every solver of the chain give up at once (1 pivot, no sweep)."""
    monkeypatch.setattr(lemke_module, "default_max_pivots", lambda n: 1)
    real_pgs = lcp_chain.pgs
    monkeypatch.setattr(
        lcp_chain, "pgs", lambda M, q, max_iter, tol_rel: real_pgs(M, q, 0, tol_rel)
    )


def test_a_failed_step_names_the_contacts(monkeypatch):
    """The stepper's message for a real LCP failure names the link pair and gap of the
    contacts whose rows fail, not only the solvers."""
    from analytic_contacts import SpheresOnPlane
    from mbsim.simcore.model import build_model
    from mbsim.simcore.spec import Inertial, LinkSpec, RobotSpec
    from mbsim.simcore.stepper import OSStepper, SimulationError, StepOptions

    link = LinkSpec("ball", Inertial(1.0, np.zeros(3), np.diag([4e-3] * 3)))
    model = build_model(
        [RobotSpec("ball", [link], [], "ball", base="floating")], gravity=(0, 0, -G)
    )
    st = OSStepper(model, SpheresOnPlane({0: 0.1}), StepOptions(dt=1e-3))
    q = model.neutral_q()
    q[2] = 0.099  # 1 mm deep: the contact row must push
    _failing_solvers(monkeypatch)
    with pytest.raises(SimulationError) as exc:
        st.step(q, np.zeros(6), 0.0)
    msg = str(exc.value)
    assert "all 5 solvers of the fallback chain failed" in msg
    assert "worst rows: contact 0 ('ball' on world, gap -0.001 m)" in msg


def test_a_stop_request_ends_the_run_inside_a_step(monkeypatch):
    """SIGINT/SIGTERM set the flag the simulator polls between steps; the solvers poll it too,
    so a stop during a long step abandons that step (the state stays the last completed one)
    and the run ends ``interrupted``. One pivot per chunk here so the dual-arm grasp's first
    contact LCP (4 contacts, size 24) is polled mid-solve."""
    from mbsim.io.scenario import load_scenario_text
    from mbsim.samples import dual_arm
    from mbsim.simulator import Simulator
    from test_dual_arm import ROBOTS

    scenario = load_scenario_text(
        dual_arm.table1_scenario_toml("os", 4), source=ROBOTS / "table1.toml"
    )
    sim = Simulator(scenario)
    q0 = sim.q.copy()
    monkeypatch.setattr(lcp_budget, "CHUNK_FLOPS", 1.0)
    calls = []

    def should_stop():
        calls.append(1)
        return len(calls) >= 2  # the first poll is before step 0, the second inside it

    summary = sim.run(should_stop=should_stop)
    assert summary.status == "interrupted" and "during a step" in summary.message
    assert summary.steps == 0 and sim.step_index == 0
    np.testing.assert_array_equal(sim.q, q0)


def test_chunked_lemke_follows_the_same_path(monkeypatch):
    """Chunking only pauses the pivot loop: one pivot per chunk gives the same z, bit for bit,
    and the same pivot count (including a recomputation of B^-1 inside the path)."""
    M, q = hard_lcp(60, seed=5)
    a = lemke(M, q, refactor_every=7)
    monkeypatch.setattr(lcp_budget, "CHUNK_FLOPS", 1.0)
    assert lcp_budget.chunk_pivots(60) == 1
    with lcp_budget.limits(seconds=100.0):
        b = lemke(M, q, refactor_every=7)
    assert a.ok and b.ok and a.pivots == b.pivots >= 60
    np.testing.assert_array_equal(a.z, b.z)
