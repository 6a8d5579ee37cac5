"""The joint-limit step's LCP solve (limit_step.solve_limit_lcp) against independent truth.

* Closed form, one row: the LCP w = m z + q >= 0 _|_ z >= 0 has z = max(0, -q/m) for m > 0 and
  no solution for m <= 0 < -q; the answer must be that z to 4 eps relative (two passes of the
  least-change polish on one number), or refused.
* Brute force, 2-4 rows: for a symmetric positive definite M (a joint Delassus matrix) the LCP
  has exactly one solution, found here by trying every active set S (z_S = -M_SS^-1 q_S, the
  others 0, kept if z >= 0 and w >= 0, numpy.linalg.solve); the compiled answer must match it
  to 1e-10 relative (the conditioning of the random matrices is below 1e3).
* The general kernels, bit for bit: the one-row path (``lemke.lemke_one``,
  ``lstsq.active_set_least_change_one``) claims the same floating-point operations as the
  general Lemke path and polish, so its answer, status, pivots and residual must be theirs to
  the bit, on random rows across 16 orders of magnitude and on the special values (0, -0,
  inf, nan, subnormal); and the Lemke path in a reused, dirty workspace
  (``lemke.lemke_once_into``) must give what it gives in fresh arrays (``lemke._lemke_once``).
* The direct first candidate, bit for bit: on 2-5 rows (``_solve_direct``, the limit rows'
  usual LCP without the general path's later attempts) whatever it accepts, the general
  kernels accept with the same z, w, pivots, residual and solver code, on random Delassus
  matrices, split ones, indefinite and badly scaled ones and special values.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from lcp_oracle import complementary_solutions
from mbsim.simcore.lcp.lemke import ZERO_REL, _lemke_once, lemke_once_into
from mbsim.simcore.limit_step import (
    ACCEPT,
    LEMKE_RESULT,
    NO_CAPS,
    SOLVE_RESULT,
    _lemke_full,
    _solve_direct,
    _solve_general,
    _solve_one,
    lcp_work,
    lemke_regularised_into,
    solve_limit_lcp,
)

EPS = np.finfo(float).eps
TOL_REL = 1e-9  # StepOptions.lcp_tol_rel's default


def _work(n):
    nf, ni = lcp_work(n)
    rng = np.random.default_rng(n)  # dirty work arrays: nothing may be read before written
    return rng.standard_normal(nf), rng.integers(-5, 5, ni)


def _rows(count, seed):
    rng = np.random.default_rng(seed)
    m = 10.0 ** rng.uniform(-8, 8, count) * rng.choice([1.0, 1.0, 1.0, -1.0], count)
    q = rng.standard_normal(count) * 10.0 ** rng.uniform(-10, 6, count)
    special = np.array([0.0, -0.0, np.inf, np.nan, 1e-320, 1e300, -1.0, 1.0])
    m[:64] = np.repeat(special, 8)
    q[:64] = np.tile(special, 8)
    return m, q


@pytest.mark.parametrize("least_norm", [True, False])
def test_one_row_closed_form(least_norm):
    m, q = _rows(3000, 1)
    z, w = np.empty(1), np.empty(1)
    fw, iw = _work(1)
    for mk, qk in zip(m, q, strict=True):
        ok, _piv, _worst, _solver = solve_limit_lcp(
            np.array([[mk]]), np.array([qk]), least_norm, TOL_REL, z, w
        )
        if not (np.isfinite(mk) and np.isfinite(qk)):
            assert not ok
            continue
        if qk >= 0.0:
            assert ok and z[0] == 0.0
        elif mk <= 0.0:
            assert not ok, f"m = {mk}, q = {qk}: no z >= 0 has m z + q >= 0"
        elif ok:
            exact = -qk / mk
            assert abs(z[0] - exact) <= 4 * EPS * exact, (mk, qk, z[0])
        else:  # refused only at the ends of the floating-point range (1/m overflows)
            with np.errstate(over="ignore"):
                r = -qk / mk
            assert not 1e-300 < min(mk, -qk, r) <= max(mk, -qk, r) < 1e300, (mk, qk)


@pytest.mark.parametrize("least_norm", [True, False])
def test_one_row_path_is_the_general_path_bit_for_bit(least_norm):
    m, q = _rows(20000, 2)
    fw, iw = _work(1)
    z1, z2, w1, w2 = np.empty(1), np.empty(1), np.empty(1), np.empty(1)
    M, qv = np.empty((1, 1)), np.empty(1)
    for mk, qk in zip(m, q, strict=True):
        M[0, 0], qv[0] = mk, qk
        a = _solve_general(M, qv, least_norm, TOL_REL, z1, w1, fw, iw)
        b = _solve_one(M, qv, least_norm, TOL_REL, z2, w2, fw)
        if not a[0] and not b[0]:
            continue  # neither decides: the Python chain goes on (the general kernels follow
            # lemke.lemke's other paths first, so their pivot counts differ)
        if a[0] and not b[0]:
            # the general kernels go on where the one-row path hands the LCP to Python (the
            # proximal polish of chain._polish, e.g. M = 1e300): the same first steps
            assert least_norm and a[1] == b[1] and a[3] == b[3], (mk, qk, a, b)
            continue
        assert a[0] == b[0] and a[1] == b[1] and a[3] == b[3], (mk, qk, a, b)
        assert a[2] == b[2] or (np.isnan(a[2]) and np.isnan(b[2])), (mk, qk, a, b)
        if a[0]:
            assert z1.tobytes() == z2.tobytes() and w1.tobytes() == w2.tobytes(), (mk, qk)


def _direct_cases(count, seed):
    rng = np.random.default_rng(seed)
    for k in range(count):
        n = 2 + k % 4
        A = rng.standard_normal((n, n)) * 10.0 ** rng.uniform(-6, 6)
        kind = k % 7
        if kind == 0:  # a Delassus matrix, SPD
            M = A @ A.T + 1e-3 * np.abs(A).max() ** 2 * np.eye(n)
        elif kind == 1:  # a split one (two blocks), or a diagonal pair
            M = A @ A.T
            M[: n // 2, n // 2 :] = 0.0
            M[n // 2 :, : n // 2] = 0.0
        elif kind == 2:  # singular: rank one
            u = A[:, 0]
            M = np.outer(u, u)
        elif kind == 3:  # indefinite
            M = A + A.T
        elif kind == 4:  # badly scaled rows
            M = A @ A.T
            d = 10.0 ** rng.uniform(-8, 8, n)
            M = d[:, None] * M * d[None, :]
        elif kind == 5:  # nonsymmetric
            M = A
        else:  # a special value somewhere
            M = A @ A.T
            M[rng.integers(n), rng.integers(n)] = rng.choice([0.0, -0.0, np.inf, np.nan, 1e-320])
        q = rng.standard_normal(n) * 10.0 ** rng.uniform(-6, 4, n)
        yield np.ascontiguousarray(M), q


@pytest.mark.parametrize("least_norm", [True, False])
def test_direct_candidate_is_the_general_path_bit_for_bit(least_norm):
    accepted = 0
    for M, q in _direct_cases(3000, 7):
        n = q.shape[0]
        fw1, iw1 = _work(n)
        fw2, iw2 = _work(n)
        z1, z2, w1, w2 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        a = _solve_direct(M, q, least_norm, TOL_REL, z1, w1, fw1, iw1)
        if not a[0]:
            continue  # the general kernels from the start (solve_limit_lcp_into)
        accepted += 1
        b = _solve_general(M, q, least_norm, TOL_REL, z2, w2, fw2, iw2)
        assert b[0] and a[1] == b[1] and a[3] == b[3], (M, q, a, b)
        assert a[2] == b[2], (M, q, a, b)
        assert z1.tobytes() == z2.tobytes() and w1.tobytes() == w2.tobytes(), (M, q)
    assert accepted > 1000  # the usual case is decided directly


def test_general_path_by_address():
    """solve_limit_lcp_into calls _solve_general through its address, compiled when first
    needed, with the return type it declares (SOLVE_RESULT): on LCPs the direct candidate
    leaves to it (islands, the indefinite and scaled cases) the answers are a linked call's."""
    general = 0
    for M, q in _direct_cases(400, 11):
        n = q.shape[0]
        for least_norm in (True, False):
            fw, iw = _work(n)
            z1, z2, w1, w2 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
            if _solve_direct(M, q, least_norm, TOL_REL, z1, w1, fw, iw)[0]:
                continue
            general += 1
            a = solve_limit_lcp(M, q, least_norm, TOL_REL, z1, w1)
            b = _solve_general(M, q, least_norm, TOL_REL, z2, w2, fw, iw)
            assert a[0] == b[0] and a[1] == b[1] and a[3] == b[3], (M, q, a, b)
            if a[0]:
                assert a[2] == b[2] and z1.tobytes() == z2.tobytes(), (M, q)
    assert general > 50
    for sig, cres in _solve_general.overloads.items():
        if sig[0] == numba.typeof(np.empty((2, 2))):
            assert cres.signature.return_type == SOLVE_RESULT


