"""Compiled stages of the general contact step (issue 15) against the code they replace.

Each kernel here took over from numpy or Python code that computed the same expressions; the
references below are those expressions, written out again, and the kernels must agree with
them bit for bit (same arithmetic in the same order):

* collision.scene.smooth_radii: the numpy np.where chain;
* kinematics.relative_velocities: point_velocities of the A points minus that of the B points,
  and relative_velocity_sums: two such calls added;
* contact_stages.gap_allowance, impacting and split_impulses: the stepper's numpy code;
* lcp.lemke.run_lemke's one-call path (_lemke_once): the chunked loop it replaces, forced by
  a tiny chunk size (budget.CHUNK_FLOPS), on random and contact-like LCPs.
"""

import numpy as np
import pytest

from mbsim.collision.manifold import K_CYL_RIM
from mbsim.collision.scene import smooth_radii
from mbsim.collision.shapes import CAPSULE, CYLINDER, SPHERE
from mbsim.simcore.contact_stages import gap_allowance, impacting, split_impulses
from mbsim.simcore.data import Data
from mbsim.simcore.kinematics import (
    forward_kinematics,
    point_velocities,
    relative_velocities,
    relative_velocity_sums,
)
from mbsim.simcore.lcp import budget
from mbsim.simcore.lcp.lemke import run_lemke
from random_trees import random_model_and_q


def smooth_radii_numpy(geom_a, geom_b, feature_key, shape_kind, shape_radius):
    """The numpy code smooth_radii had before its kernel."""
    round_r = np.where((shape_kind == SPHERE) | (shape_kind == CAPSULE), shape_radius, 0.0)
    kind = (feature_key >> 56) & 0x7F
    slot = (feature_key >> 20) & 0xFFFFF
    rim = (kind == K_CYL_RIM) & (slot == 0)
    rim_a = rim & (shape_kind[geom_a] == CYLINDER)
    rim_b = rim & (shape_kind[geom_b] == CYLINDER)
    radius_a = np.where(rim_a, shape_radius[geom_a], round_r[geom_a])
    radius_b = np.where(rim_b, shape_radius[geom_b], round_r[geom_b])
    return radius_a, radius_b


def test_smooth_radii_matches_numpy_reference():
    rng = np.random.default_rng(3)
    n_shapes, nc = 12, 400
    kinds = np.array([SPHERE, CAPSULE, CYLINDER, 0, 1, 2, -1], dtype=np.int64)
    shape_kind = rng.choice(kinds, n_shapes).astype(np.int64)
    shape_radius = rng.uniform(0.01, 0.5, n_shapes)
    geom_a = rng.integers(0, n_shapes, nc).astype(np.int64)
    geom_b = rng.integers(0, n_shapes, nc).astype(np.int64)
    kind = rng.choice([K_CYL_RIM, 1, 2, 5], nc).astype(np.int64)
    slot = rng.choice([0, 0, 1, 7], nc).astype(np.int64)
    key = (kind << 56) | (slot << 20) | rng.integers(0, 1 << 20, nc).astype(np.int64)
    got = smooth_radii(geom_a, geom_b, key, shape_kind, shape_radius)
    want = smooth_radii_numpy(geom_a, geom_b, key, shape_kind, shape_radius)
    assert np.any(want[0] > 0) and np.any(want[0] == 0)  # both cases occur
    assert np.any((kind == K_CYL_RIM) & (slot == 0) & (shape_kind[geom_a] == CYLINDER))
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)
    empty = np.zeros(0, dtype=np.int64)
    assert all(len(r) == 0 for r in smooth_radii(empty, empty, empty, shape_kind, shape_radius))


