"""The warm guess's low-rank route (lcp/warm.py, ``_lowrank_factor`` / ``_solve_lowrank``).

Truth: numpy's dense linear algebra (the factor against the matrix it factors, the solve
against ``np.linalg.solve`` of the same regularised system) and, on whole steps, the cold
chain (Lemke on M + delta I with its polish), as in tests/test_lcp_warm.py. The route is
taken for a set S of at least LOWRANK_MIN rows of positive diagonal whose M_SS has rank at
most LOWRANK_SHARE |S|: a free plate on 16 points has 80 sticking rows of rank 6.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from mbsim.simcore.lcp import warm
from test_lcp_warm import compare_warm_cold


def psd_with_zero_rows(rng, n, rank, zero_rows):
    """M = G G^T (n x n, rank ``rank``) with the rows and columns ``zero_rows`` zeroed, as a
    contact LCP's sigma rows have a zero diagonal (they are outside the factor's P)."""
    G = rng.standard_normal((n, rank))
    G[zero_rows] = 0.0
    return G @ G.T


@pytest.mark.parametrize("seed", range(4))
def test_factor_has_the_rank_and_reproduces_the_matrix(seed):
    rng = np.random.default_rng(seed)
    n, rank = 60, 6
    zero_rows = rng.choice(n, 10, replace=False)
    M = psd_with_zero_rows(rng, n, rank, zero_rows)
    L = np.zeros((n, n))
    Lt = np.zeros((n, n))
    inP = np.zeros(n, dtype=np.bool_)
    free = np.zeros(n, dtype=np.bool_)
    dg = np.zeros(n)
    r = warm._lowrank_factor(M, inP, L, Lt, dg, free, n)
    assert r == rank
    assert not inP[zero_rows].any() and inP.sum() == n - zero_rows.size
    # the dropped part is at most LOWRANK_TOL max M_ii entrywise; rounding of r columns
    err = np.abs(L[:, :r] @ L[:, :r].T - M).max()
    assert err <= 1e-12 * np.abs(M).max()


def test_factor_refuses_a_rank_above_its_cap():
    rng = np.random.default_rng(7)
    M = psd_with_zero_rows(rng, 40, 12, [])
    n = M.shape[0]
    work = [
        np.zeros((n, n)),
        np.zeros((n, n)),
        np.zeros(n, np.bool_),
        np.zeros(n),
        np.zeros(n, np.bool_),
    ]
    assert warm._lowrank_factor(M, work[2], work[0], work[1], work[3], work[4], 11) == -1
    assert warm._lowrank_factor(M, work[2], work[0], work[1], work[3], work[4], 12) == 12


@pytest.mark.parametrize("seed", range(4))
def test_low_rank_solve_is_the_dense_solve(seed):
    """z_S = (M_SS + delta I)^-1 (-q_S), z = 0 elsewhere, to the rounding of the dense solve
    (cond(M_SS + delta I) ~ ||M|| / delta = 1e6 here: 1e-9 relative)."""
    rng = np.random.default_rng(seed)
    n, rank = 90, 6
    M = psd_with_zero_rows(rng, n, rank, rng.choice(n, 12, replace=False))
    P = np.flatnonzero(np.diag(M) > 0)
    S = np.sort(rng.choice(P, 40, replace=False)).astype(np.int64)
    q = rng.standard_normal(n)
    shift = 1e-6 * np.abs(M).sum(1).max()
    L = np.zeros((n, n))
    G = np.zeros((n, n))
    inP = np.zeros(n, np.bool_)
    free = np.zeros(n, np.bool_)
    dg = np.zeros(n)
    r = warm._lowrank_factor(M, inP, L, G, dg, free, n)
    assert r == rank and warm._lowrank_fits(M, S, r)
    z = np.full(n, np.nan)
    fw = np.zeros(4 * n * n + 4 * n)
    g = np.zeros(n)
    assert warm._solve_lowrank(M, q, S, shift, z, fw, L, r, G, g)
    want = np.zeros(n)
    want[S] = np.linalg.solve(M[np.ix_(S, S)] + shift * np.eye(S.size), -q[S])
    assert np.abs(z - want).max() <= 1e-9 * np.abs(want).max()


def _plate_scenario(k: int, path: str):
    spec = importlib.util.spec_from_file_location(
        "bench_scaling_for_tests",
        Path(__file__).resolve().parents[1] / "benchmarks" / "bench_scaling.py",
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    urdf = Path(path).with_suffix(".urdf")
    urdf.write_text(mod.plate_urdf(k))
    return mod.mbsim_plate(urdf, 60, path)


def test_plate_on_16_points_warm_answers_equal_cold(monkeypatch, tmp_path):
    """A free plate resting on 16 spheres (bench_scaling's contact case): every step's LCP
    (96 rows) has its 80 sticking rows at rank 6, so the guess takes the low-rank route;
    each warm answer must equal the cold chain's to 1e-9 of the largest impulse and satisfy
    the LCP independently. Measured: largest difference
    5.4e-13, independent violation 4e-14 of the scale."""
    routed = []

    def route_applies(M, q, z):
        S = np.flatnonzero(z > 0)
        if S.size >= warm.LOWRANK_MIN and (np.diag(M)[S] > 0).all():
            rank = np.linalg.matrix_rank(M[np.ix_(S, S)], tol=1e-9 * np.abs(M).max())
            routed.append(rank <= warm.LOWRANK_SHARE * S.size)

    scenario = _plate_scenario(16, str(tmp_path / "plate.h5"))
    out = compare_warm_cold(scenario, 40, monkeypatch, route_applies)
    assert out["count"] >= 30
    # the premise: the route applies (measured: 30 of the 42 LCPs; the others are the
    # landing's impact LCPs and steps with fewer than LOWRANK_MIN sticking rows)
    assert sum(routed) >= 25
    assert out["diff"] <= 1e-9
    assert out["viol"] <= 2e-9


def test_the_routes_kernels_return_what_their_address_calls_declare():
    """The route's kernels are called by address with a declared return type (native_call:
    it must be exact); after a guess that takes the route, each compilation returns it."""
    from numba import types

    rng = np.random.default_rng(3)
    n = 60
    M = psd_with_zero_rows(rng, n, 6, [])
    q = rng.standard_normal(n)
    for dispatcher, restype in (
        (warm._lowrank_round, warm.LOWRANK_ROUND),
        (warm._gram_cholesky, types.boolean),
        (warm._lowrank_apply_into, types.none),
    ):
        L = np.zeros((n, n))
        G = np.zeros((n, n))
        g = np.zeros(n)
        S = np.arange(40, dtype=np.int64)
        if dispatcher is warm._lowrank_round:
            fw = np.zeros(4 * n * n + 4 * n)
            dispatcher(M, q, S, 1e-6, np.zeros(n), fw, 0, L, G, g, np.zeros(n),
                       np.zeros(n, np.bool_), np.zeros(n, np.bool_))  # fmt: skip
        elif dispatcher is warm._gram_cholesky:
            dispatcher(L, 0, S, 1e-6, G)
        else:
            dispatcher(L, 0, S, 1e-6, G, np.zeros(40), np.zeros(40), g)
        assert dispatcher.overloads
        for cres in dispatcher.overloads.values():
            assert cres.signature.return_type == restype
