"""The compiled contact step (simcore/contact_fused.py) against the Python contact step.

Truth: the Python path of ``OSStepper._contact_step`` (ContactProblem, the OS formulation,
the LCP chain, the impulse response, energy_sources.step_shares), which the physics,
formulation and Pinocchio tests check against closed forms and the other formulations. The
compiled step claims the same floating-point operations in the same order, so whole runs
must agree bit for bit: every recorded q, v, energy, contact row (impulses, sliding flags),
event, diagnostic (LCP size, pivots, residual, solver, penetration, energy shares) and the
summary. The reference runs are forced off the compiled step (``ContactFuser.eligible``
False), as tests/test_limit_step.py forces off the limit step, and both runs solve their LCPs
cold (``lcp.warm.ENABLED`` False): the compiled step runs the chain's first attempt from
Lemke, and a warm-started answer agrees with it only to the acceptance tolerance.

Then the pieces whose order is numpy's (einsum's sums), and the LCP attempt against
``chain.solve_lcp`` on random contact-like LCPs, and a failing LCP that must still fail.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from mbsim.bench import pendulum_scenario
from mbsim.io.scenario import load_scenario
from mbsim.simcore.contact_fused import ContactFuser, _impulses, least_norm_attempt, pivot_caps
from mbsim.simcore.lcp import solve_lcp
from mbsim.simcore.lcp.chain import _proximal
from mbsim.simcore.limit_step import ACCEPT
from mbsim.simcore.stepper import SimulationError
from mbsim.simulator import Simulator
from whole_runs import assert_same_runs as _assert_same_runs
from whole_runs import file_run

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(autouse=True)
def _cold_lcps(monkeypatch):
    """Every LCP of these tests from Lemke (module docstring)."""
    from mbsim.simcore.lcp import warm

    monkeypatch.setattr(warm, "ENABLED", False)


def _file_run(sc, path, fused, monkeypatch):
    """(results, summary, compiled contact steps, handed back) of a whole run to ``path``."""
    off = [] if fused else [(ContactFuser, "eligible", staticmethod(lambda stepper: False))]
    res, summary, sim = file_run(sc, path, monkeypatch, off)
    f = sim.stepper._fused
    return res, summary, f.steps, f.fallbacks


def _compare(sc, tmp_path, monkeypatch, min_fused: int):
    a = _file_run(sc, tmp_path / "a.h5", True, monkeypatch)
    b = _file_run(sc, tmp_path / "b.h5", False, monkeypatch)
    assert a[2] >= min_fused, f"only {a[2]} steps were taken by the compiled contact step"
    assert b[2] == 0
    _assert_same_runs(a[:3], b[:3])
    return a


def test_panda_table_bit_for_bit(tmp_path, monkeypatch):
    # the hand lands at ~0.156 s at 2.1 m/s (a collision: the impact phase) and stays
    # pressed on the table with 3-4 contacts; about half of its LCPs need the least-norm
    # attempt's active-set corrections or the restricted LCP
    sc = load_scenario("sample:panda-table.toml", overrides={"simulation.duration": 0.4})
    a = _compare(sc, tmp_path, monkeypatch, min_fused=200)
    impacts = ~np.isnan(np.asarray(a[0].events["normal_velocity_before"]))
    assert impacts.any() and a[3] == 0  # the landing's collision taken by the kernel too


def test_pendulum_30_bit_for_bit(tmp_path, monkeypatch):
    # the paper's 30-link pendulum (Sec. 8: dt = 0.1 ms, mu 0.5, restitution 0.7: free swing,
    # then floor and self contacts from ~2.2 s), with collisions (compression, the recovered
    # impulse and decompression) among them
    sc = pendulum_scenario(30, "os", 3.0, 1e-4)
    a = _compare(sc, tmp_path, monkeypatch, min_fused=1000)
    assert (~np.isnan(np.asarray(a[0].events["normal_velocity_before"]))).sum() >= 5


def _stand(scene: str):
    pytest.importorskip("pybullet_data", reason="pybullet is not installed")
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_peers
    finally:
        sys.path.remove(str(BENCHMARKS))
    return bench_peers.scene_scenario(scene, 0.5, "/dev/null")


@pytest.mark.parametrize("scene", ["a1-stand", "laikago-stand"])
def test_quadruped_standing_bit_for_bit(scene, tmp_path, monkeypatch):
    # benchmarks/bench_peers.py's scenes: a floating base on 4 feet, joint PD (implicit
    # gains), mu 0.8; a1 sphere feet, laikago convex mesh toes
    _compare(_stand(scene), tmp_path, monkeypatch, min_fused=400)


def test_fixed_base_racecar_needs_the_proximal_polish_bit_for_bit(tmp_path, monkeypatch):
    # pybullet_data's racecar with its default fixed base, wheels on the floor: a wheel
    # cannot move along its contacts' normals, so every LCP's active-set system is
    # inconsistent at rounding level and the polish takes the proximal iterations
    # (lcp/proximal.py), which the kernel runs too: no step handed back
    pytest.importorskip("pybullet_data", reason="pybullet is not installed")
    import pybullet_data

    from mbsim.io.scenario import scenario_from_urdf
    from mbsim.simcore.lcp import chain

    urdf = Path(pybullet_data.getDataPath()) / "racecar" / "racecar.urdf"
    sc = scenario_from_urdf(str(urdf), {}, duration=0.1, floor=True, place_on_floor=True)
    calls = []
    monkeypatch.setattr(chain, "_proximal", lambda *a: calls.append(1) or _proximal(*a))
    a = _compare(sc, tmp_path, monkeypatch, min_fused=100)
    assert a[3] == 0 and len(calls) >= 100  # the Python run polished by proximal iterations


@pytest.mark.parametrize("scene", ["panda-table", "a1-stand"])
def test_warm_started_runs_bit_for_bit(scene, tmp_path, monkeypatch):
    # with the warm start on (lcp/warm.py, the default) in both runs: the compiled step tries
    # the store's remembered set first as chain._solve_warm does, and leaves the store as the
    # Python path would, so the runs still agree bit for bit, and most steps of a resting
    # contact take their answer from the guess (no pivot)
    from mbsim.simcore.lcp import warm

    monkeypatch.setattr(warm, "ENABLED", True)
    if scene == "panda-table":
        sc = load_scenario("sample:panda-table.toml", overrides={"simulation.duration": 0.4})
    else:
        sc = _stand(scene)
    stores = []
    real_init = Simulator.__init__

    def keep_store(self, *a, **kw):
        real_init(self, *a, **kw)
        stores.append(self.stepper.formulation.warm)

    monkeypatch.setattr(Simulator, "__init__", keep_store)
    _compare(sc, tmp_path, monkeypatch, min_fused=150)
    fused, python = stores
    assert (fused.tried, fused.accepted) == (python.tried, python.accepted)
    assert fused.accepted > 100, (fused.tried, fused.accepted)


@pytest.mark.parametrize("k", [3, 5, 7])
def test_impulses_in_einsum_order(k):
    # F = D beta as ContactProblem.impulses computes it (np.einsum "ijk,ik->ij")
    rng = np.random.default_rng(k)
    nu = 400
    D = rng.standard_normal((nu, 3, k))
    beta = rng.standard_normal(nu * k) * rng.uniform(0.0, 10.0, nu * k)
    F = np.empty((nu, 3))
    _impulses(D, beta, F)
    np.testing.assert_array_equal(F, np.einsum("ijk,ik->ij", D, beta.reshape(nu, k)))


def _contact_like_lcp(rng, nu, k=5):
    """(M, q) of Eq. 53 for nu contacts on one body: W = J J^T of a random 6-DoF body
    (rank 6, so more than two contacts are redundant), random D, mu 0.5, q of a body
    pressed down (normal rows) with some slip."""
    from mbsim.simcore.contact import contact_lcp, friction_matrix

    J = rng.standard_normal((3 * nu, 6))
    W = J @ J.T
    normal = np.tile([0.0, 0.0, 1.0], (nu, 1)) + 0.05 * rng.standard_normal((nu, 3))
    normal /= np.linalg.norm(normal, axis=1)[:, None]
    D = friction_matrix(normal, k - 1)
    vu = rng.standard_normal((nu, 3)) * 0.1
    vu[:, 2] -= 1.0
    return contact_lcp(W, D, np.full(nu, 0.5), vu)


def test_least_norm_attempt_matches_the_chain():
    # whenever the compiled attempt accepts, the chain's first attempt (lemke_reg) accepted
    # the same z with the same pivots (the compiled one may only decline more often: then
    # the Python chain takes the step)
    accepted = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        M, q = _contact_like_lcp(rng, nu=1 + seed % 6)
        n = len(q)
        z, w = np.empty(n), np.empty(n)
        state, pivots, worst = least_norm_attempt(M, q, 1e-9, pivot_caps()[1], z, w)
        if state != ACCEPT:
            continue
        accepted += 1
        ref = solve_lcp(M, q, select="least_norm")
        assert len(ref.attempts) == 1 and ref.solver == "lemke_reg"
        np.testing.assert_array_equal(z, ref.z)
        assert pivots == ref.pivots
        assert worst == max(ref.residual, ref.sign_violation, ref.eq_residual)
    assert accepted >= 30


def test_a_failing_lcp_still_fails(tmp_path):
    # an acceptance tolerance no answer meets: the compiled step declines every LCP and the
    # Python chain raises the failure, with the message it has without the compiled step
    def run(fused):
        sc = load_scenario("sample:panda-table.toml", overrides={"simulation.duration": 0.3})
        sim = Simulator(sc)
        sim.stepper.configure(lcp_tol_rel=-1.0)
        if not fused:
            sim.stepper._fused.eligible = lambda stepper: False
        with pytest.raises(SimulationError) as err:
            for _ in range(300):
                sim.step()
        return str(err.value), sim.stepper._fused.fallbacks

    message, handed_back = run(True)
    assert handed_back >= 1
    assert message == run(False)[0]


def _report_fields(rep) -> tuple:
    """The StepReport fields the run loop and the results file read of a contact step."""
    return (
        rep.n_contacts, rep.lcp_size, rep.lcp_pivots, rep.lcp_residual, rep.solver,
        rep.max_penetration, rep.normal_impulse.tolist(), rep.tangent_impulse.tolist(),
        rep.sliding.tolist(), rep.energy_impacts, rep.energy_stabilisation,
        rep.energy_closures, rep.recovery_scale, len(rep.impacts), rep.limit_impact,
        rep.constraint_error, rep.redundant_rows, rep.limit_dof.tolist(),
    )  # fmt: skip


def _stepped(sc, steps, options, fused, monkeypatch):
    """(q, v, report fields) of every step of ``sc`` with the stepper options ``options``."""
    with monkeypatch.context() as mp:
        if not fused:
            mp.setattr(ContactFuser, "eligible", staticmethod(lambda stepper: False))
        sim = Simulator(sc)
        sim.stepper.configure(**options)
        out = []
        for _ in range(steps):
            rep = sim.step()
            out.append((sim.q.copy(), sim.v.copy(), _report_fields(rep)))
        return out, sim.stepper._fused.steps


def _assert_fused_matches_python(sc, steps, options, monkeypatch, min_fused):
    """Step ``sc`` with the compiled contact step and with the Python one: every step's q, v
    and report agree bit for bit, and at least ``min_fused`` steps were compiled ones.
    Returns the compiled run's steps."""
    a, fused = _stepped(sc, steps, options, True, monkeypatch)
    b, _ = _stepped(sc, steps, options, False, monkeypatch)
    assert fused >= min_fused
    for i, ((qa, va, ra), (qb, vb, rb)) in enumerate(zip(a, b, strict=True)):
        np.testing.assert_array_equal(qa, qb, err_msg=f"q at step {i}")
        np.testing.assert_array_equal(va, vb, err_msg=f"v at step {i}")
        assert ra == rb, f"report at step {i}"
    return a


