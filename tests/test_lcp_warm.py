"""The warm start of the LCP chain (lcp/warm.py) against Lemke's answer.

Truth: the cold chain (Lemke, or Lemke on M + delta I with the least-change polish, verified
on (M, q)), which tests/test_lcp_*.py check against closed forms and independent
complementarity checks; here every warm answer is also checked for complementarity
independently. On a P-matrix LCP the solution is unique, so a warm answer that passes must be
Lemke's: they agree to the rounding of two dense solves, 1e-9 relative here (cond(M) <= 1e3,
and the acceptance tolerance itself is 1e-9 relative). On the contact LCPs of real steps M is
only copositive and the friction rows of redundant face contacts give M_SS of low rank: there
an accepted guess is the regularised LCP's solution on the same active set, polished as the
chain polishes (module docstring of lcp/warm.py), and agrees with the cold answer to the
tolerance given at each test, measured over the runs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import mbsim.simcore.formulations.minimal as minimal
from mbsim.simcore.lcp import solve_lcp, warm
from mbsim.simcore.lcp.chain import LSTSQ_RCOND
from mbsim.simcore.lcp.selection import LEAST_NORM_DELTA, selecting
from mbsim.simcore.lcp.warm import WarmStart, guess_kernel
from mbsim.simulator import Simulator

SELECTIONS = ("vertex", "least_norm")


def violation(M, q, z) -> float:
    """max of |min(w, z)|, -w and -z with w = M z + q recomputed here."""
    w = M @ z + q
    return max(float(np.abs(np.minimum(w, z)).max()), float(-w.min()), float(-z.min()), 0.0)


def p_matrix_lcp(rng, n, symmetric):
    """A positive definite M (symmetric, or with a skew part: still a P-matrix) and q."""
    A = rng.standard_normal((n, n))
    M = A @ A.T / n + 0.1 * np.eye(n)
    if not symmetric:
        B = rng.standard_normal((n, n))
        M = M + (B - B.T)
    return M, rng.standard_normal(n)


@pytest.mark.parametrize("select", SELECTIONS)
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_warm_answer_is_lemkes_on_p_matrix_lcps(seed, symmetric, select):
    """A sequence of slowly changing LCPs, as a resting contact's: each solved warm from the
    previous answer's active set equals the cold chain's answer."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    M, q = p_matrix_lcp(rng, n, symmetric)
    store = WarmStart()
    accepted = 0
    with selecting(select):
        for _ in range(8):
            r = solve_lcp(M, q, warm=store)
            cold = solve_lcp(M, q)
            assert r.ok and cold.ok and not cold.warm
            accepted += r.warm
            if r.warm:
                assert r.pivots == 0
                assert r.solver == ("lemke_reg" if select == "least_norm" else "lemke")
            scale = max(1.0, float(np.abs(cold.z).max()))
            assert np.max(np.abs(r.z - cold.z)) <= 1e-9 * scale
            assert violation(M, q, r.z) <= 1e-9 * (np.abs(M).sum(1).max() * scale + 1.0)
            q = q + 1e-3 * rng.standard_normal(n)  # the next step's LCP
            M = M + 1e-4 * np.diag(rng.random(n))
    assert store.tried == 7 and accepted == store.accepted == 7


@pytest.mark.parametrize("select", SELECTIONS)
def test_a_wrong_guess_is_repaired_or_falls_back_to_lemke(select, monkeypatch):
    rng = np.random.default_rng(7)
    M, q = p_matrix_lcp(rng, 30, symmetric=True)
    with selecting(select):
        cold = solve_lcp(M, q)
        right = np.flatnonzero(cold.z > 0)
        wrong = np.setdiff1d(np.arange(30), right)  # every row on the wrong side
        assert cold.pivots > 0 and right.size and wrong.size
        # the swaps of block principal pivoting repair it: Lemke's answer, without pivots
        store = WarmStart()
        store.sets[(30, None)] = wrong
        r = solve_lcp(M, q, warm=store)
        assert r.warm and r.pivots == 0
        np.testing.assert_allclose(r.z, cold.z, rtol=0, atol=1e-9 * np.abs(cold.z).max())
        np.testing.assert_array_equal(store.guess((30, None)), right)
        # one set only: the guess fails, Lemke runs as without a warm start (bit for bit)
        monkeypatch.setattr(warm, "ROUNDS", 1)
        store.sets[(30, None)] = wrong
        r = solve_lcp(M, q, warm=store)
        assert not r.warm and r.pivots == cold.pivots and r.solver == cold.solver
        np.testing.assert_array_equal(r.z, cold.z)
        assert (store.tried, store.accepted) == (2, 1)


