"""Scenario files (mbsim.io.scenario): defaults, paths, overrides, flags, the TOML emitter, and
one clear error (file, line, key, value) for every kind of bad input.

Expected values are literals written here from the schema (docs/scenario-format.md), never
values produced by the loader itself.
"""

from __future__ import annotations

import math
import os
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mbsim.errors import MbsimError
from mbsim.io.scenario import (
    Pose,
    ScenarioError,
    build_scenario_model,
    load_scenario,
    load_scenario_text,
    parse_value,
    scenario_from_urdf,
    split_link_ref,
)

SAMPLES = Path(__file__).parents[1] / "src" / "mbsim" / "sample_robots"

FULL = """\
[simulation]
duration = 2.0
dt = 1e-4
formulation = "nmc-os"
solver = "pgs"
gravity = [0.0, 0.0, -9.8]
integrator = "rk4"
dynamics = "crba"
delassus = "dense"

[robot.pendulum]
urdf = "pendulum-3.urdf"
base = "fixed"
base_pose = { xyz = [0.5, 0.0, 0.25], rpy = [0.0, 0.0, 1.5] }
q0 = { joint_1 = 0.7853981633974483 }
v0 = { joint_1 = 1.0 }
torque = { joint_2 = 0.5 }
pd = { joint_3 = { target = 0.2, kp = 100.0, kd = 5.0 } }

[environment.room]
urdf = "pendulum-environment.urdf"

[contact]
floor = false
margin = 2e-3
mu = 0.25
restitution = 0.7
friction_directions = 8
self_collision = true
disabled_pairs = [["link1", "link3"]]
pairs = [ { a = "link3", b = "wall", mu = 0.2, restitution = 0.1 } ]

[[closure]]
type = "distance"
a = "pendulum/link3"
b = "world"
point_a = [0.0, 0.0, -2.0]
point_b = [1.0, 0.0, 2.0]
distance = 1.5

[output]
path = "out/results.h5"
record_every = 10
record_contacts = true
body_poses = true
dump_lcp = "failures"
"""

# A free-floating box with one revolute child whose range is limited to [-0.5, 0.5] rad.
FLOATING_URDF = """<robot name="box">
  <link name="base"><inertial><mass value="2"/>
    <inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="arm"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="elbow" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 1 0"/><limit lower="-0.5" upper="0.5" effort="10" velocity="1"/></joint>
</robot>
"""


@pytest.fixture
def scene(tmp_path: Path) -> Path:
    """FULL written next to copies of the pendulum URDFs, in a folder that is not the cwd."""
    folder = tmp_path / "scene"
    folder.mkdir()
    for name in ("pendulum-3.urdf", "pendulum-environment.urdf"):
        (folder / name).write_bytes((SAMPLES / name).read_bytes())
    path = folder / "scene.toml"
    path.write_text(FULL)
    return path


