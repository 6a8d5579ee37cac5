"""The initial state's checks (mbsim.start_pose, issue 19/16): links that overlap at the start
are not checked (and said so), robots that start inside the floor are named with the base
height that clears it, ``--place-on-floor`` rests the lowest collision point on z = 0, an SRDF
beside the URDF is used, and ``mbsim run``/``batch`` take --package-dir / --allow-outside-paths.

Independent truths: closed-form overlap depths of axis-aligned boxes, closed-form lowest points
of spheres, boxes and tilted cylinders, and a box resting on the floor under gravity.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from mbsim.collision.geometry import build_records
from mbsim.io.scenario import scenario_from_urdf
from mbsim.simcore.model import build_model
from mbsim.simulator import Simulator
from mbsim.start_pose import shape_lowest_z
from test_cli_run import run

CUBE = Path(__file__).parent / "data" / "meshes" / "cube.stl"
INERTIA = '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/>'

# base (fixed) -> link1 (revolute about z) -> link2 (revolute about z): link2's box overlaps
# the base's box by 0.02 m along x at q = 0, a non-adjacent pair.
ARM = f"""<robot name="arm">
  <link name="base"><inertial><mass value="1"/>{INERTIA}</inertial>
    <collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision></link>
  <link name="link1"><inertial><mass value="1"/>{INERTIA}</inertial>
    <collision><origin xyz="0 0 0.5"/><geometry><sphere radius="0.05"/></geometry></collision>
  </link>
  <link name="link2"><inertial><mass value="1"/>{INERTIA}</inertial>
    <collision><origin xyz="0.18 0 0"/><geometry><box size="0.2 0.2 0.2"/></geometry>
    </collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="link1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="link1"/><child link="link2"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>
"""

BOX = f"""<robot name="box">
  <link name="box"><inertial><mass value="2"/>{INERTIA}</inertial>
    <collision><geometry><box size="0.4 0.4 0.2"/></geometry></collision></link>
