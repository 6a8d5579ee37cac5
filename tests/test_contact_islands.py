"""Contact islands (simcore/contact_islands.py) against independent truth.

Truth: the islands are the connected components of the graph of trees joined by contacts
(scipy's ``connected_components`` on that graph); each island's W is the whole W's diagonal
block, bit for bit (the whole Lambda by Upsilon, ``upsilon_after_aba``, and the whole
``contact.relative_compliance``), and W = Q_u J M^-1 J^T Q_u^T by CRBA and Cholesky
(``delassus.dense_lambda``) to 1e-9 relative, zero between islands; the acceptance test
from the blocks agrees with the dense pass over the whole (M, q) but for the rounding of its
row sums.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from numba.typed import List
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from mbsim.simcore.contact import contact_nodes, relative_compliance
from mbsim.simcore.contact_islands import contact_islands, island_compliance, verify_blocks
from mbsim.simcore.data import Data
from mbsim.simcore.delassus import dense_lambda
from mbsim.simcore.delassus.upsilon_body import lambda_linear_into, upsilon_after_aba
from mbsim.simcore.dynamics import aba
from mbsim.simcore.kinematics import node_transforms
from mbsim.simcore.lcp.islands import block_order, blocks
from mbsim.simcore.lcp.problem import Status, evaluate
from mbsim.simcore.limit_step import evaluate_candidate
from mbsim.simcore.model import build_model
from random_trees import random_tree

#: dense_lambda (CRBA, Cholesky) against Upsilon: relative, as tests/test_delassus_registry.py
RTOL = 1e-9


def _forest(seed: int, trees: int):
    """(rng, model, q): ``trees`` random trees of 1-4 links, floating or fixed bases."""
    rng = np.random.default_rng(seed)
    specs = []
    for t in range(trees):
        base = "floating" if rng.random() < 0.7 else "fixed"
        spec = random_tree(rng, int(rng.integers(1, 5)), branching=0.5, base=base)
        specs.append(dataclasses.replace(spec, name=f"tree{t}"))
    model = build_model(specs)
    return rng, model, model.random_q(rng)


def _contacts(rng, model, nu: int):
    """nu random contacts: bodies (or -1, the static world, on one side at most), points."""
    a = rng.integers(-1, model.nb, nu)
    b = rng.integers(0, model.nb, nu)
    swap = rng.random(nu) < 0.5
    a[swap], b[swap] = b[swap], a[swap]
    return a.astype(np.int64), b.astype(np.int64), rng.normal(size=(nu, 3)) * 0.2


def _tree_of(model) -> np.ndarray:
    root = np.empty(model.nb, dtype=np.int64)
    for i in range(model.nb):
        root[i] = i if model.parent[i] < 0 else root[model.parent[i]]
    return root


@pytest.mark.parametrize("seed", range(30))
def test_islands_are_the_components_of_trees_joined_by_contacts(seed):
    rng, model, _q = _forest(seed, rng_trees(seed))
    nu = int(rng.integers(1, 12))
    a, b, _p = _contacts(rng, model, nu)
    island = np.empty(nu, dtype=np.int64)
    count = contact_islands(model.parent, a, b, island)
    # truth: components over trees + one vertex per contact, edges contact-tree
    root = _tree_of(model)
    rows, cols = [], []
    for i in range(nu):
        for body in (a[i], b[i]):
            if body >= 0:
                rows.append(model.nb + i)
                cols.append(root[body])
    g = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(model.nb + nu,) * 2)
    _, comp = connected_components(g, directed=False)
    ref = comp[model.nb :]
    for i in range(nu):
        for j in range(nu):
            assert (island[i] == island[j]) == (ref[i] == ref[j]), (i, j)
    # numbered in order of the first contact
    firsts = [int(np.flatnonzero(island == g)[0]) for g in range(count)]
    assert firsts == sorted(firsts)
    assert count == len(set(ref.tolist()))


def rng_trees(seed: int) -> int:
    return 2 + seed % 4


@pytest.mark.parametrize("seed", range(12))
def test_island_compliance_is_the_whole_w_block_by_block(seed):
    rng, model, q = _forest(seed, rng_trees(seed))
    nu = int(rng.integers(2, 10))
    a, b, p = _contacts(rng, model, nu)
    pb = rng.normal(size=(nu, 3)) * 0.2
    node_body, node_point, ia, ib = contact_nodes(a, b, p, pb)
    data = Data(model)
    aba(model, data, q, rng.normal(size=model.nv), rng.normal(size=model.nv))
    X = node_transforms(data, node_body, node_point)
    lam = upsilon_after_aba(model, data, node_body, X)  # fills data.ups
    whole = relative_compliance(lam, ia, ib)
    ref = Data(model)
    dense = relative_compliance(dense_lambda(model, ref, q, node_body, X), ia, ib)
    island = np.empty(nu, dtype=np.int64)
    count = contact_islands(model.parent, a, b, island)
    corder, cstarts = block_order(island, count)
    w, wstart = island_compliance(
        model.parent, model.nvj, data.S, data.E, data.r, data.U, data.Dinv, data.ups,
        node_body, X, ia, ib, corder, cstarts,
    )  # fmt: skip
    scale = np.max(np.abs(dense))
    covered = np.zeros((3 * nu, 3 * nu), dtype=bool)
    for g in range(count):
        c = corder[cstarts[g] : cstarts[g + 1]]
        m = c.size
        rows = (3 * c[:, None] + np.arange(3)).ravel()
        wg = w[wstart[g] : wstart[g + 1]].reshape(3 * m, 3 * m)
        np.testing.assert_array_equal(wg, whole[np.ix_(rows, rows)])
        assert np.max(np.abs(wg - dense[np.ix_(rows, rows)])) <= RTOL * scale
        covered[np.ix_(rows, rows)] = True
    assert np.all(whole[~covered] == 0.0)
    assert np.max(np.abs(dense[~covered]), initial=0.0) <= RTOL * scale


def _split_lcp(rng, sizes):
    """A standard LCP (M, q) that splits into blocks of ``sizes`` rows, interleaved in a
    random row order, and a candidate z near a solution of each block."""
    n = sum(sizes)
    perm = rng.permutation(n)
    M = np.zeros((n, n))
    start = 0
    for m in sizes:
        rows = np.sort(perm[start : start + m])
        A = rng.normal(size=(m, m))
        M[np.ix_(rows, rows)] = A @ A.T + 0.1 * np.eye(m)
        start += m
    z = np.where(rng.random(n) < 0.5, rng.random(n), 0.0)
    w = np.where(z > 0, 0.0, rng.random(n))
    q = w - M @ z
    return M, q, z


@pytest.mark.parametrize("seed", range(20))
def test_the_blocks_acceptance_is_the_whole_ones(seed):
    rng = np.random.default_rng(seed)
    M, q, z = _split_lcp(rng, [int(m) for m in rng.integers(1, 40, int(rng.integers(2, 6)))])
    z = z + rng.normal(size=z.size) * 10.0 ** rng.uniform(-16, -6)  # near the tolerance
    parts = blocks(M)
    assert len(parts) >= 2
    tol_rel = 1e-9
    w = np.empty(q.size)
    dense_ok, dense_worst, dense_tol = evaluate_candidate(M, q, z, tol_rel, w)
    Ms = List([np.ascontiguousarray(M[np.ix_(r, r)]) for r in parts])
    ws = List([np.empty(r.size) for r in parts])
    qs, zs = List([q[r] for r in parts]), List([z[r] for r in parts])
    ok, worst, tol = verify_blocks(q.size, tol_rel, Ms, qs, zs, ws)
    # the norms and residuals are the blocks' largest: the same numbers but for the rounding
    # of the row sums (a few ulps of ||M|| ||z|| + ||q||)
    scale = np.max(np.abs(M)) * np.max(np.abs(z)) * q.size + np.max(np.abs(q))
    assert abs(tol - dense_tol) <= 1e-14 * dense_tol
    assert abs(worst - dense_worst) <= 1e-14 * scale
    if abs(dense_worst - dense_tol) > 1e-12 * dense_tol:
        assert ok == dense_ok
    # the Python chain's test (islands.solve_blocks) gives the same numbers, bit for bit
    res = evaluate(M, q, z.copy(), Status.SOLVED, 0, "lemke", tol_rel=tol_rel, parts=parts)
    assert max(res.residual, res.sign_violation, res.eq_residual) == worst
    assert res.tol == tol
    for r, wb in zip(parts, ws, strict=True):
        np.testing.assert_array_equal(res.w[r], wb)


@pytest.mark.parametrize("seed", range(8))
def test_lambda_linear_blocks_are_the_whole_lambdas_and_the_rest_is_left(seed):
    """upsilon_body.lambda_linear_into (the compiled step's Lambda) writes the linear-linear
    3x3 blocks of every node pair, bit for bit the whole Lambda's (``lambda_kernel``: every
    entry), zero across trees, and no other entry (a nan-filled buffer keeps its nans)."""
    rng, model, q = _forest(seed, 2 + seed % 3)
    nu = int(rng.integers(3, 10))
    a, b, p = _contacts(rng, model, nu)
    node_body, node_point, _ia, _ib = contact_nodes(a, b, p, rng.normal(size=(nu, 3)) * 0.2)
    data = Data(model)
    aba(model, data, q, rng.normal(size=model.nv), rng.normal(size=model.nv))
    X = node_transforms(data, node_body, node_point)
    whole = upsilon_after_aba(model, data, node_body, X)  # fills data.ups
    nc = node_body.size
    part = np.full((6 * nc, 6 * nc), np.nan)
    lambda_linear_into(
        model.parent, model.nvj, data.S, data.E, data.r, data.U, data.Dinv, data.ups,
        node_body, X, part, np.empty(0, dtype=np.int64), np.empty(0),
    )  # fmt: skip
    lin = (6 * np.arange(nc)[:, None] + 3 + np.arange(3)).ravel()
    np.testing.assert_array_equal(part[np.ix_(lin, lin)], whole[np.ix_(lin, lin)])
    rest = np.ones(part.shape, dtype=bool)
    rest[np.ix_(lin, lin)] = False
    assert np.isnan(part[rest]).all()
    root = _tree_of(model)
    apart = root[node_body][:, None] != root[node_body][None, :]
    if seed < 4:
        assert apart.any()  # nodes in different trees: zero blocks written
    assert not whole[np.ix_(lin, lin)].reshape(nc, 3, nc, 3).transpose(0, 2, 1, 3)[apart].any()
