"""The warm start's restricted LCP (lcp/warm.py, ``restricted_guess``) against independent truth.

When the regularised guess's set R has an inconsistent active-set system, the chain solves the
LCP restricted to R by Lemke (chain._restricted); the warm start solves the same restricted LCP
by block principal pivoting from the remembered set. Truth:

* random P-matrix LCPs (unique solution): a dense enumeration of all 2^n complementary sets
  (written here, numpy's dense solves) and Lemke's answer; the pivoting answer must equal
  both to 1e-9 relative (cond(M) <= ~1e3; the acceptance tolerance is 1e-9 relative);
* random contact LCPs of Eq. 53 (a free rigid body on two ground contacts: W = J M^-1 J^T
  positive definite, pyramidal friction of 4 directions), where Lemke's vertex is the truth
  and any answer is checked for complementarity here;
* contact LCPs recorded on ``sample:panda-table.toml`` (tests/data/panda_table_warm_lcps.npz:
  M, q of 18 rows and the set the warm store held, steps 653, 835, 850, 1133 and 1200 of
  the bundled run; one contact carries the hand's load, two are open inside the margin with
  beta = 0 and a free sigma), on which the cold chain needs its restricted LCP and the warm
  start used to fall back to Lemke: now solved without a pivot, with the cold chain's
  impulses beta (unique there) to 1e-12 of the largest z; sigma of an open contact is not
  unique (any value at or above its tangential speed solves the LCP), so only
  complementarity is checked on those rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lcp_oracle import complementary_solutions
from mbsim.simcore.contact import contact_lcp, friction_matrix
from mbsim.simcore.lcp import solve_lcp, warm
from mbsim.simcore.lcp.chain import ACTIVE_SET_FIXES, LSTSQ_RCOND
from mbsim.simcore.lcp.selection import selecting
from mbsim.simcore.lcp.warm import WarmStart, restricted_guess

DATA = Path(__file__).parent / "data" / "panda_table_warm_lcps.npz"


def violation(M, q, z) -> float:
    """max of |min(w, z)|, -w and -z with w = M z + q recomputed here."""
    w = M @ z + q
    return max(float(np.abs(np.minimum(w, z)).max()), float(-w.min()), float(-z.min()), 0.0)


def enumerate_lcp(M, q, tol=1e-10):
    """Every solution of the LCP (M, q) (lcp_oracle, tol relative to the data's scale)."""
    return complementary_solutions(M, q, tol, relative=True)


def p_matrix_lcp(rng, n):
    """A positive definite, non-symmetric M (a P-matrix) and q."""
    A = rng.standard_normal((n, n))
    B = rng.standard_normal((n, n))
    return A @ A.T / n + 0.1 * np.eye(n) + (B - B.T), rng.standard_normal(n)


def flipped(rng, S, n, k):
    """S (sorted rows of n) with k random rows switched in or out."""
    inside = np.zeros(n, dtype=bool)
    inside[S] = True
    inside[rng.choice(n, size=k, replace=False)] ^= True
    return np.flatnonzero(inside)


def run(M, q, R, T, rounds=warm.RESTRICTED_ROUNDS):
    n = q.shape[0]
    z, out = np.empty(n), np.empty(n, dtype=np.int64)
    mnorm, qn = float(np.abs(M).sum(1).max()), float(np.abs(q).max())
    code, k, used = restricted_guess(
        M, q, np.asarray(R, np.int64), np.asarray(T, np.int64), 1e-9, LSTSQ_RCOND, rounds,
        ACTIVE_SET_FIXES, mnorm, qn, z, out, 0,
    )  # fmt: skip
    return code, z, out[:k].copy(), used


@pytest.mark.parametrize("seed", range(12))
def test_pivoting_from_a_perturbed_set_finds_the_enumerated_solution(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 10))
    M, q = p_matrix_lcp(rng, n)
    truth = enumerate_lcp(M, q)
    assert len(truth) == 1  # a P-matrix LCP has exactly one solution
    zt = truth[0]
    lemke = solve_lcp(M, q, chain=False)
    assert lemke.ok
    scale = max(1.0, float(np.abs(zt).max()))
    np.testing.assert_allclose(lemke.z, zt, rtol=0, atol=1e-9 * scale)
    support = np.flatnonzero(zt > 0)
    accepted = 0
    for k in (1, 2, 3):
        T = flipped(rng, support, n, min(k, n))
        # with the module's RESTRICTED_ROUNDS the pivoting may give up (the chain then runs Lemke);
        # with 2^n sets Murty's single pivots, which the safeguard ends in, are finite on
        # P-matrices: it must reach the solution
        for rounds in (warm.RESTRICTED_ROUNDS, 2**n):
            code, z, final, _ = run(M, q, np.arange(n), T, rounds)
            if code != warm.CANDIDATE:
                assert rounds < 2**n and code == warm.NO_RESTRICTED
                continue
            accepted += rounds == warm.RESTRICTED_ROUNDS
            np.testing.assert_allclose(z, zt, rtol=0, atol=1e-9 * scale)
            assert set(support) <= set(final.tolist())
            assert violation(M, q, z) <= 1e-9 * (np.abs(M).sum(1).max() * scale + np.abs(q).max())
    assert accepted >= 1


