"""The dual-arm platform of 000 (Sec. 3, Fig. 1, Table 1) and its wheel-removal task.

Independent truth: the paper's counts (4-link head, two 7-link arms, 3-finger hands, 26 links
and 26 DoF; Table 1 LCP sizes 310/50/24/24 for 4 contacts, nf = 4), mass properties of the
primitives integrated over triangle meshes by trimesh (not the closed forms of the generator),
Pinocchio's URDF parser, kinematics and CRBA, and the URDF/TOML text read back with lxml and
tomllib.
"""

from __future__ import annotations

import math
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import trimesh
from lxml import etree

from mbsim.io.results import load_results
from mbsim.io.scenario import load_scenario, load_scenario_text
from mbsim.io.urdf import load_urdf
from mbsim.samples import dual_arm
from mbsim.samples.catalog import bundled_dir, sample_names
from mbsim.simcore.data import Data
from mbsim.simcore.dynamics import crba
from mbsim.simcore.kinematics import forward_kinematics
from mbsim.simcore.model import build_model
from mbsim.simcore.stepper import OSStepper
from mbsim.simulator import Simulator

ROBOTS = bundled_dir()
ROBOT = ROBOTS / "dual-arm.urdf"
WHEEL = ROBOTS / "dual-arm-wheel.urdf"
HUB = ROBOTS / "dual-arm-hub.urdf"
SCENE = ROBOTS / "dual-arm-wheel.toml"
HANDS = ("l", "r")


def _xml(path: Path) -> etree._Element:
    return etree.fromstring(path.read_bytes())


def _floats(text: str) -> np.ndarray:
    return np.array([float(v) for v in text.split()])


def _pin_model(path: Path) -> pin.Model:
    """Pinocchio model of a URDF whose collision elements are dropped: urdfdom has no
    <capsule> and would print an error per capsule (kinematics and inertia are unaffected)."""
    root = _xml(path)
    for col in root.findall("link/collision"):
        col.getparent().remove(col)
    return pin.buildModelFromXML(etree.tostring(root).decode())


# --------------------------------------------------------------------------- the files


def test_bundled_files_are_current_and_listed():
    for name, text in dual_arm.bundled_dual_arm_samples().items():
        assert (ROBOTS / name).read_bytes() == text.encode("utf-8"), name
    assert {"dual-arm", "dual-arm-wheel", "dual-arm-hub"} <= set(sample_names())


# --------------------------------------------------------------------------- the robot


def test_robot_has_the_papers_structure():
    """26 moving links on 26 revolute joints: a 4-link head chain and two 7-link arm chains
    from the fixed torso, each arm ending in a 4-link, 3-finger hand."""
    model = build_model([load_urdf(ROBOT)])
    assert (model.nb, model.nv, model.nq) == (26, 26, 26)
    assert set(model.joint_types) == {"revolute"}
    names = list(model.body_names)
    parent = {names[i]: (names[p] if p >= 0 else None) for i, p in enumerate(model.parent)}

    def chain(prefix, count):
        for k in range(1, count + 1):
            expected = None if k == 1 else f"{prefix}{k - 1}"
            assert parent[f"{prefix}{k}"] == expected, f"{prefix}{k}"

    chain("head_link", 4)
    for side in HANDS:
        chain(f"{side}_link", 7)
        hand = {n for n in names if n.startswith(f"{side}_f")}
        assert len(hand) == 4
        fingers = {n for n in hand if n[-1].isdigit()}
        assert fingers == {f"{side}_f1", f"{side}_f2", f"{side}_f3"}
        # every finger is a leaf, and all hand links hang off the arm's last link
        assert not any(parent[n] in fingers for n in names)
        for n in hand:
            top = n
            while parent[top] in hand:
                top = parent[top]
            assert parent[top] == f"{side}_link7"
    assert sum(1 for n in names if parent[n] is None) == 1 + 2  # head + two arms on the torso

    # Pinocchio reads the same tree: 26 joints plus the universe, 26 DoF.
    pmodel = _pin_model(ROBOT)
    assert (pmodel.nv, pmodel.njoints) == (26, 27)
    # masses: head 0.8 + 0.6 + 1.5 + 0.4; arm 2 + 1.5 + 2.5 + 1 + 1.5 + 0.5 + 0.8; hand
    # 0.05 + 3 x 0.08 (the torso is welded to the world and does not count)
    expected = 3.3 + 2 * (9.8 + 0.29)
    assert pin.computeTotalMass(pmodel) == pytest.approx(expected, rel=1e-12)
    assert float(np.sum(model.mass)) == pytest.approx(expected, rel=1e-12)


