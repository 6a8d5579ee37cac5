"""The fused world-frame Lambda (delassus.upsilon_from_poses, lambda_world_kernel).

Independent truths: the dense Lambda = J M^-1 J^T (CRBA, Cholesky, explicit Jacobian) and the
body-frame path (articulated_factor + upsilon_after_aba: upsilon + lambda_kernel), which shares no
sweep code with the world-frame kernel. Besides Lambda, the fused call must leave the pose
fields (with q) as forward_kinematics does (to an ulp: its sine and cosine come from
kinematics.sincos, checked here against long double), and U, Dinv, pivots as
articulated_factor does, so the O(N) impulse response can follow it.

Trees cover 1-DoF joints (the unrolled scalar path), free joints at the root and in the middle
of a tree (the general multi-DoF path, also inside compressed edges), several nodes on one
body, nodes in different trees, and long compressed edges (formed once as 6x6 products) next
to short ones (psi applied per node). Tolerance as in test_dynamics_random_trees.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from mbsim.simcore.data import Data
from mbsim.simcore.delassus import (
    dense_lambda,
    upsilon,
    upsilon_after_aba,
    upsilon_from_poses,
)
from mbsim.simcore.dynamics import aba, articulated_factor, crba, impulse_response
from mbsim.simcore.kinematics import (
    forward_kinematics,
    forward_poses_kernel,
    node_jacobian,
    node_transforms,
    sincos,
)
from mbsim.simcore.model import build_model
from mbsim.simcore.spec import Inertial, JointSpec, LinkSpec, RobotSpec
from random_trees import random_model_and_q, random_tree

RTOL = 1e-9


def rel_err(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


def nodes_on(rng, model, n):
    bodies = rng.integers(0, model.nb, n)
    return bodies, rng.normal(size=(n, 3)) * 0.5


def check_all(model, q, bodies, points):
    """Every way of calling the Upsilon algorithms against the dense Lambda and each other."""
    data = Data(model)
    forward_kinematics(model, data, q)
    X = node_transforms(data, bodies, points)
    dense = dense_lambda(model, data, q, bodies, X)
    # 1. from the kinematics in data
    forward_kinematics(model, data, q)
    lam = upsilon_from_poses(model, data, bodies, X)
    assert rel_err(lam, dense) < RTOL
    assert np.array_equal(lam, lam.T)
    # 2. from q (poses in the same call), on a Data that never saw q
    fresh = Data(model)
    lam_q = upsilon_from_poses(model, fresh, bodies, X, q=q)
    assert rel_err(lam_q, dense) < RTOL
    # 3. body-frame path after the articulated factorisation
    articulated_factor(model, data)
    upsilon(model, data)
    lam_b = upsilon_after_aba(model, data, bodies, X)
    assert rel_err(lam_b, dense) < RTOL
    return data, fresh, X, dense


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n_links=st.integers(1, 16),
    n_nodes=st.integers(1, 7),
    branching=st.sampled_from([0.0, 0.4, 0.9]),
    base=st.sampled_from(["fixed", "floating"]),
)
def test_fused_matches_dense_random_trees(seed, n_links, n_nodes, branching, base):
    drawn = random_model_and_q(seed, n_links, branching, base)
    if drawn is None:
        return
    rng, model, q = drawn
    check_all(model, q, *nodes_on(rng, model, n_nodes))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_links=st.integers(2, 10), n_nodes=st.integers(1, 6))
def test_fused_with_free_joints_inside_the_tree(seed, n_links, n_nodes):
    """Free joints below the root: the general multi-DoF path in both sweeps and in psi."""
    rng = np.random.default_rng(seed)
    spec = random_tree(
        rng, n_links, joint_types=("revolute", "floating", "prismatic"), branching=0.3
    )
    model = build_model([spec])
    if model.nv == 0:
        return
    check_all(model, model.random_q(rng), *nodes_on(rng, model, n_nodes))


def chain(n, axis=(0.0, 1.0, 0.0)):
    links = [LinkSpec("world")]
    joints = []
    for k in range(n):
        links.append(
            LinkSpec(f"l{k}", Inertial(1.0 + 0.1 * k, np.array([0.0, 0.0, -0.3]), np.eye(3) * 0.02))
        )
        T = np.eye(4)
        T[2, 3] = -0.6 if k else 0.0
        parent = "world" if k == 0 else f"l{k - 1}"
        joints.append(JointSpec(f"j{k}", "revolute", parent, f"l{k}", T, np.array(axis)))
    return RobotSpec("chain", links, joints, "world")


def test_long_and_short_compressed_edges():
    """Nodes far apart on a chain (one long edge, product formed once) and next to each other
    (psi applied per node), several on one body, one on the root."""
    rng = np.random.default_rng(0)
    model = build_model([chain(40)])
    q = model.random_q(rng)
    bodies = np.array([0, 39, 39, 39, 38, 20])
    check_all(model, q, bodies, rng.normal(size=(len(bodies), 3)) * 0.2)


def test_free_joint_on_compressed_edges():
    """A free joint in the middle of a chain, on a short edge (psi applied per node) and
    inside a long one (edge product formed once)."""
    rng = np.random.default_rng(3)
    spec = chain(14)
    spec.joints[6] = JointSpec("j6", "floating", "l5", "l6", spec.joints[6].origin)
    model = build_model([spec])
    assert model.nvj[6] == 6
    q = model.random_q(rng)
    for bodies in ([7, 5], [13, 13, 13, 2], [7, 5, 13, 13, 13, 0]):
        bodies = np.array(bodies)
        check_all(model, q, bodies, rng.normal(size=(len(bodies), 3)) * 0.2)


@pytest.mark.parametrize("offset", [0.0, 100.0, 1e4])
def test_far_from_the_world_origin(offset):
    """World-frame sweeps are taken about each tree's root body, so a robot 10 km away keeps
    the accuracy of one at the origin (about the world origin it would lose ~8 digits)."""
    rng = np.random.default_rng(8)
    model = build_model([random_tree(rng, 12, branching=0.4, base="floating")])
    q = model.random_q(rng)
    q[:3] = [offset, -offset, 0.5 * offset]
    check_all(model, q, *nodes_on(rng, model, 4))


def test_forest_blocks_are_zero_and_trees_independent():
    rng = np.random.default_rng(4)
    model = build_model(
        [random_tree(rng, 5), random_tree(rng, 4, base="floating"), random_tree(rng, 3)]
    )
    q = model.random_q(rng)
    last = [max(i for i in range(model.nb) if model.tree_of[i] == t) for t in range(3)]
    bodies = np.array(last + [last[0]])
    _, fresh, X, dense = check_all(model, q, bodies, rng.normal(size=(4, 3)) * 0.3)
    lam = upsilon_from_poses(model, fresh, bodies, X, q=q)
    assert np.all(lam[:6, 6:18] == 0.0) and np.all(lam[6:12, 12:18] == 0.0)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), base=st.sampled_from(["fixed", "floating"]))
def test_fused_call_leaves_data_like_fk_and_articulated_factor(seed, base):
    """With q: E, r, R_world, p_world, S as forward_kinematics and U, Dinv, pivots as
    articulated_factor (to rounding), so impulse_response works right after."""
    rng = np.random.default_rng(seed)
    model = build_model([random_tree(rng, 9, branching=0.5, base=base)])
    if model.nv == 0:
        return
    q = model.random_q(rng)
    ref = Data(model)
    forward_kinematics(model, ref, q)
    articulated_factor(model, ref)
    data = Data(model)
    bodies, points = nodes_on(rng, model, 3)
    X = node_transforms(ref, bodies, points)
    upsilon_from_poses(model, data, bodies, X, q=q)
    for name in ("E", "r", "R_world", "p_world", "S"):
        assert rel_err(getattr(data, name), getattr(ref, name)) < 1e-14, name
    for name in ("U", "Dinv", "pivots"):
        a, b = getattr(data, name), getattr(ref, name)
        assert rel_err(a, b) < RTOL, name
    f = rng.normal(size=(3, 6))
    M = crba(model, ref, q)
    J = node_jacobian(model, ref, bodies, X)
    dv = impulse_response(model, data, bodies, X, f)
    assert rel_err(dv, np.linalg.solve(M, J.T @ f.ravel())) < RTOL


def test_forward_poses_kernel_matches_forward_kinematics():
    rng = np.random.default_rng(7)
    model = build_model([random_tree(rng, 12, base="floating")])
    q = model.random_q(rng)
    ref = Data(model)
    forward_kinematics(model, ref, q, rng.normal(size=model.nv))
    data = Data(model)
    m = model
    forward_poses_kernel(
        m.parent, m.jtype, m.qi, data.S, m.tree_E, m.tree_r, m.axis, q, data.E, data.r,
        data.R_world, data.p_world,
    )  # fmt: skip
    for name in ("E", "r", "R_world", "p_world", "S"):
        # same formulas; libm's sincos and separate sin/cos may differ in the last bit
        assert rel_err(getattr(data, name), getattr(ref, name)) < 1e-14, name


def test_repeated_calls_and_changing_nodes_reuse_the_workspace():
    """The cached workspace must not leak one call's nodes or q into the next."""
    rng = np.random.default_rng(11)
    model = build_model([random_tree(rng, 10, branching=0.5)])
    data = Data(model)
    for _ in range(4):
        q = model.random_q(rng)
        bodies, points = nodes_on(rng, model, int(rng.integers(1, 6)))
        forward_kinematics(model, data, q)
        X = node_transforms(data, bodies, points)
        dense = dense_lambda(model, data, q, bodies, X)
        assert rel_err(upsilon_from_poses(model, data, bodies, X, q=q), dense) < RTOL
        assert rel_err(upsilon_from_poses(model, data, list(bodies), X.tolist()), dense) < RTOL


