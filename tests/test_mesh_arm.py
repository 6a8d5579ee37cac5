"""The bundled Franka Emika Panda (collision meshes) and its table scenario, panda-table.toml.

Independent truths: the source files in example-robot-data (the meshes must be byte-identical,
the modified URDF must give the same masses, kinematics and mass matrix as the original in
Pinocchio, with the original's finger joints held at 0), the triangle counts of the STL files
read by trimesh, and, for the run, geometry and statics computed outside mbsim's collision and
contact code: the heights of the mesh vertices posed by Pinocchio's forward kinematics of the
recorded joint angles (penetration, tunnelling, time of first touch, contact points on the hand
mesh's surface) and the static balance of joint torques (Pinocchio's gravity torques, the PD
torques of the scenario and J^T f of the recorded contact impulses) once the arm rests.

Documented bound: the tabletop is never penetrated by more than PEN_BOUND = 1 mm (the contact
margin; mbsim's velocity-level contact with gap stabilisation keeps the measured value at
round-off level here, with a 2.1 m/s landing at dt = 1 ms).
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import trimesh
from lxml import etree

from mbsim.collision import CollisionScene
from mbsim.collision.shapes import KIND_NAMES
from mbsim.io.results import load_results
from mbsim.io.urdf import load_urdf, resolve_mesh_uri
from mbsim.samples.catalog import bundled_dir, sample_names, sample_path
from mbsim.simcore.data import Data
from mbsim.simcore.dynamics import crba
from mbsim.simcore.kinematics import forward_kinematics
from mbsim.simcore.model import build_model
from pin_oracle import robots_dir

MBSIM = [str(Path(sys.executable).with_name("mbsim"))]
SAMPLES = bundled_dir()
PANDA = SAMPLES / "panda.urdf"
SCENARIO = SAMPLES / "panda-table.toml"
MESHES = {"link0", "link1", "link2", "link3", "link4", "link5", "link6", "link7", "hand"}
TABLE_TOP = 0.75  # m, upper face of table.urdf's top
TABLE_HALF = (0.6, 0.4)  # m, half extents of the top in x and y
MARGIN = 1e-3  # m, contact.margin of the scenario
PEN_BOUND = 1e-3  # m, documented largest penetration of the tabletop


def _erd_panda():
    """example-robot-data's panda_description folder, or skip."""
    try:
        folder = robots_dir() / "panda_description"
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed")
    if not folder.is_dir():
        pytest.skip("example-robot-data has no panda_description")
    return folder


def _mesh_uris(where="collision"):
    robot = etree.parse(str(PANDA)).getroot()
    return [m.get("filename") for m in robot.iterfind(f".//{where}/geometry/mesh")]


# --- the files --------------------------------------------------------------------------


