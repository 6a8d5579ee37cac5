"""Lemke's method on the standard LCP: hand-solved problems, random P-matrix, PSD and
copositive problems, degenerate (cycling) problems and problems with no solution.

Truth is always independent of the solver: hand enumeration of complementary bases, brute-force
enumeration over all 2^n bases for small n, or w = M z + q recomputed here from (M, q).
"""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lcp_oracle import complementary_solutions
from mbsim.simcore.lcp import Status, lemke, solve_lcp
from mbsim.simcore.lcp.lemke import default_max_pivots

SETTINGS = settings(max_examples=60, deadline=None)


def assert_lcp_solution(M, q, z, tol=1e-8):
    """Feasibility and complementarity recomputed from (M, q), relative to the data scale."""
    w = M @ z + q
    scale = max(1.0, np.max(np.abs(q)), np.max(np.abs(M)) * np.max(np.abs(z), initial=0.0))
    assert np.min(z, initial=0.0) >= -tol * scale
    assert np.min(w, initial=0.0) >= -tol * scale
    assert np.max(np.abs(np.minimum(w, z)), initial=0.0) <= tol * scale


def enumerate_solutions(M, q, tol=1e-10):
    """Distinct solutions by brute force over the 2^n complementary bases (lcp_oracle)."""
    return complementary_solutions(M, q, tol, distinct=True)


# ---------------------------------------------------------------- hand-solved


def test_2x2_hand_solved_both_active():
    # Bases by hand for M = [[2,1],[1,2]], q = [-5,-6]:
    #  {}: w = q < 0 no;  {z1}: z1 = 5/2, w2 = 5/2 - 6 < 0 no;  {z2}: z2 = 3, w1 = 3 - 5 < 0 no;
    #  {z1,z2}: 2 z1 + z2 = 5, z1 + 2 z2 = 6 -> z = (4/3, 7/3), w = 0.  Unique (M is P).
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    q = np.array([-5.0, -6.0])
    r = lemke(M, q)
    assert r.status == Status.SOLVED and r.ok
    np.testing.assert_allclose(r.z, [4 / 3, 7 / 3], rtol=1e-13)
    np.testing.assert_allclose(r.w, [0.0, 0.0], atol=1e-13)
    assert r.solver == "lemke" and r.pivots >= 2


def test_2x2_hand_solved_one_active_nonsymmetric():
    # M = [[1,2],[0,1]], q = [-1,1]: {z1}: z1 = 1, w2 = 0*1 + 1 = 1 >= 0 -> z = (1, 0), w = (0, 1).
    # {}: w1 = -1 no; {z2}: z2 = -1 no; {z1,z2}: z2 = -1 no.
    M = np.array([[1.0, 2.0], [0.0, 1.0]])
    q = np.array([-1.0, 1.0])
    r = lemke(M, q)
    assert r.ok
    np.testing.assert_allclose(r.z, [1.0, 0.0], atol=1e-14)
    np.testing.assert_allclose(r.w, [0.0, 1.0], atol=1e-14)


def test_3x3_hand_solved():
    # M tridiagonal PD, q = [-1, 2, -1]: with z2 = 0, 2 z1 = 1 and 2 z3 = 1, so z = (1/2, 0, 1/2)
    # and w2 = 1/2 + 2 + 1/2 = 3 >= 0.  M is a P-matrix: this is the unique solution.
    M = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 2.0]])
    q = np.array([-1.0, 2.0, -1.0])
    r = lemke(M, q)
    assert r.ok
    np.testing.assert_allclose(r.z, [0.5, 0.0, 0.5], atol=1e-14)
    np.testing.assert_allclose(r.w, [0.0, 3.0, 0.0], atol=1e-14)
    assert r.residual <= 1e-14 and r.sign_violation <= 1e-14


def test_trivial_solution_when_q_nonnegative():
    M = np.array([[-3.0, 7.0], [2.0, -1.0]])  # any M: q >= 0 means z = 0 solves
    q = np.array([0.0, 2.5])
    r = lemke(M, q)
    assert r.ok and r.pivots == 0
    np.testing.assert_array_equal(r.z, [0.0, 0.0])
    np.testing.assert_array_equal(r.w, q)


def test_psd_singular_with_many_solutions():
    # duplicated contact: z1 + z2 = 1 is a continuum of solutions; any one will do
    M = np.ones((2, 2))
    q = np.array([-1.0, -1.0])
    r = lemke(M, q)
    assert r.ok
    assert_lcp_solution(M, q, r.z)
    assert abs(r.z.sum() - 1.0) < 1e-14