def test_restricted_lcp_other_paths_by_address():
    """The joint-row step's least-norm attempt (lemke_regularised_into, chain True) reaches
    the restricted LCP's Lemke paths (_lemke_full) through their address, compiled when
    first needed, with the return type declared (LEMKE_RESULT): on spirit40newer's LCP
    whose active set is inconsistent (120 rows, solved as the LCP restricted to 79 rows) the
    answer is the Python chain's, bit for bit."""
    from pathlib import Path

    from mbsim.simcore.lcp import lemke_regularised
    from mbsim.simcore.lcp.selection import LEAST_NORM_DELTA

    data = np.load(Path(__file__).parent / "data" / "spirit40newer_lcp_restricted.npz")
    M, q = np.ascontiguousarray(data["M"]), np.ascontiguousarray(data["q"])
    delta = LEAST_NORM_DELTA * np.abs(M).sum(axis=1).max()
    n = q.shape[0]
    fw, iw = _work(n)
    z, w = np.empty(n), np.empty(n)
    state, pivots, _worst = lemke_regularised_into(
        M, q, delta, TOL_REL, NO_CAPS, True, z, w, fw, iw
    )
    r = lemke_regularised(M, q, delta, tol_rel=TOL_REL)
    assert r.ok and "restricted" in r.message
    assert state == ACCEPT and pivots == r.pivots
    assert z.tobytes() == r.z.tobytes()
    assert _lemke_full.overloads
    for cres in _lemke_full.overloads.values():
        assert cres.signature.return_type == LEMKE_RESULT


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("least_norm", [True, False])
def test_several_rows_brute_force(n, least_norm):
    rng = np.random.default_rng(10 + n)
    z, w = np.empty(n), np.empty(n)
    solved = 0
    for _ in range(300):
        A = rng.standard_normal((n, n))
        M = A @ A.T + 0.5 * n * np.eye(n)
        q = rng.standard_normal(n)
        ok, _piv, worst, _solver = solve_limit_lcp(M, q, least_norm, TOL_REL, z, w)
        assert ok, (M, q)  # positive definite, coupled: Lemke solves it
        truth = complementary_solutions(M, q, 1e-12, relative=True)[0]  # the only one (SPD)
        np.testing.assert_allclose(z, truth, rtol=1e-10, atol=1e-10 * np.abs(truth).max())
        np.testing.assert_allclose(w, M @ z + q, rtol=0, atol=1e-12 * (1 + np.abs(q).max()))
        solved += int(truth.any())
    assert solved > 100, "most problems must have an active row"


