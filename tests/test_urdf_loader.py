"""Tests of :mod:`mbsim.io.urdf`: conversion, validation messages, XML safety, mesh lookup.

Expected values are computed by hand or with numpy written here, never taken from the loader.
"""

from __future__ import annotations

import importlib.metadata
import math
import os
import re
import sysconfig
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from mbsim.errors import GeometryError, MbsimError, UrdfError
from mbsim.io.urdf import load_urdf, parse_urdf_string, resolve_mesh_uri

HALF_PI = "1.5707963267948966"
RZ90 = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
RX90 = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll), written out by hand."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


GOOD = f"""<?xml version="1.0"?>
<robot name="arm">
  <link name="base">
    <inertial>
      <origin xyz="0.1 0.2 0.3" rpy="0 0 {HALF_PI}"/>
      <mass value="2.5"/>
      <inertia ixx="1" ixy="0" ixz="0" iyy="2" iyz="0" izz="3"/>
    </inertial>
    <visual><geometry><capsule radius="1" length="1"/></geometry></visual>
    <collision name="c_box">
      <origin xyz="0 0 0.05"/>
      <geometry><box size="0.1 0.2 0.3"/></geometry>
    </collision>
    <collision>
      <geometry><capsule radius="0.04" length="0.5"/></geometry>
    </collision>
  </link>
  <link name="upper">
    <inertial>
      <origin xyz="0 0 0.25" rpy="0.3 -0.4 0.5"/>
      <mass value="1.0"/>
      <inertia ixx="0.04" ixy="0.001" ixz="-0.002" iyy="0.05" iyz="0.003" izz="0.02"/>
    </inertial>
    <collision><geometry><sphere radius="0.05"/></geometry></collision>
    <collision>
      <origin rpy="{HALF_PI} 0 0"/>
      <geometry><cylinder radius="0.03" length="0.4"/></geometry>
    </collision>
  </link>
  <link name="fore"/>
  <link name="finger_a">
    <inertial><mass value="0"/><inertia ixx="0" iyy="0" izz="0"/></inertial>
  </link>
  <link name="finger_b"/>
  <link name="finger_c"/>
  <link name="tool">
    <collision><geometry><mesh filename="meshes/tool.stl"/></geometry></collision>
    <collision><geometry><mesh filename="meshes/tool.stl" scale="1 -1 2"/></geometry></collision>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.5" rpy="0 0 {HALF_PI}"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1.5" upper="2" effort="30" velocity="4"/>
    <dynamics damping="0.7" friction="0.2"/>
  </joint>
  <joint name="elbow" type="continuous">
    <parent link="upper"/><child link="fore"/>
    <origin xyz="0.1 0.2 0.3" rpy="0.3 -0.4 0.5"/>
  </joint>
  <joint name="slide_a" type="prismatic">
    <parent link="fore"/><child link="finger_a"/>
    <axis xyz="0 0 2"/>
    <limit lower="0" upper="0.04" effort="10" velocity="0.1"/>
  </joint>
  <joint name="slide_b" type="prismatic">
    <parent link="fore"/><child link="finger_b"/>
    <axis xyz="0 0 -1"/>
    <mimic joint="slide_a" multiplier="-1" offset="0.01"/>
  </joint>
  <joint name="slide_c" type="prismatic">
    <parent link="fore"/><child link="finger_c"/>
    <axis xyz="0 0 1"/>
    <mimic joint="slide_a"/>
  </joint>
  <joint name="tool_mount" type="fixed">
    <parent link="fore"/><child link="tool"/>
    <origin xyz="0 0 0.1"/>
    <axis xyz="0 0 0"/>
  </joint>
</robot>
"""


@pytest.fixture
def good(tmp_path):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "tool.stl").write_text("solid t\nendsolid t\n")
    path = tmp_path / "arm.urdf"
    path.write_text(GOOD)
    return path


def joint(spec, name):
    return next(j for j in spec.joints if j.name == name)


# --------------------------------------------------------------------------- good file


def test_structure_and_passthrough(good):
    pose = np.eye(4)
    pose[:3, 3] = (1.0, 2.0, 3.0)
    spec = load_urdf(good, base="floating", base_pose=pose)
    assert spec.name == "arm"
    assert spec.root == "base"
    assert spec.base == "floating"
    np.testing.assert_array_equal(spec.base_pose, pose)
    assert spec.source == str(good)
    assert [link.name for link in spec.links] == [
        "base", "upper", "fore", "finger_a", "finger_b", "finger_c", "tool",
    ]  # fmt: skip
    assert [(j.name, j.type, j.parent, j.child) for j in spec.joints] == [
        ("shoulder", "revolute", "base", "upper"),
        ("elbow", "continuous", "upper", "fore"),
        ("slide_a", "prismatic", "fore", "finger_a"),
        ("slide_b", "prismatic", "fore", "finger_b"),
        ("slide_c", "prismatic", "fore", "finger_c"),
        ("tool_mount", "fixed", "fore", "tool"),
    ]
    assert load_urdf(good, name="other").name == "other"


