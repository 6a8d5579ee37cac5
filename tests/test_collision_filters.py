"""Which pairs are checked: adjacency, static pairs, self-collision, disabled pairs (list and
SRDF), collision groups, and the ground plane's name."""

from __future__ import annotations

import numpy as np
import pytest

from mbsim.collision import CollisionScene
from mbsim.errors import GeometryError
from mbsim.io.urdf import load_urdf
from mbsim.samples import sample_path
from mbsim.simcore.data import Data
from mbsim.simcore.kinematics import forward_kinematics
from mbsim.simcore.model import build_model
from mbsim.simcore.spec import GeometrySpec, Inertial, JointSpec, LinkSpec, RobotSpec
from test_collision_support import assert_contacts, part, pose, shape


@pytest.fixture(scope="module")
def pendulum():
    """pendulum-3 (spheres r = 2 m, hinges 4 m apart about +y, base hinge at z = 10) and the
    environment (floor top z = 0, wall face x = 4)."""
    model = build_model(
        [load_urdf(sample_path("pendulum-3")), load_urdf(sample_path("pendulum-environment"))]
    )
    return model


#: the pendulum's links, ``tree/link`` as the scene names them
L1, L2, L3 = (f"pendulum-3/link{k}" for k in (1, 2, 3))


def _poses(model, q):
    data = Data(model)
    forward_kinematics(model, data, np.asarray(q, float))
    return data.R_world, data.p_world


def _pairs(scene, contacts):
    return {
        tuple(sorted((scene.links[a], scene.links[b])))
        for a, b in zip(contacts.geom_a, contacts.geom_b, strict=True)
    }


def _folded(theta3):
    """q with link 3 folded back towards link 1: hinge 2 at +90 deg, hinge 3 at theta3.

    By hand: sphere 1 centre (0, 0, 8); hinge 3 at (-4, 0, 6); sphere 3 centre
    (-4 - 2 sin(pi/2 + theta3), 0, 6 - 2 cos(pi/2 + theta3))."""
    q = np.array([0.0, np.pi / 2, theta3])
    a = np.pi / 2 + theta3
    c3 = np.array([-4 - 2 * np.sin(a), 0.0, 6 - 2 * np.cos(a)])
    return q, np.array([0.0, 0.0, 8.0]), c3


def test_adjacent_spheres_touching_are_never_reported(pendulum):
    scene = CollisionScene.from_model(pendulum)
    c = scene.detect(*_poses(pendulum, [0.0, 0.0, 0.0]))  # hanging: neighbours touch, gap 0
    pairs = _pairs(scene, c)
    assert (L1, L2) not in pairs and (
        "pendulum-3/link2",
        "pendulum-3/link3",
    ) not in pairs
    # hanging straight, sphere 3 (bottom at -2) is 2 m into the floor box: the only contact
    assert pairs == {(L3, "pendulum-environment/floor")}
    # the wall (static) touches the floor (static) along x = 4, z = 0: never a pair
    assert all(b >= 0 or a >= 0 for a, b in zip(c.body_a, c.body_b, strict=True))


def test_far_links_self_collision(pendulum):
    q, c1, c3 = _folded(np.pi / 2 + 0.01)  # slightly past touching: they overlap
    d = np.linalg.norm(c3 - c1)
    assert d < 4.0
    scene = CollisionScene.from_model(pendulum)
    c = scene.detect(*_poses(pendulum, q))
    assert (L1, L3) in _pairs(scene, c)
    i = [k for k in range(len(c)) if {c.body_a[k], c.body_b[k]} == {0, 2}][0]
    # A is the lower shape index (link1), B link3: normal from sphere 3 to sphere 1
    u = (c1 - c3) / d
    assert_contacts(
        type(c)(*(getattr(c, f)[[i]] for f in c.__slots__)),
        [(c1 - 2 * u, c3 + 2 * u, u, d - 4.0)],
    )
    off = CollisionScene.from_model(pendulum, self_collision=False)
    assert (L1, L3) not in _pairs(off, off.detect(*_poses(pendulum, q)))


