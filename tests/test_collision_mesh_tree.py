"""Mesh - mesh pairs too large for the triangle kernel (mesh_pairs.mesh_mesh) whose hulls
overlap: the meshes' sphere trees (collision/mesh_tree.py) prove them apart without FCL, or
leave them to FCL. Checked against closed-form geometry (two linked rings, whose tubes are
R - 2 r apart) and against FCL's own answer (collide, then distance against the margin:
fcl_narrow.FclNarrowphase.pair) on random poses."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from scipy.spatial.transform import Rotation

from mbsim.collision.mesh_pairs import APART_TOL
from mbsim.collision.mesh_tree import (
    CAPPED,
    NODE_COLS,
    ORTHO_SLACK,
    _box_gap,
    _moved,
    _node,
    build_trees,
    mesh_pair_apart,
    mesh_trees_apart,
    mesh_trees_bound,
    new_state,
)
from mbsim.collision.narrowphase import tree_arrays, unpack
from mbsim.collision.shapes import MESH
from test_collision_support import DATA, Scene, part, pose, rot, shape

R_MAJOR, R_MINOR = 0.1, 0.02  # ring: tube centre circle radius, tube radius (m)
MARGIN = 1e-3


@pytest.fixture(scope="module")
def ring(tmp_path_factory):
    path = tmp_path_factory.mktemp("ring") / "ring.stl"
    trimesh.creation.torus(R_MAJOR, R_MINOR, major_sections=32, minor_sections=12).export(path)
    return str(path)


def _rings(ring, **options):
    """Two rings (768 triangles each; work_limit 1000: 768^2 pairs > 25 x 1000, so FCL's
    unless the trees decide)."""
    s = Scene(
        part("a", shape("mesh", [1, 1, 1], mesh_path=ring)),
        part("b", shape("mesh", [1, 1, 1], mesh_path=ring)),
        margin=MARGIN,
        work_limit=1000,
        **options,
    )
    assert [r.kind for r in s.scene.records] == [MESH, MESH]
    return s


class _CountingFcl:
    """FCL's narrowphase, counting the pairs it is asked for."""

    def __init__(self, fcl):
        self.fcl, self.asked = fcl, 0

    def pair(self, *args, **kwargs):
        self.asked += 1
        return self.fcl.pair(*args, **kwargs)


def _linked(shift: float):
    """Ring a in the xy plane at the origin; ring b in the xz plane centred on a's tube
    circle at (R, 0, 0) and moved ``shift`` (m) along x: a's tube passes through b's hole.
    For shift = 0 the tubes are R - 2 r = 0.06 m apart (the polygonal tubes slightly more)."""
    return {"a": pose(), "b": pose(rot("x", np.pi / 2), (R_MAJOR + shift, 0.0, 0.0))}


@pytest.mark.parametrize("shift", [0.0, 0.03, -0.03])
def test_linked_rings_apart_without_fcl(ring, shift):
    """Linked rings 6 cm (3 cm either side) apart: their hulls overlap, the trees prove them
    apart; detect reports nothing and never asks FCL."""
    s = _rings(ring)
    fcl = s.scene._fcl = _CountingFcl(s.scene._fcl)
    assert len(s.detect(_linked(shift))) == 0
    assert fcl.asked == 0


def test_touching_rings_go_to_fcl(ring):
    """Linked rings shifted 0.0605 m: the tubes (b's inner side against a's outer side)
    overlap by ~0.5 mm: undecided, FCL is asked and reports the contact."""
    s = _rings(ring)
    fcl = s.scene._fcl = _CountingFcl(s.scene._fcl)
    c = s.detect(_linked(R_MAJOR - 2 * R_MINOR + 0.0005))
    assert fcl.asked == 1
    assert len(c) >= 1 and np.all(c.gap < MARGIN)