def test_joint_origins(good):
    spec = load_urdf(good)
    expected = np.eye(4)
    expected[:3, :3] = RZ90
    expected[:3, 3] = (0.0, 0.0, 0.5)
    np.testing.assert_allclose(joint(spec, "shoulder").origin, expected, atol=1e-15)
    expected = np.eye(4)
    expected[:3, :3] = rpy_matrix(0.3, -0.4, 0.5)
    expected[:3, 3] = (0.1, 0.2, 0.3)
    np.testing.assert_allclose(joint(spec, "elbow").origin, expected, atol=1e-14)
    expected = np.eye(4)
    expected[2, 3] = 0.1
    np.testing.assert_allclose(joint(spec, "tool_mount").origin, expected, atol=0)


def test_axes_and_lint(good):
    spec = load_urdf(good)
    np.testing.assert_allclose(joint(spec, "shoulder").axis, [0, 1, 0])
    np.testing.assert_allclose(joint(spec, "elbow").axis, [1, 0, 0])  # URDF default
    np.testing.assert_allclose(joint(spec, "slide_a").axis, [0, 0, 1])  # from "0 0 2"
    np.testing.assert_allclose(joint(spec, "slide_b").axis, [0, 0, -1])
    assert len(spec.lint) == 1
    assert "slide_a" in spec.lint[0] and "(0, 0, 2)" in spec.lint[0]


def test_inertials(good):
    spec = load_urdf(good)
    base = spec.link("base").inertial
    assert base.mass == 2.5
    np.testing.assert_allclose(base.com, [0.1, 0.2, 0.3])
    # Rz(90) maps x->y, y->-x, so the x and y principal moments swap.
    np.testing.assert_allclose(base.inertia, np.diag([2.0, 1.0, 3.0]), atol=1e-15)

    upper = spec.link("upper").inertial
    i_urdf = np.array([[0.04, 0.001, -0.002], [0.001, 0.05, 0.003], [-0.002, 0.003, 0.02]])
    r = rpy_matrix(0.3, -0.4, 0.5)
    np.testing.assert_allclose(upper.inertia, r @ i_urdf @ r.T, atol=1e-15)
    np.testing.assert_allclose(upper.com, [0.0, 0.0, 0.25])
    assert upper.mass == 1.0

    assert spec.link("fore").inertial is None
    massless = spec.link("finger_a").inertial
    assert massless.mass == 0.0
    np.testing.assert_array_equal(massless.inertia, np.zeros((3, 3)))


def test_collisions(good):
    spec = load_urdf(good)
    box, capsule = spec.link("base").collisions  # the <visual> capsule is ignored
    assert (box.kind, box.params, box.name) == ("box", (0.1, 0.2, 0.3), "c_box")
    np.testing.assert_allclose(box.origin[:3, 3], [0, 0, 0.05])
    np.testing.assert_allclose(box.origin[:3, :3], np.eye(3))
    assert (capsule.kind, capsule.params, capsule.name) == ("capsule", (0.04, 0.5), "")
    np.testing.assert_array_equal(capsule.origin, np.eye(4))

    sphere, cylinder = spec.link("upper").collisions
    assert (sphere.kind, sphere.params) == ("sphere", (0.05,))
    assert (cylinder.kind, cylinder.params) == ("cylinder", (0.03, 0.4))
    np.testing.assert_allclose(cylinder.origin[:3, :3], RX90, atol=1e-15)
    assert sphere.mesh_path is None and sphere.mesh_uri is None

    plain, mirrored = spec.link("tool").collisions
    assert (plain.kind, plain.params, plain.mesh_uri) == (
        "mesh",
        (1.0, 1.0, 1.0),
        "meshes/tool.stl",
    )
    assert plain.mesh_path == str(good.parent / "meshes" / "tool.stl")
    assert mirrored.params == (1.0, -1.0, 2.0)


def test_limits_dynamics_mimic(good):
    spec = load_urdf(good)
    shoulder = joint(spec, "shoulder")
    assert (shoulder.lower, shoulder.upper, shoulder.effort, shoulder.velocity) == (
        -1.5, 2.0, 30.0, 4.0,
    )  # fmt: skip
    assert (shoulder.damping, shoulder.friction) == (0.7, 0.2)
    elbow = joint(spec, "elbow")
    for value in (elbow.lower, elbow.upper, elbow.effort, elbow.velocity, elbow.damping):
        assert math.isnan(value)
    assert shoulder.mimic is None
    mimic = joint(spec, "slide_b").mimic
    assert (mimic.master, mimic.multiplier, mimic.offset) == ("slide_a", -1.0, 0.01)
    mimic = joint(spec, "slide_c").mimic
    assert (mimic.master, mimic.multiplier, mimic.offset) == ("slide_a", 1.0, 0.0)