@pytest.mark.parametrize("seed", range(6))
def test_the_working_set_grows_by_the_rows_with_negative_w(seed):
    """R without one row of the solution's support: the restricted answer leaves that row
    with w < 0, it joins R (chain._restricted's growth), and the answer is the solution."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(50):
        n = int(rng.integers(5, 10))
        M, q = p_matrix_lcp(rng, n)
        (zt,) = enumerate_lcp(M, q)
        support = np.flatnonzero(zt > 0)
        if support.size >= 2:
            break
    R = np.setdiff1d(np.arange(n), support[:1])
    code, z, final, _ = run(M, q, R, support[1:])
    assert code == warm.CANDIDATE
    np.testing.assert_allclose(z, zt, rtol=0, atol=1e-9 * max(1.0, np.abs(zt).max()))
    assert support[0] in final
    # without growth (fixes = 0) the restricted answer is refused, never returned
    z0, out = np.empty(n), np.empty(n, dtype=np.int64)
    code0, _, _ = restricted_guess(
        M, q, R, support[1:].copy(), 1e-9, LSTSQ_RCOND, warm.RESTRICTED_ROUNDS, 0,
        float(np.abs(M).sum(1).max()), float(np.abs(q).max()), z0, out, 0,
    )  # fmt: skip
    assert code0 == warm.NO_RESTRICTED


def test_an_infeasible_lcp_is_refused():
    """w = -1 - z on the only row: no solution; the pivoting must not return one."""
    M, q = np.array([[-1.0]]), np.array([-1.0])
    code, *_ = run(M, q, [0], [0])
    assert code == warm.NO_RESTRICTED


def two_contact_lcp(rng):
    """The LCP of Eq. 53 of a free rigid body (random mass and inertia) on two ground
    contacts, normals +z, mu 0.5, 4 friction directions, random approach velocities."""
    m = rng.uniform(0.5, 3.0)
    Ib = np.diag(rng.uniform(0.01, 0.1, 3))
    Minv = np.zeros((6, 6))
    Minv[:3, :3] = np.eye(3) / m
    Minv[3:, 3:] = np.linalg.inv(Ib)
    points = rng.uniform(-0.2, 0.2, (2, 3))
    points[:, 2] = -0.1
    J = np.zeros((6, 6))
    for i, p in enumerate(points):  # v_point = v + omega x p = v - [p]x omega
        px = np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])
        J[3 * i : 3 * i + 3, :3] = np.eye(3)
        J[3 * i : 3 * i + 3, 3:] = -px
    W = J @ Minv @ J.T
    D = friction_matrix(np.tile([0.0, 0.0, 1.0], (2, 1)), 4)
    v = rng.uniform(-0.5, 0.5, (2, 3))
    v[:, 2] = rng.uniform(-0.5, 0.1, 2)
    return contact_lcp(W, D, np.full(2, 0.5), v)


@pytest.mark.parametrize("seed", range(10))
def test_contact_lcps_pivoted_from_a_perturbed_set_give_lemkes_answer(seed):
    rng = np.random.default_rng(200 + seed)
    M, q = two_contact_lcp(rng)
    n = q.shape[0]
    cold = solve_lcp(M, q, chain=False)  # lexicographic Lemke (vertex selection)
    assert cold.ok
    scale = max(1.0, float(np.abs(cold.z).max()))
    bound = 1e-9 * (np.abs(M).sum(1).max() * scale + np.abs(q).max())
    support = np.flatnonzero(cold.z > 0)
    agreed = 0
    for k in (0, 1, 2):
        code, z, _, _ = run(M, q, np.arange(n), flipped(rng, support, n, k))
        if code != warm.CANDIDATE:
            continue  # refused: the chain runs Lemke, nothing wrong is returned
        assert violation(M, q, z) <= bound
        # the impulses; sigma of a contact with beta = 0 is free (module docstring)
        np.testing.assert_allclose(z[:10], cold.z[:10], rtol=0, atol=1e-9 * scale)
        agreed += 1
    assert agreed >= 1  # the unperturbed set at least is Lemke's answer


def panda_lcps():
    d = np.load(DATA)
    for M, q, S, step in zip(d["M"], d["q"], d["S"], d["step"], strict=True):
        yield int(step), M, q, S[S >= 0]


@pytest.mark.parametrize("case", range(5))
def test_panda_table_lcps_are_solved_warm_with_the_chains_impulses(case):
    step, M, q, S = list(panda_lcps())[case]
    n = q.shape[0]
    nb = n // 6 * 5  # the beta rows; then one sigma row per contact
    with selecting("least_norm"):
        cold = solve_lcp(M, q)
        assert cold.ok and cold.pivots > 0
        assert "restricted" in cold.message  # the chain's polish of its set fails here
        store = WarmStart()
        store.sets[(n, None)] = S
        r = solve_lcp(M, q, warm=store)
    assert r.ok and r.warm and r.pivots == 0, (step, r.message)
    scale = float(np.abs(cold.z).max())
    assert violation(M, q, r.z) <= 1e-9 * (np.abs(M).sum(1).max() * scale + np.abs(q).max())
    np.testing.assert_allclose(r.z[:nb], cold.z[:nb], rtol=0, atol=1e-12 * scale)
    # the set remembered for the next step: the answer's support, degenerate rows included
    kept = store.guess((n, None))
    assert set(np.flatnonzero(r.z > 0).tolist()) <= set(kept.tolist())
