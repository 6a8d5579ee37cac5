"""Loader behaviour for real-world and hostile URDFs (issues 17 and 19): what urdfdom and
PyBullet accept is accepted with a lint entry; absurd numbers, xacro leftovers, mimic cycles
and negative limits are refused with one sentence naming the element.

Expected values are written here by hand (URDF semantics, PyBullet's documented behaviour).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mbsim.errors import GeometryError, MbsimError, UrdfError
from mbsim.io.urdf import MeshPathRefused, load_urdf, parse_urdf_string
from mbsim.simcore.model import build_model
from test_urdf_loader import arm, collision, expect, inertial, jnt, links, one_link, robot

BODY = '<robot name="r">\n<link name="a"/>\n</robot>\n'


# --------------------------------------------------------------------------- XML prolog, tail


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ('<?xml version="0.0" ?>\n' + BODY, "version '0.0' read as 1.0"),
        ("\n\n\n<?xml version='1.0'?>\n" + BODY, "moved to the start"),
        ('<!-- made by hand -->\n<?xml version="1.0"?>\n' + BODY, "moved to the start"),
        ('\n<?xml version="0.0" encoding="utf-8"?>\n' + BODY, "read as 1.0"),
        ('<?xml version="1.0"?>\n' + BODY + "\x00\n", "content after the end of <robot>"),
        ('<?xml version="1.0"?>\n' + BODY + "<robot/>\n", "content after the end of <robot>"),
    ],
)
def test_urdfdom_accepts_so_do_we(tmp_path, text, note):
    path = tmp_path / "r.urdf"
    path.write_bytes(text.encode())
    spec = load_urdf(path)
    assert spec.root == "a"
    assert len(spec.lint) == 1 and note in spec.lint[0], spec.lint


def test_repaired_prolog_keeps_line_numbers(tmp_path):
    """The declaration moves to the start without shifting lines: errors still point at the
    line the user sees (line 5 holds the bad joint)."""
    text = '\n\n<?xml version="0.0"?>\n<robot name="r"><link name="a"/><link name="b"/>\n'
    text += '<joint name="j" type="slider"><parent link="a"/><child link="b"/></joint>\n</robot>'
    path = tmp_path / "bad.urdf"
    path.write_text(text)
    with pytest.raises(UrdfError, match=r"joint 'j' \(line 5\)"):
        load_urdf(path)


def test_repair_keeps_every_safety_refusal(tmp_path):
    """A version-0.0, late declaration in front of an entity, an external DTD or trailing
    garbage that is not after the root is still refused."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    entity = (
        f'\n<?xml version="0.0"?>\n<!DOCTYPE robot [<!ENTITY x SYSTEM "file://{secret}">]>\n'
        '<robot name="r"><link name="a&x;"/></robot>'
    )
    message = expect(tmp_path, entity, UrdfError, "entit", "'x'")
    assert "TOPSECRET" not in message
    dtd = (
        '<?xml version="0.0"?>\n<!DOCTYPE robot SYSTEM "http://example.invalid/r.dtd">\n'
        '<robot name="r"><link name="a"/></robot>'
    )
    expect(tmp_path, dtd, UrdfError, "external DTD")
    xinclude = (
        '<?xml version="0.0"?>\n<robot name="r" xmlns:xi="http://www.w3.org/2001/XInclude">'
        f'<link name="a"/><xi:include href="file://{secret}" parse="text"/></robot>'
    )
    spec_or_error = None
    path = tmp_path / "xi.urdf"
    path.write_text(xinclude)
    try:
        spec_or_error = load_urdf(path)
    except MbsimError as exc:
        spec_or_error = exc
    assert "TOPSECRET" not in str(spec_or_error) and "TOPSECRET" not in repr(
        getattr(spec_or_error, "lint", "")
    )
    # a malformed body is still malformed, repair or not
    expect(tmp_path, '<?xml version="0.0"?>\n<robot name="r"><link name="a">', UrdfError, "line")