def test_parse_urdf_string_matches_file(good):
    from_text = parse_urdf_string(GOOD, source="mine", base_dir=good.parent)
    from_file = load_urdf(good)
    assert from_text.source == "mine"
    assert from_text.link("tool").collisions[0].mesh_path == str(good.parent / "meshes/tool.stl")
    np.testing.assert_array_equal(
        joint(from_text, "elbow").origin, joint(from_file, "elbow").origin
    )
    # Without base_dir a relative mesh cannot be found, which is not a load error.
    assert parse_urdf_string(GOOD.encode()).link("tool").collisions[0].mesh_path is None


def test_unused_elements_are_ignored(tmp_path):
    """Parts mbsim does not use may be broken (yourdfpy alone would crash on these)."""
    text = robot(
        '<link name="a"><visual><geometry><cone/></geometry></visual></link><link name="b"/>'
        + jnt("j", "a", "b", extra='<calibration rising="abc"/><safety_controller k_velocity="x"/>')
        + '<material name="m"><color rgba="a b"/></material><gazebo reference="a"><mu1>x</mu1>'
        + "</gazebo><transmission name='t'/>"
    )
    spec = parse_urdf_string(text)
    assert [link.name for link in spec.links] == ["a", "b"]
    assert spec.link("a").collisions == []


def test_missing_robot_name_is_linted(tmp_path):
    path = tmp_path / "nameless.urdf"
    path.write_text('<robot><link name="a"/></robot>')
    spec = load_urdf(path)
    assert spec.name == "nameless"
    assert any("name" in entry for entry in spec.lint)


# --------------------------------------------------------------------------- errors


def robot(body: str, name: str = "r") -> str:
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n{body}\n</robot>\n'


def links(*names: str) -> str:
    return "\n".join(f'<link name="{n}"/>' for n in names)


def jnt(name: str, parent: str, child: str, type_: str = "revolute", extra: str = "") -> str:
    return (
        f'<joint name="{name}" type="{type_}"><parent link="{parent}"/>'
        f'<child link="{child}"/>{extra}</joint>'
    )


def inertial(mass: str = "1", inertia: str = 'ixx="1" iyy="1" izz="1"', origin: str = "") -> str:
    return f'<inertial>{origin}<mass value="{mass}"/><inertia {inertia}/></inertial>'


def collision(shape: str, origin: str = "") -> str:
    return f"<collision>{origin}<geometry>{shape}</geometry></collision>"


def arm(joint_extra: str = "", type_: str = "revolute") -> str:
    """Two links joined by joint 'elbow' with extra children."""
    return robot(links("upper", "forearm") + jnt("elbow", "upper", "forearm", type_, joint_extra))


def one_link(content: str) -> str:
    return robot(f'<link name="forearm">{content}</link>')


def expect(tmp_path, text, exc, *fragments, **kwargs):
    """Load ``text`` from bad.urdf; check type, one line, file name and fragments."""
    path = tmp_path / "bad.urdf"
    path.write_text(text)
    with pytest.raises(MbsimError) as info:
        load_urdf(path, **kwargs)
    assert type(info.value) is exc, info.value
    message = str(info.value)
    assert "\n" not in message
    for fragment in ("bad.urdf", *fragments):
        assert fragment in message, (fragment, message)
    return message


