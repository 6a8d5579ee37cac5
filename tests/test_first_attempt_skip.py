"""The Python chain started at its second attempt after the compiled contact step rejected
the first (contact_fused.py I_FIRST_FAILED, ``chain.solve_lcp``'s ``skip_first``).

Truth: the chain run in full (its first attempt included), as ``main`` runs it, and the chain's
own first attempt (``chain.lemke_regularised``) for what the compiled attempt concludes. The
LCP is a step LCP of example-robot-data's anymal_c lying on its base (198 rows, 33 contacts
of nf = 4; tests/data/anymal_c_lcp_first_rejected.npz, recorded from a ``main`` run, users19
slow path (ii)): Lemke on M + 1e-6 ||M|| I ends within one budget chunk, no polish, restricted
LCP or raw answer is accepted, and plain Lemke, the second attempt, is.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
from numba.typed import List

from mbsim.simcore.contact_fused import _solve_islands, least_norm_attempt, pivot_caps
from mbsim.simcore.lcp import budget, chain, solve_lcp
from mbsim.simcore.lcp import warm as warm_start
from mbsim.simcore.lcp.problem import inf_norm
from mbsim.simcore.lcp.selection import LEAST_NORM_DELTA
from mbsim.simcore.lcp.warm_table import WarmTable
from mbsim.simcore.limit_step import REJECT, UNDECIDED
from robot_files import erd_urdf

DATA = Path(__file__).resolve().parent / "data"
TOL = 1e-9


@pytest.fixture(scope="module")
def lcp():
    d = np.load(DATA / "anymal_c_lcp_first_rejected.npz")
    return np.ascontiguousarray(d["M"]), np.ascontiguousarray(d["q"])


def _same(a, b):
    """Two results alike in everything a run records or reports."""
    np.testing.assert_array_equal(a.z, b.z)
    np.testing.assert_array_equal(a.w, b.w)
    assert (a.ok, a.status, a.solver, a.delta, a.pivots) == (
        b.ok,
        b.status,
        b.solver,
        b.delta,
        b.pivots,
    )
    assert (a.residual, a.sign_violation, a.eq_residual) == (
        b.residual,
        b.sign_violation,
        b.eq_residual,
    )


def test_the_compiled_attempt_rejects_what_the_chain_rejects(lcp):
    M, q = lcp
    n = q.shape[0]
    first = chain.lemke_regularised(M, q, LEAST_NORM_DELTA * inf_norm(M))
    assert not first.ok  # the premise: the chain's first attempt fails on this LCP
    z, w = np.empty(n), np.empty(n)
    state, pivots, worst = least_norm_attempt(M, q, TOL, pivot_caps()[1], z, w)
    assert state == REJECT
    assert pivots == first.pivots < budget.chunk_pivots(n)


def test_the_chain_from_its_second_attempt_gives_the_full_chains_answer(lcp):
    M, q = lcp
    full = solve_lcp(M, q, select="least_norm")
    assert full.ok and full.solver == "lemke"
    assert [a.solver for a in full.attempts] == ["lemke_reg", "lemke"]
    skipped = solve_lcp(M, q, select="least_norm", skip_first=True)
    _same(skipped, full)
    assert skipped.attempts == full.attempts[1:]


def test_the_warm_guess_is_counted_not_run_again(lcp):
    # a remembered set that does not solve this LCP (another step's): both runs try it (the
    # caller for the skipping one) and go on to the chain; the stores end alike
    M, q = lcp
    n = q.shape[0]
    stores = []
    for skip in (False, True):
        store = warm_start.WarmStart()
        store.remember((n, None), np.r_[np.ones(3), np.zeros(n - 3)])
        r = solve_lcp(M, q, select="least_norm", warm=store, skip_first=skip)
        stores.append((r, store))
    (a, sa), (b, sb) = stores
    _same(b, a)
    assert (sb.tried, sb.accepted) == (sa.tried, sa.accepted) == (1, 0)
    np.testing.assert_array_equal(sb.guess((n, None)), sa.guess((n, None)))


def test_a_failure_is_the_whole_chains(lcp):
    # no attempt accepted (an impossible tolerance): the skipped attempt runs last after
    # all, so the failure, its attempts and its message are the full chain's
    M, q = lcp
    full = solve_lcp(M, q, select="least_norm", tol_rel=-1.0)
    skipped = solve_lcp(M, q, select="least_norm", tol_rel=-1.0, skip_first=True)
    assert not full.ok
    _same(skipped, full)
    assert skipped.attempts == full.attempts and len(full.attempts) == 5
    assert skipped.message == full.message
    assert skipped.describe(3, 0.1) == full.describe(3, 0.1)


def test_a_chunk_cut_is_undecided(lcp):
    # a budget chunk shorter than the regularised path: the Python path would poll the step's
    # time budget and go on, so nothing about the first attempt is concluded
    M, q = lcp
    n = q.shape[0]
    caps = pivot_caps()[1].copy()
    caps[1, n] = 20
    z, w = np.empty(n), np.empty(n)
    state, pivots, _worst = least_norm_attempt(M, q, TOL, caps, z, w)
    assert state == UNDECIDED and pivots == 20


def test_a_split_lcp_is_undecided_and_the_flag_ignored(lcp):
    # two copies of the LCP as independent blocks: each block's first attempt is rejected,
    # but the Python chain then solves the unsplit LCP first, so the kernel concludes nothing
    M, q = lcp
    n = q.shape[0]
    M2 = scipy.linalg.block_diag(M, M)
    q2 = np.r_[q, q]
    z, w = np.empty(2 * n), np.empty(2 * n)
    state, _p, _w = least_norm_attempt(M2, q2, TOL, pivot_caps()[1], z, w)
    assert state == UNDECIDED
    rows = [np.arange(n), np.arange(n, 2 * n)]
    table = WarmTable(0, 0)
    state, _p, _w, _c = _solve_islands(
        List([M.copy(), M.copy()]), List([q.copy(), q.copy()]), List(rows), 2 * n,
        np.full(2, inf_norm(M)),
        True, TOL, pivot_caps()[1], False, table.tab, table.und, np.empty(2 * n),
    )  # fmt: skip
    assert state == UNDECIDED
    _same(
        solve_lcp(M2, q2, select="least_norm", skip_first=True),
        solve_lcp(M2, q2, select="least_norm"),
    )


def _anymal_c() -> Path:
    """example-robot-data's anymal_c URDF, or skip."""
    return erd_urdf("anymal_c_simple_description/urdf/anymal.urdf")