@pytest.mark.parametrize(
    "options",
    [
        {"lcp_selection": "vertex"},
        {"friction_axes": "world", "nf": 6},
        {"curvature_point": "contact", "gap_floor": -1e-5},
        {"curvature_correction": False, "stabilization": 0.5, "mu": 0.3},
        {"impact_friction": "compression", "restitution": 0.5, "impact_velocity": 1e-3},
        {"energy_consistent_impacts": True, "restitution": 0.5, "impact_velocity": 1e-3},
    ],
    ids=[
        "vertex",
        "world-nf6",
        "contact-point-gap-floor",
        "no-curvature",
        "compression-friction",
        "energy-consistent",
    ],  # fmt: skip
)
def test_step_options_bit_for_bit(options, monkeypatch):
    # the options the compiled step reads besides the defaults, on the A1's sphere feet (core
    # points of the curvature term) when pybullet_data is there, else on panda-table's mesh
    try:
        sc, steps = _stand("a1-stand"), 300
    except pytest.skip.Exception:
        sc = load_scenario("sample:panda-table.toml", overrides={"simulation.duration": 0.3})
        steps = 300
    _assert_fused_matches_python(sc, steps, options, monkeypatch, 100)


BOX = """<?xml version="1.0"?>
<robot name="box"><link name="box">
  <inertial><mass value="1.0"/>
    <inertia ixx="0.0017" iyy="0.0017" izz="0.0017" ixy="0" ixz="0" iyz="0"/></inertial>
  <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>
</link></robot>
"""


