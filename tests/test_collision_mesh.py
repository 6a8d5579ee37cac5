"""Meshes: loading (STL/OBJ/DAE, package://, scale, mirroring), convex vs BVH handling, and
every bad-geometry case with its one-sentence error."""

from __future__ import annotations

import itertools
import os
import shutil

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from mbsim.collision import CollisionScene
from mbsim.collision.shapes import CONVEX, MESH
from mbsim.errors import GeometryError, MbsimError
from mbsim.io.urdf import load_urdf, parse_urdf_string
from mbsim.simcore.model import build_model
from test_collision_support import DATA, Scene, assert_contacts, part, pose, rot, shape

Z = np.array([0.0, 0.0, 1.0])
CUBE = str(DATA / "cube.stl")
ELL = str(DATA / "ell.stl")  # L-shaped prism: polygon (0,0)(1,0)(1,.4)(.4,.4)(.4,1)(0,1), z 0..0.5


def _cube_corners(R, p, half=0.5):
    signs = np.array(list(itertools.product((-1, 1), repeat=3)), dtype=float)
    return [p + R @ (half * s) for s in signs]


@pytest.mark.parametrize("fmt", ["stl", "obj", "dae"])
def test_mesh_cube_on_ground_matches_box(fmt):
    """A 1 m cube mesh tilted on the ground: the bottom corners by hand, and the same contacts
    as a primitive box at the same pose."""
    R = rot("x", 0.004) @ rot("y", -0.003)
    p = np.array([0.3, -0.2, 0.0])
    p[2] = -min(v[2] for v in _cube_corners(R, np.zeros(3))) - 0.0005
    expected = [(v, (v[0], v[1], 0.0), Z, v[2]) for v in _cube_corners(R, p) if v[2] < 0.01]
    mesh = Scene(part("m", shape("mesh", [1, 1, 1], mesh_path=str(DATA / f"cube.{fmt}"))),
                 floor=True, margin=0.01)  # fmt: skip
    box = Scene(part("m", shape("box", [1, 1, 1])), floor=True, margin=0.01)
    assert mesh.scene.records[0].kind == CONVEX
    cm, cb = mesh.detect({"m": pose(R, p)}), box.detect({"m": pose(R, p)})
    assert_contacts(cm, expected)
    assert_contacts(cb, expected)


def test_mesh_cube_on_box_and_sphere_matches_box():
    base = part("base", shape("box", [3, 3, 1]), static=True, at=pose(p=(0, 0, -0.5)))
    ball = part("ball", shape("sphere", [0.25]))
    R = rot("z", 0.2)
    pc = np.array([0.1, 0.2, 0.5 - 0.002])
    expected = [(v, (v[0], v[1], 0.0), Z, -0.002) for v in _cube_corners(R, pc) if v[2] < 0]
    for kind, params, path in (("mesh", [1, 1, 1], CUBE), ("box", [1, 1, 1], None)):
        s = Scene(part("m", shape(kind, params, mesh_path=path)), base, ball)
        # the ball touches the cube's +x face from outside, 0.3 mm away
        u = R[:, 0]
        face = pc + 0.5 * u + R @ np.array([0, 0.1, 0.2])
        cball = face + (0.25 + 0.0003) * u
        c = s.detect({"m": pose(R, pc), "ball": pose(p=cball)})
        mine = [i for i in range(len(c)) if c.geom_b[i] == 1]  # cube on base
        assert len(mine) == 4
        ball_rows = [i for i in range(len(c)) if 2 in (c.geom_a[i], c.geom_b[i])]
        assert len(ball_rows) == 1
        i = ball_rows[0]
        # A = the cube (index 0), B = the ball (index 2): normal from ball to cube is -u
        assert np.allclose(c.normal[i], -u, atol=1e-9)
        assert np.allclose(c.point_a[i], face, atol=1e-9)
        assert np.allclose(c.point_b[i], cball - 0.25 * u, atol=1e-9)
        assert abs(c.gap[i] - 0.0003) < 1e-9
        sub = type(c)(*(getattr(c, f)[mine] for f in c.__slots__))
        assert_contacts(sub, expected)