CASES = {
    # XML level
    "malformed": ('<robot name="r">\n<link name="a">\n</robot>', "line 3", "not well-formed"),
    "not_xml": ("hello world", "line 1", "not well-formed"),
    "empty": ("", "not well-formed"),
    "root_not_robot": ('<model name="m"><link name="a"/></model>', "<model>"),
    "xacro": (
        robot('<xacro:property xmlns:xacro="http://www.ros.org/wiki/xacro" name="x"/>'),
        "xacro:property",
    ),
    "xacro_wiki": (
        robot('<xacro:macro xmlns:xacro="http://wiki.ros.org/xacro" name="x"/>'),
        "xacro:macro",
    ),
    # topology
    "missing_parent": (robot(links("a") + jnt("elbow", "ghost", "a")), "joint 'elbow'", "'ghost'"),
    "missing_child": (robot(links("a") + jnt("elbow", "a", "ghost")), "joint 'elbow'", "'ghost'"),
    "two_parents": (
        robot(links("a", "b", "c") + jnt("j1", "a", "c") + jnt("j2", "b", "c")),
        "link 'c'",
        "'j1'",
        "'j2'",
    ),
    "cycle": (
        robot(links("r", "a", "b") + jnt("j1", "a", "b") + jnt("j2", "b", "a")),
        "cycle",
        "'j1'",
        "'j2'",
        "'a'",
        "'b'",
    ),
    "cycle3": (
        robot(
            links("r", "a", "b", "c")
            + jnt("j1", "a", "b")
            + jnt("j2", "b", "c")
            + jnt("j3", "c", "a")
        ),
        "joints 'j1', 'j2', 'j3' form a cycle",
        "'a' -> 'b' -> 'c' -> 'a'",
    ),
    "self_loop": (robot(links("r", "a") + jnt("j1", "a", "a")), "cycle", "'j1'", "'a'"),
    "two_roots": (
        robot(links("a", "b", "c") + jnt("j1", "a", "c")),
        "2 root links",
        "'a'",
        "'b'",
    ),
    "no_links": (robot("", name="empty"), "robot 'empty'", "no <link>"),
    "duplicate_link": (robot(links("a", "a")), "link name 'a'", "twice"),
    "duplicate_joint": (
        robot(links("a", "b", "c") + jnt("j", "a", "b") + jnt("j", "a", "c")),
        "joint name 'j'",
        "twice",
    ),
    # joints
    "unknown_type": (arm(type_="slider"), "joint 'elbow'", "'slider'"),
    # planar joints are supported (3 DoF): see test_model_builder_bases.py
    # a mimic of a joint that does not exist is ignored with a note: test_urdf_hardening.py
    "mimic_self": (arm('<mimic joint="elbow"/>'), "joint 'elbow'", "itself"),
    "zero_axis": (arm('<axis xyz="0 0 0.0"/>'), "joint 'elbow'", "(0, 0, 0)"),
    # lower > upper is accepted as "unlimited" (Bullet): see test_urdf_hardening.py
    "nan_origin": (arm('<origin xyz="0 nan 0"/>'), "joint 'elbow'", "xyz='0 nan 0'"),
    "inf_rpy": (arm('<origin rpy="0 0 inf"/>'), "joint 'elbow'", "rpy='0 0 inf'"),
    "nan_axis": (arm('<axis xyz="nan 0 1"/>'), "joint 'elbow'", "xyz='nan 0 1'"),
    "inf_limit": (arm('<limit lower="-inf" upper="1"/>'), "joint 'elbow'", "lower='-inf'"),
    "nan_damping": (arm('<dynamics damping="nan"/>'), "joint 'elbow'", "damping='nan'"),
    "nan_mimic": (
        robot(
            links("upper", "forearm", "hand")
            + jnt("elbow", "upper", "forearm")
            + jnt("wrist", "forearm", "hand", extra='<mimic joint="elbow" offset="nan"/>')
        ),
        "joint 'wrist'",
        "offset='nan'",
    ),
    "short_xyz": (arm('<origin xyz="1 2"/>'), "joint 'elbow'", "xyz='1 2'", "3 number"),
    "word_xyz": (arm('<origin xyz="1 two 3"/>'), "joint 'elbow'", "xyz='1 two 3'"),
    "no_type": (
        robot(links("a", "b") + '<joint name="elbow"><parent link="a"/><child link="b"/></joint>'),
        "joint 'elbow'",
        "'type'",
    ),
    "no_parent_element": (
        robot(links("a", "b") + '<joint name="elbow" type="fixed"><child link="b"/></joint>'),
        "joint 'elbow'",
        "<parent>",
    ),
    "no_child_link_attr": (
        robot(
            links("a", "b") + '<joint name="elbow" type="fixed"><parent link="a"/><child/></joint>'
        ),
        "joint 'elbow'",
        "<child>",
    ),  # fmt: skip
    "mimic_no_joint": (arm("<mimic/>"), "joint 'elbow'", "<mimic>"),
    "link_no_name": (robot("<link/>"), "<link>", "'name'"),
    # inertia
    "negative_mass": (one_link(inertial("-2.5")), "link 'forearm'", "-2.5"),
    "nan_mass": (one_link(inertial("nan")), "link 'forearm'", "value='nan'"),
    "inf_mass": (one_link(inertial("inf")), "link 'forearm'", "value='inf'"),
    "nan_inertia": (
        one_link(inertial(inertia='ixx="1" iyy="1" izz="1" ixy="nan"')),
        "link 'forearm'",
        "ixy='nan'",
    ),
    "nan_inertial_origin": (
        one_link(inertial(origin='<origin xyz="0 0 nan"/>')),
        "link 'forearm'",
        "xyz='0 0 nan'",
    ),
    "not_psd": (
        # eigenvalues of [[1, 2, 0], [2, 1, 0], [0, 0, 1]] are 3, 1, -1
        one_link(inertial(inertia='ixx="1" iyy="1" izz="1" ixy="2"')),
        "link 'forearm'",
        "semidefinite",
        "-1",
    ),
    "triangle": (
        one_link(inertial(inertia='ixx="1" iyy="1" izz="3"')),
        "link 'forearm'",
        "triangle",
        "1 + 1 < 3",
    ),
    "no_mass": (
        one_link('<inertial><inertia ixx="1" iyy="1" izz="1"/></inertial>'),
        "link 'forearm'",
        "<mass>",
    ),
    "no_inertia": (
        one_link('<inertial><mass value="1"/></inertial>'),
        "link 'forearm'",
        "<inertia>",
    ),
    "no_ixx": (
        one_link(inertial(inertia='iyy="1" izz="1"')),
        "link 'forearm'",
        "'ixx'",
    ),
    # geometry structure (UrdfError) -- yourdfpy crashes on most of these
    "empty_geometry": (one_link(collision("")), "link 'forearm'", "nothing"),
    "two_shapes": (
        one_link(collision('<sphere radius="1"/><box size="1 1 1"/>')),
        "link 'forearm'",
        "<sphere>, <box>",
    ),
    "unknown_shape": (one_link(collision('<cone radius="1"/>')), "link 'forearm'", "<cone>"),
    "no_geometry": (one_link("<collision/>"), "link 'forearm'", "<geometry>"),
    "sphere_no_radius": (one_link(collision("<sphere/>")), "link 'forearm'", "'radius'"),
    "nan_box": (one_link(collision('<box size="1 nan 1"/>')), "link 'forearm'", "size='1 nan 1'"),
    "box_two_sizes": (one_link(collision('<box size="1 1"/>')), "link 'forearm'", "size='1 1'"),
    "nan_collision_origin": (
        one_link(collision('<sphere radius="1"/>', '<origin rpy="nan 0 0"/>')),
        "link 'forearm'",
        "rpy='nan 0 0'",
    ),
    "mesh_no_filename": (one_link(collision("<mesh/>")), "link 'forearm'", "filename"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_urdf_errors(tmp_path, case):
    text, *fragments = CASES[case]
    # the triangle inequality is only enforced on request (published URDFs often break it)
    expect(tmp_path, text, UrdfError, *fragments, strict_inertia=(case == "triangle"))


GEOMETRY_CASES = {
    "box_zero": ('<box size="0.1 0 0.2"/>', "(0.1, 0, 0.2)"),
    "box_negative": ('<box size="0.1 0.2 -0.3"/>', "-0.3"),
    "sphere_negative": ('<sphere radius="-0.5"/>', "-0.5"),
    "sphere_zero": ('<sphere radius="0"/>', "(0)"),
    "cylinder_zero_length": ('<cylinder radius="0.1" length="0"/>', "(0.1, 0)"),
    "capsule_negative_radius": ('<capsule radius="-1" length="2"/>', "-1"),
    "capsule_zero_length": ('<capsule radius="1" length="0"/>', "(1, 0)"),
    "mesh_zero_scale": ('<mesh filename="m.stl" scale="1 0 1"/>', "(1, 0, 1)"),
    "mesh_zero_uniform_scale": ('<mesh filename="m.stl" scale="0"/>', "(0, 0, 0)"),
}


@pytest.mark.parametrize("case", sorted(GEOMETRY_CASES))
def test_geometry_errors(tmp_path, case):
    shape, value = GEOMETRY_CASES[case]
    expect(tmp_path, one_link(collision(shape)), GeometryError, "link 'forearm'", value)


def test_missing_file(tmp_path):
    with pytest.raises(UrdfError, match=r"nope\.urdf: URDF file does not exist"):
        load_urdf(tmp_path / "nope.urdf")


def test_directory_is_not_a_urdf(tmp_path):
    with pytest.raises(UrdfError, match="not a regular file"):
        load_urdf(tmp_path)


def test_malformed_xml_reports_line_from_string():
    with pytest.raises(UrdfError, match=r"^thing\.urdf: .*line 2"):
        parse_urdf_string('<robot name="r">\n<link name="a"></robot>', source="thing.urdf")


def test_lenient_inertia_keeps_values_and_lints(tmp_path):
    """The default: a triangle-inequality violation is kept and reported, never silent."""
    path = tmp_path / "tri.urdf"
    path.write_text(one_link(inertial(inertia='ixx="1" iyy="1" izz="3"')))
    spec = load_urdf(path)
    np.testing.assert_array_equal(spec.link("forearm").inertial.inertia, np.diag([1.0, 1.0, 3.0]))
    assert len(spec.lint) == 1 and "forearm" in spec.lint[0] and "triangle" in spec.lint[0]
    # Negative mass stays an error even in lenient mode.
    path.write_text(one_link(inertial("-1")))
    with pytest.raises(UrdfError, match="negative mass"):
        load_urdf(path, strict_inertia=False)


def test_tiny_negative_inertia_is_raised_to_zero_and_reported(tmp_path):
    """A principal moment of -1e-8 kg m^2 (rounding in a published file) becomes 0 with a
    lint entry; the other moments and axes are kept (checked against numpy's eigh)."""
    path = tmp_path / "tiny.urdf"
    # [[a, b], [b, a]] has eigenvalues a + b and a - b: a - b = -1e-8
    a, b = 0.5e-7, 0.6e-7
    path.write_text(one_link(inertial(inertia=f'ixx="{a}" iyy="{a}" izz="1e-7" ixy="{b}"')))
    spec = load_urdf(path)
    inertia = spec.link("forearm").inertial.inertia
    moments = np.linalg.eigvalsh(inertia)
    assert moments.min() == pytest.approx(0.0, abs=1e-22)
    assert sorted(moments)[1:] == pytest.approx(sorted([a + b, 1e-7]), rel=1e-12)
    assert any("raised to 0" in entry for entry in spec.lint)


def test_inertia_tolerance_boundary(tmp_path):
    """Equality in the triangle inequality (a thin rod, a flat plate) is fine, and so is an
    excess within 1e-9 relative; 1e-6 relative is not."""
    path = tmp_path / "plate.urdf"
    for izz, ok in (("2", True), ("2.000000001", True), ("2.00001", False)):
        path.write_text(one_link(inertial(inertia=f'ixx="1" iyy="1" izz="{izz}"')))
        if ok:
            load_urdf(path)
        else:
            with pytest.raises(UrdfError, match="triangle"):
                load_urdf(path, strict_inertia=True)
            assert any("triangle" in entry for entry in load_urdf(path).lint)
    path.write_text(one_link(inertial(inertia='ixx="1" iyy="1" izz="0"')))
    load_urdf(path)  # rod along z


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"base": "welded"}, "'welded'"),
        ({"base_pose": np.zeros((4, 4))}, "base_pose"),
        ({"base_pose": np.eye(3)}, "base_pose"),
        ({"base_pose": np.diag([1.0, 1.0, -1.0, 1.0])}, "base_pose"),  # a reflection
    ],
)
def test_bad_base_options(tmp_path, kwargs, fragment):
    expect(tmp_path, robot(links("a")), UrdfError, fragment, **kwargs)