def test_a_singular_guess_is_refused():
    """A guess whose principal block is singular (a vertex-mode guess of two copies of one
    contact row) is refused by the kernel before any solve is used."""
    M = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    q = np.array([-1.0, -1.0, 1.0])
    z, final = np.empty(3), np.empty(3, dtype=np.int64)
    S = np.array([0, 1])
    code, _, _ = guess_kernel(M, q, S, 0.0, False, 1e-9, LSTSQ_RCOND, 3, 5, z, final)
    assert code == warm.SINGULAR
    # regularised (least-norm), the same block is solvable: the load is split evenly
    delta = LEAST_NORM_DELTA * 2.0
    code, ns, _ = guess_kernel(M, q, S, delta, True, 1e-9, LSTSQ_RCOND, 3, 5, z, final)
    assert code == warm.CANDIDATE and ns == 2
    # cond(M_SS + delta I) ~ 2 / delta = 1e6 amplifies the solve's rounding along the null
    # direction (1, -1) of M_SS, which the polish leaves as the regularised solve put it
    np.testing.assert_allclose(z, [0.5, 0.5, 0.0], rtol=0, atol=1e-9)


def test_disabled_warm_start_is_the_cold_chain(monkeypatch):
    rng = np.random.default_rng(3)
    M, q = p_matrix_lcp(rng, 20, symmetric=False)
    store = WarmStart()
    solve_lcp(M, q, warm=store)
    monkeypatch.setattr(warm, "ENABLED", False)
    r = solve_lcp(M, q, warm=store)
    assert not r.warm and r.pivots > 0 and store.tried == 0


# ---- real steps: every contact LCP of a run solved warm (as the run does) and cold


def _bench_peers():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_peers.py"
    spec = importlib.util.spec_from_file_location("bench_peers_for_tests", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def warm_against_cold(scene: str, steps: int, monkeypatch, tmp_path):
    """Run ``steps`` steps of a bench_peers scene by the Python contact step; every contact
    LCP the OS formulation solves is also solved cold. Returns (largest |z_warm - z_cold| /
    max(1, |z_cold|), blocks tried, blocks accepted, LCPs solved, largest independent
    violation / the problem's scale)."""
    bp = _bench_peers()
    scenario = bp.scene_scenario(scene, 10.0, str(tmp_path / "run.h5"))
    out = compare_warm_cold(scenario, steps, monkeypatch)
    return out["diff"], out["tried"], out["accepted"], out["count"], out["viol"]


def compare_warm_cold(scenario, steps: int, monkeypatch, each=None) -> dict:
    """:func:`warm_against_cold` for any scenario, as a dict (diff, viol, count, tried,
    accepted); ``each(M, q, z)`` is called with every warm answer."""
    from mbsim.simcore.contact_fused import ContactFuser

    # the Python contact step: the compiled one (contact_fused.py) solves cold, no chain call
    monkeypatch.setattr(ContactFuser, "eligible", staticmethod(lambda stepper: False))
    sim = Simulator(scenario)
    real = minimal.solve_lcp
    out = {"diff": 0.0, "count": 0, "viol": 0.0}

    def both(M, q, **kw):
        r = real(M, q, **kw)
        kw.pop("warm", None)
        cold = real(M, q, **kw)
        assert r.ok and cold.ok
        scale = max(1.0, float(np.abs(cold.z).max()))
        out["diff"] = max(out["diff"], float(np.abs(r.z - cold.z).max()) / scale)
        mscale = np.abs(M).sum(1).max() * np.abs(r.z).max() + np.abs(q).max()
        out["viol"] = max(out["viol"], violation(M, q, r.z) / mscale)
        out["count"] += 1
        if each is not None:
            each(M, q, r.z)
        return r

    monkeypatch.setattr(minimal, "solve_lcp", both)
    for _ in range(steps):
        sim.step()
    store = sim.stepper.formulation.warm
    return {**out, "tried": store.tried, "accepted": store.accepted}


def test_box_pile_steps_warm_equal_cold(monkeypatch, tmp_path):
    """The 20-box pile landing and settling (bench_peers ``box-pile``, 80 contacts, four
    120-row blocks): measured, 521 of the 552 blocks tried solved from the guess, the largest
    difference to the cold answer 1.6e-12 of the largest impulse (1 N s)."""
    diff, tried, accepted, count, viol = warm_against_cold("box-pile", 160, monkeypatch, tmp_path)
    assert count > 100
    assert accepted >= 0.8 * tried and tried > 300
    assert diff <= 1e-9
    assert viol <= 2e-9


def test_a1_standing_steps_warm_equal_cold(monkeypatch, tmp_path):
    """pybullet_data's A1 standing on its 4 feet (bench_peers ``a1-stand``, one 24-row LCP):
    measured, 299 of 299 guesses accepted, the largest difference 1.4e-17."""
    pytest.importorskip("pybullet_data")
    diff, tried, accepted, count, viol = warm_against_cold("a1-stand", 300, monkeypatch, tmp_path)
    assert count > 200
    assert accepted >= 0.8 * tried and tried > 200
    assert diff <= 1e-9
    assert viol <= 2e-9