def test_package_uri_and_scale():
    """tests/data/meshes/mbsim_test_pkg/urdf/cube.urdf: a 1 m cube mesh scaled by 0.5, found
    through package://mbsim_test_pkg (the loader searches the folders above the URDF)."""
    spec = load_urdf(DATA / "mbsim_test_pkg" / "urdf" / "cube.urdf", base="floating")
    model = build_model([spec])
    scene = CollisionScene.from_model(model, floor=True)
    R, p = np.eye(3)[None], np.array([[1.0, 0.0, 0.25]])
    c = scene.detect(R, p)
    expected = [
        ((1 + x, y, 0.0), (1 + x, y, 0.0), Z, 0.0) for x in (-0.25, 0.25) for y in (-0.25, 0.25)
    ]
    assert_contacts(c, expected)
    assert scene.records[0].mesh_file.endswith(os.path.join("mbsim_test_pkg", "meshes", "cube.stl"))


URDF_OTHER_PKG = """<robot name="r">
  <link name="body">
    <inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><mesh filename="package://other_pkg/meshes/cube.stl"/></geometry></collision>
  </link>
</robot>"""


def test_package_dirs_option_and_ros_package_path(tmp_path, monkeypatch):
    """A package the loader cannot find is found through package_dirs (the CLI's
    --package-dir NAME=PATH) or ROS_PACKAGE_PATH; without them the error lists the places."""
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    pkg = tmp_path / "elsewhere" / "other_pkg"
    (pkg / "meshes").mkdir(parents=True)
    shutil.copy(CUBE, pkg / "meshes" / "cube.stl")
    urdf_dir = tmp_path / "robot"
    urdf_dir.mkdir()
    spec = parse_urdf_string(URDF_OTHER_PKG, source=str(urdf_dir / "r.urdf"), base_dir=urdf_dir)
    model = build_model([spec])
    with pytest.raises(GeometryError) as err:
        CollisionScene.from_model(model)
    msg = str(err.value)
    assert "link 'body'" in msg and "package://other_pkg/meshes/cube.stl" in msg
    assert "looked at" in msg and str(urdf_dir) in msg
    scene = CollisionScene.from_model(model, package_dirs={"other_pkg": str(pkg)})
    assert scene.records[0].kind == CONVEX
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "elsewhere"))
    assert CollisionScene.from_model(model).records[0].mesh_file == str(pkg / "meshes" / "cube.stl")


def test_nonconvex_mesh_sphere_and_mirroring():
    """The L prism stays a triangle mesh; a sphere at its inner face x = 0.4 (y in 0.4..1)
    touches it there. Mirrored by scale (-1, 1, 1) the face is at x = -0.4 and the normal must
    still point out of the solid (winding fixed for det(scale) < 0)."""
    for sx in (1.0, -1.0):
        s = Scene(
            part("ell", shape("mesh", [sx, 1, 1], mesh_path=ELL), static=True),
            part("ball", shape("sphere", [0.1])),
        )
        assert s.scene.records[0].kind == MESH
        n = np.array([sx, 0, 0])  # out of the solid, into the notch
        for g in (0.0004, -0.03):
            cb = np.array([sx * (0.4 + 0.1 + g), 0.8, 0.25])
            c = s.detect({"ball": pose(p=cb)})
            # A = ball (moving), B = the static L
            assert_contacts(c, [(cb - 0.1 * n, (sx * 0.4, 0.8, 0.25), n, g)])


def test_nonconvex_mesh_on_ground_support_polygon():
    """The L lying on the ground: its hull's bottom vertices are the support polygon (the
    notch corner (0.4, 0.4) is not on the hull). With cap 8 all five; with cap 4 the four of
    largest area."""
    bottom = [(0, 0), (1, 0), (1, 0.4), (0.4, 1), (0, 1)]
    s = Scene(part("ell", shape("mesh", [1, 1, 1], mesh_path=ELL)), floor=True, manifold_cap=8)
    c = s.detect({"ell": pose(p=(0, 0, -0.0002))})
    assert_contacts(c, [((x, y, -0.0002), (x, y, 0), Z, -0.0002) for x, y in bottom])

    def area(pts):
        return ConvexHull(np.array(pts, dtype=float)).volume  # a 2-D hull's volume is its area

    best_area = max(area(q) for q in itertools.combinations(bottom, 4))
    s4 = Scene(part("ell", shape("mesh", [1, 1, 1], mesh_path=ELL)), floor=True)
    c4 = s4.detect({"ell": pose(p=(0, 0, -0.0002))})
    chosen = [tuple(np.round(p[:2], 6)) for p in c4.point_b]
    assert len(chosen) == 4 and set(chosen) <= {(float(x), float(y)) for x, y in bottom}
    assert abs(area(chosen) - best_area) < 1e-6  # (two subsets tie at 0.7 m^2)
    assert np.allclose(c4.gap, -0.0002, atol=1e-9) and np.allclose(c4.point_b[:, 2], 0.0)


