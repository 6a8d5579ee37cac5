"""Contacts of primitive pairs against geometry computed by hand (tolerance 1e-6 m / rad).

Every expected value below comes from the poses and sizes in the test (elementary geometry),
never from mbsim's output.
"""

from __future__ import annotations

import numpy as np
import pytest

from test_collision_support import Scene, assert_contacts, part, pose, rot, shape

TOL = 1e-6
Z = np.array([0.0, 0.0, 1.0])


# --------------------------------------------------------------------------- sphere


@pytest.mark.parametrize("gap", [0.0005, 0.0, -0.01, -0.2])
def test_sphere_on_ground_plane(gap):
    s = Scene(part("ball", shape("sphere", [0.3])), floor=True)
    c = s.detect({"ball": pose(p=(0.2, -0.1, 0.3 + gap))})
    assert_contacts(c, [((0.2, -0.1, gap), (0.2, -0.1, 0.0), Z, gap)])
    assert c.body_b[0] == -1 and c.geom_b[0] == s.scene.ground_index


def test_sphere_beyond_margin_is_no_contact():
    s = Scene(part("ball", shape("sphere", [0.3])), floor=True, margin=1e-3)
    assert len(s.detect({"ball": pose(p=(0, 0, 0.3 + 1.0001e-3))})) == 0
    assert len(s.detect({"ball": pose(p=(0, 0, 0.3 + 0.9999e-3))})) == 1


def test_sphere_pairs_random():
    rng = np.random.default_rng(1)
    s = Scene(part("a", shape("sphere", [0.25])), part("b", shape("sphere", [0.4])))
    for _ in range(20):
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        g = rng.uniform(-0.1, 0.0009)
        cb = rng.uniform(-2, 2, 3)
        ca = cb + (0.25 + 0.4 + g) * u
        c = s.detect({"a": pose(rot("z", 1.0), ca), "b": pose(rot("x", 2.0), cb)})
        # A is the lower shape index ("a"); the normal points from b to a
        assert_contacts(c, [(ca - 0.25 * u, cb + 0.4 * u, u, g)])


@pytest.mark.parametrize("lateral", [(0.1, 0.2), (0.45, -0.3)])
def test_sphere_on_tilted_box_face(lateral):
    """The face of a rotated static box, seen from a sphere above it (FCL's GJK gave points
    ~1e-3 m off here)."""
    R = rot("x", 0.4) @ rot("z", 0.7)
    centre = np.array([0.3, -0.2, 0.1])
    half = np.array([0.5, 0.4, 0.2])
    g = 0.0004
    pb = centre + R @ np.array([lateral[0], lateral[1], half[2]])
    n = R[:, 2]
    ca = pb + (0.1 + g) * n
    s = Scene(
        part("ball", shape("sphere", [0.1])),
        part("table", shape("box", 2 * half), static=True, at=pose(R, centre)),
    )
    c = s.detect({"ball": pose(p=ca)})
    assert_contacts(c, [(ca - 0.1 * n, pb, n, g)], atol=TOL)


def test_sphere_near_box_corner():
    """Closest feature is the box's corner (0.5, 0.5, 0.5): normal along the diagonal."""
    s = Scene(
        part("ball", shape("sphere", [0.2])),
        part("box", shape("box", [1, 1, 1]), static=True),
    )
    u = np.ones(3) / np.sqrt(3)
    corner = np.array([0.5, 0.5, 0.5])
    for g in (0.0007, -0.05):
        ca = corner + (0.2 + g) * u
        c = s.detect({"ball": pose(p=ca)})
        assert_contacts(c, [(ca - 0.2 * u, corner, u, g)])


def test_sphere_centre_inside_box():
    """Deep penetration: the nearest face is +x at distance 0.1."""
    s = Scene(
        part("ball", shape("sphere", [0.2])), part("box", shape("box", [1, 1, 1]), static=True)
    )
    c = s.detect({"ball": pose(p=(0.4, 0.05, -0.1))})
    n = np.array([1.0, 0, 0])
    assert_contacts(c, [((0.2, 0.05, -0.1), (0.5, 0.05, -0.1), n, -0.3)])


