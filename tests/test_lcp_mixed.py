"""Mixed LCP (equality rows with free variables first, 000 Eqs. 27/36/45/53) by Schur
complement: hand-eliminated solution, brute-force enumeration on the full system, singular
equality blocks reported, and the OS (Eq. 53) structure with bilateral + friction-cone rows."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mbsim.simcore.lcp import Status, solve_mixed_lcp

SETTINGS = settings(max_examples=40, deadline=None)


def enumerate_mixed(M, q, nb, tol=1e-10):
    """Distinct solutions of the mixed LCP by brute force over active sets S of the
    complementarity rows: solve the full square system rows (0..nb-1, S) for (x, z_S)."""
    n = len(q)
    comp = list(range(nb, n))
    sols = []
    for k in range(len(comp) + 1):
        for S in itertools.combinations(comp, k):
            idx = list(range(nb)) + list(S)
            K = M[np.ix_(idx, idx)]
            if abs(np.linalg.det(K)) < 1e-12:
                continue
            v = np.zeros(n)
            v[idx] = np.linalg.solve(K, -q[idx])
            r = M @ v + q
            if v[nb:].min(initial=0) >= -tol and r[nb:].min(initial=0) >= -tol:
                if not any(np.allclose(v, s, atol=1e-9) for s in sols):
                    sols.append(v)
    return sols


def test_hand_eliminated_3x3():
    # [A B; C D] = [[2,1,0],[1,2,1],[0,1,2]], nb = 1, q = [1, -2, 3].
    # x = -(1 + z1)/2; reduced M_r = [[3/2, 1], [1, 2]], q_r = [-5/2, 3].
    # z2 = 0: 3/2 z1 = 5/2 -> z1 = 5/3, w2 = 5/3 + 3 = 14/3 >= 0; x = -(1 + 5/3)/2 = -4/3.
    M = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 2.0]])
    q = np.array([1.0, -2.0, 3.0])
    r = solve_mixed_lcp(M, q, nb=1)
    assert r.ok, r.describe()
    np.testing.assert_allclose(r.x, [-4 / 3], rtol=1e-14)
    np.testing.assert_allclose(r.z, [5 / 3, 0.0], atol=1e-14)
    np.testing.assert_allclose(r.w, [0.0, 14 / 3], atol=1e-14)
    assert r.eq_residual <= 1e-14 and r.size == 3


def test_nb_zero_is_standard_lcp():
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    r = solve_mixed_lcp(M, np.array([-5.0, -6.0]), nb=0)
    assert r.ok and r.x.size == 0
    np.testing.assert_allclose(r.z, [4 / 3, 7 / 3], rtol=1e-13)


def test_all_equalities_is_a_linear_solve():
    M = np.array([[3.0, 1.0], [1.0, 2.0]])
    q = np.array([1.0, -1.0])
    r = solve_mixed_lcp(M, q, nb=2)
    assert r.ok and r.z.size == 0
    np.testing.assert_allclose(M @ r.x, -q, atol=1e-14)


def test_singular_equality_block_is_reported():
    # two identical bilateral rows (a redundant loop closure): A is singular
    rng = np.random.default_rng(0)
    G = rng.standard_normal((2, 4))
    G[1] = G[0]
    Jc = rng.standard_normal((2, 4))
    Q = np.vstack([G, Jc])
    M = Q @ Q.T
    q = rng.standard_normal(4)
    r = solve_mixed_lcp(M, q, nb=2)
    assert r.status == Status.NUMERICAL and not r.ok
    assert "singular" in r.message and "2 x 2" in r.message


def test_bad_nb_raises():
    with pytest.raises(ValueError, match="equality rows"):
        solve_mixed_lcp(np.eye(2), np.zeros(2), nb=3)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), nb=st.integers(1, 4), nu=st.integers(1, 5))
def test_random_spd_mixed_against_enumeration(seed, nb, nu):
    """SPD mixed LCP (Eq. 45 with Lambda SPD): unique solution; compare with brute force on the
    full system, which never forms the Schur complement."""
    rng = np.random.default_rng(seed)
    n = nb + nu
    B = rng.standard_normal((n, n))
    M = B @ B.T + 0.5 * np.eye(n)
    q = rng.standard_normal(n)
    r = solve_mixed_lcp(M, q, nb)
    assert r.ok, r.describe()
    (v,) = enumerate_mixed(M, q, nb)
    np.testing.assert_allclose(np.concatenate([r.x, r.z]), v, atol=1e-9 * max(1, abs(v).max()))
    full = M @ np.concatenate([r.x, r.z]) + q
    np.testing.assert_allclose(full[:nb], 0.0, atol=1e-10 * max(1, abs(q).max()))
    np.testing.assert_allclose(full[nb:], r.w, atol=1e-12 * max(1, abs(q).max()))


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n_dof=st.integers(3, 12), nb=st.integers(1, 3))
def test_saddle_point_equality_block(seed, n_dof, nb):
    """Eqs. 27/36: the free block is [[Mass, -G'], [G, 0]] (velocities and bilateral impulses),
    indefinite and non-symmetric, complementarity rows for frictionless contacts. nb + nc <= N
    so that [G; Gu] has full row rank and the problem is solvable."""
    rng = np.random.default_rng(seed)
    n_dof = max(n_dof, nb + 1)
    nc = int(rng.integers(1, min(3, n_dof - nb) + 1))
    Bm = rng.standard_normal((n_dof, n_dof))
    Mass = Bm @ Bm.T + np.eye(n_dof)
    G = rng.standard_normal((nb, n_dof))
    Gu = rng.standard_normal((nc, n_dof))
    nf = n_dof + nb
    M = np.zeros((nf + nc, nf + nc))
    M[:n_dof, :n_dof] = Mass
    M[:n_dof, n_dof:nf] = -G.T
    M[n_dof:nf, :n_dof] = G
    M[:n_dof, nf:] = -Gu.T
    M[nf:, :n_dof] = Gu
    q = np.concatenate([-Mass @ rng.standard_normal(n_dof), np.zeros(nb), np.zeros(nc)])
    q[nf:] = rng.standard_normal(nc) * 0.1
    r = solve_mixed_lcp(M, q, nf)
    assert r.ok, r.describe()
    v = np.concatenate([r.x, r.z])
    out = M @ v + q
    scale = max(1.0, abs(q).max(), abs(M).max() * abs(v).max())
    assert abs(out[:nf]).max() <= 1e-10 * scale
    assert out[nf:].min() >= -1e-10 * scale and r.z.min() >= 0
    assert abs(np.minimum(out[nf:], r.z)).max() <= 1e-10 * scale
    # independent: eliminate velocities by hand -> the RMC LCP (Eq. 41 with no friction)
    Mi = np.linalg.inv(Mass)
    v_free = -Mi @ q[:n_dof]
    K = np.block([[G @ Mi @ G.T, G @ Mi @ Gu.T], [Gu @ Mi @ G.T, Gu @ Mi @ Gu.T]])
    qq = np.concatenate([G @ v_free, Gu @ v_free + q[nf:]])
    sols = enumerate_mixed(K, qq, nb)
    assert any(np.allclose(s[nb:], r.z, atol=1e-7 * max(1, abs(s).max())) for s in sols)


def os_lcp(rng, nb, nu, nf, mu):
    """000 Eq. 53 structure: Lambda (6 nc SPD) seen through Q_b (bilateral) and D' Q_u (friction
    cone), plus the E, E-bar sliding rows. Returns (M, q, nb)."""
    nc = nu + 1
    J = rng.standard_normal((6 * nc, 6 * nc + 3))
    Lam = J @ J.T / (6 * nc)
    Qb = rng.standard_normal((nb, 6 * nc))
    nz = nu * (nf + 1)
    DQu = np.zeros((nz, 6 * nc))
    E = np.zeros((nz, nu))
    Eb = np.zeros((nu, nz))
    for i in range(nu):
        c = i * (nf + 1)
        lin = slice(6 * i + 3, 6 * i + 6)  # [angular; linear] per node
        DQu[c, lin] = [0.0, 0.0, 1.0]
        for j in range(nf):
            th = 2 * np.pi * j / nf
            DQu[c + 1 + j, lin] = [np.cos(th), np.sin(th), 0.0]
            E[c + 1 + j, i] = 1.0
            Eb[i, c + 1 + j] = -1.0
        Eb[i, c] = mu
    P = np.vstack([Qb, DQu])
    n = nb + nz + nu
    M = np.zeros((n, n))
    M[: nb + nz, : nb + nz] = P @ Lam @ P.T
    M[nb : nb + nz, nb + nz :] = E
    M[nb + nz :, nb : nb + nz] = Eb
    q = np.concatenate([P @ rng.standard_normal(6 * nc), np.zeros(nu)])
    return M, q, nb


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    nb=st.integers(1, 5),
    nu=st.integers(1, 4),
    nf=st.sampled_from([4, 6]),
    mu=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_os_formulation_structure(seed, nb, nu, nf, mu):
    rng = np.random.default_rng(seed)
    M, q, nb = os_lcp(rng, nb, nu, nf, mu)
    r = solve_mixed_lcp(M, q, nb)
    assert r.ok, r.describe()
    assert r.solver == "lemke"
    v = np.concatenate([r.x, r.z])
    out = M @ v + q
    scale = max(1.0, abs(q).max(), abs(M).max() * abs(v).max())
    assert abs(out[:nb]).max() <= 1e-9 * scale
    assert abs(np.minimum(out[nb:], r.z)).max() <= 1e-9 * scale
    assert r.z.min() >= 0 and out[nb:].min() >= -1e-9 * scale


def test_pgs_on_mixed_spd_agrees_with_lemke():
    rng = np.random.default_rng(5)
    B = rng.standard_normal((8, 8))
    M = B @ B.T + 2 * np.eye(8)
    q = rng.standard_normal(8)
    a = solve_mixed_lcp(M, q, 3, solver="lemke", chain=False)
    b = solve_mixed_lcp(M, q, 3, solver="pgs", chain=False)
    assert a.ok and b.ok and b.solver == "pgs"
    np.testing.assert_allclose(b.z, a.z, atol=1e-7)
    np.testing.assert_allclose(b.x, a.x, atol=1e-7)
