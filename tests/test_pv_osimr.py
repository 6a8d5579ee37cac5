"""PV-OSIMr (003 Algorithm 3) against three independent routes to the same Delassus matrix.

Truths compared with ``pv_osimr_from_poses`` / ``pv_osimr_after_aba``:
* ``dense_lambda``: CRBA, Cholesky and the explicit node Jacobian, J M^-1 J^T;
* ``upsilon_from_poses`` / ``upsilon``: Jain's recursion (000 Eqs. 64-69), a different
  factorisation of M^-1 with its own kernel; its Upsilon(k) (Eq. 68) must also equal PV-OSIMr's
  intermediate 0Omega_k (003 Eq. 18) at every branching body, which checks the propagation, not
  only Lambda;
* ``pin.computeDelassusMatrix`` (Pinocchio's own Delassus algorithm, world-frame, C++) with
  mixed 6D and 3D contacts, the independent truth for the reduced 3D (linear-row) constraints.

Robots: every example-robot-data URDF the Pinocchio tests use (same enumeration and skips),
fixed and floating base, and hypothesis-drawn random trees. Nodes sit on the tree root, on
leaves of different branches, twice on one body, and on random bodies, in shuffled order.

Tolerance: 1e-10 relative to the largest entry of the reference Lambda. The worst differences
observed on the robots are 2.0e-12 against dense and Upsilon and 2.5e-12 against Pinocchio
(tiago_pro and pr2, whose long arms of light links make M the worst conditioned), 1e-14 on
the random trees: float64 rounding through products of ~50 6x6 propagators and a Cholesky
factor. 1e-10 leaves a margin of ~40 over that, while a wrong block, sign, row or frame
(differences of order 1) cannot pass.
"""

from __future__ import annotations

import zlib

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mbsim.simcore.data import Data
from mbsim.simcore.delassus import (
    branching_inverse_inertias,
    dense_lambda,
    pv_osimr_after_aba,
    pv_osimr_from_poses,
    upsilon,
    upsilon_from_poses,
)
from mbsim.simcore.dynamics import articulated_factor, crba, impulse_response
from mbsim.simcore.kinematics import forward_kinematics, node_jacobian, node_transforms
from mbsim.simcore.model import build_model
from mbsim.simcore.spatial import plucker_np
from mbsim.simcore.spec import JointSpec, LinkSpec, RobotSpec
from pin_oracle import all_urdfs, robots_dir, twin_or_skip
from random_trees import random_inertial, random_model_and_q, random_pose, random_tree

RTOL = 1e-10
URDFS = all_urdfs()


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def rows_of(linear):
    """Indices of the 6D Lambda's rows that the nodes keep (all 6, or the linear 3..5)."""
    return np.concatenate(
        [np.arange(6 * a + 3, 6 * a + 6) if lin else np.arange(6 * a, 6 * a + 6)
         for a, lin in enumerate(linear)]
    )  # fmt: skip


def node_set(rng, model, n_random):
    """Bodies for nodes: each tree's root, leaves of different branches, one body twice and
    ``n_random`` random bodies, shuffled (so the caller's order is not the preorder)."""
    children = np.zeros(model.nb, dtype=int)
    for p in model.parent:
        if p >= 0:
            children[p] += 1
    roots = [i for i in range(model.nb) if model.parent[i] < 0]
    leaves = [i for i in range(model.nb) if children[i] == 0]
    bodies = roots[:2] + list(rng.permutation(leaves)[:3])
    twice = int(rng.integers(model.nb))
    bodies += [twice, twice] + list(rng.integers(0, model.nb, n_random))
    return rng.permutation(np.array(bodies, dtype=np.int64))


def check_all_routes(model, data, q, bodies, points, rng):
    """PV-OSIMr vs Upsilon and dense, 6D and mixed 3D/6D; returns the 6D Lambda."""
    forward_kinematics(model, data, q)
    X = node_transforms(data, bodies, points)
    dense = dense_lambda(model, data, q, bodies, X)
    ups = upsilon_from_poses(model, data, bodies, X)
    lam = pv_osimr_from_poses(model, data, bodies, X)
    assert lam.shape == dense.shape
    assert rel_err(lam, dense) < RTOL
    assert rel_err(lam, ups) < RTOL
    # intermediate quantities: 0Omega_k (003 Eq. 18) = Upsilon(k) (000 Eq. 68), the latter
    # from the body-frame articulated factorisation and Upsilon sweep of dynamics/compliance
    omega = branching_inverse_inertias(model, data)
    articulated_factor(model, data)
    upsilon(model, data)
    assert len(omega) >= 1  # the body with two nodes branches
    for k, om in omega.items():
        assert rel_err(om, data.ups[k]) < RTOL, f"0Omega differs from Upsilon at body {k}"
    # 3D (connect-type) nodes: the linear rows of the 6D problem
    linear = rng.random(len(bodies)) < 0.5
    for lin in (linear, np.ones(len(bodies), bool)):
        sub = np.ix_(rows_of(lin), rows_of(lin))
        lam3 = pv_osimr_from_poses(model, data, bodies, X, linear=lin)
        assert rel_err(lam3, dense[sub]) < RTOL
    assert rel_err(pv_osimr_from_poses(model, data, bodies, X, linear=True), lam3) == 0.0
    return lam