def test_empty_problem():
    r = lemke(np.zeros((0, 0)), np.zeros(0))
    assert r.ok and r.size == 0


# ---------------------------------------------------------------- no solution


@pytest.mark.parametrize(
    "M, q",
    [
        ([[-1.0]], [-1.0]),  # w = -z - 1 < 0 for every z >= 0
        ([[0.0, 0.0], [0.0, 0.0]], [-1.0, 1.0]),  # M = 0, q has a negative entry
        ([[1.0, -1.0], [-1.0, 1.0]], [-1.0, -1.0]),  # PSD; w1 + w2 = -2 < 0 always
        ([[0.0, 1.0], [-1.0, 0.0]], [-1.0, -1.0]),  # skew (PSD): w2 = -z1 - 1 < 0
    ],
)
def test_infeasible_problems_report_ray_termination(M, q):
    M, q = np.array(M), np.array(q)
    r = lemke(M, q)
    assert r.status == Status.RAY_TERMINATION
    assert not r.ok
    assert r.residual > 0.5  # recomputed from (M, q): the returned z does not solve it
    assert "ray" in r.describe()


def test_pivot_limit_is_reported():
    rng = np.random.default_rng(3)
    B = rng.standard_normal((8, 8))
    M = B @ B.T + np.eye(8)
    q = -np.ones(8)
    r = lemke(M, q, max_pivots=2)
    assert r.status == Status.PIVOT_LIMIT and r.pivots == 2 and not r.ok
    assert default_max_pivots(8) == 500


def test_non_finite_input_is_numerical():
    r = lemke(np.array([[1.0, np.nan], [0.0, 1.0]]), np.array([-1.0, -1.0]))
    assert r.status == Status.NUMERICAL and not r.ok


def test_shape_mismatch_raises():
    with pytest.raises(ValueError, match="shape"):
        lemke(np.eye(3), np.ones(2))


# ---------------------------------------------------------------- degeneracy / cycling


def naive_lemke(M, q, tie_rule, max_pivots=200):
    """Exact-arithmetic Lemke with a naive tie-break (first or last tied row), no
    lexicographic rule. Returns "cycle" when an (almost-complementary basis, entering variable)
    pair repeats: the path then repeats forever."""
    n = len(q)
    T = [
        [Fraction(int(i == j)) for j in range(n)]
        + [Fraction(-M[i][j]) for j in range(n)]
        + [Fraction(-1), Fraction(q[i])]
        for i in range(n)
    ]
    basis, z0 = list(range(n)), 2 * n
    ties = [i for i in range(n) if q[i] == min(q)]
    r = ties[0] if tie_rule == "first" else ties[-1]
    entering, seen = z0, set()
    for _ in range(max_pivots):
        piv = T[r][entering]
        T[r] = [v / piv for v in T[r]]
        for i in range(n):
            if i != r and T[i][entering] != 0:
                f = T[i][entering]
                T[i] = [a - f * b for a, b in zip(T[i], T[r], strict=True)]
        leaving, basis[r] = basis[r], entering
        if leaving == z0:
            return "solved"
        entering = leaving + n if leaving < n else leaving - n
        key = (tuple(sorted(basis)), entering)
        if key in seen:
            return "cycle"
        seen.add(key)
        cand = [(T[i][-1] / T[i][entering], i) for i in range(n) if T[i][entering] > 0]
        if not cand:
            return "ray"
        rmin = min(c for c, _ in cand)
        tied = [i for c, i in cand if c == rmin]
        at_z0 = [i for i in tied if basis[i] == z0]
        r = at_z0[0] if at_z0 else (tied[0] if tie_rule == "first" else tied[-1])
    return "pivot_limit"


# Found by searching small integer problems with q = -1 (all rows tied) on which exact Lemke
# with a naive tie-break cycles. Both M are P-matrices with PSD symmetric part, so the solution
# exists and is unique.
CYCLING = [
    ([[2, 3, -2], [1, 2, 2], [3, -1, 1]], "first", [13 / 37, 7 / 37, 5 / 37]),
    ([[2, -2, 1, -2], [3, 2, -2, 2], [-2, 3, 1, -2], [2, -2, 3, 1]], "last", None),
]