@pytest.mark.parametrize("extra", [-2e-6, 2e-6, 1e-4])
def test_rings_at_the_margin(ring, extra):
    """Ring b placed so that FCL's distance between the meshes is margin + APART_TOL +
    ``extra``: certified exactly when that is above margin + APART_TOL (the certificate's
    threshold, within FCL's ~1e-15 m rounding)."""
    s = _rings(ring)
    fcl = s.scene._fcl
    tol = MARGIN + APART_TOL
    target = tol + extra
    # secant steps on FCL's distance as a function of the shift (falls about 1:1)
    x0, x1 = 0.0, 0.05
    s.detect(_linked(x0))
    f0 = _fcl_distance(fcl, s.scene) - target
    for _ in range(30):
        s.detect(_linked(x1))
        d = _fcl_distance(fcl, s.scene)
        f1 = d - target
        if abs(f1) < 1e-12 or f1 == f0:
            break
        x0, x1, f0 = x1, x1 - f1 * (x1 - x0) / (f1 - f0), f1
    assert abs(d - (tol + extra)) < 1e-9, d
    assert _kernel(s, tol) == (extra > 0)


def _kernel(s, tol):
    c = s.scene
    fpack, ipack, offs = c.table.pack()
    si, sf, V, FN_, FD_, FP, FV, E, ED, MV, MT, MB = unpack(fpack, ipack, offs)
    TN, TI, TP, TR = (np.array(a) for a in tree_arrays(fpack, ipack, offs))
    return mesh_trees_apart(0, 1, si, MV, MT, MB, TN, TI, TP, TR, c._Rw, c._pw, tol)


def test_random_poses_agree_with_fcl(ring):
    """Ring b at random orientations with its centre within reach of ring a's tube: a pose the
    trees certify is one FCL finds no contact for (collide and distance within the margin:
    pair() returns 0) and whose FCL distance exceeds margin + APART_TOL; a pose FCL reports a
    contact for is never certified. Certified and touching poses both occur (the test can
    fail either way), and a pose left undecided has an FCL distance within margin +
    APART_TOL (the trees are tight: not certified only when some triangle pair is near)."""
    s = _rings(ring)
    fcl = s.scene._fcl
    rng = np.random.default_rng(11)
    certified = touching = 0
    tol = MARGIN + APART_TOL
    for _ in range(300):
        R = Rotation.random(random_state=rng.integers(1 << 31)).as_matrix()
        phi = rng.uniform(0, 2 * np.pi)
        on_tube = R_MAJOR * np.array([np.cos(phi), np.sin(phi), 0.0])
        p = on_tube + rng.normal(size=3) * 0.05
        s.detect({"a": pose(), "b": pose(R, p)})
        ok = _kernel(s, tol)
        c = s.scene
        n = fcl.pair(0, 1, c._Rw, c._pw, np.zeros((64, 10)), np.zeros(64, np.int64))
        d = _fcl_distance(fcl, c)
        if ok:
            certified += 1
            assert n == 0
            assert d > tol - 1e-12, d
        else:
            touching += n > 0
            # undecided only with a triangle pair within tol (the leaves' exact distance)
            assert d <= tol + 1e-9, d
    assert certified >= 50 and touching >= 20, (certified, touching)


def _fcl_distance(fcl_narrow, c) -> float:
    import fcl

    o1 = fcl_narrow._object(0, c._Rw, c._pw)
    o2 = fcl_narrow._object(1, c._Rw, c._pw)
    return float(fcl.distance(o1, o2, fcl.DistanceRequest(), fcl.DistanceResult()))


def test_tree_spheres_hold_their_triangles():
    """Every node's sphere and box hold every vertex of every triangle under it (the bounds
    the traversal's rejections rest on), the box axes are orthonormal, and the leaves hold
    each triangle once."""
    s = Scene(part("ell", shape("mesh", [1, 1, 1], mesh_path=str(DATA / "ell.stl"))))
    t = s.scene.table
    TN, TI, TP, TR = build_trees(t)
    tn = int(t.si[0, 13])
    assert sorted(TP.tolist()) == list(range(tn))

    def under(k):
        if TI[k, 2] == 1:
            return list(TP[TI[k, 0] : TI[k, 0] + TI[k, 1]])
        return under(TI[k, 0]) + under(TI[k, 1])

    for k in range(len(TN)):
        tris = under(k)
        pts = t.MV[t.MT[tris]].reshape(-1, 3)
        assert np.all(np.linalg.norm(pts - TN[k, :3], axis=1) <= TN[k, 3])
        ax = TN[k, 4:13].reshape(3, 3)
        assert np.allclose(ax @ ax.T, np.eye(3), atol=1e-14)
        assert np.all(np.abs((pts - TN[k, :3]) @ ax.T) <= TN[k, 13:16])
    assert TR[0] == 0