</robot>
"""


def _write(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / f"{name}.urdf"
    path.write_text(text)
    return path


def _pair_allowed(sim, a: str, b: str) -> bool:
    ia, ib = sim.scene.shapes_of(a), sim.scene.shapes_of(b)
    return bool(sim.scene.allowed[np.ix_(ia, ib)].any())


def test_links_overlapping_at_the_start_are_not_checked_and_named(tmp_path):
    urdf = _write(tmp_path, ARM, "arm")
    sim = Simulator(scenario_from_urdf(urdf, output=str(tmp_path / "a.h5")))
    assert not _pair_allowed(sim, "arm/base", "arm/link2")
    notes = [n for n in sim.lint if "overlap at the initial state" in n]
    assert len(notes) == 1
    # the boxes overlap by 0.2 - 0.18 = 0.02 m (closed form)
    assert "arm/base - arm/link2 (20 mm)" in notes[0]
    assert "--keep-initial-overlaps" in notes[0]


def test_overlaps_can_be_checked_again(tmp_path):
    urdf = _write(tmp_path, ARM, "arm")
    sc = scenario_from_urdf(urdf, output=str(tmp_path / "a.h5"), ignore_initial_overlaps=False)
    sim = Simulator(sc)
    assert _pair_allowed(sim, "arm/base", "arm/link2")
    assert any("checked for collision all the same" in n for n in sim.lint)
    # the resolved scenario keeps the choice (a results file repeats the run as it was)
    assert "ignore_initial_overlaps = false" in sim.scenario.to_toml()


def test_the_srdf_beside_the_urdf_is_used_with_a_note(tmp_path):
    urdf = _write(tmp_path, ARM, "arm")
    (tmp_path / "arm.srdf").write_text(
        '<robot name="arm"><disable_collisions link1="base" link2="link2" reason="Never"/></robot>'
    )
    sim = Simulator(scenario_from_urdf(urdf, output=str(tmp_path / "a.h5")))
    assert not _pair_allowed(sim, "arm/base", "arm/link2")
    assert any("using the SRDF beside its URDF" in n for n in sim.lint)
    assert not any("overlap" in n for n in sim.lint)  # the SRDF already disables the pair
    assert sim.scenario.robots[0].srdf == (tmp_path / "arm.srdf").resolve()


def test_lowest_points_match_closed_form():
    th = 0.3
    c, s = math.cos(th), math.sin(th)
    tilted = f"{th} 0 0"
    text = f"""<robot name="shapes"><link name="l"><inertial><mass value="1"/>{INERTIA}
      </inertial>
      <collision><origin xyz="0 0 1"/><geometry><sphere radius="0.25"/></geometry></collision>
      <collision><origin xyz="0 0 2" rpy="{tilted}"/><geometry><box size="0.2 0.4 0.6"/>
      </geometry></collision>
      <collision><origin xyz="0 0 3" rpy="{tilted}"/><geometry>
        <cylinder radius="0.1" length="0.5"/></geometry></collision>
      <collision><origin xyz="0 0 4" rpy="{tilted}"/><geometry>
        <capsule radius="0.1" length="0.5"/></geometry></collision>
    </link></robot>"""
    from mbsim.io.urdf import parse_urdf_string

    model = build_model([parse_urdf_string(text)])
    records = build_records(model)
    got = []
    for rec in records:
        R, p = rec.pose[:3, :3], rec.pose[:3, 3]
        got.append(shape_lowest_z(rec, R, p))
    expected = [
        1 - 0.25,
        2 - (0.2 * s + 0.3 * c),  # box half extents 0.2 (y) and 0.3 (z) rotated about x
        3 - (0.25 * c + 0.1 * s),  # cylinder: z_c - h |a_z| - r sqrt(1 - a_z^2)
        4 - (0.25 * c + 0.1),  # capsule: lower end minus r
    ]
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_a_robot_inside_the_floor_is_named_with_the_height_that_clears_it(tmp_path):
    urdf = _write(tmp_path, BOX, "box")
    sc = scenario_from_urdf(urdf, output=str(tmp_path / "b.h5"), floor=True, base="floating")
    sim = Simulator(sc)
    notes = [n for n in sim.lint if "inside the floor" in n]
    assert len(notes) == 1
    assert "'box' starts 0.1 m inside the floor" in notes[0]
    assert "z = 0.1 m" in notes[0] and "--place-on-floor" in notes[0]


def test_a_part_welded_to_the_world_inside_the_floor_is_named_too(tmp_path):
    """pybullet_data's xarm/link4.urdf: a massless ``world`` root and a fixed joint weld the
    only link to the world, so the robot has no moving body; with the default (fixed) base
    the note used to crash the run with a traceback (StopIteration)."""
    welded = BOX.replace(
        '<robot name="box">',
        '<robot name="box"><link name="world"/><joint name="weld" type="fixed">'
        '<parent link="world"/><child link="box"/></joint>',
    )
    urdf = _write(tmp_path, welded, "welded")
    sim = Simulator(scenario_from_urdf(urdf, output=str(tmp_path / "w.h5"), floor=True))
    assert sim.model.nb == 0
    notes = [n for n in sim.lint if "inside the floor" in n]
    assert len(notes) == 1 and "raising its base by 0.1 m" in notes[0], notes


def test_place_on_floor_rests_the_lowest_point_on_the_floor(tmp_path):
    urdf = _write(tmp_path, BOX, "box")
    sc = scenario_from_urdf(
        urdf, output=str(tmp_path / "b.h5"), floor=True, base="floating", place_on_floor=True
    )
    sim = Simulator(sc)
    assert sim.scenario.robots[0].base_pose.xyz[2] == pytest.approx(0.1, abs=1e-12)
    assert not any("inside the floor" in n for n in sim.lint)
    summary = sim.run()
    assert summary.status == "complete"
    # at rest on the floor: the centre stays at the half height within the contact margin
    sim.energy()  # fills the body poses
    z = sim.body_poses()[0, 2]
    assert abs(z - 0.1) < 1e-3
    assert summary.max_penetration < 1e-3


def test_place_on_floor_lowers_a_robot_above_the_floor_and_is_a_scenario_key(tmp_path):
    urdf = _write(tmp_path, BOX, "box")
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        f'[robot.box]\nurdf = "{urdf}"\nbase = "floating"\n'
        "base_pose = { xyz = [1, 2, 3], on_floor = true }\n[contact]\nfloor = true\n"
    )
    from mbsim.io.scenario import load_scenario

    sim = Simulator(load_scenario(scenario))
    assert sim.scenario.robots[0].base_pose.xyz == pytest.approx((1, 2, 0.1), abs=1e-12)


def test_run_prints_loader_warnings_and_start_notes_before_the_first_step(tmp_path):
    urdf = _write(tmp_path, '<?xml version="0.0"?>\n' + BOX, "box")
    proc = run(
        "run", urdf, "--floor", "--base", "floating", "--duration", "0.002",
        "-o", tmp_path / "r.h5", check_rc=1, cwd=tmp_path,
    )  # fmt: skip
    # the notes come before the failure at step 1 (penetration bound)
    assert proc.stderr.index("inside the floor") < proc.stderr.index("step 1")
    assert "version" in proc.stderr  # the loader's repair of the XML declaration
    assert "starts 0.1 m inside the floor" in proc.stderr
    proc = run(
        "run", urdf, "--floor", "--base", "floating", "--duration", "0.002", "--place-on-floor",
        "-o", tmp_path / "p.h5", check_rc=0, cwd=tmp_path,
    )  # fmt: skip
    assert "inside the floor" not in proc.stderr


def _mesh_robot(tmp_path: Path, uri: str, folder: str = "robot") -> Path:
    urdf = tmp_path / folder / "r.urdf"
    urdf.parent.mkdir(parents=True, exist_ok=True)
    urdf.write_text(
        f'<robot name="r"><link name="body"><inertial><mass value="1"/>{INERTIA}</inertial>'
        f'<collision><geometry><mesh filename="{uri}"/></geometry></collision></link></robot>'
    )
    return urdf


def test_run_refuses_outside_meshes_unless_allowed(tmp_path):
    shutil.copy(CUBE, tmp_path / "cube.stl")
    urdf = _mesh_robot(tmp_path, "../cube.stl")
    proc = run("run", urdf, "--duration", "0.002", "-o", tmp_path / "a.h5", check_rc=2)
    assert "outside" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "a.h5").exists()
    run(
        "run", urdf, "--duration", "0.002", "-o", tmp_path / "a.h5", "--allow-outside-paths",
        check_rc=0,
    )  # fmt: skip


def test_run_and_batch_take_package_dirs(tmp_path):
    (tmp_path / "elsewhere" / "lib" / "meshes").mkdir(parents=True)
    shutil.copy(CUBE, tmp_path / "elsewhere" / "lib" / "meshes" / "cube.stl")
    urdf = _mesh_robot(tmp_path, "package://lib/meshes/cube.stl")
    proc = run("run", urdf, "--duration", "0.002", "-o", tmp_path / "a.h5", check_rc=2)
    assert "package://lib/meshes/cube.stl" in proc.stderr
    pkg = f"lib={tmp_path / 'elsewhere' / 'lib'}"
    run(
        "run", urdf, "--duration", "0.002", "-o", tmp_path / "a.h5", "--package-dir", pkg,
        check_rc=0,
    )  # fmt: skip
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'[robot.r]\nurdf = "{urdf}"\n[simulation]\nduration = 0.002\n')
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('scenario = "s.toml"\n[sweep.grid]\n"contact.mu" = [0.2, 0.4]\n')
    out = ("--out-dir", tmp_path / "sweep")  # not the sweep's default, relative to the cwd
    run("batch", sweep, "-j", "1", "-q", *out, check_rc=1)  # the mesh is not found
    run("batch", sweep, "-j", "1", "-q", *out, "--force", "--package-dir", pkg, check_rc=0)


def test_srdf_and_no_self_collision_flags(tmp_path):
    urdf = _write(tmp_path, ARM, "arm")
    srdf = tmp_path / "pairs.srdf"
    srdf.write_text(
        '<robot name="arm"><disable_collisions link1="base" link2="link2" reason="Never"/></robot>'
    )
    sim = Simulator(scenario_from_urdf(urdf, output=str(tmp_path / "a.h5"), srdf=str(srdf)))
    assert not _pair_allowed(sim, "arm/base", "arm/link2")
    assert not any("overlap" in n or "beside" in n for n in sim.lint)
    sim = Simulator(scenario_from_urdf(urdf, output=str(tmp_path / "a.h5"), self_collision=False))
    assert not sim.scene.allowed.any()
    assert not any("overlap" in n for n in sim.lint)
    proc = run(
        "run", urdf, "--srdf", srdf, "--duration", "0.002", "-o", tmp_path / "r.h5",
        "--keep-initial-overlaps", check_rc=0,
    )  # fmt: skip
    assert "overlap" not in proc.stderr
    proc = run(
        "run", urdf, "--duration", "0.002", "-o", tmp_path / "k.h5", "--keep-initial-overlaps",
    )  # fmt: skip
    # the overlapping boxes are then pushed apart by the LCP (here it fails: the default exists
    # for that); the note comes before the first step either way
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr
    assert "arm/base - arm/link2 (20 mm)" in proc.stderr and "all the same" in proc.stderr


def test_a_robot_without_collision_shapes_on_the_floor_is_named(tmp_path):
    """example-robot-data's alexander_v1.lowerBodyOnly.urdf has no <collision>: dropped with
    --floor --place-on-floor it fell through the floor with no word about why."""
    bare = BOX.split("<collision>")[0] + BOX.split("</collision>")[1]
    assert "<collision>" not in bare
    urdf = _write(tmp_path, bare, "bare")
    sc = scenario_from_urdf(
        urdf, output=str(tmp_path / "b.h5"), floor=True, base="floating", place_on_floor=True
    )
    notes = [n for n in Simulator(sc).lint if "no collision shapes" in n]
    assert notes == [
        "'bare' has no collision shapes, so it falls through the floor and touches nothing "
        "(base_pose.on_floor, --place-on-floor, leaves its base where it is)"
    ]
    sc = scenario_from_urdf(_write(tmp_path, BOX, "box"), output=str(tmp_path / "c.h5"), floor=True)
    assert not any("no collision shapes" in n for n in Simulator(sc).lint)


def test_a_run_placed_on_the_floor_is_repeated_exactly(tmp_path):
    """The recorded scenario kept on_floor = true with the placed height, so replaying it
    (``mbsim run --from``) placed the robot again, 1e-16 m off by the rounding of its lowest
    point: example-robot-data's hyq dropped with --place-on-floor replayed 4e-7 rad apart."""
    from mbsim.io.scenario import load_scenario_text
    from mbsim.io.scenario.emit import scenario_toml

    leg = f"""<robot name="leg"><link name="base"><inertial><mass value="1"/>{INERTIA}</inertial>
      </link><link name="shin"><inertial><mass value="1"/>{INERTIA}</inertial><collision>
        <origin xyz="0 0 -0.3806"/><geometry><sphere radius="0.0426"/></geometry></collision>
      </link><joint name="knee" type="revolute"><parent link="base"/><child link="shin"/>
        <origin xyz="0 0 -0.35" rpy="0 -0.4768 0"/><axis xyz="0 1 0"/>
        <limit lower="-3" upper="3" effort="1" velocity="1"/></joint></robot>"""
    urdf = _write(tmp_path, leg, "leg")
    sc = scenario_from_urdf(
        urdf, output=str(tmp_path / "a.h5"), floor=True, base="floating", place_on_floor=True
    )
    placed = Simulator(sc).scenario
    again = Simulator(load_scenario_text(scenario_toml(placed))).scenario
    assert again.robots[0].base_pose.xyz == placed.robots[0].base_pose.xyz


