"""Independent blocks of an LCP (lcp/islands.py) against the unsplit solve and an independent
component search (scipy.sparse.csgraph), on random block-diagonal LCPs hidden by a random
permutation."""

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.csgraph
from hypothesis import given, settings
from hypothesis import strategies as st

from mbsim.simcore.lcp import Status, check, islands, solve_lcp
from mbsim.simcore.lcp.problem import LcpResult
from mbsim.simcore.options import FORMULATIONS
from test_lcp_lemke import friction_lcp

SETTINGS = settings(max_examples=40, deadline=None)


def independent_residual(M, q, z):
    w = M @ z + q
    return max(np.abs(np.minimum(w, z)).max(), -w.min(), -z.min(), 0.0)


def spd_lcp(rng, n):
    B = rng.standard_normal((n, n))
    return B @ B.T + n * np.eye(n), rng.standard_normal(n)


def block_lcp(rng, blocks):
    """Block-diagonal (M, q) of the given (M_b, q_b), then rows and columns permuted at
    random; returns (M, q, perm) with M = P M_bd P' (row i of M is row perm[i] of M_bd)."""
    n = sum(len(q) for _, q in blocks)
    Md, qd = np.zeros((n, n)), np.zeros(n)
    k = 0
    for Mb, qb in blocks:
        m = len(qb)
        Md[k : k + m, k : k + m] = Mb
        qd[k : k + m] = qb
        k += m
    perm = rng.permutation(n)
    return Md[np.ix_(perm, perm)], qd[perm], perm


def reference_components(M):
    """Connected components of the pattern of M + M' by scipy (the independent truth)."""
    A = scipy.sparse.csr_matrix((M != 0) | (M.T != 0))
    _, labels = scipy.sparse.csgraph.connected_components(A, directed=False)
    groups: dict[int, list[int]] = {}
    for i, c in enumerate(labels):
        groups.setdefault(int(c), []).append(i)
    return sorted(tuple(g) for g in groups.values())


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(1, 8), min_size=1, max_size=6))
def test_blocks_match_scipy_components(seed, sizes):
    rng = np.random.default_rng(seed)
    M, _, _ = block_lcp(rng, [spd_lcp(rng, m) for m in sizes])
    got = islands.blocks(M)
    assert sorted(tuple(int(i) for i in b) for b in got) == reference_components(M)
    assert len(got) == len(sizes)
    firsts = [int(b[0]) for b in got]
    assert firsts == sorted(firsts)  # blocks in order of their first row, rows ascending
    assert all(np.all(np.diff(b) > 0) for b in got)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), sizes=st.lists(st.integers(1, 10), min_size=2, max_size=5))
def test_spd_blocks_give_the_unsplit_solution(seed, sizes):
    """SPD blocks: the solution is unique, so split and unsplit must agree to rounding."""
    rng = np.random.default_rng(seed)
    M, q, _ = block_lcp(rng, [spd_lcp(rng, m) for m in sizes])
    split, whole = solve_lcp(M, q), solve_lcp(M, q, split=False)
    assert split.ok and whole.ok
    assert check(split) is None
    assert f"{len(sizes)} independent blocks" in split.message
    assert independent_residual(M, q, split.z) <= split.tol
    scale = 1.0 + np.abs(whole.z).max()
    np.testing.assert_allclose(split.z, whole.z, atol=1e-9 * scale, rtol=0)


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    contacts=st.lists(st.integers(1, 4), min_size=2, max_size=4),
    mu=st.sampled_from([0.0, 0.5, 1.0]),
    select=st.sampled_from(["vertex", "least_norm"]),
)
def test_friction_blocks_are_solutions(seed, contacts, mu, select):
    """Friction-cone blocks (000 Eq. 41, solutions not unique): the assembled z solves the
    whole LCP, checked independently, and every block's z solves its own block."""
    rng = np.random.default_rng(seed)
    parts = [friction_lcp(rng, nu, 4, mu) for nu in contacts]
    M, q, perm = block_lcp(rng, parts)
    r = solve_lcp(M, q, select=select)
    assert r.ok, r.describe()
    assert independent_residual(M, q, r.z) <= r.tol
    assert r.attempts[-1].status == Status.SOLVED
    zd = np.empty_like(r.z)
    zd[perm] = r.z
    k = 0
    for Mb, qb in parts:
        m = len(qb)
        assert independent_residual(Mb, qb, zd[k : k + m]) <= r.tol
        k += m
    assert len(islands.blocks(np.ascontiguousarray(M))) == len(contacts)


def test_an_lcp_that_does_not_split_takes_the_old_path(monkeypatch):
    rng = np.random.default_rng(3)
    M, q = friction_lcp(rng, 5, 4, 0.5)
    old = solve_lcp(M, q, split=False)

    def boom(*a, **k):
        raise AssertionError("an LCP in one block must not go through solve_blocks")

    monkeypatch.setattr(islands, "solve_blocks", boom)
    new = solve_lcp(M, q)
    assert new.ok and old.ok
    np.testing.assert_array_equal(new.z, old.z)
    assert (new.solver, new.pivots, new.message) == (old.solver, old.pivots, old.message)
    assert [a.label() for a in new.attempts] == [a.label() for a in old.attempts]