def test_joint_limits_are_set_and_wheel_scene_respects_them():
    robot = _xml(ROBOT)
    limits = {}
    for joint in robot.findall("joint"):
        if joint.get("type") == "fixed":
            continue
        lim = joint.find("limit")
        lo, hi = float(lim.get("lower")), float(lim.get("upper"))
        assert lo < hi and float(lim.get("effort")) > 0 and float(lim.get("velocity")) > 0
        limits[joint.get("name")] = (lo, hi)
    assert len(limits) == 26
    scene = tomllib.loads(SCENE.read_text())["robot"]["dual-arm"]
    for name, value in scene["q0"].items():
        assert limits[name][0] <= value <= limits[name][1], name
    for name, gain in scene["pd"].items():
        assert limits[name][0] <= gain["target"] <= limits[name][1], name
    assert set(scene["pd"]) == set(limits)  # every joint is driven


def _mesh(kind: str, geometry: etree._Element) -> trimesh.Trimesh:
    """A fine triangle mesh of a URDF primitive in its own frame."""
    if kind == "box":
        return trimesh.creation.box(extents=_floats(geometry.get("size")))
    r = float(geometry.get("radius"))
    if kind == "sphere":
        return trimesh.creation.icosphere(subdivisions=5, radius=r)
    h = float(geometry.get("length"))
    if kind == "cylinder":
        return trimesh.creation.cylinder(radius=r, height=h, sections=256)
    return _capsule(r, h)


def _capsule(radius: float, length: float) -> trimesh.Trimesh:
    """A watertight capsule mesh: trimesh merges vertices closer than its tolerance, which
    leaves small fine capsules open, so it is built at radius 1 and scaled."""
    mesh = trimesh.creation.capsule(height=length / radius, radius=1.0, count=[64, 64])
    mesh.apply_scale(radius)
    return mesh


def _origin(elem: etree._Element) -> np.ndarray:
    o = elem.find("origin")
    T = trimesh.transformations.euler_matrix(*_floats(o.get("rpy")), axes="sxyz")
    T[:3, 3] = _floats(o.get("xyz"))
    return T