def _boxes(tmp_path, centres):
    """Free 10 cm boxes of 1 kg at ``centres`` (m) over the floor, mu 0.5."""
    from mbsim.io.scenario import load_scenario_text

    urdf = tmp_path / "box.urdf"
    urdf.write_text(BOX)
    text = "[simulation]\nduration = 0.3\ndt = 1e-3\n"
    for k, c in enumerate(centres):
        text += f'[robot.box{k}]\nurdf = "{urdf}"\nbase = "floating"\n'
        text += f"base_pose = {{ xyz = {list(c)!r} }}\n"
    text += '[contact]\nfloor = true\nmu = 0.5\n[output]\npath = "/dev/null"\n'
    return load_scenario_text(text, source="<boxes>")


def test_separate_bodies_and_a_stack_bit_for_bit(tmp_path, monkeypatch):
    # two boxes resting apart on the floor: their contacts share no tree, M splits into
    # islands, which the kernel solves block by block as the Python chain does
    # (lcp/islands.py); a box resting on another: one island. Bit for bit either way.
    for centres in (
        [(0.0, 0.0, 0.0505), (0.5, 0.0, 0.0505)],
        [(0.0, 0.0, 0.0505), (0.01, 0.0, 0.152)],
    ):
        sc = _boxes(tmp_path, centres)
        _assert_fused_matches_python(sc, 300, {}, monkeypatch, 200)


@pytest.mark.parametrize("warm_on", [False, True], ids=["cold", "warm"])
def test_stacks_apart_bit_for_bit(warm_on, tmp_path, monkeypatch):
    # two stacks of two boxes and a lone box, apart on the floor: three contact islands
    # (contact_islands.py), two of them joining two trees, each built and solved alone
    # (Lambda, W and M never over the whole); the Python path assembles the whole LCP and
    # splits it (lcp/islands.py). Every step's q, v and report agree bit for bit, the warm
    # start's store too (its keys are the whole LCP's rows of each block)
    from mbsim.simcore.lcp import warm

    monkeypatch.setattr(warm, "ENABLED", warm_on)
    centres = [(0.0, 0.0, 0.0505), (0.01, 0.0, 0.152), (0.5, 0.0, 0.0505), (0.49, 0.01, 0.152)]
    sc = _boxes(tmp_path, [*centres, (0.0, 0.5, 0.0505)])
    a = _assert_fused_matches_python(sc, 300, {}, monkeypatch, 200)
    assert max(r[1] for _q, _v, r in a) >= 5 * 4 * 6  # all five boxes in contact: 120 rows