# --------------------------------------------------------------------------- small extensions


def test_rpy_with_four_numbers_uses_three(tmp_path):
    text = arm(f'<origin rpy="{math.pi / 2} 0 0 7"/>')
    path = tmp_path / "r.urdf"
    path.write_text(text)
    spec = load_urdf(path)
    rx90 = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(spec.joints[0].origin[:3, :3], rx90, atol=1e-15)
    assert any("4 numbers" in entry and "rpy" in entry for entry in spec.lint)


def test_mesh_scale_with_four_numbers_uses_three(tmp_path):
    path = tmp_path / "r.urdf"
    path.write_text(one_link(collision('<mesh filename="m.stl" scale="1 2 3 4"/>')))
    spec = load_urdf(path)
    assert spec.link("forearm").collisions[0].params == (1.0, 2.0, 3.0)
    assert any("4 numbers" in entry and "scale" in entry for entry in spec.lint)


def test_lower_limit_above_upper_means_unlimited(tmp_path):
    path = tmp_path / "r.urdf"
    path.write_text(arm('<limit lower="1" upper="-1" effort="1" velocity="1"/>'))
    spec = load_urdf(path)
    joint = spec.joints[0]
    assert math.isnan(joint.lower) and math.isnan(joint.upper)
    assert any("no position limit" in entry for entry in spec.lint)


@pytest.mark.parametrize(
    "value",
    ["$(optenv HUSKY_IMU_XYZ 0.19 0 0.149)", "${radius*2} 0 0", "$(find pkg)/m.stl"],
)
def test_xacro_expression_says_run_xacro(tmp_path, value):
    attr = "filename" if value.endswith(".stl") else "xyz"
    tag = "mesh" if attr == "filename" else "origin"
    body = f'<{tag} {attr}="{value}"/>'
    text = one_link(collision(body)) if tag == "mesh" else arm(body)
    expect(tmp_path, text, UrdfError, "xacro file", "run xacro", f"<{tag}>")


# --------------------------------------------------------------------------- refusals (issue 17)

