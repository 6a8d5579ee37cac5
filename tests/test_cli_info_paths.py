"""`mbsim info` with mesh paths outside the robot's folder: refused by default (exit 2, one
sentence), allowed by --allow-outside-paths or a declared --package-dir (issue 17)."""

from __future__ import annotations

import shutil
from pathlib import Path

from test_cli_info import run

CUBE = Path(__file__).parent / "data" / "meshes" / "cube.stl"


def _robot(tmp_path: Path, uri: str, folder: str = "robot") -> Path:
    urdf = tmp_path / folder / "r.urdf"
    urdf.parent.mkdir(parents=True, exist_ok=True)
    urdf.write_text(
        '<robot name="r"><link name="body"><inertial><mass value="1"/>'
        '<inertia ixx="1" iyy="1" izz="1"/></inertial>'
        f'<collision><geometry><mesh filename="{uri}"/></geometry></collision></link></robot>'
    )
    return urdf


def test_outside_mesh_refused_then_allowed(tmp_path):
    shutil.copy(CUBE, tmp_path / "cube.stl")
    urdf = _robot(tmp_path, "../cube.stl")
    proc = run("info", str(urdf), check_rc=2)
    err = proc.stderr.strip()
    assert "outside" in err and "--allow-outside-paths" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1
    run("info", str(urdf), "--allow-outside-paths", check_rc=0)


def test_package_dir_declares_a_root(tmp_path):
    (tmp_path / "lib" / "meshes").mkdir(parents=True)
    shutil.copy(CUBE, tmp_path / "lib" / "meshes" / "cube.stl")
    urdf = _robot(tmp_path, "package://lib/meshes/cube.stl")
    # the upward search finds tmp_path/lib too; a declared folder elsewhere must work as well
    other = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "lib", other / "libcopy")
    urdf2 = _robot(tmp_path, "package://zzz/meshes/cube.stl", folder="robot2")
    run("info", str(urdf2), "--package-dir", f"zzz={other / 'libcopy'}", check_rc=0)
    run("info", str(urdf), check_rc=0)
    proc = run("info", str(urdf), "--package-dir", "nonsense", check_rc=2)
    assert "NAME=PATH" in proc.stderr


def test_info_on_a_five_thousand_link_chain(tmp_path):
    """The printed body tree used to recurse once per level (RecursionError near 975 links)."""
    from test_model_builder_bases import _chain

    urdf = tmp_path / "chain.urdf"
    urdf.write_text(_chain(5000))
    proc = run("info", str(urdf), check_rc=0)
    assert "nq = 4999, nv = 4999" in proc.stdout and "Traceback" not in proc.stderr
    assert "[depth 4999] └─ l4999  [revolute 'j4999'" in proc.stdout