def test_sphere_cylinder_side_and_cap():
    s = Scene(
        part("ball", shape("sphere", [0.1])),
        part("can", shape("cylinder", [0.3, 0.8]), static=True, at=pose(rot("y", np.pi / 2))),
    )
    # the can's axis is world x; side surface at distance 0.3 from the x axis
    u = np.array([0.0, np.cos(0.3), np.sin(0.3)])
    ca = np.array([0.1, 0, 0]) + (0.3 + 0.1 + 0.0002) * u
    c = s.detect({"ball": pose(p=ca)})
    assert_contacts(c, [(ca - 0.1 * u, np.array([0.1, 0, 0]) + 0.3 * u, u, 0.0002)])
    # cap at x = 0.4
    ca = np.array([0.4 + 0.1 - 0.003, 0.1, -0.05])
    c = s.detect({"ball": pose(p=ca)})
    n = np.array([1.0, 0, 0])
    assert_contacts(c, [(ca - 0.1 * n, (0.4, 0.1, -0.05), n, -0.003)])


# --------------------------------------------------------------------------- box


def _corners(half):
    return np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * half


def test_box_resting_on_ground_gives_four_points():
    s = Scene(part("box", shape("box", [0.6, 0.4, 0.2])), floor=True)
    c = s.detect({"box": pose(rot("z", 0.3), (1.0, 2.0, 0.1))})
    R = rot("z", 0.3)
    expected = []
    for k in _corners(np.array([0.3, 0.2, 0.1])):
        if k[2] < 0:
            pa = np.array([1.0, 2.0, 0.1]) + R @ k
            expected.append((pa, (pa[0], pa[1], 0.0), Z, 0.0))
    assert_contacts(c, expected)


@pytest.mark.parametrize("margin", [0.05, 1e-3])
def test_tilted_box_on_ground_gaps(margin):
    """Tilted by 0.01 rad about x and 0.005 about y: the four bottom corners have different
    gaps; with a 1 mm margin only those below 1 mm are contacts."""
    half = np.array([0.3, 0.2, 0.1])
    R = rot("x", 0.01) @ rot("y", 0.005)
    p = np.array([0.0, 0.0, 0.0])
    lows = [R @ k for k in _corners(half)]
    p[2] = -min(v[2] for v in lows) - 0.002  # lowest corner 2 mm into the floor
    s = Scene(part("box", shape("box", 2 * half)), floor=True, margin=margin)
    c = s.detect({"box": pose(R, p)})
    expected = []
    for v in lows:
        pa = p + v
        if pa[2] < margin:
            expected.append((pa, (pa[0], pa[1], 0.0), Z, pa[2]))
    assert 1 <= len(expected) <= 4
    assert_contacts(c, expected)


def test_box_resting_on_box_face_and_overhanging():
    base = part("base", shape("box", [2, 2, 1]), static=True, at=pose(p=(0, 0, -0.5)))
    s = Scene(part("top", shape("box", [1, 1, 1])), base)
    c = s.detect({"top": pose(p=(0.2, 0.1, 0.5 - 0.003))})
    expected = [((x, y, -0.003), (x, y, 0.0), Z, -0.003) for x in (-0.3, 0.7) for y in (-0.4, 0.6)]
    assert_contacts(c, expected)
    # overhanging the edge x = 1: the support polygon is clipped to x in [0.3, 1.0]
    c = s.detect({"top": pose(p=(0.8, 0.0, 0.5))})
    expected = [((x, y, 0.0), (x, y, 0.0), Z, 0.0) for x in (0.3, 1.0) for y in (-0.5, 0.5)]
    assert_contacts(c, expected)


def test_box_box_edge_on_edge():
    """Two cubes turned 45 deg about different axes: their edges cross at one point."""
    h = 0.5
    top = h * np.sqrt(2)  # height of the top edge of a cube turned 45 deg about y
    s = Scene(
        part("a", shape("box", [1, 1, 1])),
        part("b", shape("box", [1, 1, 1]), static=True, at=pose(rot("y", np.pi / 4))),
    )
    for g in (0.0006, -0.004):
        za = top + g + h * np.sqrt(2)
        c = s.detect({"a": pose(rot("x", np.pi / 4), (0, 0, za))})
        assert_contacts(c, [((0, 0, top + g), (0, 0, top), Z, g)])


def test_box_box_separated_corner_to_corner():
    """Separated boxes whose closest features are two corners (not a separating-axis case)."""
    s = Scene(part("a", shape("box", [1, 1, 1])), part("b", shape("box", [1, 1, 1]), static=True))
    u = np.ones(3) / np.sqrt(3)
    g = 0.0008
    ca = np.array([0.5, 0.5, 0.5]) + g * u + 0.5
    c = s.detect({"a": pose(p=ca)})
    assert_contacts(c, [((0.5, 0.5, 0.5) + g * u, (0.5, 0.5, 0.5), u, g)])


# --------------------------------------------------------------------------- capsule, cylinder