def test_convex_option_uses_hull():
    s = Scene(part("ell", shape("mesh", [1, 1, 1], mesh_path=ELL)), floor=True, convex=True)
    assert s.scene.records[0].kind == CONVEX
    s = Scene(part("ell", shape("mesh", [1, 1, 1], mesh_path=ELL)), floor=True, convex=["ell"])
    assert s.scene.records[0].kind == CONVEX
    s = Scene(part("ell", shape("mesh", [1, 1, 1], mesh_path=ELL)), floor=True, convex=["x"])
    assert s.scene.records[0].kind == MESH


def test_nonconvex_mesh_on_box_via_fcl():
    """The L (BVH in FCL) lying 1 mm into a static box: every contact has the box's normal,
    the 1 mm depth, and lies on the L's bottom face."""
    s = Scene(
        part("ell", shape("mesh", [1, 1, 1], mesh_path=ELL)),
        part("base", shape("box", [3, 3, 1]), static=True, at=pose(p=(0, 0, -0.5))),
    )
    c = s.detect({"ell": pose(p=(0, 0, -0.001))})
    assert 1 <= len(c) <= 4
    assert np.allclose(c.normal, Z, atol=1e-6)
    assert np.allclose(c.gap, -0.001, atol=1e-6)
    assert np.allclose(c.point_a[:, 2], -0.001, atol=1e-6)
    assert np.allclose(c.point_b[:, 2], 0.0, atol=1e-6)


# --------------------------------------------------------------------------- bad geometry


def _scene_with(geom):
    return CollisionScene.from_model(build_model([part("thing", geom)]))


@pytest.mark.parametrize(
    ("kind", "params", "words"),
    [
        ("box", [1, 0, 1], "size (1, 0, 1)"),
        ("sphere", [-0.1], "size (-0.1)"),
        ("cylinder", [0.1, float("nan")], "size (0.1, nan)"),
        ("capsule", [0.1, -2], "size (0.1, -2)"),
        ("mesh", [1, 0, 1], "scale (1, 0, 1)"),
    ],
)
def test_bad_sizes(kind, params, words):
    with pytest.raises(GeometryError) as err:
        _scene_with(shape(kind, params, mesh_path=CUBE if kind == "mesh" else None))
    msg = str(err.value)
    assert "<thing.urdf>" in msg and "link 'thing'" in msg and words in msg
    assert msg.count(".") >= 1 and "\n" not in msg


@pytest.mark.parametrize("name", ["garbage.stl", "empty.obj"])
def test_corrupt_and_empty_meshes(name):
    """garbage.stl: a binary STL header announcing 1000 triangles followed by 3 bytes (trimesh
    reads it as empty); empty.obj: vertices but no faces."""
    with pytest.raises(GeometryError) as err:
        _scene_with(shape("mesh", [1, 1, 1], mesh_path=str(DATA / name)))
    msg = str(err.value)
    assert "link 'thing'" in msg and name in msg and "holds no triangles" in msg


def test_unreadable_meshes(tmp_path):
    name = "mesh.unknownformat"
    path = tmp_path / name
    path.write_text("1 2 3\n")
    with pytest.raises(GeometryError) as err:
        _scene_with(shape("mesh", [1, 1, 1], mesh_path=str(path)))
    msg = str(err.value)
    assert "link 'thing'" in msg and name in msg and "could not be read" in msg


def test_missing_mesh_file(tmp_path):
    text = URDF_OTHER_PKG.replace("package://other_pkg/meshes/cube.stl", "meshes/nothere.stl")
    spec = parse_urdf_string(text, source=str(tmp_path / "r.urdf"), base_dir=tmp_path)
    with pytest.raises(GeometryError) as err:
        CollisionScene.from_model(build_model([spec]))
    msg = str(err.value)
    assert str(tmp_path / "r.urdf") in msg and "link 'body'" in msg
    assert str(tmp_path / "meshes" / "nothere.stl") in msg


def test_zero_size_mesh(tmp_path):
    path = tmp_path / "flat.obj"
    path.write_text("v 0 0 0\nv 0 0 0\nv 0 0 0\nf 1 2 3\n")
    with pytest.raises(GeometryError, match="zero size|no triangles"):
        _scene_with(shape("mesh", [1, 1, 1], mesh_path=str(path)))


