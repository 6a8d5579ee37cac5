"""The numba AABB broadphase against FCL's dynamic AABB trees: the same candidate pairs.

The truth is python-fcl's own broadphase (``FclBroadphase`` with slack 0: every proxy at its
current pose), an independent implementation of the AABB overlap test; the pair sets must be
equal, pair for pair, on random scenes of every primitive kind (random poses, some shapes
static, many overlaps and near misses) and on the bundled samples at random configurations.
"""

from __future__ import annotations

import numpy as np
import pytest

from mbsim.collision import CollisionScene
from mbsim.collision.broadphase import (
    AABB_MAX_SHAPES,
    AabbBroadphase,
    FclBroadphase,
    sorted_pairs,
)
from mbsim.io.urdf import load_urdf
from mbsim.samples import sample_path
from mbsim.simcore.data import Data
from mbsim.simcore.kinematics import forward_kinematics
from mbsim.simcore.model import build_model
from test_collision_support import Scene, part, pose, shape


def _pairs(broad, Rw, pw) -> set:
    return {(int(a), int(b)) for a, b in broad.candidates(Rw, pw)}


def _random_rotation(rng) -> np.ndarray:
    q = rng.normal(size=4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])  # fmt: skip


def _random_shape(rng):
    kind = rng.choice(["sphere", "box", "capsule", "cylinder"])
    s = rng.uniform(0.05, 0.4, 3)
    params = {"sphere": s[:1], "box": s, "capsule": s[:2], "cylinder": s[:2]}[kind]
    origin = pose(_random_rotation(rng), rng.uniform(-0.2, 0.2, 3)) if rng.random() < 0.5 else None
    return shape(str(kind), params, origin=origin)


@pytest.mark.parametrize("seed", range(6))
def test_random_scenes_same_pairs_as_fcl(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    parts = []
    for k in range(n):
        shapes = [_random_shape(rng) for _ in range(int(rng.integers(1, 3)))]
        static = rng.random() < 0.25
        at = pose(_random_rotation(rng), rng.uniform(-1.5, 1.5, 3)) if static else None
        parts.append(part(f"p{k}", *shapes, static=static, at=at))
    s = Scene(*parts)
    margin = float(rng.choice([0.0, 1e-3, 0.05]))
    records = s.scene.records
    fcl_b = FclBroadphase(records, margin, slack=0.0)
    aabb_b = AabbBroadphase(records, margin)
    total = 0
    for step in range(25):
        for b in range(s.model.nb):
            # every few steps some bodies keep the exact identity rotation (FCL's own case)
            R = np.eye(3) if step % 5 == 0 and b % 2 else _random_rotation(rng)
            s.R[b], s.p[b] = R, rng.uniform(-1.5, 1.5, 3)
        Rw, pw = s.scene.shape_poses(s.R, s.p)
        want = _pairs(fcl_b, Rw, pw)
        got = aabb_b.candidates(Rw, pw)
        assert {(int(a), int(b)) for a, b in got} == want
        # sorted (i < j) rows, no repeats: the one order of both broadphases
        assert np.array_equal(got, sorted_pairs(got)) and np.all(got[:, 0] < got[:, 1])
        total += len(want)
    assert total > 50  # the scenes do overlap


@pytest.mark.parametrize("name", ["pendulum-12", "pendulum-30", "panda", "quadruped"])
def test_samples_same_pairs_as_fcl(name):
    robots = [load_urdf(sample_path(name))]
    if name.startswith("pendulum"):
        robots.append(load_urdf(sample_path("pendulum-environment")))
    model = build_model(robots)
    data = Data(model)
    scene = CollisionScene.from_model(model, floor=True)
    fcl_b = FclBroadphase(scene.records, scene.reach, slack=0.0)
    aabb_b = AabbBroadphase(scene.records, scene.reach)
    rng = np.random.default_rng(7)
    total = 0
    for _ in range(40):
        forward_kinematics(model, data, rng.uniform(-2.5, 2.5, model.nq) * (model.nq > 0))
        Rw, pw = scene.shape_poses(data.R_world, data.p_world)
        want = _pairs(fcl_b, Rw, pw)
        assert _pairs(aabb_b, Rw, pw) == want
        total += len(want)
    assert total > 0


def test_auto_picks_by_scene_size():
    """``broadphase="auto"``: the numba AABB pairs up to AABB_MAX_SHAPES shapes, FCL above."""
    small = Scene(part("a", shape("sphere", [0.1])), part("b", shape("box", [1, 1, 1])))
    assert small.scene.broadphase_kind == "aabb"
    many = [part(f"s{k}", shape("sphere", [0.01])) for k in range(AABB_MAX_SHAPES + 1)]
    assert Scene(*many).scene.broadphase_kind == "fcl"