REFUSED = {
    "negative_effort": (arm('<limit effort="-1" velocity="1"/>'), "joint 'elbow'", "effort", "-1"),
    "negative_velocity": (
        arm('<limit effort="1" velocity="-2"/>'),
        "joint 'elbow'",
        "velocity",
        "-2",
    ),
    "negative_damping": (arm('<dynamics damping="-0.5"/>'), "joint 'elbow'", "damping", "-0.5"),
    "negative_friction": (arm('<dynamics friction="-3"/>'), "joint 'elbow'", "friction", "-3"),
    "mimic_cycle": (
        robot(
            links("a", "b", "c")
            + jnt("j1", "a", "b", extra='<mimic joint="j2"/>')
            + jnt("j2", "b", "c", extra='<mimic joint="j1"/>')
        ),
        "mimic joints form a cycle",
        "'j1'",
        "'j2'",
    ),
    "mimic_cycle3": (
        robot(
            links("a", "b", "c", "d", "e")
            + jnt("j0", "a", "b", extra='<mimic joint="j1"/>')
            + jnt("j1", "b", "c", extra='<mimic joint="j2"/>')
            + jnt("j2", "c", "d", extra='<mimic joint="j3"/>')
            + jnt("j3", "d", "e", extra='<mimic joint="j1"/>')
        ),
        "'j1' -> 'j2' -> 'j3' -> 'j1'",
    ),
    "huge_mimic_offset": (
        robot(
            links("a", "b", "c")
            + jnt("j1", "a", "b")
            + jnt("j2", "b", "c", extra='<mimic joint="j1" offset="1e300"/>')
        ),
        "joint 'j2'",
        "offset",
        "1e+300",
    ),
    "huge_mass": (one_link(inertial("1e300")), "link 'forearm'", "1e+300 kg", "bound"),
    "huge_inertia": (
        one_link(inertial(inertia='ixx="1e300" iyy="1e300" izz="1e300"')),
        "link 'forearm'",
        "1e+300",
        "bound",
    ),
    "huge_joint_offset": (arm('<origin xyz="0 0 1e300"/>'), "joint 'elbow'", "1e300", "offset"),
    "huge_com_offset": (
        one_link(inertial(origin='<origin xyz="1e300 0 0"/>')),
        "link 'forearm'",
        "1e300",
    ),
    "huge_collision_offset": (
        one_link(collision('<sphere radius="1"/>', '<origin xyz="0 2e6 0"/>')),
        "link 'forearm'",
        "2e6",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_with_one_sentence(tmp_path, case):
    text, *fragments = REFUSED[case]
    expect(tmp_path, text, UrdfError, *fragments)


@pytest.mark.parametrize(
    ("shape", "value"),
    [
        ('<box size="1e200 1 1"/>', "1e+200"),
        ('<sphere radius="1e300"/>', "1e+300"),
        ('<cylinder radius="1" length="2e6"/>', "2e+06"),
        ('<capsule radius="1e-12" length="1"/>', "1e-12"),
        ('<mesh filename="m.stl" scale="1e300"/>', "1e+300"),
        ('<mesh filename="m.stl" scale="1 1e-10 1"/>', "1e-10"),
    ],
)
def test_sizes_out_of_range_are_refused(tmp_path, shape, value):
    message = expect(tmp_path, one_link(collision(shape)), GeometryError, "link 'forearm'", value)
    assert "range" in message


def test_bounds_themselves_are_accepted(tmp_path):
    """1e-9 m and 1e6 m are inside the documented range, 1e6 kg and 1e9 kg m^2 too."""
    path = tmp_path / "r.urdf"
    path.write_text(
        one_link(
            inertial("1e6", 'ixx="1e9" iyy="1e9" izz="1e9"')
            + collision('<box size="1e-9 1e6 1"/>', '<origin xyz="1e6 0 -1e6"/>')
        )
    )
    assert load_urdf(path).link("forearm").collisions[0].params == (1e-9, 1e6, 1.0)


def test_messages_are_capped(tmp_path):
    """Thousands of root links, a megabyte attribute: the sentence stays short."""
    many = robot(links(*(f"link_{i:06d}" for i in range(20_000))))
    message = expect(tmp_path, many, UrdfError, "20000 root links")
    assert len(message) < 1000
    huge = arm(f'<origin xyz="{"1" * 1_000_000}"/>')
    message = expect(tmp_path, huge, UrdfError, "joint 'elbow'")
    assert len(message) < 1000


def test_string_api_repairs_too():
    spec = parse_urdf_string(b'\n<?xml version="0.0"?>\n' + BODY.encode(), source="s.urdf")
    assert len(spec.lint) == 1 and "1.0" in spec.lint[0] and "start" in spec.lint[0]


# --------------------------------------------------------------------------- inertia from shapes


def _inertia_of(tmp_path, content: str, **kwargs) -> tuple[np.ndarray, list[str]]:
    path = tmp_path / "r.urdf"
    path.write_text(one_link(content))
    spec = load_urdf(path, **kwargs)
    return spec.link("forearm").inertial.inertia, spec.lint


ZERO = 'ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"'


def test_zero_inertia_box_gets_the_box_inertia(tmp_path):
    """m = 2 kg, box 0.1 x 0.2 x 0.3 m: I = m/12 diag(b^2+c^2, a^2+c^2, a^2+b^2)."""
    inertia, lint = _inertia_of(
        tmp_path, inertial("2", ZERO) + collision('<box size="0.1 0.2 0.3"/>')
    )
    expected = 2.0 / 12.0 * np.diag([0.04 + 0.09, 0.01 + 0.09, 0.01 + 0.04])
    np.testing.assert_allclose(inertia, expected, rtol=1e-12, atol=1e-15)
    assert len(lint) == 1 and "collision shapes" in lint[0] and "all-zero" in lint[0]


def test_missing_inertia_sphere_and_rotated_cylinder(tmp_path):
    """No <inertia> at all: a 3 kg sphere of radius 0.2 m has 2/5 m r^2; a cylinder (r, h)
    turned 90 degrees about x has its axis along y: Iyy = m r^2/2, Ixx = Izz = m(3r^2+h^2)/12."""
    inertia, lint = _inertia_of(
        tmp_path, '<inertial><mass value="3"/></inertial>' + collision('<sphere radius="0.2"/>')
    )
    np.testing.assert_allclose(inertia, 0.4 * 3.0 * 0.04 * np.eye(3), rtol=1e-12)
    assert "no <inertia>" in lint[0]
    r, h = 0.1, 0.5
    inertia, _ = _inertia_of(
        tmp_path,
        inertial("3", ZERO)
        + collision(f'<cylinder radius="{r}" length="{h}"/>', f'<origin rpy="{math.pi / 2} 0 0"/>'),
    )
    side = 3.0 * (3 * r * r + h * h) / 12.0
    np.testing.assert_allclose(inertia, np.diag([side, 3.0 * r * r / 2.0, side]), atol=1e-14)


def test_two_boxes_use_the_parallel_axis_theorem(tmp_path):
    """Two equal 1 m cubes centred at x = +-1: total 4 kg, each 2 kg with m/6 about its own
    centre; about the joint centroid Iyy = Izz = 2 (2/6 + 2 * 1^2), Ixx = 2 * 2/6."""
    inertia, _ = _inertia_of(
        tmp_path,
        inertial("4", ZERO)
        + collision('<box size="1 1 1"/>', '<origin xyz="1 0 0"/>')
        + collision('<box size="1 1 1"/>', '<origin xyz="-1 0 0"/>'),
    )
    own = 2.0 / 6.0
    np.testing.assert_allclose(inertia, np.diag([2 * own, 2 * (own + 2), 2 * (own + 2)]))


def test_capsule_inertia_closed_form(tmp_path):
    """Capsule r = 0.1, cylinder length 0.4, 1 kg: cylinder plus two hemispheres."""
    r, h, m = 0.1, 0.4, 1.0
    vc, vh = math.pi * r * r * h, 2.0 / 3.0 * math.pi * r**3
    v = vc + 2 * vh
    izz = m / v * (vc * r * r / 2 + 2 * vh * 2 * r * r / 5)
    ixx = (
        m
        / v
        * (vc * (h * h / 12 + r * r / 4) + 2 * vh * (2 * r * r / 5 + h * h / 4 + 3 * h * r / 8))
    )
    inertia, _ = _inertia_of(
        tmp_path, inertial("1", ZERO) + collision(f'<capsule radius="{r}" length="{h}"/>')
    )
    np.testing.assert_allclose(inertia, np.diag([ixx, ixx, izz]), rtol=1e-12)


def test_mesh_inertia_of_a_scaled_cube(tmp_path):
    """A unit-cube STL scaled (0.1, 0.2, 0.3) is the box of the first test."""
    corners = [(x, y, z) for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)]
    import trimesh

    cube = trimesh.Trimesh(corners, trimesh.creation.box().faces).convex_hull
    cube.export(tmp_path / "cube.stl")
    inertia, _ = _inertia_of(
        tmp_path,
        inertial("2", ZERO) + collision('<mesh filename="cube.stl" scale="0.1 0.2 0.3"/>'),
    )
    expected = 2.0 / 12.0 * np.diag([0.04 + 0.09, 0.01 + 0.09, 0.01 + 0.04])
    np.testing.assert_allclose(inertia, expected, rtol=1e-9, atol=1e-15)


def test_inertia_from_collision_can_be_switched_off(tmp_path):
    inertia, lint = _inertia_of(
        tmp_path,
        inertial("2", ZERO) + collision('<box size="0.1 0.2 0.3"/>'),
        inertia_from_collision=False,
    )
    assert not inertia.any() and not lint
    path = tmp_path / "r.urdf"
    path.write_text(
        one_link('<inertial><mass value="3"/></inertial>' + collision('<sphere radius="0.2"/>'))
    )
    with pytest.raises(UrdfError, match="<inertia>"):
        load_urdf(path, inertia_from_collision=False)


def test_nonzero_or_massless_inertias_are_kept(tmp_path):
    inertia, lint = _inertia_of(
        tmp_path, inertial("2", 'ixx="1" iyy="1" izz="1"') + collision('<box size="1 1 1"/>')
    )
    np.testing.assert_array_equal(inertia, np.eye(3))
    inertia, lint = _inertia_of(tmp_path, inertial("0", ZERO) + collision('<box size="1 1 1"/>'))
    assert not inertia.any() and not lint


# --------------------------------------------------------------------------- mesh path confinement


@pytest.fixture
def no_ros_env(monkeypatch):
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)


