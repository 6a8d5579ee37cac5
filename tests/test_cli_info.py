"""`mbsim info` and `mbsim samples` end to end, through the installed `mbsim` executable."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

MBSIM = Path(sys.executable).with_name("mbsim")
SAMPLES = Path(__file__).parents[1] / "src" / "mbsim" / "sample_robots"


def run(*args, check_rc=None):
    proc = subprocess.run([str(MBSIM), *args], capture_output=True, text=True, timeout=120)
    if check_rc is not None:
        assert proc.returncode == check_rc, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def test_info_on_pendulum_prints_tree_dofs_masses_and_shapes():
    urdf = SAMPLES / "pendulum-12.urdf"
    out = run("info", str(urdf), check_rc=0).stdout
    # independent truth from the XML itself
    root = etree.parse(str(urdf)).getroot()
    n_joints = len([j for j in root.findall("joint") if j.get("type") != "fixed"])
    n_spheres = len(root.findall("link/collision/geometry/sphere"))
    assert f"nq = {n_joints}, nv = {n_joints}" in out
    assert "total mass: 12 kg" in out
    assert f"collision shapes: {n_spheres} ({n_spheres} sphere)" in out
    for k in range(1, 13):
        assert f"link{k}  [continuous 'joint_{k}', 1 kg, 1 collision shapes]" in out


def test_info_json_and_floating_base():
    urdf = SAMPLES / "pendulum-3.urdf"
    data = json.loads(run("info", str(urdf), "--json", check_rc=0).stdout)
    assert data["nq"] == 3 and data["nv"] == 3 and data["total_mass_kg"] == pytest.approx(3.0)
    assert [b["parent"] for b in data["bodies"]] == ["world", "link1", "link2"]


def test_info_prints_loader_warnings(tmp_path):
    urdf = tmp_path / "skewed.urdf"
    urdf.write_text(
        '<robot name="r"><link name="base"/><link name="a"><inertial><mass value="1"/>'
        '<inertia ixx="1" iyy="1" izz="3" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        '<joint name="j" type="continuous"><parent link="base"/><child link="a"/>'
        '<axis xyz="0 0 2"/></joint></robot>'
    )
    out = run("info", str(urdf), check_rc=0).stdout
    assert "warnings (2):" in out and "triangle inequality" in out and "'j'" in out


@pytest.mark.parametrize(
    "content, fragment",
    [
        (None, "does not exist"),
        ("this is not xml", "skewed.urdf"),
        ('<robot name="r"><link name="a"/><joint name="j" type="ball"/></robot>', "'j'"),
    ],
)
def test_info_bad_input_is_one_line_and_exit_2(tmp_path, content, fragment):
    urdf = tmp_path / "skewed.urdf"
    if content is not None:
        urdf.write_text(content)
    proc = run("info", str(urdf), check_rc=2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mbsim: error: ") and fragment in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_debug_shows_the_traceback(tmp_path):
    proc = run("--debug", "info", str(tmp_path / "missing.urdf"))
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_samples_path_works_with_info():
    path = run("samples", "path", "pendulum-6", check_rc=0).stdout.strip()
    assert Path(path).is_file()
    assert "nq = 6, nv = 6" in run("info", path, check_rc=0).stdout
    proc = run("samples", "path", "no-such-robot", check_rc=2)
    assert "no-such-robot" in proc.stderr


def test_help_lists_every_command():
    out = run("--help", check_rc=0).stdout
    assert "info" in out and "samples" in out


def test_info_lists_checked_pairs_and_the_papers_lcp_sizes():
    """pendulum-6 with a floor: C(6, 2) - 5 adjacent = 10 self pairs plus 6 floor pairs; the
    LCP sizes for 4 contacts, nf = 4 are Table 2's (OS 24, NMC/OS 54, NMC 90) and MC = N + 24."""
    data = json.loads(
        run("info", str(SAMPLES / "pendulum-6.urdf"), "--floor", "--json", check_rc=0).stdout
    )
    pairs = {tuple(p) for p in data["checked_pairs"]}
    assert len(pairs) == 16
    assert ("pendulum-6/link1", "pendulum-6/link2") not in pairs
    assert ("pendulum-6/link1", "pendulum-6/link3") in pairs
    dims = data["lcp_dimensions"]
    assert (dims["os"], dims["nmc-os"], dims["nmc"], dims["mc"], dims["rmc"]) == (
        24,
        54,
        90,
        30,
        24,
    )
    no_self = json.loads(
        run("info", str(SAMPLES / "pendulum-6.urdf"), "--no-self-collision", "--json").stdout
    )
    assert no_self["checked_pairs"] == []


def test_info_shows_each_joints_urdf_limits():
    # the Panda's <limit> attributes, read from the XML itself
    urdf = SAMPLES / "panda.urdf"
    out = run("info", str(urdf), check_rc=0).stdout
    root = etree.parse(str(urdf)).getroot()
    checked = 0
    for j in root.findall("joint"):
        lim = j.find("limit")
        if j.get("type") != "revolute" or lim is None:
            continue
        lo, hi, eff, vel = (float(lim.get(k)) for k in ("lower", "upper", "effort", "velocity"))
        line = next(x for x in out.splitlines() if f"[revolute '{j.get('name')}', " in x)
        want = f"limits [{lo:.6g}, {hi:.6g}] rad, effort {eff:.6g} N m, velocity {vel:.6g} rad/s]"
        assert want in line, line
        checked += 1
    assert checked == 7


