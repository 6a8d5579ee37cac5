"""CollisionScene output: array layout, body frames, pair ids, stable feature keys, and the
two broadphases agreeing on a swinging pendulum."""

from __future__ import annotations

import numpy as np
import pytest

from mbsim.collision import CollisionScene, Contacts
from mbsim.io.urdf import load_urdf
from mbsim.samples import sample_path
from mbsim.simcore.data import Data
from mbsim.simcore.kinematics import forward_kinematics
from mbsim.simcore.model import build_model
from mbsim.simcore.spec import GeometrySpec, Inertial, JointSpec, LinkSpec, RobotSpec
from test_collision_support import Scene, part, pose, rot, shape


def test_arrays_and_body_frames():
    s = Scene(
        part("box", shape("box", [1, 1, 1], origin=pose(rot("z", 0.2), (0.1, 0, 0)))),
        floor=True,
    )
    R, p = rot("z", 0.5) @ rot("x", 0.001), np.array([0.3, 0.4, 0.5])
    c = s.detect({"box": pose(R, p)})
    assert isinstance(c, Contacts) and len(c) == 4
    for name in ("body_a", "body_b", "geom_a", "geom_b", "pair_id", "feature_key"):
        arr = getattr(c, name)
        assert arr.dtype == np.int64 and arr.shape == (4,) and arr.flags.c_contiguous
    for name in ("point_a", "point_b", "local_a", "local_b", "normal"):
        arr = getattr(c, name)
        assert arr.dtype == np.float64 and arr.shape == (4, 3) and arr.flags.c_contiguous
    assert c.gap.shape == (4,)
    b = s.model.body_index("box")
    assert np.all(c.body_a == b) and np.all(c.body_b == -1)
    # local_a: the body-frame coordinates of point_a; B is the world
    assert np.allclose(c.local_a, (c.point_a - p) @ R, atol=1e-12)
    assert np.allclose(c.local_b, c.point_b, atol=0)
    # the local points are the shape's bottom corners in the body frame
    Rs = rot("z", 0.2)
    corners = {tuple(np.round(Rs @ np.array([x, y, -0.5]) + [0.1, 0, 0], 9))
               for x in (-0.5, 0.5) for y in (-0.5, 0.5)}  # fmt: skip
    assert {tuple(np.round(v, 9)) for v in c.local_a} == corners
    assert np.all(c.pair_id == 0 * s.scene.n_shapes + s.scene.ground_index)
    assert len(set(c.feature_key.tolist())) == 4
    assert "builtin/floor (half-space)" in s.scene.describe(c, 0)


def test_feature_keys_stable_while_sliding():
    """A box sliding and turning slowly on a box keeps the same contact identities."""
    s = Scene(
        part("top", shape("box", [0.4, 0.4, 0.4])),
        part("base", shape("box", [3, 3, 1]), static=True, at=pose(p=(0, 0, -0.5))),
    )
    keys = None
    for k in range(20):
        c = s.detect({"top": pose(rot("z", 0.01 * k), (0.02 * k, -0.01 * k, 0.2 - 1e-4))})
        ids = sorted(zip(c.pair_id.tolist(), c.feature_key.tolist(), strict=True))
        assert len(ids) == 4
        keys = keys or ids
        assert ids == keys


@pytest.mark.parametrize("n", [3, 12])
def test_fcl_and_bruteforce_broadphase_agree(n):
    """Consistency of the two broadphases (both feed the same exact kernels) over a swing
    that brings spheres into the floor, the wall and each other."""
    model = build_model(
        [load_urdf(sample_path(f"pendulum-{n}")), load_urdf(sample_path("pendulum-environment"))]
    )
    data = Data(model)
    a = CollisionScene.from_model(model, floor=True, broadphase="fcl")
    b = CollisionScene.from_model(model, floor=True, broadphase="bruteforce")
    c = CollisionScene.from_model(model, floor=True)  # the default: the numba AABB pairs
    assert c.broadphase_kind == "aabb"
    rng = np.random.default_rng(3)
    total = 0
    for _ in range(60):
        q = rng.uniform(-2.5, 2.5, model.nq)
        forward_kinematics(model, data, q)
        ca, cb = a.detect(data.R_world, data.p_world), b.detect(data.R_world, data.p_world)
        cc = c.detect(data.R_world, data.p_world)
        # the numba broadphase reports FCL's pairs in sorted order, so the contacts agree
        # row for row, not only as sets
        for name in ("pair_id", "feature_key", "gap", "point_a", "normal"):
            np.testing.assert_array_equal(getattr(cc, name), getattr(ca, name))
        ka = sorted(
            zip(
                ca.pair_id.tolist(), ca.feature_key.tolist(), ca.gap.round(12).tolist(), strict=True
            )
        )
        kb = sorted(
            zip(
                cb.pair_id.tolist(), cb.feature_key.tolist(), cb.gap.round(12).tolist(), strict=True
            )
        )
        assert ka == kb
        total += len(ca)
    assert total > 20


def test_fixed_joint_geometry_stays_on_the_merged_body():
    """A floating body with a fixed child link (joint origin (0.3, 0, 0), rotated 90 deg about
    z) carrying a sphere (r = 0.25) at (0, 0, -0.5) in the child frame: its centre is at
    (0.3, 0, -0.5) in the body frame; with the body at (1, 2, 0.7) it sinks 0.05 into the
    floor at (1.3, 2, 0)."""
    T = pose
    inertial = Inertial(1.0, np.zeros(3), 0.1 * np.eye(3))
    base = LinkSpec("base", inertial, [])
    tip = LinkSpec("tip", inertial, [GeometrySpec("sphere", (0.25,), T(p=(0, 0, -0.5)))])
    joint = JointSpec("weld", "fixed", "base", "tip", T(rot("z", np.pi / 2), (0.3, 0, 0)))
    spec = RobotSpec("r", [base, tip], [joint], "base", base="floating")
    model = build_model([spec])
    assert model.nb == 1
    scene = CollisionScene.from_model(model, floor=True)
    c = scene.detect(np.eye(3)[None], np.array([[1.0, 2.0, 0.7]]))
    assert len(c) == 1
    assert np.allclose(c.point_a[0], [1.3, 2.0, -0.05]) and np.allclose(c.point_b[0], [1.3, 2, 0])
    assert np.isclose(c.gap[0], -0.05) and np.allclose(c.local_a[0], [0.3, 0, -0.75])
    assert scene.links[c.geom_a[0]] == "r/tip"
