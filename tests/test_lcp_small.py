"""lcp/small.py's two- and three-row least-norm candidate against the general path.

``small.solve_small_into`` claims the operations of limit_step's ``_solve_direct`` (Lemke on
M + delta I, the least-change polish, the acceptance test) in their order, so whatever it
accepts ``_solve_direct`` accepts with the same z, w, pivots and worst residual, bit for bit,
and whatever ``_solve_direct`` accepts it accepts too unless the case is one it hands back
(a rank-deficient active set, a path longer than REFACTOR_EVERY pivots). Cases: random
Delassus (SPD) matrices across twelve orders of magnitude, the panda's shape (one stiff row,
one soft, weak coupling), nonsymmetric and indefinite ones, near-singular ones, split ones,
q = 0, q with tied entries, integer data (exact ties in the ratio test), special values; and
the answers against a dense enumeration of the 2^n active sets on SPD matrices.
"""

from __future__ import annotations

import numpy as np
import pytest

from lcp_oracle import complementary_solutions
from mbsim.simcore.lcp.chain import LSTSQ_RCOND
from mbsim.simcore.lcp.small import SMALL_FLOATS, solve_small_into
from mbsim.simcore.limit_step import (
    SOLVE_RESULT,
    _solve_direct,
    _solve_more,
    lcp_work,
    solve_limit_lcp,
)

TOL_REL = 1e-9


def _cases(count, seed):
    rng = np.random.default_rng(seed)
    for k in range(count):
        n = 2 + k % 2
        A = rng.standard_normal((n, n)) * 10.0 ** rng.uniform(-6, 6)
        kind = k % 10
        if kind == 0:  # SPD
            M = A @ A.T + 1e-3 * np.abs(A).max() ** 2 * np.eye(n)
        elif kind == 1:  # the panda's: one stiff row, a soft one, weak coupling
            d = np.array([35.19, 1.211, 4.0][:n]) * 10.0 ** rng.uniform(-2, 2, n)
            M = np.diag(d) + 0.01 * (A + A.T) / np.abs(A).max()
        elif kind == 2:  # near singular: rank one plus a little
            u = A[:, 0]
            M = np.outer(u, u) + 10.0 ** rng.uniform(-16, -6) * np.abs(u).max() ** 2 * np.eye(n)
        elif kind == 3:  # indefinite
            M = A + A.T
        elif kind == 4:  # nonsymmetric (joint friction's T^T K T + E has that shape)
            M = A
        elif kind == 5:  # integer data: exact ties
            M = rng.integers(-3, 5, (n, n)).astype(float)
            M = M @ M.T + np.eye(n)
        elif kind == 6:  # split, or split but for one coupling
            M = A @ A.T
            M[0, 1:] = 0.0
            M[1:, 0] = 0.0
            if k % 4 == 2:
                M[0, n - 1] = M[n - 1, 0] = 1e-3 * M[0, 0]
        elif kind == 7:  # a special value somewhere
            M = A @ A.T
            M[rng.integers(n), rng.integers(n)] = rng.choice([0.0, -0.0, np.inf, np.nan, 1e-320])
        else:
            M = A @ A.T
        q = rng.standard_normal(n) * 10.0 ** rng.uniform(-6, 4, n)
        qk = k % 5
        if qk == 0:
            q[:] = 0.0
        elif qk == 1:  # ties
            q[:] = -abs(q[0])
        elif qk == 2 and kind == 5:
            q = rng.integers(-4, 3, n).astype(float)
        elif qk == 3:
            q[rng.integers(n)] = -0.0
        yield np.ascontiguousarray(M), q


def _dirty(n, seed):
    rng = np.random.default_rng(seed)
    nf, ni = lcp_work(n)
    assert nf >= SMALL_FLOATS
    return rng.standard_normal(nf), rng.integers(-5, 5, ni)


def test_small_is_the_direct_candidate_bit_for_bit():
    accepted = handed = 0
    for M, q in _cases(40000, 3):
        n = q.shape[0]
        fw1, iw1 = _dirty(n, 1)
        fw2, iw2 = _dirty(n, 2)
        z1, z2, w1, w2 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        a = _solve_direct(M, q, True, TOL_REL, z1, w1, fw1, iw1)
        b = solve_small_into(M, q, TOL_REL, LSTSQ_RCOND, z2, w2, fw2)
        if b[0]:
            accepted += 1
            assert a[0] and a[1] == b[1] and a[2] == b[2], (M, q, a, b)
            assert z1.tobytes() == z2.tobytes() and w1.tobytes() == w2.tobytes(), (M, q)
        elif a[0]:
            handed += 1  # the general path decides (rank-deficient active set)
    assert accepted > 20000
    assert handed < accepted // 100


@pytest.mark.parametrize("n", [2, 3])
def test_small_against_enumeration(n):
    rng = np.random.default_rng(n)
    for _ in range(2000):
        A = rng.standard_normal((n, n))
        M = A @ A.T + 0.1 * np.eye(n)
        q = rng.standard_normal(n)
        z, w = np.empty(n), np.empty(n)
        ok, _piv, _worst, _s = solve_limit_lcp(M, q, True, TOL_REL, z, w)
        assert ok
        ref = complementary_solutions(M, q, 1e-12, relative=True)[0]  # the only one (SPD)
        assert np.allclose(z, ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max()), (M, q, z, ref)


def test_general_path_past_small_by_address():
    """What small.py hands back goes to _solve_more by its address, with the return type it
    declares (SOLVE_RESULT): on a rank-deficient active set the answer is _solve_direct's or
    the general path's."""
    M = np.array([[1.0, 1.0], [1.0, 1.0]])  # rank one: small.py hands it back
    q = np.array([-1.0, -1.0])
    z, w = np.empty(2), np.empty(2)
    ok, _piv, _worst, _s = solve_limit_lcp(M, q, True, TOL_REL, z, w)
    assert ok and np.allclose(M @ z + q, 0.0, atol=1e-9)
    assert _solve_more.overloads
    for cres in _solve_more.overloads.values():
        assert cres.signature.return_type == SOLVE_RESULT