def write(folder: Path, text: str, name: str = "scene.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def line_of(text: str, fragment: str) -> int:
    """1-based line of the first line containing ``fragment`` (the test's own truth)."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


def one_line_error(excinfo, *fragments: str) -> str:
    msg = str(excinfo.value)
    assert isinstance(excinfo.value, MbsimError)
    assert "\n" not in msg, msg
    for frag in fragments:
        assert frag in msg, (frag, msg)
    return msg


# --------------------------------------------------------------------------- loading


def test_full_scenario_is_resolved(scene: Path, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # paths must be relative to the file, not to the cwd
    s = load_scenario(scene)
    folder = scene.parent
    assert s.source == scene
    sim = s.simulation
    assert (sim.duration, sim.dt, sim.formulation, sim.solver) == (2.0, 1e-4, "nmc-os", "pgs")
    assert sim.gravity == (0.0, 0.0, -9.8)
    assert (sim.integrator, sim.dynamics, sim.delassus) == ("rk4", "crba", "dense")
    assert sim.n_steps == 20000
    (r,) = s.robots
    assert r.name == "pendulum" and r.urdf == folder / "pendulum-3.urdf" and r.base == "fixed"
    assert r.base_pose == Pose((0.5, 0.0, 0.25), (0.0, 0.0, 1.5))
    assert r.q0 == {"joint_1": math.pi / 4} and r.v0 == {"joint_1": 1.0}
    assert r.torque == {"joint_2": 0.5}
    assert (r.pd["joint_3"].target, r.pd["joint_3"].kp, r.pd["joint_3"].kd) == (0.2, 100.0, 5.0)
    (e,) = s.environments
    assert e.name == "room" and e.urdf == folder / "pendulum-environment.urdf"
    c = s.contact
    assert (c.floor, c.margin, c.mu, c.restitution) == (False, 2e-3, 0.25, 0.7)
    assert (c.friction_directions, c.self_collision) == (8, True)
    assert c.disabled_pairs == (("link1", "link3"),)
    (p,) = c.pairs
    assert (p.a, p.b, p.mu, p.restitution, p.margin) == ("link3", "wall", 0.2, 0.1, None)
    (cl,) = s.closures
    assert (cl.type, cl.a, cl.b, cl.distance) == ("distance", "pendulum/link3", "world", 1.5)
    assert cl.point_a == (0.0, 0.0, -2.0) and cl.point_b == (1.0, 0.0, 2.0)
    o = s.output
    assert o.path == folder / "out" / "results.h5"
    assert (o.record_every, o.record_contacts, o.body_poses, o.dump_lcp) == (
        10,
        True,
        True,
        "failures",
    )
    assert s.input_files() == [
        scene,
        folder / "pendulum-3.urdf",
        folder / "pendulum-environment.urdf",
    ]


def test_defaults_fill_every_key(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    urdf = tmp_path / "p.urdf"
    urdf.write_bytes((SAMPLES / "pendulum-3.urdf").read_bytes())
    s = load_scenario(write(tmp_path, '[robot.r]\nurdf = "p.urdf"\n', "mini.toml"))
    sim = s.simulation
    assert (sim.duration, sim.dt, sim.formulation, sim.solver) == (1.0, 1e-3, "os", "lemke")
    assert sim.gravity == (0.0, 0.0, -9.81)
    assert (sim.integrator, sim.dynamics, sim.delassus) == ("euler", "aba", "upsilon")
    r = s.robots[0]
    assert (r.base, r.base_pose, r.q0, r.v0, r.torque, r.pd, r.srdf) == (
        "fixed",
        Pose((0.0, 0.0, 0.0), (0.0, 0.0, 0.0)),
        {},
        {},
        {},
        {},
        None,
    )
    c = s.contact
    assert (c.floor, c.margin, c.mu, c.restitution, c.friction_directions) == (
        False,
        1e-3,
        0.5,
        0.0,
        4,
    )
    assert (c.self_collision, c.disabled_pairs, c.srdf, c.pairs) == (True, (), None, ())
    assert s.environments == () and s.closures == ()
    # the unwritten output path is <scenario stem>.h5 in the current folder
    assert s.output.path == tmp_path / "mini.h5"
    assert (s.output.record_every, s.output.record_contacts, s.output.body_poses) == (
        1,
        False,
        True,
    )
    assert s.output.dump_lcp == "none"


@pytest.mark.parametrize("n", [12, 3])
def test_sample_scenarios_are_the_paper_benchmark(n):
    from mbsim.bench import DEFAULT_DURATION, pendulum_scenario

    s = load_scenario(SAMPLES / f"pendulum-{n}.toml")
    # the bundled scenario and the benchmark's run for the same time: long enough to reach
    # the wall (mbsim/bench.py DEFAULT_DURATION)
    bench = pendulum_scenario(n)
    assert s.simulation.duration == bench.simulation.duration == DEFAULT_DURATION
    assert s.simulation.dt == bench.simulation.dt == 1e-4
    assert s.simulation.gravity == (0.0, 0.0, -9.8)
    (r,) = s.robots
    assert (
        r.urdf == SAMPLES.resolve() / f"pendulum-{n}.urdf"
        or r.urdf == SAMPLES / f"pendulum-{n}.urdf"
    )
    assert r.q0 == {"joint_1": math.pi / 4} and r.v0 == {"joint_1": 1.0}
    assert [e.urdf.name for e in s.environments] == ["pendulum-environment.urdf"]
    c = s.contact
    assert (c.mu, c.restitution, c.self_collision) == (0.5, 0.7, True)
    model, specs, checked = build_scenario_model(s)
    assert model.nq == n and list(model.tree_names) == ["pendulum", "room"]


def test_pose_matrix_matches_urdf_rpy_convention():
    # R = Rz(yaw) Ry(pitch) Rx(roll): rotating x by yaw 90 deg gives y; by pitch 90 deg gives -z
    T = Pose((1.0, 2.0, 3.0), (0.0, 0.0, math.pi / 2)).matrix()
    assert T[:3, 0] == pytest.approx([0.0, 1.0, 0.0], abs=1e-15)
    assert list(T[:3, 3]) == [1.0, 2.0, 3.0]
    T = Pose((0.0, 0.0, 0.0), (0.0, math.pi / 2, 0.0)).matrix()
    assert T[:3, 0] == pytest.approx([0.0, 0.0, -1.0], abs=1e-15)
    T = Pose((0.0, 0.0, 0.0), (math.pi / 2, 0.0, 0.0)).matrix()
    assert T[:3, 1] == pytest.approx([0.0, 0.0, 1.0], abs=1e-15)


# --------------------------------------------------------------------------- to_toml


def test_to_toml_round_trips(scene: Path):
    s = load_scenario(scene)
    text = s.to_toml()
    assert tomllib.loads(text) == s.to_dict()
    again = load_scenario_text(text, source=scene)
    assert again == s
    # every path in the resolved text is absolute
    raw = tomllib.loads(text)
    assert Path(raw["robot"]["pendulum"]["urdf"]).is_absolute()
    assert Path(raw["output"]["path"]).is_absolute()


_NAMES = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12
).filter(lambda t: "." not in t)
_FLOATS = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(
    q0=st.dictionaries(_NAMES, _FLOATS, max_size=4), gravity=st.tuples(_FLOATS, _FLOATS, _FLOATS)
)
def test_emitter_quotes_any_name_and_keeps_every_float(q0, gravity):
    urdf = SAMPLES / "pendulum-3.urdf"
    s = scenario_from_urdf(urdf, q0=q0, gravity=list(gravity), output="/tmp/x.h5")
    raw = tomllib.loads(s.to_toml())
    assert raw["robot"]["pendulum-3"]["q0"] == q0  # exact floats, exact keys
    assert raw["simulation"]["gravity"] == list(gravity)


# --------------------------------------------------------------------------- overrides, flags


def test_overrides_set_dotted_keys_before_validation(scene: Path, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = load_scenario(
        scene,
        {
            "robot.pendulum.q0.joint_1": 0.5,
            "robot.pendulum.q0.joint_2": -0.25,
            "contact.mu": 0.9,
            "contact.pairs.0.mu": 0.05,
            "closure.0.distance": 2.5,
            "simulation.gravity": (0, 0, -1.62),
            "output.path": "sweep/out.h5",  # command-line paths are relative to the cwd
        },
    )
    assert s.robots[0].q0 == {"joint_1": 0.5, "joint_2": -0.25}
    assert s.contact.mu == 0.9 and s.contact.pairs[0].mu == 0.05
    assert s.closures[0].distance == 2.5
    assert s.simulation.gravity == (0.0, 0.0, -1.62)
    assert s.output.path == tmp_path / "sweep" / "out.h5"


def test_flags_address_the_single_robot(scene: Path):
    s = load_scenario(scene, flags={"dt": 1e-3, "mu": 0.1, "q0": {"joint_3": 0.1}, "base": "fixed"})
    assert s.simulation.dt == 1e-3 and s.contact.mu == 0.1
    assert s.robots[0].q0 == {"joint_1": math.pi / 4, "joint_3": 0.1}


def test_free_joint_keys_nested_or_quoted_are_the_same(tmp_path: Path):
    urdf = tmp_path / "box.urdf"
    urdf.write_text(FLOATING_URDF)
    common = '[robot.box]\nurdf = "box.urdf"\nbase = "floating"\n'
    a = load_scenario(write(tmp_path, common + "q0 = { root_joint = { z = 1.5 } }\n", "a.toml"))
    b = load_scenario(write(tmp_path, common + 'q0 = { "root_joint.z" = 1.5 }\n', "b.toml"))
    c = load_scenario(write(tmp_path, common + "[robot.box.q0]\nroot_joint.z = 1.5\n", "c.toml"))
    assert a.robots[0].q0 == b.robots[0].q0 == c.robots[0].q0 == {"root_joint.z": 1.5}
    s = load_scenario(
        write(tmp_path, common, "d.toml"),
        {"robot.box.q0.root_joint.qw": 0.0, "robot.box.q0.root_joint.qz": 1.0},
    )
    _, _, checked = build_scenario_model(s)  # a unit quaternion: accepted
    assert checked.robots[0].q0 == {"root_joint.qw": 0.0, "root_joint.qz": 1.0}


@pytest.mark.parametrize(
    "written",
    ['q0 = { "root_joint.z" = 0.5 }\n', "q0 = { root_joint = { z = 0.5 } }\n"],
    ids=["quoted", "nested"],
)
@pytest.mark.parametrize(
    "override", ["robot.box.q0.root_joint.z", 'robot.box.q0."root_joint.z"'], ids=["dots", "quoted"]
)
def test_override_of_a_free_joint_coordinate_replaces_the_written_one(tmp_path, written, override):
    """Issue 16: --set robot.box.q0.root_joint.z=0.51 on a file writing the documented quoted
    form was refused as 'given twice'. Whatever the spelling, the override replaces it."""
    urdf = tmp_path / "box.urdf"
    urdf.write_text(FLOATING_URDF)
    common = '[robot.box]\nurdf = "box.urdf"\nbase = "floating"\n'
    path = write(tmp_path, common + written + 'v0 = { "root_joint.vx" = 1.0 }\n', "s.toml")
    s = load_scenario(path, {override: 0.51})
    assert s.robots[0].q0 == {"root_joint.z": 0.51}
    assert s.robots[0].v0 == {"root_joint.vx": 1.0}
    s = load_scenario(path, flags={"q0": {"root_joint.z": 0.52}})
    assert s.robots[0].q0 == {"root_joint.z": 0.52}


def test_load_scenario_takes_a_bundled_sample_name():
    """Issue 16: load_scenario("sample:pendulum-12.toml") failed from Python (only the CLI
    resolved sample: names)."""
    s = load_scenario("sample:pendulum-12.toml")
    assert s.source is not None and s.source.name == "pendulum-12.toml"
    assert s.robots[0].urdf.name == "pendulum-12.urdf"
    with pytest.raises(ScenarioError, match="sample:nope.toml"):
        load_scenario("sample:nope.toml")


def test_scenario_from_urdf(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = tmp_path / "room.urdf"
    env.write_bytes((SAMPLES / "pendulum-environment.urdf").read_bytes())
    s = scenario_from_urdf(
        "sample:pendulum-3",
        dt=2e-4,
        duration=0.5,
        mu=0.3,
        floor=True,
        base="fixed",
        q0={"joint_1": 0.1},
        environments=["room.urdf"],
        body_poses=True,
    )
    assert s.source is None
    assert s.robots[0].name == "pendulum-3" and s.robots[0].urdf.name == "pendulum-3.urdf"
    assert s.robots[0].q0 == {"joint_1": 0.1}
    assert [(e.name, e.urdf) for e in s.environments] == [("room", env)]
    assert (s.simulation.dt, s.simulation.duration, s.contact.mu, s.contact.floor) == (
        2e-4,
        0.5,
        0.3,
        True,
    )
    assert s.output.path == tmp_path / "pendulum-3.h5" and s.output.body_poses is True
    _, _, checked = build_scenario_model(s)
    assert checked.robots[0].urdf == s.robots[0].urdf


def test_validation_canonicalises_link_references(scene: Path):
    _, _, s = build_scenario_model(load_scenario(scene))
    assert s.contact.disabled_pairs == (("pendulum/link1", "pendulum/link3"),)
    assert (s.contact.pairs[0].a, s.contact.pairs[0].b) == ("pendulum/link3", "room/wall")
    assert (s.closures[0].a, s.closures[0].b) == ("pendulum/link3", "world")


def test_srdf_pairs_are_added(scene: Path):
    (scene.parent / "p.srdf").write_text(
        '<robot name="p"><disable_collisions link1="link1" link2="link2" reason="Adjacent"/>'
        "</robot>"
    )
    s = load_scenario(scene, {"robot.pendulum.srdf": str(scene.parent / "p.srdf")})
    _, _, checked = build_scenario_model(s)
    assert ("pendulum/link1", "pendulum/link2") in checked.contact.disabled_pairs


def test_parse_value_and_split_link_ref():
    assert parse_value("0.5") == 0.5 and parse_value("true") is True
    assert parse_value("[0, 0, -9.8]") == [0, 0, -9.8] and parse_value("lemke") == "lemke"
    assert split_link_ref("a/b") == ("a", "b") and split_link_ref("b") == ("", "b")
    assert split_link_ref("world") == ("world", "world")


# --------------------------------------------------------------------------- errors

# (replace this, with that) in FULL -> the error names this key (and this text)
FILE_ERRORS = [
    ("dt = 1e-4", "dt = -1e-4", "simulation.dt", "greater than 0"),
    ("dt = 1e-4", "dt = 5.0", "simulation.dt", "must not exceed"),
    ("duration = 2.0", 'duration = "2"', "simulation.duration", "must be a number"),
    ("duration = 2.0", "duration = true", "simulation.duration", "must be a number"),
    ('formulation = "nmc-os"', 'formulation = "osc"', "simulation.formulation", "one of"),
    ("gravity = [0.0, 0.0, -9.8]", "gravity = [0.0, -9.8]", "simulation.gravity", "3 numbers"),
    ('integrator = "rk4"', 'integrator = "rk4"\ndtt = 1', "simulation.dtt", "unknown key"),
    ('base = "fixed"', 'base = "welded"', "robot.pendulum.base", "one of"),
    ('base = "fixed"', 'base = "fixed"\ncolour = 1', "robot.pendulum.colour", "unknown key"),
    ("kp = 100.0", "kp = -1.0", "robot.pendulum.pd.joint_3.kp", "at least 0"),
    (
        "q0 = { joint_1 = 0.7853981633974483 }",
        'q0 = { joint_1 = "a" }',
        "robot.pendulum.q0.joint_1",
        "must be a number",
    ),
    ("mu = 0.25", "mu = -0.25", "contact.mu", "at least 0"),
    ("restitution = 0.7", "restitution = 1.5", "contact.restitution", "at most 1"),
    ("friction_directions = 8", "friction_directions = 5", "contact.friction_directions", "even"),
    (
        "friction_directions = 8",
        "friction_directions = 2",
        "contact.friction_directions",
        "least 4",
    ),
    ("self_collision = true", "self_collision = 1", "contact.self_collision", "true or false"),
    ("restitution = 0.1 }", "restitution = 0.1, k = 2 }", "contact.pairs.0.k", "unknown key"),
    ("distance = 1.5", "", "closure.0.distance", "required"),
    ('type = "distance"', 'type = "ball"', "closure.0.distance", "only to type"),
    ('b = "world"', 'b = "pendulum/link3"', "closure.0.b", "same"),
    ("record_every = 10", "record_every = 0", "output.record_every", "at least 1"),
    ("record_every = 10", "record_every = 1.5", "output.record_every", "integer"),
    ('dump_lcp = "failures"', 'dump_lcp = "some"', "output.dump_lcp", "one of"),
    ('urdf = "pendulum-3.urdf"', 'urdf = "missing.urdf"', "robot.pendulum.urdf", "does not exist"),
    ("[environment.room]", "[environment.pendulum]", "environment.pendulum", "same name"),
    ("[environment.room]", "[environment.world]", "environment.world", "reserved"),
    ("[[closure]]", "[closure]", "closure", "array of tables"),
    ("[output]", "[outputs]", "outputs", "unknown key"),
]


@pytest.mark.parametrize("old, new, key, why", FILE_ERRORS)
def test_bad_values_name_file_line_and_key(scene: Path, old, new, key, why):
    assert old in FULL
    text = FULL.replace(old, new, 1)
    scene.write_text(text)
    with pytest.raises(ScenarioError) as exc:
        load_scenario(scene)
    msg = one_line_error(exc, str(scene), key, why)
    # the line: where the edited key (or its table) is written, by plain text search
    probe = new.split("\n")[-1] if new else "[[closure]]"
    if why == "only to type":
        probe = "distance = 1.5"  # the offending key, not the edited type
    assert f"line {line_of(text, probe)}" in msg, msg


def test_malformed_toml_gives_line_and_column(tmp_path: Path):
    path = write(tmp_path, "[simulation]\ndt = 1e-3\nduration = = 2\n")
    with pytest.raises(ScenarioError) as exc:
        load_scenario(path)
    one_line_error(exc, str(path), "not valid TOML", "line 3")


@pytest.mark.parametrize(
    "setup, fragment",
    [
        (lambda d: d / "missing.toml", "does not exist"),
        (lambda d: d, "not a regular file"),
        (lambda d: write_bytes(d / "bin.toml", b"\xff\xfe\x00x"), "UTF-8"),
        (lambda d: write(d, "[simulation]\nduration = 1.0\n"), "no robot"),
    ],
)
def test_unreadable_or_empty_scenarios(tmp_path: Path, setup, fragment):
    path = setup(tmp_path)
    with pytest.raises(ScenarioError) as exc:
        load_scenario(path)
    one_line_error(exc, fragment, str(Path(os.path.abspath(path))))


@pytest.mark.parametrize(
    "overrides, key, why",
    [
        ({"simulation.dt": 0.0}, "simulation.dt", "greater than 0"),
        ({"simulation.dtt": 1.0}, "simulation.dtt", "did you mean 'dt'"),
        ({"contact.mu": "high"}, "contact.mu", "must be a number"),
        ({"contact.impact_friction": "full"}, "contact.impact_friction", "compression"),
        ({"contact.friction_axes": "body"}, "contact.friction_axes", "world"),
        ({"contact.curvature_point": "surface"}, "contact.curvature_point", "contact"),
        ({"robot.ghost.q0.joint_1": 1.0}, "robot.ghost.q0.joint_1", "no robot 'ghost'"),
        ({"contact.pairs.4.mu": 1.0}, "contact.pairs.4.mu", "no item 4"),
        ({"simulation.dt.x": 1.0}, "simulation.dt.x", "not a table"),
        ({"a..b": 1.0}, "a..b", "not a dotted key"),
    ],
)
def test_bad_overrides_are_named_as_overrides(scene: Path, overrides, key, why):
    with pytest.raises(ScenarioError) as exc:
        load_scenario(scene, overrides)
    msg = one_line_error(exc, str(scene), key, why)
    assert "line" not in msg  # an override has no line in the file


@pytest.mark.parametrize(
    "overrides, key, why",
    [
        ({"robot.pendulum.q0.joint_9": 1.0}, "robot.pendulum.q0.joint_9", "no q coordinate"),
        ({"robot.pendulum.v0.joint_0": 1.0}, "robot.pendulum.v0.joint_0", "no v coordinate"),
        ({"robot.pendulum.torque.link1": 1.0}, "robot.pendulum.torque.link1", "joint_1"),
        (
            {"robot.pendulum.pd.wrist": {"kp": 1.0}},
            "robot.pendulum.pd.wrist",
            "no 1-DoF joint",
        ),
        ({"contact.disabled_pairs": [["link1", "link9"]]}, "disabled_pairs.0.1", "link9"),
        ({"contact.pairs.0.b": "room/link1"}, "contact.pairs.0.b", "room has no link"),
        ({"contact.pairs.0.b": "builtin/floor"}, "contact.pairs.0.b", "floor is off"),
        ({"closure.0.a": "robot/link3"}, "closure.0.a", "no robot or environment 'robot'"),
    ],
)
def test_unknown_names_are_caught_against_the_model(scene: Path, overrides, key, why):
    s = load_scenario(scene, overrides)
    with pytest.raises(ScenarioError) as exc:
        build_scenario_model(s)
    one_line_error(exc, str(scene), key, why)


def test_unknown_joint_in_file_names_its_line(scene: Path):
    text = FULL.replace("torque = { joint_2 = 0.5 }", "torque = { joint_22 = 0.5 }")
    scene.write_text(text)
    with pytest.raises(ScenarioError) as exc:
        build_scenario_model(load_scenario(scene))
    one_line_error(
        exc, str(scene), f"line {line_of(text, 'joint_22')}", "robot.pendulum.torque.joint_22"
    )


def test_ambiguous_link_and_builtin_floor(scene: Path):
    # with the built-in floor on, "floor" names both it and the room's floor link
    s = load_scenario(scene, {"contact.floor": True, "contact.pairs.0.b": "floor"})
    with pytest.raises(ScenarioError) as exc:
        build_scenario_model(s)
    one_line_error(exc, "contact.pairs.0.b", "ambiguous", "TREE/floor")
    s = load_scenario(scene, {"contact.floor": True, "contact.pairs.0.b": "builtin/floor"})
    _, _, checked = build_scenario_model(s)
    assert checked.contact.pairs[0].b == "builtin/floor"


def test_initial_state_out_of_range(tmp_path: Path):
    (tmp_path / "box.urdf").write_text(FLOATING_URDF)
    path = write(tmp_path, '[robot.box]\nurdf = "box.urdf"\nbase = "floating"\n')
    s = load_scenario(path, {"robot.box.q0.elbow": 0.75})
    with pytest.raises(ScenarioError) as exc:
        build_scenario_model(s)
    one_line_error(exc, "robot.box.q0.elbow", "outside the joint limits [-0.5, 0.5]")
    s = load_scenario(path, {"robot.box.q0.root_joint.qz": 0.5})  # qw stays 1: norm 1.118
    with pytest.raises(ScenarioError) as exc:
        build_scenario_model(s)
    one_line_error(exc, "root_joint", "unit quaternion", "1.11803")


def test_flag_errors(scene: Path, tmp_path: Path):
    with pytest.raises(ScenarioError) as exc:
        scenario_from_urdf(tmp_path / "nope.urdf")
    one_line_error(exc, str(tmp_path / "nope.urdf"), "does not exist")
    with pytest.raises(ScenarioError) as exc:
        scenario_from_urdf(SAMPLES / "pendulum-3.urdf", dt=-1.0)
    one_line_error(exc, "command line", "simulation.dt", "greater than 0")
    # an override of a URDF run (no file: everything is the command line) is "command line:
    # KEY: why", like its other errors
    with pytest.raises(ScenarioError) as exc:
        scenario_from_urdf(SAMPLES / "pendulum-3.urdf", {"robot.arm.control.joint_1.kp": 1.0})
    assert str(exc.value) == (
        "command line: robot.arm.control.joint_1.kp: there is no robot 'arm' (have: pendulum-3)."
    )
    with pytest.raises(ScenarioError) as exc:
        load_scenario(scene, flags={"colour": "red"})
    one_line_error(exc, "unknown flag 'colour'")
    two = FULL.replace("[environment.room]", '[robot.other]\nurdf = "pendulum-3.urdf"\n\n[env]')
    with pytest.raises(ScenarioError) as exc:
        load_scenario(
            write(scene.parent, two.replace("[env]", "[environment.room]")),
            flags={"base": "floating"},
        )
    one_line_error(exc, "--base", "exactly one robot", "robot.NAME.base")


def test_friction_laws_reach_the_stepper():
    """contact.impact_friction, contact.friction_axes and contact.curvature_point (issue 14
    secs. 3-4): the defaults are Coulomb over the whole impact impulse, the slip-aligned
    polyhedron and the core-point gap prediction; the papers' laws are selectable, survive
    to_toml and reach the stepper's options."""
    from mbsim.simulator import Simulator

    sc = load_scenario("sample:pendulum-3.toml")
    assert (sc.contact.impact_friction, sc.contact.friction_axes) == ("total", "slip")
    over = {
        "contact.impact_friction": "compression",
        "contact.friction_axes": "world",
        "contact.curvature_point": "contact",
    }
    papers = ("compression", "world", "contact")
    sc = load_scenario("sample:pendulum-3.toml", over)
    again = load_scenario_text(sc.to_toml(), source=sc.source).contact
    assert (again.impact_friction, again.friction_axes, again.curvature_point) == papers
    opt = Simulator(sc).stepper.opt
    assert (opt.impact_friction, opt.friction_axes, opt.curvature_point) == papers