def _stl(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("solid m\nendsolid m\n")
    return path


def _mesh_robot(tmp_path, uri: str, folder: str = "robot"):
    path = tmp_path / folder / "r.urdf"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(one_link(collision(f'<mesh filename="{uri}"/>')))
    return path


@pytest.mark.parametrize(
    "uri", ["../secret.stl", "file://../secret.stl", "meshes/../../secret.stl"]
)
def test_relative_escape_from_the_robot_folder_is_refused(tmp_path, no_ros_env, uri):
    """The refusal reads the same whether the target exists or not (no existence oracle)."""
    path = _mesh_robot(tmp_path, uri)
    with pytest.raises(MeshPathRefused) as absent:
        load_urdf(path)
    _stl(tmp_path / "secret.stl")
    with pytest.raises(MeshPathRefused) as present:
        load_urdf(path)
    assert str(absent.value) == str(present.value)
    message = str(present.value)
    assert "outside" in message and "--allow-outside-paths" in message and "\n" not in message
    found = load_urdf(path, allow_outside_paths=True).link("forearm").collisions[0]
    assert found.mesh_path == str(tmp_path / "secret.stl")


def test_package_escape_is_refused(tmp_path, no_ros_env):
    pkg = tmp_path / "pkg"
    _stl(pkg / "meshes" / "ok.stl")
    _stl(tmp_path / "x.stl")
    path = _mesh_robot(tmp_path, "package://p/../../x.stl", folder="elsewhere/robot")
    with pytest.raises(MeshPathRefused, match="outside"):
        load_urdf(path, package_dirs={"p": pkg})
    good = _mesh_robot(tmp_path, "package://p/meshes/ok.stl", folder="elsewhere/robot")
    spec = load_urdf(good, package_dirs={"p": pkg})
    assert spec.link("forearm").collisions[0].mesh_path == str(pkg / "meshes" / "ok.stl")


@pytest.mark.parametrize("uri", ["file:///etc/passwd", "/etc/passwd", "file:///no/such/passwd"])
def test_non_mesh_files_are_never_opened(tmp_path, no_ros_env, uri):
    path = _mesh_robot(tmp_path, uri)
    with pytest.raises(MeshPathRefused) as info:
        load_urdf(path, allow_outside_paths=True)
    message = str(info.value)
    assert "does not name a mesh file" in message
    assert "not found" not in message and "looked at" not in message


def test_absolute_paths_need_a_declared_root(tmp_path, no_ros_env):
    outside = _stl(tmp_path / "lib" / "m.stl")
    inside = _stl(tmp_path / "robot" / "meshes" / "m.stl")
    path = _mesh_robot(tmp_path, f"file://{outside}")
    with pytest.raises(MeshPathRefused, match="outside"):
        load_urdf(path)
    spec = load_urdf(path, package_dirs={"lib": tmp_path / "lib"})
    assert spec.link("forearm").collisions[0].mesh_path == str(outside)
    path = _mesh_robot(tmp_path, str(inside))
    assert load_urdf(path).link("forearm").collisions[0].mesh_path == str(inside)


def test_parent_folder_search_like_pybullet(tmp_path, no_ros_env):
    """pybullet_data/racecar/racecar_differential.urdf names 'differential/diff_ring.stl',
    which lives in pybullet_data/differential/: found in a folder above the URDF."""
    mesh = _stl(tmp_path / "data" / "differential" / "ring.stl")
    path = _mesh_robot(tmp_path, "differential/ring.stl", folder="data/racecar")
    assert load_urdf(path).link("forearm").collisions[0].mesh_path == str(mesh)
    # a bare file name is not searched upwards (it would match anything anywhere)
    _stl(tmp_path / "data" / "lonely.stl")
    path = _mesh_robot(tmp_path, "lonely.stl", folder="data/racecar")
    assert load_urdf(path).link("forearm").collisions[0].mesh_path is None
    # a found folder confines the rest of the path like a package
    _stl(tmp_path / "data" / "other.stl")
    path = _mesh_robot(tmp_path, "differential/../../other.stl", folder="data/racecar")
    with pytest.raises(MeshPathRefused):
        load_urdf(path)


def test_plane_geometry_is_kept_apart_as_a_half_space(tmp_path):
    """pybullet_data/plane_implicit.urdf: <plane normal="0 0 1"/> beside a box. Until issue 19
    the plane was dropped with a note; it is now the link's half-space (LinkSpec.planes, used
    by the collision scene: tests/test_collision_plane.py), not one of its shapes."""
    path = tmp_path / "r.urdf"
    path.write_text(
        one_link(collision('<plane normal="0 0 1"/>') + collision('<box size="1 2 3"/>'))
    )
    spec = load_urdf(path)
    (geom,) = spec.link("forearm").collisions
    assert geom.kind == "box" and geom.params == (1.0, 2.0, 3.0)
    (plane,) = spec.link("forearm").planes
    assert plane.kind == "plane" and plane.params == (0.0, 0.0, 1.0)


@pytest.mark.parametrize(
    ("attr_text", "expected"),
    [('xyz="0.07, 0, -0.69"', (0.07, 0.0, -0.69)), ('xyz="1 2 3.."', (1.0, 2.0, 3.0))],
)
def test_numbers_as_pybullet_reads_them(tmp_path, attr_text, expected):
    """pybullet_data's bike.urdf writes commas between origin numbers, biped2d_pybullet.urdf a
    stray period ('-1.57.'); PyBullet reads the numbers, so do we, with a note."""
    path = tmp_path / "r.urdf"
    path.write_text(arm(f"<origin {attr_text}/>"))
    spec = load_urdf(path)
    np.testing.assert_allclose(spec.joints[0].origin[:3, 3], expected)
    assert any("as PyBullet does" in w for w in spec.lint)
    path.write_text(arm('<limit lower="-1.57." upper="1" effort="1" velocity="1"/>'))
    assert load_urdf(path).joints[0].lower == -1.57


def test_mimic_of_a_missing_joint_is_ignored_with_a_warning(tmp_path):
    """alex_psyonic_hands.urdf: ``<mimic joint="index_q1">`` where no such joint exists.
    PyBullet ignores <mimic>, urdfdom does not check the target and Pinocchio ignores <mimic>
    by default: the joint is kept, free, and nv equals Pinocchio's."""
    text = robot(
        "".join(f'<link name="{n}">{inertial()}</link>' for n in "abc")
        + jnt("j1", "a", "b", "continuous")
        + jnt("j2", "b", "c", "continuous", extra='<mimic joint="ghost" multiplier="2"/>')
    )
    path = tmp_path / "hand.urdf"
    path.write_text(text)
    spec = load_urdf(path)
    assert all(j.mimic is None for j in spec.joints)
    (note,) = [w for w in spec.lint if "mimic" in w]
    assert str(path) in note and "'j2'" in note and "'ghost'" in note and "ignored" in note
    pin = pytest.importorskip("pinocchio")
    assert build_model([spec]).nv == pin.buildModelFromXML(text).nv == 2