def _arrays(s):
    c = s.scene
    fpack, ipack, offs = c.table.pack()
    si, sf, V, FN_, FD_, FP, FV, E, ED, MV, MT, MB = unpack(fpack, ipack, offs)
    TN, TI, TP, TR = (np.array(a) for a in tree_arrays(fpack, ipack, offs))
    return si, MV, MT, MB, TN, TI, TP, TR


def test_bound_is_below_fcl_distance(ring):
    """mesh_trees_bound's d0 on linked rings at random shifts (reach = tol + 1 cm) is a lower
    bound on FCL's distance (within rounding) when it certifies; undecided only within tol."""
    s = _rings(ring)
    fcl = s.scene._fcl
    arrays = _arrays(s)
    tol = MARGIN + APART_TOL
    rng = np.random.default_rng(3)
    seen = 0
    for _ in range(40):
        s.detect(_linked(rng.uniform(-0.055, 0.055)))
        c = s.scene
        d0 = mesh_trees_bound(0, 1, *arrays, c._Rw, c._pw, tol, tol + 0.01, 1 << 40)
        d = _fcl_distance(fcl, c)
        if d0 > tol:
            seen += 1
            assert d0 <= d + 1e-12, (d0, d)
        else:
            assert d <= tol + 1e-9
    assert seen >= 20


def test_motion_bound_never_skips_a_near_pair(ring):
    """Random rigid motions of both rings from certified poses: whenever mesh_pair_apart
    answers True (from its kept certificate or a new traversal), FCL's distance at that pose
    exceeds tol, and its pair() reports no contact. The walk goes near enough that undecided
    poses and certificates kept across steps both occur (the test can fail either way: with
    the motion bound's rotation term dropped it certifies a pose FCL finds within tol)."""
    s = _rings(ring)
    fcl = s.scene._fcl
    arrays = _arrays(s)
    tol = MARGIN + APART_TOL
    state = new_state()
    rng = np.random.default_rng(5)
    kept = undecided = 0
    for walk in range(6):
        Ra, Rb = np.eye(3), rot("x", np.pi / 2)
        pa, pb = np.zeros(3), np.array([R_MAJOR + rng.uniform(-0.03, 0.03), 0.0, 0.0])
        for _ in range(60):
            # small steps: both rings turn (about their own frame) and move
            Ra = Rotation.from_rotvec(rng.normal(size=3) * 0.002).as_matrix() @ Ra
            Rb = Rotation.from_rotvec(rng.normal(size=3) * 0.002).as_matrix() @ Rb
            pa = pa + rng.normal(size=3) * 0.0003
            pb = pb + rng.normal(size=3) * 0.0003 + np.array([0.001, 0, 0]) * (walk % 2 * 2 - 1)
            s.detect({"a": pose(Ra, pa), "b": pose(Rb, pb)})
            c = s.scene
            before = state.copy()
            ok = mesh_pair_apart(0, 1, *arrays, c._Rw, c._pw, tol, 0.01, 1 << 40, state)
            d = _fcl_distance(fcl, c)
            if ok:
                kept += bool(np.array_equal(before, state))
                assert d > tol, d
                n = fcl.pair(0, 1, c._Rw, c._pw, np.zeros((64, 10)), np.zeros(64, np.int64))
                assert n == 0
            else:
                undecided += 1
    assert kept >= 20 and undecided >= 5, (kept, undecided)