# --------------------------------------------------------------------------- XML safety


def test_external_entity_is_never_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    for use in ('<link name="a&x;"/>', '<link name="a">&x;</link>'):
        text = (
            f'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY x SYSTEM "file://{secret}">]>\n'
            f'<robot name="r">{use}</robot>'
        )
        message = expect(tmp_path, text, UrdfError, "entit", "'x'")
        assert "TOPSECRET" not in message
        with pytest.raises(UrdfError, match="entit") as info:
            parse_urdf_string(text, source="s.urdf")
        assert "TOPSECRET" not in str(info.value)


def test_internal_entity_rejected(tmp_path):
    text = '<!DOCTYPE robot [<!ENTITY x "EXPANDED">]>\n<robot name="r"><link name="a&x;"/></robot>'
    expect(tmp_path, text, UrdfError, "entit", "'x'")


def test_parameter_entity_rejected(tmp_path):
    text = (
        '<!DOCTYPE robot [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>\n'
        '<robot name="r"><link name="a"/></robot>'
    )
    expect(tmp_path, text, UrdfError, "entit", "'p'")


def test_external_dtd_rejected(tmp_path):
    text = (
        '<!DOCTYPE robot SYSTEM "http://example.invalid/robot.dtd">\n'
        '<robot name="r"><link name="a"/></robot>'
    )
    expect(tmp_path, text, UrdfError, "http://example.invalid/robot.dtd")