def _inertia(inertial: etree._Element) -> np.ndarray:
    i = inertial.find("inertia")
    g = {k: float(i.get(k)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
    return np.array(
        [
            [g["ixx"], g["ixy"], g["ixz"]],
            [g["ixy"], g["iyy"], g["iyz"]],
            [g["ixz"], g["iyz"], g["izz"]],
        ]
    )


def test_link_inertias_are_those_of_their_solid_primitive():
    """Every link's com and inertia equal the mass properties of its (single) primitive as a
    uniform solid of the link's mass, integrated over a triangle mesh by trimesh."""
    for link in _xml(ROBOT).findall("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        (shape,) = link.findall("visual")  # one primitive per link (visual = collision)
        geometry = shape.find("geometry")[0]
        mesh = _mesh(geometry.tag, geometry)
        if geometry.tag == "cylinder" and link.find("collision/geometry/capsule") is not None:
            mesh = _mesh("capsule", link.find("collision/geometry/capsule"))
        assert mesh.is_watertight
        mesh.apply_transform(_origin(shape))
        mass = float(inertial.find("mass").get("value"))
        mesh.density = mass / mesh.volume
        com = _floats(inertial.find("origin").get("xyz"))
        np.testing.assert_allclose(com, mesh.center_mass, atol=1e-9, err_msg=link.get("name"))
        I = _inertia(inertial)  # noqa: E741
        # the meshes' polygonal sections make up to ~4e-4 of the largest moment
        scale = np.max(np.abs(I))
        np.testing.assert_allclose(
            I, mesh.moment_inertia, atol=1e-3 * scale, err_msg=link.get("name")
        )


def test_wheel_mass_properties():
    """Torus rim + tube hub + 4 capsule spokes, integrated over meshes, about the centre."""
    link = _xml(WHEEL).find("link")
    inertial = link.find("inertial")
    d = dual_arm
    along_x = trimesh.transformations.rotation_matrix(math.pi / 2, [0, 1, 0])
    parts = [
        (trimesh.creation.torus(d.WHEEL_RADIUS, d.RIM_TUBE, 256, 64), d.RIM_MASS, along_x),
        (
            trimesh.creation.annulus(d.BORE_RADIUS, d.HUB_OUTER, d.HUB_LENGTH, sections=256),
            d.HUB_MASS,
            along_x,
        ),
    ]
    for k in range(4):
        a = math.pi / 4 + k * math.pi / 2
        T = trimesh.transformations.rotation_matrix(a - math.pi / 2, [1, 0, 0])
        T[:3, 3] = (0.0, 0.1 * math.cos(a), 0.1 * math.sin(a))
        length = d.SPOKE_OUT - d.SPOKE_IN
        spoke = _capsule(d.SPOKE_RADIUS, length)
        parts.append((spoke, d.SPOKE_MASS, T))
    total = np.zeros((3, 3))
    mass = 0.0
    for mesh, m, T in parts:
        assert mesh.is_watertight
        mesh.apply_transform(T)
        mesh.density = m / mesh.volume
        c = mesh.center_mass
        total += mesh.moment_inertia + m * (c @ c * np.eye(3) - np.outer(c, c))
        mass += m
    assert float(inertial.find("mass").get("value")) == pytest.approx(mass) == pytest.approx(2.0)
    np.testing.assert_allclose(_floats(inertial.find("origin").get("xyz")), 0.0, atol=0)
    # the meshes' polygonal sections make ~1e-4 of the largest moment; a wrong term of the
    # torus formula (5/8 a^2 -> 3/4 a^2) would be 1.5e-3
    np.testing.assert_allclose(_inertia(inertial), total, rtol=0, atol=3e-4 * np.max(total))


def test_mass_matrix_is_positive_definite_and_matches_pinocchio():
    model = build_model([load_urdf(ROBOT)])
    data = Data(model)
    pmodel = _pin_model(ROBOT)
    pdata = pmodel.createData()
    rng = np.random.default_rng(6)
    lo, hi = model.lower, model.upper
    for q in [model.neutral_q()] + [rng.uniform(lo, hi) for _ in range(5)]:
        M = crba(model, data, q)
        np.testing.assert_allclose(M, M.T, atol=1e-14)
        assert np.linalg.eigvalsh(M).min() > 0.0
        # same joint order in both (depth-first, file order); Pinocchio's M is upper only
        assert [pmodel.names[i] for i in range(1, 27)] == list(model.joint_names)
        Mp = pin.crba(pmodel, pdata, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        np.testing.assert_allclose(M, Mp, rtol=0, atol=1e-12 * np.abs(Mp).max())


def test_grasp_puts_the_rim_between_the_fingers():
    """With Pinocchio's kinematics at the scenario's q0: each hand axis (x of link 7) points at
    the wheel's axle and the point GRASP_X along it is the rim's tube centre at (0.5, +-0.18, 1)."""
    pmodel = _pin_model(ROBOT)
    pdata = pmodel.createData()
    q0 = tomllib.loads(SCENE.read_text())["robot"]["dual-arm"]["q0"]
    q = np.array([q0.get(pmodel.names[i], 0.0) for i in range(1, 27)])
    pin.forwardKinematics(pmodel, pdata, q)
    for side, sgn in (("l", 1.0), ("r", -1.0)):
        pose = pdata.oMi[pmodel.getJointId(f"{side}_joint7")]
        np.testing.assert_allclose(pose.rotation[:, 0], [0.0, -sgn, 0.0], atol=2e-6)
        # fingers 1-2 sit behind the rim (+x), finger 3 in front: the hand's z is world +x
        np.testing.assert_allclose(pose.rotation[:, 2], [1.0, 0.0, 0.0], atol=2e-6)
        grasp = pose.act(np.array([dual_arm.GRASP_X, 0.0, 0.0]))
        np.testing.assert_allclose(grasp, [0.5, sgn * 0.18, 1.0], atol=2e-6)


# --------------------------------------------------------------------------- Table 1


def test_table_1_lcp_sizes_from_actual_steps():
    """000 Table 1: n = 26, N = 26, nb = 0, nu = 4, nf = 4 give NMC 310, MC 50, RMC 24, OS 24
    (and NMC/OS 5n + 24 = 154): the sizes of the LCPs the steps actually solve."""
    scenario = load_scenario_text(
        dual_arm.table1_scenario_toml("os", 4), source=ROBOTS / "table1.toml"
    )
    sim = Simulator(scenario)
    assert (sim.model.nb, sim.model.nv) == (26, 26)
    paper = {"nmc": 310, "mc": 50, "rmc": 24, "os": 24, "nmc-os": 154}
    v_plus = {}
    for form, size in paper.items():
        stepper = OSStepper(sim.model, sim.scene, replace(sim.options, formulation=form))
        _, v1, report = stepper.step(sim.q.copy(), sim.v.copy(), 0.0)
        assert report.n_contacts == 4
        touching = {sim.scene.links[g] for g in report.contacts.geom_a}
        touching |= {sim.scene.links[g] for g in report.contacts.geom_b}
        assert touching == {
            "dual-arm/l_f1", "dual-arm/l_f2", "dual-arm/r_f1", "dual-arm/r_f2", "wheel/wheel"
        }  # fmt: skip
        assert report.lcp_size == size, form
        v_plus[form] = v1
    # the same physics: every formulation's step ends at (nearly) the same velocity
    for form, v1 in v_plus.items():
        np.testing.assert_allclose(v1, v_plus["os"], atol=1e-6, err_msg=form)


# --------------------------------------------------------------------------- the wheel task


def _pairs(sim, report) -> set[frozenset]:
    c = report.contacts
    links = sim.scene.links
    return {frozenset((links[a], links[b])) for a, b in zip(c.geom_a, c.geom_b, strict=True)}


def test_wheel_scene_grasps_and_slides_the_wheel():
    """300 steps (0.3 s): fingers of both hands on the rim at every step, the bore on the
    shaft at the start, and the wheel drawn back along -x, held up by the hands."""
    sim = Simulator(load_scenario(SCENE))
    m = sim.model
    wheel = list(m.body_names).index("wheel")
    x0 = sim.q[m.qi[wheel]]
    hub_steps = 0
    for _ in range(300):
        report = sim.step()
        pairs = _pairs(sim, report)
        for side in HANDS:
            assert any(
                frozenset((f"dual-arm/{side}_f{k}", "wheel/wheel")) in pairs for k in (1, 2, 3)
            ), sim.t
        if frozenset(("wheel/wheel", "hub/hub_shaft")) in pairs:
            hub_steps += 1
        assert report.max_penetration < 1e-4
    assert hub_steps >= 100  # resting on the shaft while it slides along it
    forward_kinematics(m, sim.data, sim.q)
    drawn = sim.data.p_world[wheel] - np.array([0.5, 0.0, 1.0])
    assert sim.q[m.qi[wheel]] - x0 < -0.04  # slid at least 4 cm toward the robot
    assert abs(drawn[1]) < 1e-3 and drawn[2] > -0.02


@pytest.mark.slow
def test_wheel_comes_off_the_hub(tmp_path):
    """The full 1 s scenario through the installed CLI: the wheel's back bore ring ends up
    past the shaft's free end (x < -(0.045 + 0.014) m from the start, 2 cm to spare), with no
    contact with the static hub in the last 0.1 s, still held by the fingers (not fallen)."""
    out = tmp_path / "wheel.h5"
    mbsim_exe = Path(sys.executable).with_name("mbsim")
    proc = subprocess.run(
        [str(mbsim_exe), "run", "sample:dual-arm-wheel.toml", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    r = load_results(out)
    assert r.status == "complete"
    wheel = list(r.body_names).index("wheel")
    final = r.body_pose[-1, wheel, :3]
    d = dual_arm
    off = (d.SHAFT_RADIUS - d.SHAFT_TIP) + (d.BORE_RING_X - d.BORE_CAPSULE)  # 0.059 m
    assert final[0] < d.WHEEL_X - off - 0.02
    assert abs(final[1]) < 1e-3 and abs(final[2] - d.WHEEL_Z) < 0.03
    late = r.contacts["time"] > 0.9
    a, b = r.contacts["body_a"][late], r.contacts["body_b"][late]
    fingers = {i for i, n in enumerate(r.body_names) if n[2:4] in ("f1", "f2", "f3")}
    held = {int(x) for x, y in zip(a, b, strict=True) if y == wheel and x in fingers}
    assert len(held) >= 4  # at least two fingers of each hand
    assert not np.any((a == -1) | (b == -1))  # nothing touches the hub any more