def test_capsule_lying_and_tilted_on_ground():
    s = Scene(part("cap", shape("capsule", [0.1, 1.0])), floor=True)
    lying = rot("y", np.pi / 2)  # axis along world x
    c = s.detect({"cap": pose(lying, (0.0, 0.3, 0.1 + 0.0002))})
    assert_contacts(c, [((x, 0.3, 0.0002), (x, 0.3, 0.0), Z, 0.0002) for x in (-0.5, 0.5)])
    # tilted by 0.1 rad: only the lower end touches; its centre is at z = zc - 0.5 sin 0.1
    R = rot("y", np.pi / 2 + 0.1)
    zc = 0.1 + 0.5 * np.sin(0.1) - 0.001
    c = s.detect({"cap": pose(R, (0.0, 0.0, zc))})
    end = R @ np.array([0, 0, 0.5])
    if end[2] > 0:
        end = -end
    assert_contacts(c, [((end[0], 0, -0.001), (end[0], 0, 0), Z, -0.001)])


def test_capsule_on_box_two_points():
    s = Scene(
        part("cap", shape("capsule", [0.05, 0.6])),
        part("box", shape("box", [2, 2, 1]), static=True, at=pose(p=(0, 0, -0.5))),
    )
    c = s.detect({"cap": pose(rot("x", np.pi / 2), (0.2, 0.0, 0.05 - 0.0001))})
    assert_contacts(c, [((0.2, y, -0.0001), (0.2, y, 0.0), Z, -0.0001) for y in (-0.3, 0.3)])


def test_parallel_capsules_line_contact():
    s = Scene(part("a", shape("capsule", [0.1, 1.0])), part("b", shape("capsule", [0.1, 1.0])))
    # both along world x; a above b by 0.2 + g, a shifted by 0.4 along x
    g = 0.0003
    Rx = rot("y", np.pi / 2)
    c = s.detect({"a": pose(Rx, (0.4, 0, 0.2 + g)), "b": pose(Rx, (0, 0, 0))})
    # overlap of the core segments along x: [-0.1, 0.5]
    assert_contacts(c, [((x, 0, 0.1 + g), (x, 0, 0.1), Z, g) for x in (-0.1, 0.5)])


def test_crossed_capsules():
    s = Scene(part("a", shape("capsule", [0.1, 1.0])), part("b", shape("capsule", [0.2, 1.0])))
    c = s.detect(
        {"a": pose(rot("y", np.pi / 2), (0.1, 0.2, 0.3 - 0.01)), "b": pose(rot("x", 0.5 * np.pi))}
    )
    # b's axis is world y through the origin, a's axis world x at height 0.29
    assert_contacts(c, [((0, 0.2, 0.19), (0, 0.2, 0.2), Z, -0.01)])


def test_cylinder_upright_lying_tilted_on_ground():
    s = Scene(part("can", shape("cylinder", [0.2, 0.6])), floor=True)
    c = s.detect({"can": pose(p=(0.5, 0.5, 0.3))})
    assert_contacts(
        c,
        [((0.5 + dx, 0.5 + dy, 0), (0.5 + dx, 0.5 + dy, 0), Z, 0.0)
         for dx, dy in ((0.2, 0), (-0.2, 0), (0, 0.2), (0, -0.2))],
    )  # fmt: skip
    c = s.detect({"can": pose(rot("y", np.pi / 2), (0, 0, 0.2 - 0.0004))})
    assert_contacts(c, [((x, 0, -0.0004), (x, 0, 0), Z, -0.0004) for x in (-0.3, 0.3)])
    # tilted about y: the axis is (sin t, 0, cos t); the lowest rim point is the bottom cap
    # centre (-0.3 sin t, 0, zc - 0.3 cos t) plus 0.2 (cos t, 0, -sin t)
    theta = 0.3
    zc = 0.3 * np.cos(theta) + 0.2 * np.sin(theta) - 0.0005
    c = s.detect({"can": pose(rot("y", theta), (0, 0, zc))})
    x = -0.3 * np.sin(theta) + 0.2 * np.cos(theta)
    assert_contacts(c, [((x, 0, -0.0005), (x, 0, 0), Z, -0.0005)])


def test_far_pairs_and_margin_option():
    s = Scene(part("a", shape("box", [1, 1, 1])), part("b", shape("sphere", [0.5])), margin=0.01)
    assert len(s.detect({"a": pose(p=(0, 0, 0)), "b": pose(p=(0, 0, 1.02))})) == 0
    c = s.detect({"a": pose(p=(0, 0, 0)), "b": pose(p=(0, 0, 1.005))})
    # A = "a" (lower index), normal from b to a: -z
    assert_contacts(c, [((0, 0, 0.5), (0, 0, 0.505), -Z, 0.005)])