def test_place_on_floor_without_a_floor_is_named(tmp_path):
    """``mbsim run bolt.urdf --base floating --place-on-floor`` (no --floor) placed the robot
    on a floor that is not there, without a word; it fell from z = 0."""
    urdf = _write(tmp_path, BOX, "box")
    sc = scenario_from_urdf(
        urdf, output=str(tmp_path / "b.h5"), base="floating", place_on_floor=True
    )
    assert [n for n in Simulator(sc).lint if "no floor" in n] == [
        "'box' is placed on the floor (base_pose.on_floor, --place-on-floor), but there is no "
        "floor: contact.floor is off (pass --floor) and no environment is loaded; it falls "
        "from there"
    ]
    sc = scenario_from_urdf(
        urdf, output=str(tmp_path / "c.h5"), base="floating", place_on_floor=True, floor=True
    )
    assert not any("no floor" in n for n in Simulator(sc).lint)


def test_dense_collision_meshes_are_named_with_the_convex_hull_setting(tmp_path):
    """pybullet_data's mini_cheetah collides 15,000-22,000 triangles a link: 38 steps/s, 85%
    in FCL, with no hint that contact.mesh_contact = "convex-hull" runs it at 406."""
    from mbsim.start_pose import dense_mesh_notes

    shutil.copy(CUBE.with_name("ell.stl"), tmp_path / "ell.stl")  # non-convex, closed
    urdf = _write(
        tmp_path,
        f'<robot name="m"><link name="block"><inertial><mass value="1"/>{INERTIA}</inertial>'
        '<collision><geometry><mesh filename="ell.stl"/></geometry></collision></link></robot>',
        "m",
    )
    sim = Simulator(scenario_from_urdf(urdf, output=str(tmp_path / "m.h5"), floor=True))
    (count,) = [len(r.mesh[1]) for r in sim.scene.records]
    assert dense_mesh_notes(sim.scene) == []  # a few triangles
    assert not any("dense collision meshes" in n for n in sim.lint)
    assert dense_mesh_notes(sim.scene, limit=count - 1) == [
        "1 link(s) have dense collision meshes that collide triangle by triangle: m/block "
        f"({count} "
        "triangles); each contact with them can take milliseconds a step. --set "
        'contact.mesh_contact=convex-hull (or contact.mesh_contact_links = { "LINK" = '
        '"convex-hull" }) collides their convex hulls instead, as PyBullet and MuJoCo do'
    ]
    hull = scenario_from_urdf(
        urdf, {"contact.mesh_contact": "convex-hull"}, output=str(tmp_path / "h.h5"), floor=True
    )
    assert dense_mesh_notes(Simulator(hull).scene, limit=0) == []