def test_motion_bound_against_closed_form():
    """_moved against the exact largest displacement of a sphere's points: for a turn by
    theta about an axis through the frame origin and a shift dp, points of the sphere (c, r)
    move at most |(R - I) c + dp| + 2 sin(theta / 2) r; the bound equals that (to
    ORTHO_SLACK r) and is never below the displacement of sampled points."""
    rng = np.random.default_rng(2)
    for _ in range(50):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        theta = rng.uniform(0, np.pi)
        R0 = Rotation.random(random_state=rng.integers(1 << 31)).as_matrix()
        R = Rotation.from_rotvec(axis * theta).as_matrix() @ R0
        p0, dp = rng.normal(size=3), rng.normal(size=3) * 0.01
        c, r = rng.normal(size=3) * 0.1, rng.uniform(0.01, 0.3)
        row = np.zeros(12)
        row[:9] = R0.ravel()
        row[9:] = p0
        bound = _moved(R, p0 + dp, row, 0, c, r)
        exact = np.linalg.norm((R - R0) @ c + dp) + 2 * np.sin(theta / 2) * r
        assert exact <= bound <= exact + 2 * ORTHO_SLACK * r + 1e-12
        x = c + r * _unit(rng.normal(size=(500, 3)))
        moved = np.linalg.norm((R - R0) @ x.T + dp[:, None], axis=0)
        assert moved.max() <= bound


def _unit(v):
    return v / np.linalg.norm(v, axis=1)[:, None]


def test_cap_hands_the_pair_to_fcl(ring):
    """A budget of triangle pair tests too small for the linked rings' proof leaves them
    undecided (CAPPED), and detect then asks FCL; with no budget limit the same pose is
    certified."""
    s = _rings(ring)
    arrays = _arrays(s)
    tol = MARGIN + APART_TOL
    s.detect(_linked(R_MAJOR - 2 * R_MINOR - 0.003))  # tubes ~3 mm apart: leaf tests needed
    c = s.scene
    assert mesh_trees_bound(0, 1, *arrays, c._Rw, c._pw, tol, tol, 1 << 40) > tol
    assert mesh_trees_bound(0, 1, *arrays, c._Rw, c._pw, tol, tol, 0) == CAPPED
    state = new_state()
    assert not mesh_pair_apart(0, 1, *arrays, c._Rw, c._pw, tol, 0.0, 0, state)
    assert mesh_pair_apart(0, 1, *arrays, c._Rw, c._pw, tol, 0.0, 1 << 40, new_state())


def _box_gaps_vs_fcl(bound, rng, trials=400):
    """(largest excess of ``bound``'s gap over FCL's distance between the two boxes, number of
    separated pairs): random point clouds, their node boxes (_node) at random poses, the
    gap of _box_gap's kind (reach 0: the first axis gap above 0) against fcl.distance of the
    two boxes (fcl.Box, the same centre, axes and half extents)."""
    import fcl

    worst, seen = -np.inf, 0
    for _ in range(trials):
        rows = []
        for _k in range(2):
            pts = rng.normal(size=(rng.integers(3, 12), 3)) * rng.uniform(0.005, 0.1, size=3)
            row = np.empty(NODE_COLS)
            _node(pts, row)
            rows.append(row)
        TN = np.array(rows)
        Rab = Rotation.random(random_state=rng.integers(1 << 31)).as_matrix()
        pab = rng.normal(size=3) * 0.1
        cb = Rab @ TN[1, :3] + pab
        g = bound(TN, Rab, cb)
        if not g > 0:
            continue
        seen += 1
        objs = []
        for row, R, p in ((TN[0], np.eye(3), row_c(TN[0])), (TN[1], Rab, cb)):
            box = fcl.Box(*(2 * row[13:16]))
            objs.append(fcl.CollisionObject(box, fcl.Transform(R @ row[4:13].reshape(3, 3).T, p)))
        d = fcl.distance(objs[0], objs[1], fcl.DistanceRequest(), fcl.DistanceResult())
        worst = max(worst, g - d)
    return worst, seen


def row_c(row):
    return row[:3]


def test_box_gap_is_below_the_boxes_distance():
    """_box_gap's separating-axis gap never exceeds FCL's distance between the two oriented
    boxes (to FCL's ~1e-6 m GJK tolerance on boxes), on random boxes and poses with many
    separated pairs; a bound 1 mm too large is caught by the same check (it can fail)."""
    w = np.empty((7, 3))

    def gap(TN, Rab, cb):
        return _box_gap(TN, 0, 1, Rab, cb, 0.0, w)

    worst, seen = _box_gaps_vs_fcl(gap, np.random.default_rng(7))
    assert seen >= 100, seen
    assert worst <= 2e-6, worst
    worst, _ = _box_gaps_vs_fcl(lambda *a: gap(*a) + 1e-3, np.random.default_rng(7))
    assert worst > 2e-6