def test_lemke_in_a_reused_workspace_bit_for_bit():
    rng = np.random.default_rng(7)
    for n in range(1, 9):
        ws = [rng.standard_normal((n, n)) for _ in range(3)]
        ws += [rng.standard_normal(n) for _ in range(5)]
        ints = [rng.integers(-9, 9, n) for _ in range(2)]
        ist, basic = rng.integers(0, 9, 4), np.empty(n, dtype=np.int64)
        for _ in range(40):
            A = rng.standard_normal((n, n))
            M = A @ A.T + 0.1 * np.eye(n) if rng.random() < 0.7 else A
            q = rng.standard_normal(n)
            mp = 50 * n + 100
            z1, z2 = np.empty(n), np.empty(n)
            c1, p1, b1 = _lemke_once(M, q, mp, max(50, n), mp + 1, True, ZERO_REL, z1)
            c2, p2, nb = lemke_once_into(
                M, q, mp, max(50, n), mp + 1, True, ZERO_REL, z2, ws[0], ws[1], ws[2], ws[3],
                ints[0], ws[4], ws[5], ws[6], ws[7], ints[1], ist, basic,
            )  # fmt: skip
            assert (c1, p1) == (c2, p2)
            assert z1.tobytes() == z2.tobytes()
            assert b1.tolist() == basic[:nb].tolist()