def test_panda_and_table_are_samples_with_license_and_notice():
    names = sample_names()
    assert "panda" in names and "table" in names
    assert sample_path("panda") == PANDA
    license_text = (SAMPLES / "panda" / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0" in license_text
    notice = (SAMPLES / "panda" / "NOTICE").read_text()
    for word in ("Franka", "Apache License, Version 2.0", "example-robot-data", "Modifications"):
        assert word in notice, word


def test_every_mesh_resolves_inside_the_package_folder():
    collision, visual = _mesh_uris("collision"), _mesh_uris("visual")
    uris = collision + visual
    assert uris and all(not u.startswith(("package://", "file://", "/")) for u in uris)
    found = {resolve_mesh_uri(u, PANDA.parent) for u in uris}
    shipped = {str(p) for p in (SAMPLES / "panda" / "meshes").glob("*.stl")}
    assert found == shipped  # every shipped mesh is used, every used mesh is shipped
    stems = {u.rsplit("/", 1)[1].removesuffix(".stl") for u in collision}
    assert stems == MESHES
    assert {u.rsplit("/", 1)[1].removesuffix(".stl") for u in visual} == MESHES | {"finger"}


def test_meshes_are_the_sources_files_unmodified():
    src = _erd_panda() / "meshes" / "collision"
    for name in MESHES | {"finger"}:
        ours = (SAMPLES / "panda" / "meshes" / f"{name}.stl").read_bytes()
        assert ours == (src / f"{name}.stl").read_bytes(), name
    assert (SAMPLES / "panda" / "LICENSE").read_bytes() == (_erd_panda() / "LICENSE").read_bytes()


def test_model_matches_the_original_urdf_in_pinocchio():
    """Same mass, link poses and (arm block of the) mass matrix as the unmodified source URDF
    (fingers at q = 0), so the edits (paths, fixed fingers) changed no dynamics."""
    original = _erd_panda() / "urdf" / "panda.urdf"
    pm = pin.buildModelFromUrdf(str(original))
    pd = pm.createData()
    model = build_model([load_urdf(PANDA)])
    data = Data(model)
    assert model.nv == 7 and pm.nv == 9
    assert float(np.sum(model.mass)) == pytest.approx(pin.computeTotalMass(pm), rel=1e-12)
    rng = np.random.default_rng(6)
    lo, hi = pm.lowerPositionLimit[:7], pm.upperPositionLimit[:7]
    for _ in range(5):
        q = rng.uniform(lo, hi)
        qp = np.concatenate([q, [0.0, 0.0]])
        pin.forwardKinematics(pm, pd, qp)
        forward_kinematics(model, data, q)
        for i in range(model.nb):
            jid = pm.getJointId(model.joint_names[i])
            np.testing.assert_allclose(data.R_world[i], pd.oMi[jid].rotation, atol=1e-12)
            np.testing.assert_allclose(data.p_world[i], pd.oMi[jid].translation, atol=1e-12)
        M = crba(model, data, q)
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        np.testing.assert_allclose(M, Mp[:7, :7], rtol=1e-10, atol=1e-12)


def test_collision_shapes_are_the_triangle_meshes():
    model = build_model([load_urdf(PANDA)])
    scene = CollisionScene.from_model(model)
    kinds = {}
    for r in scene.records:
        kinds.setdefault(KIND_NAMES[r.kind], []).append(r)
    # the collision meshes are almost but not exactly convex: they stay triangle meshes
    assert sorted(r.link for r in kinds["mesh"]) == sorted(f"panda_{m}" for m in MESHES)
    assert len(kinds["box"]) == 8  # four boxes per finger
    for r in kinds["mesh"]:
        stl = trimesh.load(r.mesh_file, force="mesh")
        vertices, faces = r.mesh
        assert len(faces) == len(stl.faces) and len(stl.faces) in (200, 300)
        np.testing.assert_allclose(
            np.sort(vertices, axis=0), np.sort(np.asarray(stl.vertices), axis=0), atol=1e-12
        )


# --- the scenario run -------------------------------------------------------------------


class Posed:
    """The panda's collision geometry posed by Pinocchio (independent of mbsim's collision
    code): every STL vertex and every finger-box corner in the world frame."""

    def __init__(self, base_xyz):
        self.pm = pin.buildModelFromUrdf(str(PANDA))
        self.pd = self.pm.createData()
        geom = pin.buildGeomFromUrdf(
            self.pm, str(PANDA), pin.COLLISION, package_dirs=[str(SAMPLES)]
        )
        self.base = np.asarray(base_xyz, dtype=float)
        self.parts = []  # (name, joint id, placement, local vertices)
        for g in geom.geometryObjects:
            if g.meshPath.endswith(".stl"):
                mesh = trimesh.load(g.meshPath, force="mesh")
                local = np.asarray(mesh.vertices) * g.meshScale
                self.parts.append((g.name, g.parentJoint, g.placement, local, mesh))
            else:
                h = np.asarray(g.geometry.halfSide)
                corners = np.array([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)])
                self.parts.append((g.name, g.parentJoint, g.placement, corners * h, None))

    def pose(self, q):
        pin.forwardKinematics(self.pm, self.pd, np.asarray(q, dtype=float))
        out = []
        for name, jid, placement, local, mesh in self.parts:
            M = self.pd.oMi[jid] * placement
            R, p = M.rotation, M.translation + self.base
            out.append((name, R, p, local @ R.T + p, mesh))
        return out