def test_a_failed_block_is_named_in_the_failure():
    """Block {1} is infeasible (w = 0 z - 1 < 0 for every z >= 0): the whole LCP has no
    solution, and the failure names that block's row and how its attempts ended."""
    rng = np.random.default_rng(4)
    M = np.zeros((4, 4))
    Ms, qs = spd_lcp(rng, 3)
    idx = [0, 2, 3]
    M[np.ix_(idx, idx)] = Ms
    q = np.zeros(4)
    q[idx] = qs
    q[1] = -1.0
    r = solve_lcp(M, q)
    assert not r.ok
    reason = check(r)
    assert reason is not None
    assert "the block of rows 1 (1 of 4) failed" in reason
    assert "unsplit" in reason


def test_a_block_failure_falls_back_to_the_unsplit_solve():
    """solve_blocks with a block solver that fails: the unsplit result is returned as is
    when it is accepted, and is never replaced by a partial one."""
    rng = np.random.default_rng(5)
    M, q, _ = block_lcp(rng, [spd_lcp(rng, 3), spd_lcp(rng, 2)])
    parts = islands.blocks(M)
    whole = solve_lcp(M, q, split=False)

    def failing(Mb, qb):
        return LcpResult(
            z=np.zeros(len(qb)), w=qb.copy(), status=Status.FAILED, pivots=0,
            residual=1.0, sign_violation=1.0, solver="lemke",
        )  # fmt: skip

    r = islands.solve_blocks(M, q, parts, failing, lambda: whole)
    assert r is whole and r.ok


@pytest.mark.parametrize(
    ("rows", "text"),
    [([0, 1, 2, 5, 7, 8], "rows 0-2, 5, 7-8 (6 of 10)"), ([4], "rows 4 (1 of 10)")],
)
def test_describe_rows(rows, text):
    assert islands.describe_rows(np.array(rows), 10) == text


# ---------------------------------------------------------------- in the step

BOX_URDF = """<?xml version="1.0"?>
<robot name="box"><link name="box">
  <inertial><mass value="1.0"/><inertia ixx="0.001667" iyy="0.001667" izz="0.001667"
    ixy="0" ixz="0" iyz="0"/></inertial>
  <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>
</link></robot>
"""
#: two stacks of two 10 cm boxes, 5 mm apart, 20 cm between the stacks: two islands
PILE = [((0.0, 0.0, 0.055), 0.1), ((0.004, -0.003, 0.16), -0.15),
        ((0.2, 0.0, 0.055), 0.05), ((0.197, 0.005, 0.16), 0.2)]  # fmt: skip
#: the documented tolerance (docs/lcp.md, "Islands"): a pile's trajectory with and without
#: the split agrees to 1e-9 (m and quaternion units); measured 3e-16 to 2.4e-15
PILE_TOL = 1e-9


def _pile_poses(tmp_path, steps, formulation):
    from mbsim.io.scenario import load_scenario_text
    from mbsim.simulator import Simulator

    (tmp_path / "box.urdf").write_text(BOX_URDF)
    text = "[simulation]\nduration = 1.0\ndt = 0.001\ngravity = [0.0, 0.0, -9.81]\n"
    text += f'formulation = "{formulation}"\n'
    for k, (xyz, yaw) in enumerate(PILE):
        text += f'[robot.box{k}]\nurdf = "box.urdf"\nbase = "floating"\n'
        text += f"base_pose = {{ xyz = {list(xyz)!r}, rpy = [0.0, 0.0, {yaw!r}] }}\n"
    text += "[contact]\nfloor = true\nmu = 0.5\nrestitution = 0.0\n"
    sim = Simulator(load_scenario_text(text, base_dir=tmp_path))
    poses = []
    for _ in range(steps):
        sim.step()
        sim.energy()  # forward kinematics of the current state, for body_poses
        poses.append(sim.body_poses())
    return np.array(poses)


@pytest.mark.parametrize("formulation", FORMULATIONS)
def test_box_pile_trajectory_is_unchanged_by_the_split(tmp_path, monkeypatch, formulation):
    """Two stacks of two free boxes on the floor: 2 independent blocks once both stacks
    touch, in every formulation (the mixed LCPs of MC and NMC through their reduced LCP);
    the trajectory equals the unsplit solve's (the dense reference). The Python chain's
    split (the compiled contact step's own is compared with it in test_contact_fused.py)."""
    from mbsim.simcore.contact_fused import ContactFuser

    monkeypatch.setattr(ContactFuser, "eligible", staticmethod(lambda stepper: False))
    seen = []
    real = islands.blocks

    def spy(M):
        out = real(M)
        seen.append(len(out))
        return out

    monkeypatch.setattr(islands, "blocks", spy)
    split = _pile_poses(tmp_path, 150, formulation)
    assert max(seen) == 2  # the two stacks really were solved apart
    monkeypatch.setattr(islands, "blocks", lambda M: [np.arange(M.shape[0])])
    whole = _pile_poses(tmp_path, 150, formulation)
    assert np.all(np.isfinite(split))
    np.testing.assert_allclose(split, whole, atol=PILE_TOL, rtol=0)
    assert split[-1, :, 2].min() > 0.04  # resting, not fallen through the floor