def test_billion_laughs_rejected_quickly(tmp_path):
    entities = '<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
    )
    text = f'<!DOCTYPE robot [{entities}]>\n<robot name="r"><link name="&lol9;"/></robot>'
    start = time.perf_counter()
    expect(tmp_path, text, UrdfError, "entit", "'lol0'")
    assert time.perf_counter() - start < 5.0


def test_plain_doctype_is_fine(tmp_path):
    path = tmp_path / "ok.urdf"
    path.write_text('<!DOCTYPE robot>\n<robot name="r"><link name="a"/></robot>')
    assert load_urdf(path).root == "a"


# --------------------------------------------------------------------------- fuzzing

_GARBAGE = ["", "nan", "abc", "1 2", "-1", "0", "1e999", "1,2,3", "ghost", "planar", "0 0 0"]


def _mutations():
    tree = etree.fromstring(GOOD.encode())
    elements = [e for e in tree.iter() if e is not tree]
    attrs = [(i, a) for i, e in enumerate(elements) for a in e.attrib]
    return len(elements), attrs


_N_ELEMENTS, _ATTRS = _mutations()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(["drop_element", "drop_attr", "set_attr"]),
    index=st.integers(min_value=0, max_value=10_000),
    garbage=st.sampled_from(_GARBAGE),
)
def test_fuzzed_urdf_never_leaks_raw_exceptions(tmp_path, kind, index, garbage):
    """Damaged files either load or raise MbsimError, never KeyError/ValueError/lxml errors."""
    tree = etree.fromstring(GOOD.encode())
    elements = [e for e in tree.iter() if e is not tree]
    if kind == "drop_element":
        victim = elements[index % _N_ELEMENTS]
        victim.getparent().remove(victim)
    else:
        i, attr = _ATTRS[index % len(_ATTRS)]
        if kind == "drop_attr":
            del elements[i].attrib[attr]
        else:
            elements[i].set(attr, garbage)
    try:
        parse_urdf_string(etree.tostring(tree), source="fuzz.urdf", base_dir=tmp_path)
    except MbsimError as exc:
        assert str(exc).startswith("fuzz.urdf: ") and "\n" not in str(exc)


# --------------------------------------------------------------------------- mesh lookup


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    return monkeypatch


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("solid m\nendsolid m\n")
    return path


def test_package_from_package_dirs(tmp_path, clean_env):
    mesh = touch(tmp_path / "anywhere" / "meshes" / "m.stl")
    found = resolve_mesh_uri(
        "package://pkg/meshes/m.stl", tmp_path / "urdf", {"pkg": tmp_path / "anywhere"}
    )
    assert found == str(mesh)


