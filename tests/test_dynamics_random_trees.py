"""Dynamics and compliance on random trees against dense references and closed-form physics.

Independent truths used here:
* a finite-difference Lagrangian check is replaced by the identity M qdd + C = tau, where M
  comes from CRBA (composite inertias) and C from RNEA: ABA must invert exactly that;
* the dense Lambda = J M^-1 J^T with J built column by column from the joint axes;
* closed form: a single pendulum's mass matrix m l^2 + I and gravity torque m g l sin(q).

Tolerances: 1e-9 relative to the largest entry, about 1e6 times float64 epsilon, leaving room
for the conditioning of random trees (mass ratios ~10, lever arms ~0.3 m).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mbsim.simcore.data import Data
from mbsim.simcore.delassus import dense_lambda, upsilon_from_poses
from mbsim.simcore.dynamics import aba, articulated_factor, crba, impulse_response, rnea
from mbsim.simcore.kinematics import (
    forward_kinematics,
    forward_kinematics_kernel,
    motion_kinematics_kernel,
    node_jacobian,
    node_transforms,
)
from mbsim.simcore.model import build_model
from mbsim.simcore.spec import Inertial, JointSpec, LinkSpec, RobotSpec
from random_trees import random_model_and_q, random_tree

RTOL = 1e-9


def rel_err(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


def random_nodes(rng, model, n):
    bodies = rng.integers(0, model.nb, n)
    points = rng.normal(size=(n, 3)) * 0.5
    return bodies, points


#: 25 random trees (hypothesis): seed, 1-14 links, branching probability, fixed or floating base
tree_cases = given(
    seed=st.integers(0, 2**31 - 1),
    n_links=st.integers(1, 14),
    branching=st.sampled_from([0.0, 0.3, 0.8]),
    base=st.sampled_from(["fixed", "floating"]),
)


@settings(max_examples=25, deadline=None)
@tree_cases
def test_aba_rnea_crba_agree(seed, n_links, branching, base):
    drawn = random_model_and_q(seed, n_links, branching, base)
    if drawn is None:
        return
    rng, model, q = drawn
    data = Data(model)
    v = rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv)
    M = crba(model, data, q)
    assert np.allclose(M, M.T, atol=0.0)
    assert np.all(np.linalg.eigvalsh(M) > 0)
    C = rnea(model, data, q, v, np.zeros(model.nv))
    qdd = aba(model, data, q, v, tau)
    assert rel_err(M @ qdd + C, tau) < RTOL
    # RNEA is linear in qdd with slope M: a second independent route to the same M
    e = np.zeros(model.nv)
    e[0] = 1.0
    assert rel_err(rnea(model, data, q, v, e) - C, M[:, 0]) < RTOL


@settings(max_examples=25, deadline=None)
@tree_cases
def test_motion_kinematics_is_forward_kinematics_without_the_world_poses(
    seed, n_links, branching, base
):
    """The compiled loop's kinematics without world poses (free_loop.py, no collision):
    E, r, S, vel and cbias with the bits of forward_kinematics_kernel, every joint type; the
    world poses untouched (NaN stays NaN)."""
    drawn = random_model_and_q(seed, n_links, branching, base)
    if drawn is None:
        return
    rng, m, q = drawn
    v = rng.normal(size=m.nv)
    full, motion = Data(m), Data(m)
    motion.R_world[:] = np.nan
    motion.p_world[:] = np.nan
    out = ("E", "r", "R_world", "p_world", "vel", "cbias")
    for d, kernel in ((full, forward_kinematics_kernel), (motion, motion_kinematics_kernel)):
        kernel(
            m.parent, m.jtype, m.qi, m.vi, m.nvj, d.S, m.tree_E, m.tree_r, m.axis, q, v,
            *(getattr(d, k) for k in out),
        )  # fmt: skip
    for k in ("S", "E", "r", "vel", "cbias"):
        a, b = getattr(full, k), getattr(motion, k)
        assert a.tobytes() == b.tobytes(), k
    assert np.isnan(motion.R_world).all() and np.isnan(motion.p_world).all()
    assert np.isfinite(full.R_world).all()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n_links=st.integers(1, 14),
    n_nodes=st.integers(1, 6),
    branching=st.sampled_from([0.0, 0.4, 0.9]),
    base=st.sampled_from(["fixed", "floating"]),
)
def test_upsilon_lambda_matches_dense(seed, n_links, n_nodes, branching, base):
    drawn = random_model_and_q(seed, n_links, branching, base)
    if drawn is None:
        return
    rng, model, q = drawn
    data = Data(model)
    bodies, points = random_nodes(rng, model, n_nodes)
    forward_kinematics(model, data, q)
    X = node_transforms(data, bodies, points)
    dense = dense_lambda(model, data, q, bodies, X)
    lam = upsilon_from_poses(model, data, bodies, X)
    assert rel_err(lam, dense) < RTOL
    # impulse response: M^-1 J^T f without M or J
    f = rng.normal(size=(n_nodes, 6))
    articulated_factor(model, data)
    dv = impulse_response(model, data, bodies, X, f)
    M = crba(model, data, q)
    J = node_jacobian(model, data, bodies, X)
    assert rel_err(dv, np.linalg.solve(M, J.T @ f.ravel())) < RTOL


def test_lambda_is_block_zero_between_trees():
    rng = np.random.default_rng(3)
    model = build_model([random_tree(rng, 4), random_tree(rng, 3)])
    data = Data(model)
    q = model.random_q(rng)
    forward_kinematics(model, data, q)
    t0 = [i for i in range(model.nb) if model.tree_of[i] == 0][-1]
    t1 = [i for i in range(model.nb) if model.tree_of[i] == 1][-1]
    X = node_transforms(data, [t0, t1], np.zeros((2, 3)))
    lam = upsilon_from_poses(model, data, [t0, t1], X)
    assert np.all(lam[:6, 6:] == 0.0)
    assert rel_err(lam, dense_lambda(model, data, q, [t0, t1], X)) < RTOL


def test_single_pendulum_closed_form():
    """Point-ish bob on a massless-rod hinge about y: M = m l^2 + Iyy, tau_g = m g l sin(q)."""
    m, l, r = 2.0, 0.7, 0.05
    Iyy = 0.4 * m * r * r
    link = LinkSpec("bob", Inertial(m, np.array([0.0, 0.0, -l]), np.eye(3) * Iyy))
    spec = RobotSpec(
        "pendulum",
        [LinkSpec("world"), link],
        [JointSpec("hinge", "revolute", "world", "bob", axis=np.array([0.0, 1.0, 0.0]))],
        "world",
    )
    model = build_model([spec], gravity=(0.0, 0.0, -9.81))
    data = Data(model)
    q = np.array([0.3])
    assert crba(model, data, q)[0, 0] == pytest.approx(m * l * l + Iyy, rel=1e-14)
    # rotating +q about +y swings the bob toward -x... gravity torque about +y is -m g l sin q
    # tau needed to hold it: +m g l sin(q)
    assert rnea(model, data, q, np.zeros(1), np.zeros(1))[0] == pytest.approx(
        m * 9.81 * l * np.sin(0.3), rel=1e-14
    )
    # free fall acceleration from rest
    qdd = aba(model, data, q, np.zeros(1), np.zeros(1))[0]
    assert qdd == pytest.approx(-m * 9.81 * l * np.sin(0.3) / (m * l * l + Iyy), rel=1e-14)


def test_fixed_joint_merging_equals_composite_body():
    """Two links welded by a fixed joint behave as one body with the composite inertia."""
    rng = np.random.default_rng(5)
    a = Inertial(1.5, np.array([0.1, 0.0, -0.2]), np.diag([0.3, 0.2, 0.25]))
    b = Inertial(0.5, np.array([0.0, 0.05, 0.0]), np.diag([0.01, 0.02, 0.015]))
    T = np.eye(4)
    T[:3, 3] = [0.0, 0.0, -0.5]
    two = RobotSpec(
        "two",
        [LinkSpec("world"), LinkSpec("a", a), LinkSpec("b", b)],
        [
            JointSpec("j", "revolute", "world", "a", axis=np.array([0.0, 1.0, 0.0])),
            JointSpec("w", "fixed", "a", "b", origin=T),
        ],
        "world",
    )
    model = build_model([two])
    assert model.nb == 1 and model.mass[0] == pytest.approx(2.0)
    # closed-form inertia about the hinge axis y (through the origin): sum Iyy + m (x^2 + z^2)
    Iy = 0.2 + 1.5 * (0.1**2 + 0.2**2) + 0.02 + 0.5 * (0.0**2 + 0.5**2)
    q = rng.normal(size=1)
    assert crba(model, Data(model), q)[0, 0] == pytest.approx(Iy, rel=1e-13)