def test_info_names_links_as_run_does_and_tells_whether_the_srdf_beside_is_used(tmp_path):
    """info named the tree by the URDF's <robot name> ('pendulum-3') where `mbsim run` uses
    the file stem ('arm'), and said run uses the SRDF beside the URDF even when run leaves it
    out because it names a link the robot lacks (example-robot-data's talos_left_arm with
    talos.srdf)."""
    shutil.copy(SAMPLES / "pendulum-3.urdf", tmp_path / "arm.urdf")
    srdf = tmp_path / "arm.srdf"
    srdf.write_text(
        '<robot name="arm">\n<disable_collisions link1="link1" link2="link3"/>\n</robot>'
    )
    data = json.loads(run("info", str(tmp_path / "arm.urdf"), "--json", check_rc=0).stdout)
    assert data["trees"] == ["arm"]
    assert all(a.startswith("arm/") and b.startswith("arm/") for a, b in data["checked_pairs"])
    assert any(w.startswith("mbsim run uses the SRDF beside the URDF") for w in data["warnings"])
    srdf.write_text(
        '<robot name="arm">\n<disable_collisions link1="link1" link2="link3"/>\n'
        '<disable_collisions link1="link1" link2="arm_right_1_link"/>\n</robot>'
    )
    data = json.loads(run("info", str(tmp_path / "arm.urdf"), "--json", check_rc=0).stdout)
    note = f"mbsim run does not use the SRDF beside the URDF: {srdf}, line 3: "
    note += "<disable_collisions> link2='arm_right_1_link' is not a link of this robot"
    assert note in data["warnings"]


def test_python_dash_m_mbsim_is_the_mbsim_command():
    """``python -m mbsim`` failed ("No module named mbsim.__main__")."""
    proc = subprocess.run(
        [sys.executable, "-m", "mbsim", "--help"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "python -m mbsim" in proc.stdout and "samples" in proc.stdout


def test_info_names_joints_whose_zero_is_outside_their_limits(tmp_path):
    """go2 and hyq start with their knees past a limit at q = 0: run said so, info did not."""
    inertial = (
        '<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" '
        'iyz="0"/></inertial>'
    )
    urdf = tmp_path / "knee.urdf"
    urdf.write_text(
        f'<robot name="knee"><link name="thigh">{inertial}</link><link name="shin">{inertial}'
        '</link><joint name="knee" type="revolute"><parent link="thigh"/><child link="shin"/>'
        '<axis xyz="0 1 0"/><limit lower="-2.7" upper="-0.84" effort="1" velocity="1"/>'
        "</joint></robot>"
    )
    warnings = json.loads(run("info", str(urdf), "--json", check_rc=0).stdout)["warnings"]
    assert [w for w in warnings if "outside their limits" in w] == [
        f"'knee' ({urdf}) starts with 1 joint(s) outside their limits: 'knee' = 0 rad, above "
        "its upper limit -0.84 rad; the limits push them back at up to "
        "contact.max_recovery_speed, softened where a contact stands in the way"
    ]


def _torus_stl(path: Path, n: int = 80, m: int = 40, big: float = 0.1, small: float = 0.03) -> int:
    """A closed, non-convex torus of 2 n m triangles as ASCII STL; returns the count."""
    u, w = np.meshgrid(np.arange(n) * 2 * np.pi / n, np.arange(m) * 2 * np.pi / m, indexing="ij")
    pts = np.stack(
        [(big + small * np.cos(w)) * np.cos(u), (big + small * np.cos(w)) * np.sin(u),
         small * np.sin(w)], axis=-1,
    )  # fmt: skip
    lines = ["solid torus"]
    for i in range(n):
        for j in range(m):
            a, b = pts[i, j], pts[(i + 1) % n, j]
            c, d = pts[(i + 1) % n, (j + 1) % m], pts[i, (j + 1) % m]
            for tri in ((a, b, c), (a, c, d)):
                lines += ["facet normal 0 0 0", "outer loop"]
                lines += [f"vertex {x:.9g} {y:.9g} {z:.9g}" for x, y, z in tri]
                lines += ["endloop", "endfacet"]
    path.write_text("\n".join([*lines, "endsolid torus", ""]))
    return 2 * n * m


def test_info_names_dense_collision_meshes(tmp_path):
    """pybullet_data's mini_cheetah collides 15,000-22,000 triangles a link (38 steps/s; 406
    as convex hulls): info and run now say so, with the setting that collides hulls."""
    count = _torus_stl(tmp_path / "torus.stl")
    inertial = (
        '<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" '
        'iyz="0"/></inertial>'
    )
    urdf = tmp_path / "ring.urdf"
    urdf.write_text(
        f'<robot name="ring"><link name="ring">{inertial}<collision><geometry>'
        '<mesh filename="torus.stl"/></geometry></collision></link></robot>'
    )
    warnings = json.loads(run("info", str(urdf), "--json", check_rc=0).stdout)["warnings"]
    dense = [w for w in warnings if "dense collision meshes" in w]
    assert len(dense) == 1 and f"ring/ring ({count:,} triangles)" in dense[0], warnings
    assert "--set contact.mesh_contact=convex-hull" in dense[0]