@pytest.mark.parametrize("entry_is_package", [True, False])
def test_package_from_ros_package_path(tmp_path, clean_env, entry_is_package):
    mesh = touch(tmp_path / "ws" / "pkg" / "m.stl")
    entry = tmp_path / "ws" / "pkg" if entry_is_package else tmp_path / "ws"
    clean_env.setenv("ROS_PACKAGE_PATH", os.pathsep.join([str(tmp_path / "nothing"), str(entry)]))
    assert resolve_mesh_uri("package://pkg/m.stl", tmp_path / "urdf") == str(mesh)


def test_package_from_ament_prefix_path(tmp_path, clean_env):
    mesh = touch(tmp_path / "install" / "share" / "pkg" / "meshes" / "m.stl")
    clean_env.setenv("AMENT_PREFIX_PATH", str(tmp_path / "install"))
    assert resolve_mesh_uri("package://pkg/meshes/m.stl", tmp_path / "urdf") == str(mesh)


@pytest.mark.parametrize("layout", ["named", "sibling"])
def test_package_from_folders_above_urdf(tmp_path, clean_env, layout):
    if layout == "named":  # .../pkg/urdf/r.urdf with mesh .../pkg/meshes/m.stl
        urdf_dir, mesh = tmp_path / "pkg" / "urdf", tmp_path / "pkg" / "meshes" / "m.stl"
    else:  # .../src/robot_description/urdf/r.urdf with mesh .../src/pkg/meshes/m.stl
        urdf_dir = tmp_path / "src" / "robot_description" / "urdf"
        mesh = tmp_path / "src" / "pkg" / "meshes" / "m.stl"
    touch(mesh)
    urdf_dir.mkdir(parents=True)
    assert resolve_mesh_uri("package://pkg/meshes/m.stl", urdf_dir) == str(mesh)


def test_package_uri_with_extra_slash_and_malformed(tmp_path, clean_env):
    mesh = touch(tmp_path / "p" / "m.stl")
    assert resolve_mesh_uri("package:///pkg/m.stl", None, {"pkg": tmp_path / "p"}) == str(mesh)
    for uri in ("package://", "package://pkg", "package://pkg/"):
        with pytest.raises(GeometryError, match="package://NAME/PATH"):
            resolve_mesh_uri(uri, tmp_path, {"pkg": tmp_path / "p"})


def test_package_dirs_take_precedence(tmp_path, clean_env):
    first = touch(tmp_path / "a" / "m.stl")
    touch(tmp_path / "ros" / "pkg" / "m.stl")
    clean_env.setenv("ROS_PACKAGE_PATH", str(tmp_path / "ros"))
    assert resolve_mesh_uri("package://pkg/m.stl", None, {"pkg": tmp_path / "a"}) == str(first)


def test_file_absolute_and_relative_uris(tmp_path, clean_env):
    mesh = touch(tmp_path / "robot" / "meshes" / "m.stl")
    urdf_dir = tmp_path / "robot"
    assert resolve_mesh_uri(f"file://{mesh}", urdf_dir) == str(mesh)
    # without a URDF folder nothing is inside the tree: an absolute path needs the opt-in
    assert resolve_mesh_uri(str(mesh), None, allow_outside_paths=True) == str(mesh)
    assert resolve_mesh_uri("meshes/m.stl", urdf_dir) == str(mesh)
    assert resolve_mesh_uri("file://meshes/m.stl", urdf_dir) == str(mesh)


def test_not_found_lists_every_place(tmp_path, clean_env):
    clean_env.setenv("ROS_PACKAGE_PATH", str(tmp_path / "rosws"))
    clean_env.setenv("AMENT_PREFIX_PATH", str(tmp_path / "prefix"))
    urdf_dir = tmp_path / "robot" / "urdf"
    with pytest.raises(GeometryError) as info:
        resolve_mesh_uri(
            "package://pkg/m.stl",
            urdf_dir,
            {"pkg": tmp_path / "given"},
            source="/x/robot.urdf",
            link="forearm",
        )
    message = str(info.value)
    for fragment in (
        "/x/robot.urdf",
        "link 'forearm'",
        "'package://pkg/m.stl'",
        str(tmp_path / "given" / "m.stl"),
        str(tmp_path / "rosws" / "pkg" / "m.stl"),
        str(tmp_path / "prefix" / "share" / "pkg" / "m.stl"),
        str(tmp_path / "robot" / "urdf" / "pkg" / "m.stl"),
        str(tmp_path / "pkg" / "m.stl"),
    ):
        assert fragment in message, fragment
    assert "\n" not in message


def test_relative_not_found_and_bad_scheme(tmp_path, clean_env):
    with pytest.raises(GeometryError, match=r"meshes/none\.stl"):
        resolve_mesh_uri("meshes/none.stl", tmp_path)
    with pytest.raises(GeometryError, match="scheme"):
        resolve_mesh_uri("http://example.invalid/m.stl", tmp_path)