@pytest.mark.parametrize("Mi, rule, z_true", CYCLING)
def test_degenerate_problem_that_cycles_without_anticycling(Mi, rule, z_true):
    n = len(Mi)
    q = [-1] * n
    assert naive_lemke(Mi, q, rule) == "cycle"  # the problem really makes naive Lemke cycle
    M, qf = np.array(Mi, dtype=float), np.array(q, dtype=float)
    r = lemke(M, qf)
    assert r.ok and r.pivots <= 2 * n + 2
    (z_enum,) = enumerate_solutions(M, qf)  # unique: P-matrix
    np.testing.assert_allclose(r.z, z_enum, atol=1e-12)
    if z_true is not None:
        np.testing.assert_allclose(r.z, z_true, rtol=1e-13)


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 7),
    qvals=st.sampled_from([(-1.0,), (-1.0, 0.0), (-2.0, -1.0, 0.0, 0.0)]),
)
def test_degenerate_ties_integer_p_matrices(seed, n, qvals):
    """Integer P-matrices (strictly diagonally dominant, positive diagonal) with q drawn from a
    few values: many exact ties in every ratio test. Unique solution: compare to enumeration."""
    rng = np.random.default_rng(seed)
    M = rng.integers(-2, 3, size=(n, n)).astype(float)
    np.fill_diagonal(M, 0.0)
    M += np.diag(np.abs(M).sum(axis=1) + rng.integers(1, 3, size=n))
    q = rng.choice(qvals, size=n)
    r = lemke(M, q)
    assert r.ok, r.describe()
    (z_enum,) = enumerate_solutions(M, q)
    np.testing.assert_allclose(r.z, z_enum, atol=1e-12)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 12))