@pytest.mark.parametrize("seed", range(4))
def test_relative_velocities_match_point_velocities(seed):
    rng, model, q = random_model_and_q(seed, 9, 0.5, "floating" if seed % 2 else "fixed")
    data = Data(model)
    v = rng.normal(size=model.nv)
    forward_kinematics(model, data, q, v)
    nc = 7
    body_a = rng.integers(-1, model.nb, nc).astype(np.int64)
    body_b = rng.integers(-1, model.nb, nc).astype(np.int64)
    local_a, local_b = rng.normal(size=(nc, 3)), rng.normal(size=(nc, 3))
    pv = point_velocities(
        model, data, v, np.concatenate([body_a, body_b]), np.concatenate([local_a, local_b])
    )
    want = pv[:nc] - pv[nc:]
    got = relative_velocities(model, data, v, body_a, local_a, body_b, local_b)
    assert np.array_equal(got, want)
    none = relative_velocities(model, data, v, body_a[:0], local_a[:0], body_b[:0], local_b[:0])
    assert none.shape == (0, 3)


def contact_like_lcp(rng, nu, k):
    """A friction LCP of the OS shape (000 Eq. 53) from a random PSD W of rank <= 6."""
    J = rng.normal(size=(3 * nu, 6))
    W = J @ J.T
    D = np.zeros((nu, 3, k))
    for i in range(nu):
        D[i, 2, 0] = 1.0
        for j in range(1, k):
            a = 2 * np.pi * (j - 1) / (k - 1)
            D[i, :, j] = [np.cos(a), np.sin(a), 0.0]
    from mbsim.simcore.contact import contact_lcp

    vf = rng.normal(size=(nu, 3))
    return contact_lcp(W, D, np.full(nu, 0.5), vf)


def lcp_cases():
    rng = np.random.default_rng(11)
    for n in (1, 3, 6, 12, 30):
        A = rng.normal(size=(n, n))
        yield A @ A.T + 0.1 * np.eye(n), rng.normal(size=n)  # P-matrix
        yield A, rng.normal(size=n)  # general: rays and singular bases occur
    for nu in (1, 2, 4, 6):
        M, q = contact_like_lcp(rng, nu, 5)
        yield M, q
        yield M + 1e-6 * np.abs(M).sum(axis=1).max() * np.eye(len(q)), q
    yield np.eye(3), np.array([1.0, 2.0, 0.0])  # q >= 0: z = 0
    yield np.full((2, 2), np.nan), np.ones(2)  # not finite


def test_run_lemke_one_call_matches_chunked_loop(monkeypatch):
    cases = list(lcp_cases())
    fused = [run_lemke(M, q) for M, q in cases]
    assert budget.chunk_pivots(30) >= 50 * 30 + 100  # the cases above take the one-call path
    monkeypatch.setattr(budget, "CHUNK_FLOPS", 1.0)  # one pivot per kernel call
    assert budget.chunk_pivots(1) == 1
    chunked = [run_lemke(M, q) for M, q in cases]
    statuses = set()
    for (s1, p1, z1, b1), (s2, p2, z2, b2) in zip(fused, chunked, strict=True):
        assert s1 == s2 and p1 == p2
        assert np.array_equal(z1, z2) and np.array_equal(b1, b2)
        statuses.add(s1)
    assert len(statuses) >= 2  # solved and at least one failure status were compared


def gap_allowance_numpy(gap, drift, stabilization, max_recovery_speed, gap_floor, scale, dt):
    """The stepper's numpy code before contact_stages.gap_allowance."""
    if gap_floor is None:
        recover = np.maximum(stabilization * gap, -max_recovery_speed * dt)
        target = np.where(gap > 0.0, gap, recover)
    else:
        target = np.maximum(gap, gap_floor)
    if len(drift):
        target = target + drift
    if scale != 1.0:
        target = np.maximum(target, 0.0) + scale * np.minimum(target, 0.0)
    deepest = float(max(0.0, -np.min(gap, initial=0.0)))
    return target / dt, bool(np.any(target < 0.0)), deepest