def test_loader_keeps_unresolved_mesh(tmp_path, clean_env):
    path = tmp_path / "r.urdf"
    path.write_text(one_link(collision('<mesh filename="package://nowhere/m.stl"/>')))
    geom = load_urdf(path).link("forearm").collisions[0]
    assert geom.mesh_path is None and geom.mesh_uri == "package://nowhere/m.stl"
    with pytest.raises(GeometryError, match=r"r\.urdf: link 'forearm' mesh"):
        resolve_mesh_uri(geom.mesh_uri, path.parent, source=str(path), link="forearm")


# --------------------------------------------------------------------------- example-robot-data


def erd_share() -> Path | None:
    """example-robot-data's share folder, found from the installed distribution."""
    candidates = [Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix/share/example-robot-data"]
    try:
        dist = importlib.metadata.distribution("example-robot-data")
        candidates.append(Path(dist.locate_file("cmeel.prefix/share/example-robot-data")))
    except importlib.metadata.PackageNotFoundError:
        pass
    return next((c for c in candidates if (c / "robots").is_dir()), None)


ERD = erd_share()
ERD_URDFS = sorted((ERD / "robots").rglob("*.urdf")) if ERD else []
# Files that are genuinely broken, with the error they must produce.
ERD_BROKEN = {
    "ur_description/urdf/ur3.urdf": "has no <link> elements",
    # link 'body' has principal moments (-0.021, 0.052, 0.099) kg m^2: physically impossible
    "romeo_description/urdf/romeo_laas_small.urdf": "is not positive semidefinite",
}


@pytest.mark.skipif(ERD is None, reason="example-robot-data is not installed")
@pytest.mark.parametrize("path", ERD_URDFS, ids=lambda p: str(p.relative_to(ERD / "robots")))
def test_example_robot_data_loads(path, clean_env):
    relative = path.relative_to(ERD / "robots").as_posix()
    if relative in ERD_BROKEN:
        with pytest.raises(UrdfError, match=re.escape(ERD_BROKEN[relative])) as info:
            load_urdf(path, strict_inertia=False)
        print(f"skipping broken {relative}: {info.value}")
        pytest.skip(f"{relative} is broken: {ERD_BROKEN[relative]}")
    spec = load_urdf(path)
    raw = etree.parse(str(path)).getroot()
    assert [link.name for link in spec.links] == [e.get("name") for e in raw.findall("link")]
    assert [j.name for j in spec.joints] == [e.get("name") for e in raw.findall("joint")]
    for link in spec.links:
        for geom in link.collisions:
            if geom.kind == "mesh":
                # talos_full_v2 writes "package:///example-robot-data/...": tolerated.
                package_path = geom.mesh_uri.removeprefix("package://").lstrip("/")
                assert package_path.startswith("example-robot-data/")
                expected = ERD / package_path.removeprefix("example-robot-data/")
                assert geom.mesh_path == str(expected)
                assert os.path.isfile(geom.mesh_path)


def _anchor_poses(spec):
    """link -> (nearest moving-joint ancestor or 'universe', link pose in that joint frame)."""
    by_child = {j.child: j for j in spec.joints}
    result = {}
    for link in spec.links:
        pose, name = np.eye(4), link.name
        while name in by_child and by_child[name].type == "fixed":
            pose = by_child[name].origin @ pose
            name = by_child[name].parent
        result[link.name] = (by_child[name].name if name in by_child else "universe", pose)
    return result


@pytest.mark.skipif(ERD is None, reason="example-robot-data is not installed")
@pytest.mark.parametrize(
    "relative",
    [
        "ur_description/urdf/ur5_robot.urdf",
        "panda_description/urdf/panda.urdf",
        "solo_description/robots/solo12.urdf",
    ],
)
def test_agrees_with_pinocchio(relative, clean_env):
    """Link placements and per-body mass properties match Pinocchio's own URDF parser."""
    pin = pytest.importorskip("pinocchio")
    path = ERD / "robots" / relative
    spec = load_urdf(path)
    model = pin.buildModelFromUrdf(str(path))
    anchors = _anchor_poses(spec)
    for frame in model.frames:
        if frame.type == pin.FrameType.BODY:
            anchor, pose = anchors[frame.name]
            assert model.names[frame.parentJoint] == anchor
            np.testing.assert_allclose(frame.placement.homogeneous, pose, atol=1e-12)
    for jid in range(1, model.njoints):
        parts = []
        for link in spec.links:
            anchor, pose = anchors[link.name]
            if anchor == model.names[jid] and link.inertial is not None:
                rot = pose[:3, :3]
                com = pose[:3, :3] @ link.inertial.com + pose[:3, 3]
                parts.append((link.inertial.mass, com, rot @ link.inertial.inertia @ rot.T))
        mass = sum(m for m, _, _ in parts)
        com = sum(m * c for m, c, _ in parts) / mass
        inertia = sum(
            i + m * (np.dot(c - com, c - com) * np.eye(3) - np.outer(c - com, c - com))
            for m, c, i in parts
        )
        body = model.inertias[jid]
        assert body.mass == pytest.approx(mass, rel=1e-12)
        np.testing.assert_allclose(body.lever, com, atol=1e-12)
        np.testing.assert_allclose(body.inertia, inertia, atol=1e-12)