twin = twin_or_skip


def test_example_robot_data_is_there():
    assert len(URDFS) > 30, f"expected the example-robot-data corpus under {robots_dir()}"


@pytest.mark.parametrize("base", ["fixed", "floating"])
@pytest.mark.parametrize("urdf", URDFS, ids=[str(u.relative_to(robots_dir())) for u in URDFS])
def test_pv_osimr_on_example_robots(urdf, base):
    model, tw = twin(urdf, base)
    data = Data(model)
    rng = np.random.default_rng(zlib.crc32(urdf.name.encode()) + 7)
    q = model.random_q(rng)
    bodies = node_set(rng, model, 3)
    points = rng.normal(size=(len(bodies), 3)) * 0.2
    check_all_routes(model, data, q, bodies, points, rng)
    # Pinocchio's Delassus matrix, body-aligned (LOCAL) frames, 6D and 3D contacts mixed
    linear = np.arange(len(bodies)) % 2 == 1
    cms = pin.StdVec_RigidConstraintModel()
    for b, p, lin in zip(bodies, points, linear, strict=True):
        kind = pin.ContactType.CONTACT_3D if lin else pin.ContactType.CONTACT_6D
        placement = pin.SE3(np.eye(3), p)
        cms.append(pin.RigidConstraintModel(kind, tw.pm, tw.jids[b], placement, pin.LOCAL))
    cds = pin.StdVec_RigidConstraintData()
    for c in cms:
        cds.append(c.createData())
    pin.initConstraintDynamics(tw.pm, tw.pd, cms, cds)
    delassus = pin.computeDelassusMatrix(tw.pm, tw.pd, tw.q(q), cms, cds, 0.0)
    X = np.array([plucker_np(np.eye(3), p) for p in points])  # body axes, origin at p
    forward_kinematics(model, data, q)
    lam = pv_osimr_from_poses(model, data, bodies, X, linear=linear)
    # Pinocchio orders a 6D node's rows [linear; angular], mbsim [angular; linear]
    perm, o = [], 0
    for lin in linear:
        perm += [o, o + 1, o + 2] if lin else [o + 3, o + 4, o + 5, o, o + 1, o + 2]
        o += 3 if lin else 6
    assert rel_err(lam[np.ix_(perm, perm)], delassus) < RTOL


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n_links=st.integers(1, 20),
    n_random=st.integers(0, 5),
    branching=st.sampled_from([0.0, 0.4, 0.9]),
    base=st.sampled_from(["fixed", "floating"]),
)
def test_pv_osimr_on_random_trees(seed, n_links, n_random, branching, base):
    drawn = random_model_and_q(seed, n_links, branching, base)
    if drawn is None:
        return
    rng, model, q = drawn
    data = Data(model)
    bodies = node_set(rng, model, n_random)
    points = rng.normal(size=(len(bodies), 3)) * 0.5
    check_all_routes(model, data, q, bodies, points, rng)


def test_refresh_contract_and_factorisation_left_in_data():
    """pv_osimr_from_poses leaves U, Dinv and pivots as articulated_factor computes them (so
    the impulse response can follow); pv_osimr_after_aba reuses them; data.IA and data.ups are not
    written (PV-OSIMr keeps its articulated inertias in the tree's inertial frame)."""
    rng = np.random.default_rng(11)
    model = build_model([random_tree(rng, 12, branching=0.5, base="floating")])
    data = Data(model)
    q = model.random_q(rng)
    forward_kinematics(model, data, q)
    bodies = node_set(rng, model, 2)
    X = node_transforms(data, bodies, rng.normal(size=(len(bodies), 3)))
    ref = Data(model)
    forward_kinematics(model, ref, q)
    articulated_factor(model, ref)
    data.ups[:] = 7.0
    data.IA[:] = 7.0
    lam = pv_osimr_from_poses(model, data, bodies, X)
    assert np.all(data.ups == 7.0) and np.all(data.IA == 7.0)
    for name in ("U", "Dinv", "pivots"):
        assert rel_err(getattr(data, name), getattr(ref, name)) < 1e-13, name
    f = rng.normal(size=(len(bodies), 6))
    M = crba(model, Data(model), q)
    J = node_jacobian(model, data, bodies, X)
    dv = impulse_response(model, data, bodies, X, f)
    assert rel_err(dv, np.linalg.solve(M, J.T @ f.ravel())) < RTOL
    # after ABA: with a stale factorisation the result changes, with the right one not
    again = pv_osimr_after_aba(model, data, bodies, X)
    assert rel_err(again, lam) < 1e-14
    data.Dinv *= 2.0
    assert rel_err(pv_osimr_after_aba(model, data, bodies, X), lam) > 1e-3