def _depth_over_table(world_vertices):
    """Depth below the tabletop of the vertices above the top's footprint (m, > 0 inside)."""
    x, y, z = world_vertices.T
    over = (np.abs(x) <= TABLE_HALF[0]) & (np.abs(y) <= TABLE_HALF[1])
    return TABLE_TOP - z[over]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("panda") / "panda-table.h5"
    proc = subprocess.run(
        [*MBSIM, "run", "sample:panda-table.toml", "--out", str(out), "--record-every", "1",
         "--json", "--quiet"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    summary = json.loads(proc.stdout)
    scenario = tomllib.loads(SCENARIO.read_text())
    return summary, load_results(out), scenario


def test_run_completes(run):
    summary, res, _ = run
    assert summary["status"] == "complete" and summary["steps"] == 1500
    assert res.status == "complete"
    assert res.q.shape == (1501, 7)
    assert summary["max_penetration_m"] <= PEN_BOUND


def test_hand_mesh_lands_on_the_table_without_tunnelling(run):
    """At every recorded state, no vertex of any link is deeper than PEN_BOUND below the
    tabletop; the first contact is reported within a step of the first state whose lowest
    hand-mesh vertex is within the margin of the top; at the end the hand rests on it."""
    _, res, sc = run
    posed = Posed(sc["robot"]["panda"]["base_pose"]["xyz"])
    c = res.contacts
    first_contact = float(c["time"].min())
    deepest = -np.inf
    touch = None
    for k in range(len(res.time)):
        parts = posed.pose(res.q[k])
        allv = np.concatenate([w for _, _, _, w, _ in parts])
        d = _depth_over_table(allv)
        deepest = max(deepest, float(d.max()) if d.size else -np.inf)
        hand = next(w for n, _, _, w, _ in parts if n.startswith("panda_hand"))
        dh = _depth_over_table(hand)
        if touch is None and dh.size and dh.max() > -MARGIN:
            touch = float(res.time[k])
    assert deepest <= PEN_BOUND  # never through the top (it is 0.04 m thick)
    assert touch is not None and abs(first_contact - touch) <= 1.5 * res.dt
    assert 0.1 < first_contact < 0.2  # the hand starts 0.25 m above the top
    final_hand = next(w for n, _, _, w, _ in posed.pose(res.q[-1]) if n.startswith("panda_hand"))
    assert -MARGIN < _depth_over_table(final_hand).max() <= PEN_BOUND  # resting on the top


def test_contacts_are_hand_mesh_on_tabletop(run):
    """Every recorded contact is on the hand body against the static table, on the top face
    (z = 0.75, inside the footprint, normal +z) and on the hand mesh's surface."""
    _, res, sc = run
    posed = Posed(sc["robot"]["panda"]["base_pose"]["xyz"])
    c = res.contacts
    hand_body = list(res.body_names).index("panda_link7")  # the hand is merged into link7
    assert len(c["time"]) > 1000
    assert set(np.unique(c["body_a"])) == {hand_body}
    assert set(np.unique(c["body_b"])) == {-1}
    pts = c["point"]
    np.testing.assert_allclose(c["normal"], np.tile([0.0, 0.0, 1.0], (len(pts), 1)), atol=1e-9)
    assert np.all(np.abs(pts[:, 0]) < TABLE_HALF[0]) and np.all(np.abs(pts[:, 1]) < TABLE_HALF[1])
    assert np.all(np.abs(pts[:, 2] - TABLE_TOP) <= MARGIN + PEN_BOUND)
    steps = np.asarray(c["step"])
    state = {int(s): i for i, s in enumerate(res.step)}
    worst = 0.0
    for k in np.unique(steps)[::25]:
        rows = np.flatnonzero(steps == k)
        # contacts of step k are found at the state before the step
        name, R, p, _, mesh = next(
            x for x in posed.pose(res.q[state[int(k) - 1]]) if x[0].startswith("panda_hand")
        )
        local = (pts[rows] - p) @ R  # world -> mesh frame
        _, dist, _ = trimesh.proximity.closest_point(mesh, local)
        worst = max(worst, float(dist.max()))
    assert worst <= MARGIN  # the points lie on the hand mesh (within the contact margin)


def test_pressed_hand_is_in_static_balance(run):
    """Once at rest, PD torques + gravity + J^T f of the recorded contact forces cancel."""
    _, res, sc = run
    assert np.abs(res.v[-1]).max() < 1e-3
    posed = Posed(sc["robot"]["panda"]["base_pose"]["xyz"])
    pm, pd = posed.pm, posed.pd
    pm.gravity.linear[:] = sc["simulation"]["gravity"]
    q, v = res.q[-1], res.v[-1]
    pdc = sc["robot"]["panda"]["pd"]
    names = res.q_names
    tau_pd = np.array(
        [
            pdc[n]["kp"] * (pdc[n]["target"] - q[i]) - pdc[n]["kd"] * v[i]
            for i, n in enumerate(names)
        ]
    )
    g = pin.computeGeneralizedGravity(pm, pd, q)  # torques needed to hold the arm
    c = res.contacts
    rows = np.flatnonzero(c["step"] == c["step"].max())
    assert len(rows) >= 2
    dt = res.dt
    jid = pm.getJointId("panda_joint7")
    pin.computeJointJacobians(pm, pd, q)
    J = pin.getJointJacobian(pm, pd, jid, pin.LOCAL_WORLD_ALIGNED)  # [linear; angular] at joint
    origin = pd.oMi[jid].translation + posed.base
    tau_c = np.zeros(7)
    for i in rows:
        f = (c["normal_impulse"][i] * c["normal"][i] + c["tangent_impulse"][i]) / dt
        r = c["point"][i] - origin
        Jp = J[:3] - np.cross(r, J[3:].T).T  # linear velocity of the contact point
        tau_c += Jp.T @ f
    assert tau_c @ tau_c > 1.0  # the table pushes back noticeably
    residual = tau_pd - g + tau_c
    assert np.abs(residual).max() <= 1e-3 * np.abs(g).max()


def test_samples_copy_brings_the_meshes(tmp_path):
    """`mbsim samples copy panda DEST` copies panda/ too, so the copy loads on its own."""
    from typer.testing import CliRunner

    from mbsim.cli.main import app
    from mbsim.io.urdf import load_urdf
    from mbsim.simcore.model import build_model

    result = CliRunner().invoke(app, ["samples", "copy", "panda", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "panda" / "meshes").is_dir()
    model = build_model([load_urdf(tmp_path / "panda.urdf")])
    assert any(g.shape.kind == "mesh" for g in model.geometries)
