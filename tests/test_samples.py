"""Tests of the sample robots (mbsim.samples and the bundled mbsim/sample_robots files).

The truth here is independent of the generators: the paper's numbers (n spheres of 1 kg,
12 m overall, base at 10 m, wall 4 m away; chain of 1 kg, 1 m bodies at height 1), the
textbook inertias, the XML read back with lxml, and Pinocchio's own URDF parser and
kinematics.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from lxml import etree

from mbsim.errors import MbsimError
from mbsim.samples import catalog, chain_urdf, generators, pendulum_environment_urdf, pendulum_urdf

BUNDLED_DIR = Path(generators.__file__).resolve().parents[1] / "sample_robots"
EXPECTED_FILES = {
    "pendulum-3.urdf",
    "pendulum-6.urdf",
    "pendulum-12.urdf",
    "pendulum-15.urdf",
    "pendulum-24.urdf",
    "pendulum-30.urdf",
    "pendulum-environment.urdf",
    "ground.urdf",
    "chain-3.urdf",
    "chain-8.urdf",
}
#: Bundled URDFs made by other generators or imported, each checked by its own test file:
#: fourbar.urdf (samples/linkages.py, tests/test_bilateral.py); the dual-arm files
#: (samples/dual_arm.py, tests/test_dual_arm.py); panda.urdf and table.urdf, imported and
#: hand-written (tests/test_mesh_arm.py).
OTHER_BUNDLED = {
    "fourbar.urdf", "dual-arm.urdf", "dual-arm-hub.urdf", "dual-arm-wheel.urdf", "panda.urdf",
    "table.urdf", "quadruped.urdf",
}  # fmt: skip


def _xml(text: str) -> etree._Element:
    """The <robot> element of URDF text (lxml wants bytes when a declaration is present)."""
    return etree.fromstring(text.encode("utf-8"))


def _floats(attr: str) -> list[float]:
    return [float(v) for v in attr.split()]


def _link(robot, name):
    (link,) = robot.findall(f"link[@name='{name}']")
    return link


def _joint(robot, name):
    (joint,) = robot.findall(f"joint[@name='{name}']")
    return joint


def _origin(elem) -> np.ndarray:
    return np.array(_floats(elem.find("origin").get("xyz")))


def _total_mass(path_or_text: str, from_text: bool = False) -> float:
    model = (
        pin.buildModelFromXML(path_or_text) if from_text else pin.buildModelFromUrdf(path_or_text)
    )
    return pin.computeTotalMass(model)


# --- pendulum ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 3, 7, 12, 30])
def test_pendulum_matches_paper_geometry(n):
    robot = _xml(pendulum_urdf(n))
    assert robot.get("name") == f"pendulum-{n}"
    r = 12.0 / (2 * n)  # n diameters span the 12 m overall length
    assert robot.find("link[@name='world']").find("inertial") is None
    assert len(robot.findall("link")) == n + 1
    assert len(robot.findall("joint")) == n

    for k in range(1, n + 1):
        link = _link(robot, f"link{k}")
        inertial = link.find("inertial")
        assert float(inertial.find("mass").get("value")) == 1.0
        np.testing.assert_allclose(_origin(inertial), [0.0, 0.0, -r], rtol=0, atol=1e-15)
        inertia = inertial.find("inertia")
        for diag in ("ixx", "iyy", "izz"):
            assert float(inertia.get(diag)) == pytest.approx(0.4 * 1.0 * r**2, rel=1e-15)
        for off in ("ixy", "ixz", "iyz"):
            assert float(inertia.get(off)) == 0.0
        for tag in ("visual", "collision"):
            shape = link.find(tag)
            # repr precision: the printed radius reads back as exactly 6/n.
            assert float(shape.find("geometry/sphere").get("radius")) == 6.0 / n
            np.testing.assert_allclose(_origin(shape), [0.0, 0.0, -r], rtol=0, atol=1e-15)

    hinge_z = []
    for k in range(1, n + 1):
        joint = _joint(robot, f"joint_{k}")
        assert joint.get("type") == "continuous"
        assert joint.find("parent").get("link") == ("world" if k == 1 else f"link{k - 1}")
        assert joint.find("child").get("link") == f"link{k}"
        assert _floats(joint.find("axis").get("xyz")) == [0.0, 1.0, 0.0]
        assert float(joint.find("dynamics").get("damping")) == 0.0
        assert float(joint.find("dynamics").get("friction")) == 0.0
        offset = _origin(joint)
        if k == 1:
            assert list(offset) == [0.0, 0.0, 10.0]
            hinge_z.append(10.0)
        else:
            assert offset[:2].tolist() == [0.0, 0.0]
            # neighbouring spheres touch at the hinge: one diameter below the previous one
            assert offset[2] == pytest.approx(-12.0 / n, rel=1e-15)
            hinge_z.append(hinge_z[-1] + offset[2])

    # Hanging straight down: hinges every 12/n m from z = 10, bottom of the last sphere one
    # diameter below the last hinge, 12 m below the base, i.e. 2 m under the floor top.
    tip_z = hinge_z[-1] - 2 * r
    assert 10.0 - tip_z == pytest.approx(12.0, abs=1e-12)
    assert tip_z == pytest.approx(-2.0, abs=1e-12)


@pytest.mark.parametrize("n", [3, 12])
def test_pendulum_start_pose_faces_the_wall(n):
    """With Pinocchio kinematics: at the paper's q1 = +pi/4 the chain hangs on the -x side,
    clear of the floor; mirrored (q1 = -pi/4) its tip passes the wall plane x = 4."""
    model = pin.buildModelFromXML(pendulum_urdf(n))
    data = model.createData()
    r = 6.0 / n

    def tip(q1):
        q = pin.neutral(model)
        q[0], q[1] = math.cos(q1), math.sin(q1)  # continuous joints are (cos, sin) in q
        pin.forwardKinematics(model, data, q)
        return data.oMi[model.njoints - 1].act(np.array([0.0, 0.0, -2 * r]))

    start = tip(math.pi / 4)
    np.testing.assert_allclose(
        start, [-12 * math.sin(math.pi / 4), 0, 10 - 12 * math.cos(math.pi / 4)]
    )
    assert start[0] < 0.0 < start[2]
    assert tip(-math.pi / 4)[0] > 4.0
    np.testing.assert_allclose(tip(0.0), [0.0, 0.0, -2.0], atol=1e-12)


def test_pendulum_rejects_bad_counts():
    for bad in (0, -3, True, 2.0):
        with pytest.raises(ValueError):
            pendulum_urdf(bad)


# --- environment ------------------------------------------------------------------------


def _box_world_bounds(robot, name):
    """(min, max) corners of the box collision of link ``name`` welded to world (no rpy)."""
    joint = next(j for j in robot.findall("joint") if j.find("child").get("link") == name)
    assert joint.get("type") == "fixed"
    assert joint.find("parent").get("link") == "world"
    assert _floats(joint.find("origin").get("rpy")) == [0.0, 0.0, 0.0]
    coll = _link(robot, name).find("collision")
    assert _floats(coll.find("origin").get("rpy")) == [0.0, 0.0, 0.0]
    centre = _origin(joint) + _origin(coll)
    half = np.array(_floats(coll.find("geometry/box").get("size"))) / 2
    return centre - half, centre + half


def test_environment_floor_top_and_wall_face():
    robot = _xml(pendulum_environment_urdf())
    assert {j.get("type") for j in robot.findall("joint")} == {"fixed"}
    floor_lo, floor_hi = _box_world_bounds(robot, "floor")
    assert floor_hi[2] == pytest.approx(0.0, abs=1e-15)
    assert floor_lo[0] < -12.0 and floor_hi[0] > 12.0  # the 12 m chain lands on it
    wall_lo, wall_hi = _box_world_bounds(robot, "wall")
    assert wall_lo[0] == pytest.approx(4.0, abs=1e-15)  # face toward the pendulum
    assert wall_lo[2] == pytest.approx(0.0, abs=1e-15)
    assert wall_hi[2] > 10.0
    for name in ("floor", "wall"):
        assert float(_link(robot, name).find("inertial/mass").get("value")) > 0.0


def test_environment_wall_distance_and_ground():
    wall_lo, _ = _box_world_bounds(_xml(pendulum_environment_urdf(wall_distance=6.5)), "wall")
    assert wall_lo[0] == pytest.approx(6.5)
    ground = _xml(generators.ground_urdf())
    assert [link.get("name") for link in ground.findall("link")] == ["world", "floor"]


# --- chain ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 3, 8])
def test_chain_matches_paper(n):
    robot = _xml(chain_urdf(n))
    t = 0.05
    for k in range(1, n + 1):
        inertial = _link(robot, f"link{k}").find("inertial")
        assert float(inertial.find("mass").get("value")) == 1.0
        np.testing.assert_allclose(_origin(inertial), [0.5, 0.0, 0.0])
        inertia = inertial.find("inertia")
        # solid box 1 x t x t about its centre
        assert float(inertia.get("ixx")) == pytest.approx((t * t + t * t) / 12)
        assert float(inertia.get("iyy")) == pytest.approx((1 + t * t) / 12)
        assert float(inertia.get("izz")) == pytest.approx((1 + t * t) / 12)
        size = _floats(_link(robot, f"link{k}").find("visual/geometry/box").get("size"))
        assert size == [1.0, t, t]
    assert _joint(robot, "base_x").get("type") == "prismatic"
    assert _joint(robot, "base_z").get("type") == "prismatic"
    assert _link(robot, "slider_x").find("inertial") is None

    # Collision shapes: exactly P on link1 at its left end and Q on link n at its right end.
    colls = [
        (c.getparent().get("name"), c.get("name"), _origin(c)) for c in robot.iter("collision")
    ]
    assert [(link, name) for link, name, _ in colls] == [("link1", "P"), (f"link{n}", "Q")]

    # Pinocchio: free planar chain (2 sliders + n hinges), n kg, horizontal at height 1.
    model = pin.buildModelFromXML(chain_urdf(n))
    assert model.nv == n + 2
    assert pin.computeTotalMass(model) == pytest.approx(n)
    data = model.createData()
    pin.forwardKinematics(model, data, pin.neutral(model))
    id1, idn = model.getJointId("joint_1"), model.getJointId(f"joint_{n}")
    np.testing.assert_allclose(data.oMi[id1].act(colls[0][2]), [0.0, 0.0, 1.0], atol=1e-15)
    np.testing.assert_allclose(data.oMi[idn].act(colls[1][2]), [float(n), 0.0, 1.0], atol=1e-12)
    # every hinge axis is world +y, so the motion stays in the x-z plane
    for k in range(1, n + 1):
        joint = _joint(robot, f"joint_{k}")
        assert _floats(joint.find("axis").get("xyz")) == [0.0, 1.0, 0.0]
        assert joint.get("type") == "continuous"


def test_chain_variants():
    pinned = _xml(chain_urdf(8, pinned=True))
    assert pinned.find("link[@name='slider_x']") is None
    j1 = _joint(pinned, "joint_1")
    assert j1.find("parent").get("link") == "world" and list(_origin(j1)) == [0.0, 0.0, 1.0]
    assert pin.buildModelFromXML(chain_urdf(8, pinned=True)).nv == 8
    only_p = _xml(chain_urdf(4, contact_points="P"))
    assert [c.get("name") for c in only_p.iter("collision")] == ["P"]
    with pytest.raises(ValueError):
        chain_urdf(3, contact_points="PX")
    with pytest.raises(ValueError):
        chain_urdf(0)


# --- bundled files ----------------------------------------------------------------------


def test_bundled_files_are_current():
    """The shipped files are exactly what the generators produce now (never stale)."""
    on_disk = {p.name for p in BUNDLED_DIR.glob("*.urdf")}
    assert on_disk == EXPECTED_FILES | OTHER_BUNDLED
    expected = generators.bundled_samples()
    assert set(expected) == EXPECTED_FILES
    for name, text in expected.items():
        assert (BUNDLED_DIR / name).read_bytes() == text.encode("utf-8"), name


def test_generators_are_deterministic():
    assert pendulum_urdf(7) == pendulum_urdf(7)
    assert chain_urdf(5) == chain_urdf(5)
    assert pendulum_environment_urdf() == pendulum_environment_urdf()


@pytest.mark.parametrize("name", sorted(EXPECTED_FILES))
def test_bundled_file_loads_in_pinocchio(name):
    model = pin.buildModelFromUrdf(str(BUNDLED_DIR / name))
    stem = name.removesuffix(".urdf")
    kind, _, count = stem.partition("-")
    if count.isdigit():
        n = int(count)
        assert pin.computeTotalMass(model) == pytest.approx(float(n), rel=1e-12)
        assert model.nv == (n if kind == "pendulum" else n + 2)
    else:
        assert model.nv == 0  # static environment: everything welded to the world


# --- catalog ----------------------------------------------------------------------------


def test_sample_names_lists_bundled():
    names = EXPECTED_FILES | OTHER_BUNDLED
    assert catalog.sample_names() == sorted(n.removesuffix(".urdf") for n in names)


def test_sample_path_bundled():
    path = catalog.sample_path("pendulum-12")
    assert path.resolve() == (BUNDLED_DIR / "pendulum-12.urdf").resolve()
    assert catalog.sample_path("pendulum-012.urdf").resolve() == path.resolve()
    assert catalog.sample_path("pendulum-environment").name == "pendulum-environment.urdf"


def test_sample_path_generates_into_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = catalog.sample_path("pendulum-7")
    assert path == tmp_path / "mbsim" / "samples" / "pendulum-7.urdf"
    robot = _xml(path.read_text())
    assert len(robot.findall("link")) == 8
    assert float(_link(robot, "link7").find("collision/geometry/sphere").get("radius")) == 6 / 7
    assert _total_mass(str(path)) == pytest.approx(7.0)
    # a second call reuses the file; a corrupted cache entry is rewritten
    assert catalog.sample_path("pendulum-7") == path
    path.write_text("garbage")
    catalog.sample_path("pendulum-7")
    assert path.read_text() == pendulum_urdf(7)
    chain = catalog.sample_path("chain-5")
    assert chain.parent == path.parent
    assert _total_mass(str(chain)) == pytest.approx(5.0)
    assert sorted(p.name for p in path.parent.iterdir()) == ["chain-5.urdf", "pendulum-7.urdf"]


def test_cache_dir_default(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert catalog.cache_dir() == tmp_path / ".cache" / "mbsim" / "samples"


@pytest.mark.parametrize("name", ["no-such-robot", "pendulum-0", "chain-0", "pendulum-x", "chain"])
def test_sample_path_unknown_raises(name):
    with pytest.raises(MbsimError) as info:
        catalog.sample_path(name)
    message = str(info.value)
    assert repr(name) in message
    assert "pendulum-12" in message and "chain-8" in message
    assert message.count(". ") == 0 and message.endswith(".")  # one sentence
