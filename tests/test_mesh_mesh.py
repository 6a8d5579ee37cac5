"""Non-convex mesh against non-convex mesh (issue 14, section 2): contacts from the triangles'
own geometry (:func:`mbsim.collision.mesh_pairs.mesh_mesh`) and the per-link ``mesh_contact``
choice.

The meshes are made here with trimesh (an L polygon extruded into a prism, a U polygon into a
slot block); every expected value is closed-form geometry or statics: corner coordinates,
face heights, the L's convex-hull area, the resting height of a body on a face.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

from mbsim.collision.shapes import CONVEX, MESH
from mbsim.errors import GeometryError
from mbsim.io.scenario import load_scenario_text
from mbsim.simulator import Simulator
from test_collision_support import Scene, part, pose, rot, shape

shapely = pytest.importorskip("shapely")

# L polygon (m): arms 0.25 long and 0.125 wide, extruded H = 0.0625 in z (z from 0 to H).
# Every size is a binary fraction, so STL's float32 coordinates hold them exactly.
L_POLY = [(0.0, 0.0), (0.25, 0.0), (0.25, 0.125), (0.125, 0.125), (0.125, 0.25), (0.0, 0.25)]
H = 0.0625
# Its convex hull: the 0.25 square less the triangle (0.25, 0.125) (0.25, 0.25) (0.125, 0.25).
L_HULL_AREA = 0.25 * 0.25 - 0.5 * 0.125 * 0.125
# Centroid of the L (rectangles 0.25 x 0.125 and 0.125 x 0.125): x = y.
L_AREA = 0.25 * 0.125 + 0.125 * 0.125
L_CX = (0.25 * 0.125 * 0.125 + 0.125 * 0.125 * 0.0625) / L_AREA
Z = np.array([0.0, 0.0, 1.0])


def write_ell(path) -> str:
    mesh = trimesh.creation.extrude_polygon(shapely.Polygon(L_POLY), H)
    assert mesh.is_volume
    mesh.export(path)
    return str(path)


def write_slot(path) -> str:
    """A block 0.25 (x) by 0.25 (y) by 0.25 (z) with a slot x in [0.09375, 0.15625] (width
    0.0625), z from 0.0625 up, through the whole y extent: the U polygon in the xz plane
    extruded along y."""
    u = [(0, 0), (0.25, 0), (0.25, 0.25), (0.15625, 0.25), (0.15625, 0.0625), (0.09375, 0.0625),
         (0.09375, 0.25), (0, 0.25)]  # fmt: skip
    mesh = trimesh.creation.extrude_polygon(shapely.Polygon(u), 0.25)
    # polygon y -> world z, extrusion z -> world -y; then centre y on 0
    T = np.eye(4)
    T[:3, :3] = [[1, 0, 0], [0, 0, -1], [0, 1, 0]]
    T[1, 3] = 0.125
    mesh.apply_transform(T)
    assert mesh.is_volume
    mesh.export(path)
    return str(path)


def _hull_area_xy(points) -> float:
    from scipy.spatial import ConvexHull

    return float(ConvexHull(np.asarray(points)[:, :2]).volume)


@pytest.fixture(scope="module")
def ell(tmp_path_factory) -> str:
    return write_ell(tmp_path_factory.mktemp("ell") / "ell.stl")


def _ell_scene(ell, **options):
    return Scene(
        part("low", shape("mesh", [1, 1, 1], mesh_path=ell), static=True),
        part("up", shape("mesh", [1, 1, 1], mesh_path=ell)),
        **options,
    )


@pytest.mark.parametrize("dz", [0.0, -1e-4, 4e-4])
def test_ell_on_ell_gives_the_l_shaped_support(ell, dz):
    """The upper L face-on-face on the lower one, dz above it: one contact per corner of the
    L (6, with room for them), each with normal +z, gap dz, B's point on the top face z = H
    and A's dz above it; their hull is the L's hull. Today's FCL path gave horizontal normals
    and a 0.1 m penetration."""
    s = _ell_scene(ell, manifold_cap=8)
    assert [r.kind for r in s.scene.records] == [MESH, MESH]
    c = s.detect({"up": pose(p=(0.0, 0.0, H + dz))})
    assert len(c) == 6
    corners = {(round(x, 9), round(y, 9)) for x, y in L_POLY}
    assert {(round(p[0], 9), round(p[1], 9)) for p in c.point_b} == corners
    np.testing.assert_allclose(c.normal, np.tile(Z, (6, 1)), atol=1e-12)
    np.testing.assert_allclose(c.gap, dz, atol=1e-12)
    np.testing.assert_allclose(c.point_b[:, 2], H, atol=1e-12)
    np.testing.assert_allclose(c.point_a[:, 2], H + dz, atol=1e-12)
    assert abs(_hull_area_xy(c.point_b) - L_HULL_AREA) < 1e-12


def test_ell_on_ell_default_cap_keeps_four_corners_around_the_centroid(ell):
    """With the default cap of 4 the kept corners still enclose the L's centroid (the support
    polygon holds the weight), all normals +z, gaps 0."""
    c = _ell_scene(ell).detect({"up": pose(p=(0.0, 0.0, H))})
    assert len(c) == 4
    np.testing.assert_allclose(c.normal, np.tile(Z, (4, 1)), atol=1e-12)
    np.testing.assert_allclose(c.gap, 0.0, atol=1e-12)
    from scipy.spatial import ConvexHull

    hull = ConvexHull(c.point_b[:, :2])
    assert (hull.equations @ [L_CX, L_CX, 1.0] < 0.0).all()


def test_shifted_and_turned_ell_gives_the_overlap_corners(ell):
    """The upper L shifted by (0.0625, 0.03125) and turned 90 deg about z (about its own origin):
    every corner of the overlap region of the two footprints (closed form with shapely's
    polygon intersection) is a contact, and every contact lies in that region (the others
    are where triangle edges of the two faces cross), at gap 0 with normal +z."""
    R = rot("z", np.pi / 2)
    shift = np.array([0.0625, 0.03125, H])
    s = _ell_scene(ell, manifold_cap=64)
    c = s.detect({"up": pose(R, shift)})
    upper = shapely.Polygon([tuple((R[:2, :2] @ np.array(v)) + shift[:2]) for v in L_POLY])
    overlap = upper.intersection(shapely.Polygon(L_POLY))
    corners = {(round(x, 9), round(y, 9)) for x, y in overlap.exterior.coords}
    got = {(round(p[0], 9), round(p[1], 9)) for p in c.point_b}
    assert corners <= got
    region = overlap.buffer(1e-12)
    assert all(region.contains(shapely.Point(p[0], p[1])) for p in c.point_b)
    np.testing.assert_allclose(c.normal, np.tile(Z, (len(c), 1)), atol=1e-12)
    np.testing.assert_allclose(c.gap, 0.0, atol=1e-12)


def test_edge_dipping_into_a_face_gives_its_ends(ell):
    """The upper L turned about x by 0.1 rad around its edge y = z = 0, that edge 1e-4 below
    the lower top face; the rest of it is above. Every contact is a point of that edge region
    with either B's face normal +z (gap -1e-4: the edge's depth below the face) or A's bottom
    normal R e_z (gap = R e_z . (a0 - p_b), a0 a point of A's bottom plane: B's face points'
    height under or over A's tilted bottom, at least -1e-4 cos 0.1), B's point on the top
    face z = H; the edge's two ends x = 0 and x = 0.25 are among them."""
    R = rot("x", 0.1)
    c = _ell_scene(ell, manifold_cap=8).detect({"up": pose(R, (0.0, 0.0, H - 1e-4))})
    assert len(c) >= 2
    up = np.isclose(c.normal[:, 2], 1.0, atol=1e-12)
    tilted = np.all(np.isclose(c.normal, R[:, 2], atol=1e-12), axis=1)
    assert (up | tilted).all(), c.normal
    np.testing.assert_allclose(c.gap[up], -1e-4, atol=1e-12)
    a0 = np.array([0.0, 0.0, H - 1e-4])
    np.testing.assert_allclose(c.gap[tilted], (a0 - c.point_b[tilted]) @ R[:, 2], atol=1e-12)
    assert c.gap[tilted].min() >= -1e-4 * np.cos(0.1) - 1e-12
    np.testing.assert_allclose(c.point_b[:, 2], H, atol=1e-12)
    assert np.abs(c.point_b[:, 1]).max() < 2e-3  # within the 1 mm strip where A dips in
    xs = sorted(round(float(x), 9) for x in c.point_b[up, 0])
    assert xs[0] == 0.0 and xs[-1] == 0.25


def test_mesh_contact_convex_hull_is_a_per_link_choice(ell):
    """mesh_contact chooses per link: the default keeps triangle meshes, "convex-hull" for
    one link hulls only that link's mesh; an unknown mode or link is one sentence."""
    s = _ell_scene(ell, mesh_contact_links=[("up/up", "convex-hull")])
    assert [r.kind for r in s.scene.records] == [MESH, CONVEX]
    s = _ell_scene(ell, mesh_contact="convex-hull", mesh_contact_links=[("low", "triangles")])
    assert [r.kind for r in s.scene.records] == [MESH, CONVEX]
    with pytest.raises(GeometryError, match="must be one of triangles, convex-hull"):
        _ell_scene(ell, mesh_contact="decomposition")
    with pytest.raises(GeometryError, match="'nope'"):
        _ell_scene(ell, mesh_contact_links=[("nope", "convex-hull")])


# ------------------------------------------------------------------ dynamics (scenarios)

_MESH_URDF = """<robot name="{name}"><link name="{name}">
  <inertial><origin xyz="{c} {c} {cz}"/><mass value="{m}"/>
    <inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" iyz="0"/></inertial>
  <collision><geometry><mesh filename="{mesh}"/></geometry></collision>
</link></robot>"""

_BOX_URDF = """<robot name="peg"><link name="peg">
  <inertial><mass value="0.2"/>
    <inertia ixx="2e-4" iyy="2e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial>
  <collision><geometry><box size="0.05 0.05 0.1"/></geometry></collision>
</link></robot>"""


def _scenario(tmp_path, upper_urdf, lower_urdf, z0, duration, contact_extra="", x0=0.0):
    (tmp_path / "upper.urdf").write_text(upper_urdf)
    (tmp_path / "lower.urdf").write_text(lower_urdf)
    return f"""\
[simulation]
duration = {duration!r}
dt = 1e-3

[robot.up]
urdf = "{tmp_path / "upper.urdf"}"
base = "floating"
q0 = {{ "root_joint.z" = {z0!r}, "root_joint.x" = {x0!r} }}

[environment.low]
urdf = "{tmp_path / "lower.urdf"}"

[contact]
mu = 0.5
margin = 1e-3
{contact_extra}

[output]
path = "{tmp_path / "out.h5"}"
"""


def _run(text, steps):
    sim = Simulator(load_scenario_text(text))
    zs = []
    for _ in range(steps):
        sim.step()
        zs.append(sim.q[:3].copy())
    return sim, np.array(zs)


def _ell_urdf(name):
    return _MESH_URDF.format(name=name, c=L_CX, cz=H / 2, m=1.0, i=5e-3, mesh="ell.stl")


@pytest.fixture()
def ell_dir(tmp_path):
    write_ell(tmp_path / "ell.stl")
    return tmp_path


def test_ell_resting_on_ell_does_not_drift(ell_dir):
    """The upper L set face-on-face on the lower one (its origin at z = H) stays there for
    2 s: position drift below 1e-5 m (tolerance: the stepper's steady contact error at
    dt 1 ms is ~g dt^2 = 1e-5 m), no tilt."""
    text = _scenario(ell_dir, _ell_urdf("up"), _ell_urdf("low"), H, 2.0)
    sim, xyz = _run(text, 2000)
    assert np.abs(xyz - [0.0, 0.0, H]).max() < 1e-5, np.abs(xyz - [0.0, 0.0, H]).max(axis=0)
    assert np.allclose(sim.q[3:7], [1.0, 0.0, 0.0, 0.0], atol=1e-6)


def test_ell_dropped_onto_ell_comes_to_rest_on_the_face(ell_dir):
    """The upper L dropped from 2 cm above the lower one's top face (restitution 0) ends at
    rest with its bottom on that face: origin at z = H within 1e-5 m, no tilt, no sideways
    motion (a symmetric face-on-face impact)."""
    text = _scenario(ell_dir, _ell_urdf("up"), _ell_urdf("low"), H + 0.02, 1.0)
    sim, xyz = _run(text, 1000)
    assert abs(xyz[-1, 2] - H) < 1e-5
    assert np.abs(xyz[-300:, 2] - H).max() < 1e-5  # at rest for the last 0.3 s
    assert np.abs(xyz[:, :2]).max() < 1e-6
    assert np.allclose(sim.q[3:7], [1.0, 0.0, 0.0, 0.0], atol=1e-6)


def test_tilted_ell_dropped_onto_ell_lands_on_an_edge_and_settles_flat(ell_dir):
    """Dropped 3 cm with a 0.05 rad roll about x, the L first lands on an edge (a corner or
    edge against a face), then rotates flat: after 1.5 s its origin is at z = H within 1e-5 m
    over the last 0.3 s and it is level (|qx|, |qy| < 1e-6)."""
    a = 0.05
    text = _scenario(ell_dir, _ell_urdf("up"), _ell_urdf("low"), H + 0.03, 1.5)
    text = text.replace(
        '"root_joint.x" = 0.0 }',
        f'"root_joint.x" = 0.0, "root_joint.qw" = {math.cos(a / 2)!r}, '
        f'"root_joint.qx" = {math.sin(a / 2)!r} }}',
    )
    sim, xyz = _run(text, 1500)
    assert np.abs(xyz[-300:, 2] - H).max() < 1e-5
    assert abs(sim.q[4]) < 1e-6 and abs(sim.q[5]) < 1e-6


@pytest.mark.parametrize("rel", [-1e-12, 1e-8, -1e-6])
def test_tilted_ell_drop_settles_whatever_the_rounding_of_its_roll(ell_dir, rel):
    """The same drop with the roll changed by a relative -1e-12, 1e-8 or -1e-6 (paths that
    differ from the landing on, at rounding level at first): each L is at rest on the face
    over the last 1 of 2 s: every |v_i| < 1e-6 (m/s, rad/s; at rest they are ~1e-14,
    while an L rocking on its edge or on two diagonal corners moves at 1e-2-1e-1) and
    |z - H| < 1e-5 m (each settles within 0.14 s). Before mesh_pairs.EDGE_ON_COS the first
    kept rocking past 3 s, the second started again at 1.76 s from rest and the third
    rocked until 1.5 s and started again after 2 s, when the rounding of its tilt (1e-17 rad)
    turned a side face's edge-on pair into contacts with a sideways normal that displaced
    two corners of its support polygon (docs/results.md, "branch edge")."""
    a = 0.05 * (1.0 + rel)
    text = _scenario(ell_dir, _ell_urdf("up"), _ell_urdf("low"), H + 0.03, 2.0)
    text = text.replace(
        '"root_joint.x" = 0.0 }',
        f'"root_joint.x" = 0.0, "root_joint.qw" = {math.cos(a / 2)!r}, '
        f'"root_joint.qx" = {math.sin(a / 2)!r} }}',
    )
    sim = Simulator(load_scenario_text(text))
    z, v = [], []
    for _ in range(2000):
        sim.step()
        z.append(sim.q[2])
        v.append(np.abs(sim.v).max())
    assert np.abs(np.array(z[-1000:]) - H).max() < 1e-5
    assert max(v[-1000:]) < 1e-6


def _peg_case(tmp_path, contact_extra=""):
    write_slot(tmp_path / "slot.stl")
    slot = _MESH_URDF.format(name="low", c=0.125, cz=0.125, m=1.0, i=1e-2, mesh="slot.stl")
    # peg on the slot's axis (6.25 mm clearance a side), its bottom 5 cm above the block's top
    return _scenario(tmp_path, _BOX_URDF, slot, 0.35, 1.0, contact_extra, x0=0.125)


def test_peg_slides_into_the_slot_and_stops_at_its_bottom(tmp_path):
    """A 0.05 x 0.05 x 0.1 box peg above the 6.25 cm wide slot of a non-convex block falls in
    and stops on the slot's floor z = 0.0625: its centre at 0.0625 + 0.05 = 0.1125 (within
    1e-5 m), still inside the slot (x within 0.125 +- 0.00625)."""
    sim, xyz = _run(_peg_case(tmp_path), 1000)
    assert abs(xyz[-1, 2] - 0.1125) < 1e-5
    assert np.abs(xyz[-200:, 2] - 0.1125).max() < 1e-5
    assert abs(xyz[-1, 0] - 0.125) <= 0.00625 + 1e-9


def test_peg_on_the_convex_hull_of_the_slot_stays_on_top(tmp_path):
    """The same peg with mesh_contact = "convex-hull" for the block: the hull closes the slot,
    so the peg stops on its top z = 0.25 (centre 0.3): the choice is the documented one."""
    extra = 'mesh_contact_links = { "low/low" = "convex-hull" }'
    sim, xyz = _run(_peg_case(tmp_path, extra), 1000)
    assert abs(xyz[-1, 2] - 0.3) < 1e-5


# ------------------------------------------------------------------ scenario keys


def test_scenario_mesh_contact_reaches_the_scene_and_round_trips(tmp_path):
    """contact.mesh_contact_links = { "low/low" = "convex-hull" } hulls only the slot block
    (its link's shape becomes CONVEX, the box peg stays a box); the emitted TOML keeps it."""
    text = _peg_case(tmp_path, 'mesh_contact_links = { "low/low" = "convex-hull" }')
    sc = load_scenario_text(text)
    assert sc.contact.mesh_contact == "triangles"
    assert sc.contact.mesh_contact_links == (("low/low", "convex-hull"),)
    assert load_scenario_text(sc.to_toml()) == sc
    sim = Simulator(sc)
    kinds = {sim.scene.links[g]: r.kind for g, r in enumerate(sim.scene.records)}
    assert kinds["low/low"] == CONVEX
    sim = Simulator(load_scenario_text(_peg_case(tmp_path)))
    kinds = {sim.scene.links[g]: r.kind for g, r in enumerate(sim.scene.records)}
    assert kinds["low/low"] == MESH


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('mesh_contact = "decomposition"', "contact.mesh_contact"),
        ('mesh_contact_links = { "low/low" = "hull" }', "must be one of triangles, convex-hull"),
        ('mesh_contact_links = ["low/low"]', "contact.mesh_contact_links"),
        ('mesh_contact_links = { "low/nope" = "convex-hull" }', "nope"),
    ],
)
def test_scenario_bad_mesh_contact_is_one_sentence(tmp_path, extra, message):
    """A bad mode, a non-table, or an unknown link: one MbsimError naming the key."""
    from mbsim.errors import MbsimError

    with pytest.raises(MbsimError, match=message) as err:
        Simulator(load_scenario_text(_peg_case(tmp_path, extra)))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("axis", ["x", "y"])