@pytest.mark.parametrize(
    "options",
    [{"margin": -1.0}, {"margin": float("nan")}, {"manifold_cap": 0}, {"broadphase": "x"},
     {"broadphase_slack": -0.1}],
)  # fmt: skip
def test_bad_options(options):
    with pytest.raises(MbsimError):
        CollisionScene.from_model(build_model([part("t", shape("sphere", [1]))]), **options)


def test_hull_made_once_per_point_set_and_copied():
    """convex_polytope keeps each hull it made by content: a second call with the same points
    returns the same hull as a fresh construction (faces, normals, offsets, edges, bytes
    equal) in fresh arrays, so a caller that changes its copy changes no other; other points
    get their own hull. Truth: the hull's facets against scipy's ConvexHull of the points."""
    from mbsim.collision import shapes

    rng = np.random.default_rng(7)
    pts = rng.normal(size=(400, 3))
    first = shapes.convex_polytope(pts)
    fresh = shapes._hull_polytope(pts.copy())
    second = shapes.convex_polytope(pts.copy())
    for p in (first, second):
        for name in ("vertices", "normals", "offsets", "edges", "edge_dirs"):
            assert getattr(p, name).tobytes() == getattr(fresh, name).tobytes(), name
        assert [f.tolist() for f in p.faces] == [f.tolist() for f in fresh.faces]
    assert second.vertices is not first.vertices and second.faces[0] is not first.faces[0]
    first.vertices[:] = 0.0
    first.faces[0][:] = -1
    third = shapes.convex_polytope(pts)
    assert third.vertices.tobytes() == fresh.vertices.tobytes()
    assert third.faces[0].tolist() == fresh.faces[0].tolist()
    # every hull vertex is a point of the set, and the faces' planes are scipy's facets
    hull = ConvexHull(pts)
    assert len(third.vertices) == len(np.unique(hull.simplices))
    d = pts @ third.normals.T - third.offsets
    assert d.max() <= 1e-12
    other = shapes.convex_polytope(pts * 2.0)
    assert np.allclose(other.vertices, 2.0 * fresh.vertices)


def test_mesh_read_once_per_file_state_and_copied(tmp_path, monkeypatch):
    """geometry._read_mesh keeps each mesh file it read (by path, scale, modification time
    and size): a second read of the unchanged file gives the same vertices, faces and
    surface classification as a fresh load_mesh + _surface, in fresh arrays (a caller that
    changes its copy changes no other), without reading the file again; a rewritten file is
    read again. Truth: trimesh's own load of the file, scaled."""
    import trimesh

    from mbsim.collision import geometry

    path = tmp_path / "cube.stl"
    shutil.copy(CUBE, path)
    scale = (1.0, 2.0, 0.5)
    loads = []
    real = geometry.load_mesh

    def counted(*args, **kwargs):
        loads.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(geometry, "load_mesh", counted)
    first = geometry._read_mesh(str(path), scale, "<test>")
    second = geometry._read_mesh(str(path), scale, "<test>")
    assert loads == [str(path)]
    truth = trimesh.load(str(path), force="mesh", process=True)
    assert np.array_equal(first[0], np.asarray(truth.vertices) * np.asarray(scale))
    assert np.array_equal(first[1], np.asarray(truth.faces))
    assert first[2:] == second[2:] == (0, True)  # a closed convex cube
    for a, b in zip(first[:2], second[:2], strict=True):
        assert a.tobytes() == b.tobytes() and a is not b
    first[0][:] = 0.0
    assert geometry._read_mesh(str(path), scale, "<test>")[0].tobytes() == second[0].tobytes()
    assert loads == [str(path)]
    # another scale is another mesh; a rewritten file (an L prism now) is read again
    geometry._read_mesh(str(path), (1.0, 1.0, 1.0), "<test>")
    assert len(loads) == 2
    shutil.copy(ELL, path)
    os.utime(path, ns=(1, 1))
    third = geometry._read_mesh(str(path), scale, "<test>")
    assert len(loads) == 3 and third[2:] == (0, False)  # the L prism: closed, not convex
    ell = trimesh.load(ELL, force="mesh", process=True)
    assert np.array_equal(third[0], np.asarray(ell.vertices) * np.asarray(scale))