def test_degenerate_zero_rows_and_duplicates(seed, n):
    """Degenerate PSD problems: duplicated rows/columns (repeated contacts) and q with zeros;
    a solution exists by construction (q = w* - M z*)."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, n + 1))
    J = rng.integers(-2, 3, size=(k, 3)).astype(float)
    Jn = J[rng.integers(0, k, size=n)]
    M = Jn @ Jn.T + np.eye(n) * rng.choice([0.0, 1.0])
    zs = np.where(rng.random(n) < 0.5, rng.integers(0, 3, size=n), 0).astype(float)
    ws = np.where(zs > 0, 0.0, rng.integers(0, 2, size=n)).astype(float)
    q = ws - M @ zs
    r = solve_lcp(M, q)
    assert r.ok, r.describe()
    assert_lcp_solution(M, q, r.z)


# ---------------------------------------------------------------- random classes


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), kind=st.sampled_from(["spd", "dd"]))
def test_random_p_matrices(seed, n, kind):
    """P-matrices (SPD B B^T + I, or nonsymmetric strictly diagonally dominant): unique solution,
    checked from (M, q) directly, and against enumeration for small n."""
    rng = np.random.default_rng(seed)
    if kind == "spd":
        B = rng.standard_normal((n, n))
        M = B @ B.T + np.eye(n)
    else:
        M = rng.standard_normal((n, n))
        np.fill_diagonal(M, np.abs(M).sum(axis=1) + 0.1)
    q = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3)
    r = lemke(M, q)
    assert r.ok, r.describe()
    assert_lcp_solution(M, q, r.z, tol=1e-10)
    np.testing.assert_allclose(r.w, M @ r.z + q, rtol=1e-12, atol=1e-12 * np.abs(q).max())
    if n <= 6:
        (z_enum,) = enumerate_solutions(M, q)
        np.testing.assert_allclose(r.z, z_enum, atol=1e-9 * max(1.0, np.abs(z_enum).max()))


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 30), rank=st.floats(0.2, 1.0))
def test_random_psd_nonsymmetric_feasible(seed, n, rank):
    """Monotone (PSD, non-symmetric, often singular) M = B B^T + S - S^T with a feasible q:
    Lemke is guaranteed to find a solution."""
    rng = np.random.default_rng(seed)
    k = max(1, int(rank * n))
    B = rng.standard_normal((n, k))
    S = rng.standard_normal((n, n))
    M = B @ B.T + (S - S.T)
    zs = np.where(rng.random(n) < 0.5, rng.random(n), 0.0)
    ws = np.where(zs > 0, 0.0, rng.random(n))
    q = ws - M @ zs
    r = lemke(M, q)
    assert r.ok, r.describe()
    assert_lcp_solution(M, q, r.z)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 30))
def test_random_strictly_copositive(seed, n):
    """Entrywise positive M (strictly copositive, not PSD in general): solvable for every q."""
    rng = np.random.default_rng(seed)
    M = rng.uniform(0.01, 1.0, size=(n, n))
    q = rng.standard_normal(n)
    r = lemke(M, q)
    assert r.ok, r.describe()
    assert_lcp_solution(M, q, r.z)


def friction_lcp(rng, nu, nf, mu):
    """Stewart-Trinkle / 000 Eq. 41 LCP for nu contacts with nf friction directions:
    M = [[D' Lam D, E], [E-bar, 0]] with Lam SPD, q = [D' v; 0]; non-symmetric, copositive."""
    m = 3 * nu
    J = rng.standard_normal((m, m + 2))
    Lam = J @ J.T / m
    nz = nu * (nf + 1)
    D = np.zeros((m, nz))
    E = np.zeros((nz, nu))
    Eb = np.zeros((nu, nz))
    for i in range(nu):
        c = i * (nf + 1)
        D[3 * i + 2, c] = 1.0  # normal
        for j in range(nf):
            th = 2 * np.pi * j / nf
            D[3 * i : 3 * i + 3, c + 1 + j] = [np.cos(th), np.sin(th), 0.0]
            E[c + 1 + j, i] = 1.0
            Eb[i, c + 1 + j] = -1.0
        Eb[i, c] = mu
    M = np.zeros((nz + nu, nz + nu))
    M[:nz, :nz] = D.T @ Lam @ D
    M[:nz, nz:] = E
    M[nz:, :nz] = Eb
    q = np.concatenate([D.T @ rng.standard_normal(m), np.zeros(nu)])
    return M, q


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    nu=st.integers(1, 8),
    nf=st.sampled_from([4, 8]),
    mu=st.sampled_from([0.0, 0.2, 1.0]),
)
def test_friction_cone_lcps(seed, nu, nf, mu):
    rng = np.random.default_rng(seed)
    M, q = friction_lcp(rng, nu, nf, mu)
    r = lemke(M, q)
    assert r.ok, r.describe()
    assert_lcp_solution(M, q, r.z)
    assert r.pivots <= 3 * len(q)


def test_badly_scaled_problem():
    # same LCP in other units: rows scaled by 1e6, columns by 1e-4: still solved and verified
    rng = np.random.default_rng(11)
    B = rng.standard_normal((12, 12))
    M = B @ B.T + np.eye(12)
    q = rng.standard_normal(12)
    R, C = np.diag(10.0 ** rng.uniform(-3, 6, 12)), np.diag(10.0 ** rng.uniform(-4, 2, 12))
    r0, r1 = lemke(M, q), lemke(R @ M @ C, R @ q)
    assert r0.ok and r1.ok
    np.testing.assert_allclose(C @ r1.z, r0.z, rtol=1e-8, atol=1e-12)


def test_degenerate_end_of_path_is_a_solution():
    """Friction LCPs on which the path ends with no blocking row while z0 is basic but already
    zero (a degenerate end): the basis is then complementary, not a ray. These three (found in a
    stress run) were once misreported as ray terminations."""
    rng = np.random.default_rng(123)
    for trial in range(248):
        nu, nf = int(rng.integers(1, 40)), int(rng.choice([4, 6, 8]))
        M, q = friction_lcp(rng, nu, nf, float(rng.choice([0, 0.1, 0.5, 1.5])))
        q *= 10.0 ** rng.uniform(-4, 2)
        if trial in (38, 91, 247):
            r = lemke(M, q)
            assert r.ok, r.describe()
            assert_lcp_solution(M, q, r.z)


def test_a_w_column_entering_is_the_products_column_bit_for_bit():
    """lemke._unit_column (w_i enters: a = e_i) gives the entries of the reassociated product
    B^-1 e_i and |B^-1| |e_i| (lemke._entering_column), to the bit up to the sign of zeros."""
    import importlib

    lk = importlib.import_module("mbsim.simcore.lcp.lemke")
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 8, 33, 120):
        Binv = rng.standard_normal((n, n)) * 10.0 ** rng.integers(-12, 12, (n, n))
        Binv[rng.random((n, n)) < 0.3] = 0.0
        Binv[rng.random((n, n)) < 0.1] = -0.0
        for var in {0, n // 2, n - 1}:
            a = np.zeros(n)
            a[var] = 1.0
            col, noise = np.empty(n), np.empty(n)
            lk._entering_column(Binv, a, col, noise)
            col2, noise2 = np.empty(n), np.empty(n)
            lk._unit_column(Binv, var, col2, noise2)
            assert np.array_equal(col, col2) and np.array_equal(noise, noise2)
            assert np.array_equal(col2, Binv[:, var])