def test_branching_links_of_the_papers_figure_1():
    """003 Fig. 1: links 1-6 with 1-2, 2-{3, 6}, 3-4, 4-5 and constraints on links 6, 3 and 5.
    The paper lists N = {0, 2, 3, 7, 8, 9}: of the real links only 2 and 3 branch."""
    rng = np.random.default_rng(2)
    links = [LinkSpec("world")] + [LinkSpec(f"l{k}", random_inertial(rng)) for k in range(1, 7)]
    tree = {1: "world", 2: "l1", 3: "l2", 4: "l3", 5: "l4", 6: "l2"}
    joints = [
        JointSpec(f"j{k}", "revolute", p, f"l{k}", random_pose(rng), rng.normal(size=3))
        for k, p in tree.items()
    ]
    model = build_model([RobotSpec("fig1", links, joints, "world")])
    assert model.body_names == ("l1", "l2", "l3", "l4", "l5", "l6")  # preorder = paper's
    data = Data(model)
    q = model.random_q(rng)
    bodies = np.array([5, 2, 4])  # links 6, 3, 5: end-effectors 7, 8, 9
    points = rng.normal(size=(3, 3)) * 0.3
    check_all_routes(model, data, q, bodies, points, rng)
    # the branching tree depends only on the node bodies, not on the last call's dimensions
    assert sorted(branching_inverse_inertias(model, data)) == [1, 2]  # links 2 and 3


def test_forest_blocks_between_trees_are_zero():
    rng = np.random.default_rng(3)
    model = build_model([random_tree(rng, 5), random_tree(rng, 4, base="floating")])
    data = Data(model)
    q = model.random_q(rng)
    bodies = node_set(rng, model, 3)
    lam = check_all_routes(model, data, q, bodies, rng.normal(size=(len(bodies), 3)), rng)
    tree = model.tree_of[bodies]
    for a in range(len(bodies)):
        for b in range(len(bodies)):
            if tree[a] != tree[b]:
                assert np.all(lam[6 * a : 6 * a + 6, 6 * b : 6 * b + 6] == 0.0)


def test_deep_chain_every_link_constrained_grows_the_workspace():
    """003 Fig. 4b: every link is an end-effector, so the branching tree is as deep as the
    chain (the propagator table must grow past its initial depth)."""
    rng = np.random.default_rng(4)
    model = build_model([random_tree(rng, 40, joint_types=("revolute",), branching=0.0)])
    data = Data(model)
    q = model.random_q(rng)
    bodies = np.arange(model.nb)
    check_all_routes(model, data, q, bodies, rng.normal(size=(model.nb, 3)) * 0.2, rng)


def test_accuracy_does_not_depend_on_where_the_robot_is():
    """The algorithm works in one inertial frame; with its origin at the world origin a robot
    1 km away lost 10 digits (lever arms of 1e3 m against links of 0.3 m). Same robot, same
    joint angles, base moved: Lambda must still match the (body-frame) dense reference."""
    rng = np.random.default_rng(6)
    model = build_model([random_tree(rng, 12, branching=0.5, base="floating")])
    data = Data(model)
    q = model.random_q(rng)
    bodies = node_set(rng, model, 3)
    points = rng.normal(size=(len(bodies), 3)) * 0.3
    for where in ([0.0, 0.0, 0.0], [1e3, -1e3, 1e3]):
        q[:3] = where
        forward_kinematics(model, data, q)
        X = node_transforms(data, bodies, points)
        dense = dense_lambda(model, data, q, bodies, X)
        assert rel_err(pv_osimr_from_poses(model, data, bodies, X), dense) < RTOL


def test_bad_input_is_refused():
    rng = np.random.default_rng(5)
    model = build_model([random_tree(rng, 3)])
    data = Data(model)
    forward_kinematics(model, data, model.random_q(rng))
    X = np.tile(np.eye(6), (2, 1, 1))
    with pytest.raises(ValueError, match="node_X"):
        pv_osimr_from_poses(model, data, [0, 1], X[:1])
    with pytest.raises(ValueError, match="is not in"):
        pv_osimr_from_poses(model, data, [0, model.nb], X)
    with pytest.raises(ValueError, match="linear"):
        pv_osimr_from_poses(model, data, [0, 1], X, linear=[True])
    assert pv_osimr_from_poses(model, data, np.zeros(0, int), np.zeros((0, 6, 6))).shape == (0, 0)
