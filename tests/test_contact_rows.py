"""The contact-model kernels of simcore/contact.py against their definitions in 000 Sec. 2
and Eqs. 46, 49, 53, written here densely with NumPy: D(i) (Eq. 7) from its properties, W =
Q_u Lambda Q_u^T with an explicit Q_u, and M = [[D^T W D, E-hat], [E-bar, 0]],
q = [D^T v; 0] from block matrices. Tolerances: 1e-12, rounding of sums of a few products of
O(1) numbers."""

from __future__ import annotations

import numpy as np
import pytest

from mbsim.simcore.contact import (
    contact_lcp,
    contact_nodes,
    friction_matrix,
    node_impulses,
    relative_compliance,
)


def unit_normals(rng, count):
    n = rng.normal(size=(count, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    axes = np.vstack([np.eye(3), -np.eye(3), [[1, 1, 0]] / np.sqrt(2)])
    return np.vstack([n, axes])


@pytest.mark.parametrize("nf", [4, 6, 8])
def test_friction_directions_are_evenly_spaced_unit_tangents(nf):
    n = unit_normals(np.random.default_rng(0), 40)
    D = friction_matrix(n, nf)
    assert D.shape == (len(n), 3, nf + 1)
    np.testing.assert_allclose(D[:, :, 0], n, atol=0)
    d = D[:, :, 1:]
    np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.einsum("ij,ijk->ik", n, d), 0.0, atol=1e-12)
    # consecutive directions 2 pi / nf apart, turning right-handedly about n
    t1 = d[:, :, 0]
    t2 = np.cross(n, t1)
    ang = 2 * np.pi * np.arange(nf) / nf
    expect = t1[:, :, None] * np.cos(ang) + t2[:, :, None] * np.sin(ang)
    np.testing.assert_allclose(d, expect, atol=1e-12)
    # every direction's opposite is in the set (the polyhedron of Fig. 2)
    np.testing.assert_allclose(d[:, :, : nf // 2], -d[:, :, nf // 2 :], atol=1e-12)


def test_friction_matrix_refuses_odd_or_few_directions():
    with pytest.raises(ValueError, match="even number"):
        friction_matrix(np.array([[0.0, 0.0, 1.0]]), 5)
    assert friction_matrix(np.zeros((0, 3)), 4).shape == (0, 3, 5)


def test_relative_compliance_is_qu_lambda_qu_transpose():
    rng = np.random.default_rng(1)
    n_nodes = 5
    A = rng.normal(size=(6 * n_nodes, 6 * n_nodes))
    Lam = A @ A.T
    node_a = np.array([0, 1, 3, 4])
    node_b = np.array([-1, 2, -1, 0])  # -1: the static world
    Qu = np.zeros((3 * len(node_a), 6 * n_nodes))
    for i, (a, b) in enumerate(zip(node_a, node_b, strict=True)):
        Qu[3 * i : 3 * i + 3, 6 * a + 3 : 6 * a + 6] += np.eye(3)
        if b >= 0:
            Qu[3 * i : 3 * i + 3, 6 * b + 3 : 6 * b + 6] -= np.eye(3)
    W = relative_compliance(Lam, node_a, node_b)
    np.testing.assert_allclose(W, Qu @ Lam @ Qu.T, atol=1e-12 * np.abs(Lam).max())


def test_node_impulses_are_qu_transpose_f():
    """Q_u^T F by the scatter of contact.node_impulses against an explicit Q_u (Eq. 46)
    over the nodes of contact.contact_nodes (A sides first, the world side without a node);
    bit for bit: each node row has one non-zero term."""
    rng = np.random.default_rng(2)
    body_a = np.array([0, 2, 1, -1, 3])
    body_b = np.array([-1, 1, -1, 0, 2])
    local_a, local_b = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    node_body, node_point, ia, ib = contact_nodes(body_a, body_b, local_a, local_b)
    moving_a, moving_b = body_a >= 0, body_b >= 0
    np.testing.assert_array_equal(node_body, np.concatenate([body_a[moving_a], body_b[moving_b]]))
    np.testing.assert_array_equal(
        node_point, np.concatenate([local_a[moving_a], local_b[moving_b]])
    )
    nn = len(node_body)
    Qu = np.zeros((15, 6 * nn))
    for i in range(5):
        if ia[i] >= 0:
            assert node_body[ia[i]] == body_a[i]
            Qu[3 * i : 3 * i + 3, 6 * ia[i] + 3 : 6 * ia[i] + 6] += np.eye(3)
        if ib[i] >= 0:
            assert node_body[ib[i]] == body_b[i]
            Qu[3 * i : 3 * i + 3, 6 * ib[i] + 3 : 6 * ib[i] + 6] -= np.eye(3)
    assert list(ia < 0) == list(~moving_a) and list(ib < 0) == list(~moving_b)
    F = rng.normal(size=(5, 3))
    np.testing.assert_array_equal(node_impulses(F, ia, ib, nn), (Qu.T @ F.ravel()).reshape(nn, 6))


@pytest.mark.parametrize(("nu", "nf"), [(1, 4), (3, 6), (5, 8)])
def test_contact_lcp_is_eq53_contact_block(nu, nf):
    rng = np.random.default_rng(nu)
    k = nf + 1
    A = rng.normal(size=(3 * nu, 3 * nu))
    W = A @ A.T
    D = friction_matrix(unit_normals(rng, nu)[:nu], nf)
    mu = rng.random(nu)
    v = rng.normal(size=(nu, 3))
    M, q = contact_lcp(W, D, mu, v)
    Dblk = np.zeros((3 * nu, nu * k))
    Ehat = np.zeros((nu * k, nu))
    Ebar = np.zeros((nu, nu * k))
    for i in range(nu):
        Dblk[3 * i : 3 * i + 3, k * i : k * i + k] = D[i]
        Ehat[k * i + 1 : k * i + k, i] = 1.0
        Ebar[i, k * i] = mu[i]
        Ebar[i, k * i + 1 : k * i + k] = -1.0
    M_ref = np.block([[Dblk.T @ W @ Dblk, Ehat], [Ebar, np.zeros((nu, nu))]])
    q_ref = np.concatenate([Dblk.T @ v.ravel(), np.zeros(nu)])
    np.testing.assert_allclose(M, M_ref, atol=1e-12 * np.abs(W).max())
    np.testing.assert_allclose(q, q_ref, atol=1e-12)


def _dtwd_blocks_as_summed(W, D):
    """D(i)^T W_ij D(j) entry by entry in _contact_lcp_kernel's order (Python floats: one
    rounding per operation), for every pair: the reference for its zero-block shortcut."""
    nu, _, k = D.shape
    out = np.zeros((nu * k, nu * k))
    for i in range(nu):
        for j in range(nu):
            for b in range(k):
                wd = []
                for r in range(3):
                    s = 0.0
                    for c in range(3):
                        s += float(W[3 * i + r, 3 * j + c]) * float(D[j, c, b])
                    wd.append(s)
                for a in range(k):
                    acc = 0.0
                    for r in range(3):
                        acc += float(D[i, r, a]) * wd[r]
                    out[k * i + a, k * j + b] = acc
    return out


def test_contact_lcp_skips_zero_blocks_with_the_same_bits():
    """Contacts on no common body have W_ij = 0 (here half the pairs, some entries -0.0); the
    kernel writes their blocks as 0.0 without the products, which must be the products' own
    bits (+0.0), and M's other entries unchanged; a non-finite D keeps its products (nan)."""
    rng = np.random.default_rng(5)
    nu, nf = 6, 4
    k = nf + 1
    A = rng.normal(size=(3 * nu, 3 * nu))
    W = A @ A.T
    for i in range(nu):
        for j in range(nu):
            if (i // 2 - j // 2) % 3 == 2 or (i + j) % 4 == 1:
                W[3 * i : 3 * i + 3, 3 * j : 3 * j + 3] = -0.0 if (i + j) % 2 else 0.0
    D = friction_matrix(unit_normals(rng, nu)[:nu], nf)
    D[:, :, 1:] *= -1.0  # negative entries: products of 0.0 with them are -0.0
    ref = _dtwd_blocks_as_summed(W, D)
    M, _q = contact_lcp(W, D, rng.random(nu), rng.normal(size=(nu, 3)))
    got = M[: nu * k, : nu * k]
    assert np.array_equal(got, ref)
    assert not np.signbit(got[ref == 0.0]).any()
    D[2, 1, 3] = np.nan
    ref = _dtwd_blocks_as_summed(W, D)
    M, _q = contact_lcp(W, D, rng.random(nu), rng.normal(size=(nu, 3)))
    assert np.isnan(ref[k * 2 + 3, : nu * k]).all()  # zero blocks too: nan * 0 = nan
    assert np.array_equal(M[: nu * k, : nu * k], ref, equal_nan=True)