def test_after_aba_refresh_false_still_uses_body_frame_upsilon():
    """The stepper's route (ABA, upsilon_after_aba) is unchanged and agrees."""
    rng = np.random.default_rng(2)
    model = build_model([random_tree(rng, 8, base="floating")])
    data = Data(model)
    q = model.random_q(rng)
    aba(model, data, q, rng.normal(size=model.nv), rng.normal(size=model.nv))
    bodies, points = nodes_on(rng, model, 3)
    X = node_transforms(data, bodies, points)
    upsilon(model, data)
    lam = upsilon_after_aba(model, data, bodies, X)
    assert rel_err(lam, upsilon_from_poses(model, Data(model), bodies, X, q=q)) < RTOL


def test_q_is_checked():
    rng = np.random.default_rng(1)
    model = build_model([random_tree(rng, 3)])
    data = Data(model)
    with pytest.raises(TypeError):  # the after-ABA route takes no q (it was a ValueError)
        upsilon_after_aba(model, data, [0], np.eye(6)[None], q=model.neutral_q())
    with pytest.raises(ValueError):
        upsilon_from_poses(model, data, [0], np.eye(6)[None], q=np.zeros(model.nq + 1))


@njit
def _sincos_all(x, out):
    for i in range(x.shape[0]):
        out[i, 0], out[i, 1] = sincos(x[i])


def test_sincos_accuracy():
    """Within 2 ulp of a long-double reference: joint-angle ranges, near multiples of pi/2
    (where the reduction cancels), large angles, and the libm fallback beyond 1e5 and for
    NaN/inf."""
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.uniform(-10.0, 10.0, 20000),
            np.arange(-200, 201) * (np.pi / 2) + rng.normal(size=401) * 1e-9,
            np.arange(-200, 201) * (np.pi / 2),
            rng.uniform(-1e5, 1e5, 5000),
            [0.0, -0.0, 1e-300, 5e-324, np.pi / 4, -np.pi / 4, 2e5, -3e7],
        ]
    )
    out = np.empty((x.size, 2))
    _sincos_all(x, out)
    xl = x.astype(np.longdouble)
    ref = np.stack([np.sin(xl), np.cos(xl)], axis=1)
    ulp = np.spacing(np.abs(ref).astype(np.float64))
    assert np.all(np.abs(out - ref) <= 2.0 * ulp)
    special = np.array([np.nan, np.inf, -np.inf])
    out = np.empty((3, 2))
    _sincos_all(special, out)
    assert np.all(np.isnan(out))