@pytest.mark.parametrize("tol_rel", [1e-9, -1.0], ids=["solved", "failing"])
def test_a_step_after_the_kernels_rejected_first_attempt(tol_rel, monkeypatch):
    # anymal_c on the floor at step 591 of ``mbsim run anymal.urdf --floor --base floating
    # --place-on-floor`` (the warm start off; the state recorded from main,
    # tests/data/anymal_c_state_first_rejected.npz): the compiled step hands the step back
    # with first_failed and the Python chain starts at its second attempt. The step must be
    # the one the Python path takes from the chain's first attempt (the compiled step
    # switched off): the same q, v, contact impulses and LCP diagnostics; with no answer
    # accepted (tol_rel < 0) the same failure message
    from mbsim.io.scenario import scenario_from_urdf
    from mbsim.simcore.stepper import SimulationError
    from mbsim.simulator import Simulator

    monkeypatch.setattr(warm_start, "ENABLED", False)
    urdf = _anymal_c()
    state = np.load(DATA / "anymal_c_state_first_rejected.npz")
    sc = scenario_from_urdf(
        str(urdf), {}, duration=1.0, floor=True, base="floating", place_on_floor=True
    )

    def step(fused):
        sim = Simulator(sc)
        sim.stepper.configure(lcp_tol_rel=tol_rel)
        f = sim.stepper._fused
        if not fused:
            f.eligible = lambda stepper: False
        sim.q, sim.v = state["q"].copy(), state["v"].copy()
        sim.t, sim.step_index = float(state["t"]), int(state["k"])
        seen = []
        real = f.step

        def fused_step(*args):
            out = real(*args)
            seen.append((out is None, bool(f.first_failed)))
            return out

        f.step = fused_step
        try:
            r = sim.step().report
        except SimulationError as exc:
            return str(exc), seen
        return (sim.q, sim.v, r.normal_impulse, r.tangent_impulse, r.lcp_size, r.lcp_pivots,
                r.lcp_residual, r.solver), seen  # fmt: skip

    a, seen_a = step(True)
    b, seen_b = step(False)
    assert seen_a == [(True, True)] and seen_b == []
    if tol_rel > 0:
        assert a[-1] == "lemke"  # the chain's second attempt
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
    else:
        assert isinstance(a, str) and a == b