@pytest.mark.parametrize("tilt", [1e-17, -1e-17, 1e-15, -1e-15, 1e-5, -1e-5])
def test_ell_resting_on_ell_has_no_sideways_contact_whatever_the_tilts_sign(ell, axis, tilt):
    """The upper L on the lower one, shifted by (2.5e-6, -1e-4) so that side faces of the two
    are 2.5e-6 and 1e-4 apart, tilted by a rounding-level (1e-17, 1e-15 rad) or rocking-level
    (1e-5 rad) angle of either sign: every contact has the face normal (within the tilt), and
    the default 4 kept corners enclose the L's centroid. A side face of one L is edge-on to
    the top face of the other (mesh_pairs.EDGE_ON_COS); counted as an oblique pair when the
    tilt's sign made n_inc . n_ref negative, it gave contacts with a sideways normal at the
    corners of the support polygon, which displaced the support points there, and the L
    resting on two diagonal corners rocked (docs/results.md, "branch edge")."""
    at = pose(rot(axis, tilt), (2.5e-6, -1e-4, H))
    c = _ell_scene(ell, manifold_cap=8).detect({"up": at})
    assert len(c) == 8
    np.testing.assert_allclose(c.normal, np.tile(Z, (8, 1)), atol=2e-5)
    c = _ell_scene(ell).detect({"up": at})
    assert len(c) == 4
    np.testing.assert_allclose(c.normal, np.tile(Z, (4, 1)), atol=2e-5)
    from scipy.spatial import ConvexHull

    hull = ConvexHull(c.point_b[:, :2])
    assert (hull.equations @ [L_CX, L_CX, 1.0] < -1e-3).all()