@pytest.mark.parametrize("gap_floor", [None, -1e-5])
@pytest.mark.parametrize("scale", [1.0, 0.1, 0.0])
@pytest.mark.parametrize("with_drift", [True, False])
def test_gap_allowance_matches_numpy_reference(gap_floor, scale, with_drift):
    rng = np.random.default_rng(5)
    for nu in (0, 1, 7, 50):
        # separated, touching, shallow and deep penetrations (deep ones hit the speed cap)
        gap = rng.choice([-0.05, -1e-3, -1e-6, 0.0, 1e-6, 5e-4], nu) * rng.uniform(0.5, 1.5, nu)
        drift = rng.normal(scale=1e-6, size=nu) if with_drift else np.zeros(0)
        got = gap_allowance(gap, drift, 0.2, 0.5, gap_floor, scale, 1e-3)
        gv, demands, deepest = gap_allowance_numpy(gap, drift, 0.2, 0.5, gap_floor, scale, 1e-3)
        assert np.array_equal(got[0], gv)
        assert got[1] == demands
        assert float(max(0.0, -got[2])) == deepest
    gap = np.array([np.nan, -0.01])
    got = gap_allowance(gap, np.zeros(0), 0.2, 0.5, None, 1.0, 1e-3)
    want = gap_allowance_numpy(gap, np.zeros(0), 0.2, 0.5, None, 1.0, 1e-3)
    assert np.array_equal(got[0], want[0], equal_nan=True)
    assert np.isnan(got[2])


def test_impacting_matches_numpy_reference():
    rng = np.random.default_rng(8)
    vn = rng.normal(scale=0.05, size=200)
    gap = rng.normal(scale=1e-4, size=200)
    mask, found = impacting(vn, gap, 1e-2, 1e-3)
    want = (vn < -1e-2) & (gap + vn * 1e-3 <= 0.0)
    assert np.array_equal(mask, want) and found == bool(np.any(want))
    assert want.any() and not want.all()
    mask, found = impacting(np.zeros(0), np.zeros(0), 1e-2, 1e-3)
    assert mask.shape == (0,) and not found


def test_split_impulses_matches_numpy_reference():
    rng = np.random.default_rng(9)
    for nu in (0, 1, 4, 300):
        P = rng.normal(size=(nu, 3)) * rng.choice([1e-9, 1.0, 1e3], (nu, 1))
        n = rng.normal(size=(nu, 3))
        n /= np.linalg.norm(n, axis=1, keepdims=True) if nu else 1.0
        sigma = np.abs(rng.normal(size=nu)) * rng.choice([0.0, 1e-12, 1.0, 1e3], nu)
        fn, tangent, sliding = split_impulses(P, n, sigma)
        want_fn = np.einsum("ij,ij->i", P, n)
        assert np.array_equal(fn, want_fn)
        assert np.array_equal(tangent, P - want_fn[:, None] * n)
        level = 1e-9 * max(1.0, float(np.max(np.abs(sigma), initial=0.0)))
        assert np.array_equal(sliding, sigma > level)


@pytest.mark.parametrize("seed", range(3))
def test_relative_velocity_sums_match_two_calls(seed):
    """energy_sources' u(v_f) + u(v+): the sum of two relative_velocities, bit for bit."""
    rng, model, q = random_model_and_q(10 + seed, 8, 0.5, "floating")
    data = Data(model)
    v1, v2 = rng.normal(size=model.nv), rng.normal(size=model.nv)
    forward_kinematics(model, data, q, v1)
    nc = 6
    body_a = rng.integers(-1, model.nb, nc).astype(np.int64)
    body_b = rng.integers(-1, model.nb, nc).astype(np.int64)
    local_a, local_b = rng.normal(size=(nc, 3)), rng.normal(size=(nc, 3))
    want = relative_velocities(model, data, v1, body_a, local_a, body_b, local_b)
    want += relative_velocities(model, data, v2, body_a, local_a, body_b, local_b)
    got = relative_velocity_sums(model, data, v1, v2, body_a, local_a, body_b, local_b)
    assert np.array_equal(got, want)
