"""Spatial algebra identities, each against a dense construction or a textbook identity."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from mbsim.simcore.spatial import (
    congruence_sym,
    congruence_T_sym,
    cross_force,
    cross_motion,
    plucker_np,
    quat_to_rotation,
    spatial_inertia,
    xform_force_T,
    xform_motion,
)

seeds = st.integers(0, 2**31 - 1)


def rand_transform(rng):
    return Rotation.random(random_state=int(rng.integers(2**31))).as_matrix(), rng.normal(size=3)


def crm(v):
    """Dense 6x6 motion cross-product matrix (Featherstone Eq. 2.31), built independently."""
    w, u = v[:3], v[3:]
    wx = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
    ux = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    return np.block([[wx, np.zeros((3, 3))], [ux, wx]])


@settings(max_examples=30, deadline=None)
@given(seed=seeds)
def test_plucker_composition_and_inverse(seed):
    rng = np.random.default_rng(seed)
    (E1, r1), (E2, r2) = rand_transform(rng), rand_transform(rng)
    X1, X2 = plucker_np(E1, r1), plucker_np(E2, r2)
    # X(E1, r1) X(E2, r2) = X(E1 E2, r2 + E2^T r1)  (spatial.py docstring)
    assert np.allclose(X1 @ X2, plucker_np(E1 @ E2, r2 + E2.T @ r1), atol=1e-12)
    # inverse: X(E, r)^-1 = X(E^T, -E r)
    assert np.allclose(np.linalg.inv(X1), plucker_np(E1.T, -E1 @ r1), atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=seeds)
def test_structured_transforms_match_dense(seed):
    rng = np.random.default_rng(seed)
    E, r = rand_transform(rng)
    X = plucker_np(E, r)
    A = rng.normal(size=(6, 6))
    A = A + A.T
    out = np.zeros((6, 6))
    congruence_T_sym(E, r, A, out, False)
    assert np.allclose(out, X.T @ A @ X, atol=1e-12)
    acc = np.ones((6, 6))
    congruence_T_sym(E, r, A, acc, True)
    assert np.allclose(acc, 1.0 + X.T @ A @ X, atol=1e-12)
    congruence_sym(E, r, A, out)
    assert np.allclose(out, X @ A @ X.T, atol=1e-12)
    m = rng.normal(size=6)
    o = np.zeros(6)
    xform_motion(E, r, m, o)
    assert np.allclose(o, X @ m, atol=1e-13)
    xform_force_T(E, r, m, o)
    assert np.allclose(o, X.T @ m, atol=1e-13)


@settings(max_examples=30, deadline=None)
@given(seed=seeds)
def test_cross_products(seed):
    rng = np.random.default_rng(seed)
    v, m, f = rng.normal(size=(3, 6))
    o = np.zeros(6)
    cross_motion(v, m, o)
    assert np.allclose(o, crm(v) @ m, atol=1e-13)
    cross_force(v, f, o)
    assert np.allclose(o, -crm(v).T @ f, atol=1e-13)  # crf(v) = -crm(v)^T
    cross_motion(v, v, o)
    assert np.allclose(o, 0.0, atol=1e-13)


def test_quaternion_rotation_matches_scipy():
    rng = np.random.default_rng(7)
    out = np.zeros((3, 3))
    for _ in range(20):
        q = rng.normal(size=4)
        quat_to_rotation(q[0], q[1], q[2], q[3], out)
        ref = Rotation.from_quat([q[1], q[2], q[3], q[0]]).as_matrix()  # scipy is scalar-last
        assert np.allclose(out, ref, atol=1e-14)


def test_spatial_inertia_kinetic_energy():
    """1/2 V^T I V equals the textbook rigid-body kinetic energy for a body with offset com."""
    rng = np.random.default_rng(3)
    m, c = 2.5, rng.normal(size=3)
    Ic = np.diag([0.3, 0.4, 0.5])
    V = rng.normal(size=6)
    w, v0 = V[:3], V[3:]
    vc = v0 + np.cross(w, c)  # velocity of the centre of mass
    ke = 0.5 * m * vc @ vc + 0.5 * w @ Ic @ w
    assert np.isclose(0.5 * V @ spatial_inertia(m, c, Ic) @ V, ke, rtol=1e-14)


def test_body_pose_quaternions_match_scipy():
    from mbsim.simcore.kinematics import body_poses_kernel

    rot = Rotation.random(500, random_state=4)
    p = np.random.default_rng(4).normal(size=(500, 3))
    out = np.zeros((500, 7))
    body_poses_kernel(rot.as_matrix(), p, out)
    q = rot.as_quat()  # scalar-last
    q = np.hstack([q[:, 3:], q[:, :3]]) * np.sign(q[:, 3:])
    assert np.allclose(out[:, :3], p) and np.allclose(out[:, 3:], q, atol=1e-14)


def test_c_view_is_the_reshaped_slice():
    """spatial.c_view(buf, o, shape) is buf[o : o + prod(shape)].reshape(shape): the same
    entries, C strides, and buf's memory (a write through it lands in buf)."""
    from numba import njit

    from mbsim.simcore.spatial import c_view

    @njit
    def views(buf, o, n):
        a = c_view(buf, o, (n, 3))
        b = buf[o : o + 3 * n].reshape((n, 3))
        c = c_view(buf, o, (2, n, 2, 1))
        e = c_view(buf, o, (0, 3))
        a[0, 1] = -1.0
        return a.copy(), b.copy(), a.strides, c.copy(), c.strides, e.shape

    buf = np.arange(40.0)
    a, b, strides, c, cstrides, eshape = views(buf, 5, 4)
    assert a.shape == (4, 3) and strides == (24, 8)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(c, buf[5:21].reshape((2, 4, 2, 1)))
    assert cstrides == (64, 16, 8, 8) and eshape == (0, 3)
    assert buf[6] == -1.0