def test_disabled_pairs_srdf_and_groups(pendulum, tmp_path):
    q, _, _ = _folded(np.pi / 2 + 0.01)
    poses = _poses(pendulum, q)
    for options in (
        {"disabled_pairs": [("link3", "link1")]},
        {"disabled_pairs": [("pendulum-3/link1", "link3")]},
        {"groups": {"tip": ["link1", "link3"]}},
    ):
        scene = CollisionScene.from_model(pendulum, **options)
        assert (L1, L3) not in _pairs(scene, scene.detect(*poses)), options
    srdf = tmp_path / "p.srdf"
    srdf.write_text(
        '<robot name="pendulum-3"><disable_collisions link1="link1" link2="link3" '
        'reason="Never"/><disable_collisions link1="link1" link2="no_such_link"/></robot>'
    )
    scene = CollisionScene.from_model(pendulum, srdf=srdf)
    assert (L1, L3) not in _pairs(scene, scene.detect(*poses))
    assert any("no_such_link" in note for note in scene.notes)
    # a group not holding both links filters nothing between them
    scene = CollisionScene.from_model(pendulum, groups={"g": ["link1", "link2"]})
    assert (L1, L3) in _pairs(scene, scene.detect(*poses))


def test_ground_plane_pairs_can_be_disabled(pendulum):
    poses = _poses(pendulum, [0.0, 0.0, 0.0])
    scene = CollisionScene.from_model(pendulum, floor=True)
    assert ("builtin/floor", L3) in _pairs(scene, scene.detect(*poses))
    scene = CollisionScene.from_model(
        pendulum, floor=True, disabled_pairs=[("link3", "builtin/floor")]
    )
    assert ("builtin/floor", L3) not in _pairs(scene, scene.detect(*poses))


def test_bad_filter_input(pendulum, tmp_path):
    with pytest.raises(GeometryError, match="link 'linkX' is not a link"):
        CollisionScene.from_model(pendulum, disabled_pairs=[("link1", "linkX")])
    with pytest.raises(GeometryError, match="collision group 'g'"):
        CollisionScene.from_model(pendulum, groups={"g": ["nope"]})
    bad = tmp_path / "bad.srdf"
    bad.write_text("<robot><disable_collisions link1='a'")
    with pytest.raises(GeometryError, match="bad.srdf"):
        CollisionScene.from_model(pendulum, srdf=bad)
    with pytest.raises(GeometryError, match="missing.srdf"):
        CollisionScene.from_model(pendulum, srdf=tmp_path / "missing.srdf")


def _arm_on_table() -> list[RobotSpec]:
    """A fixed-base arm: base box welded to the world, link1 box on a revolute joint, both
    overlapping; and a separate static table box overlapping link1."""
    inertial = Inertial(1.0, np.zeros(3), 0.1 * np.eye(3))
    base = LinkSpec("base", None, [GeometrySpec("box", (0.4, 0.4, 0.4), np.eye(4))])
    link1 = LinkSpec("link1", inertial, [GeometrySpec("box", (0.2, 0.2, 0.6), pose(p=(0, 0, 0.2)))])
    joint = JointSpec("j1", "revolute", "base", "link1", pose(p=(0, 0, 0.2)), np.array([0, 0, 1.0]))
    arm = RobotSpec("arm", [base, link1], [joint], "base", source="<arm.urdf>")
    table = part("table", shape("box", [1, 1, 0.1]), static=True, at=pose(p=(0, 0, 0.6)))
    return [arm, table]


def test_base_link_is_adjacent_but_other_static_geometry_is_not():
    model = build_model(_arm_on_table())
    scene = CollisionScene.from_model(model)
    c = scene.detect(*_poses(model, [0.3]))
    assert _pairs(scene, c) == {("arm/link1", "table/table")}
