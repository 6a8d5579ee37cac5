"""`mbsim view` without a browser: what the HTML page and the glTF file carry, the refusals.

Independent truths: the results file's own arrays (poses, times, contacts; read with h5py /
load_results, not through the viewer), the URDF written by the test (colours, fixed-joint
offset 0.3 m, mesh box extents), the glTF 2.0 binary layout from the specification (parsed
here with struct/json, and by trimesh), a sphere's radius for the decimated mesh.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import trimesh

import view_scene as vs
from mbsim.io.results import load_results

SRC = Path(__file__).parents[1] / "src"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    return vs.make_results(tmp_path_factory.mktemp("view"))


def mbsim(*args):
    env = {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "mbsim.cli.main", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def page_data(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="mbsim-data">(.*?)</script>', html, re.S)
    assert m, "no data element"
    return json.loads(m.group(1))


def b64(text: str, dtype) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=dtype)


def test_html_page_carries_the_recorded_poses_shapes_and_contacts(results, tmp_path):
    out = tmp_path / "replay.html"
    proc = mbsim("view", results, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"replay\.html: \d+\.\d\d MB, 301 frames", proc.stdout)
    html = out.read_text(encoding="utf-8")
    # self-contained: no external script, stylesheet or module import
    assert not re.search(r"<script[^>]+src=|<link\b|\bimport\s*\(|^\s*import\s", html, re.M)
    d = page_data(html)
    r = load_results(results)
    with h5py.File(results) as f:
        poses = f["trajectory/body_pose"][...]
        times = f["trajectory/time"][...]
        c_step, c_point = f["contacts/step"][...], f["contacts/point"][...]
    assert d["bodies"] == ["bar", "ball"] == r.body_names
    np.testing.assert_array_equal(b64(d["times"], "<f8"), times)
    # float32 on the page: 6e-8 relative, poses are O(1) m
    np.testing.assert_allclose(b64(d["poses"], "<f4").reshape(poses.shape), poses, atol=1e-6)
    vis = [s for s in d["shapes"] if s["role"] == "visual"]
    by_link = {s["link"]: s for s in vis}
    assert set(by_link) == {"base", "bar", "tip", "ball"}
    assert by_link["bar"]["kind"] == "mesh" and by_link["bar"]["rgba"] == list(vs.BAR_RGBA)
    assert by_link["tip"]["rgba"] == list(vs.TIP_RGBA)  # the named material
    # the tip link is merged into body 'bar' 0.3 m down (its fixed joint), pose row-major
    tip = np.array(by_link["tip"]["pose"]).reshape(4, 4)
    assert by_link["tip"]["body"] == 0
    np.testing.assert_allclose(tip, [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, -0.3], [0, 0, 0, 1]])
    assert by_link["base"]["body"] == -1
    assert {s["link"] for s in d["shapes"] if s["role"] == "collision"} == {"bar", "tip", "ball"}
    # the mesh: the box of the STL, 12 triangles
    (mesh,) = d["meshes"]
    v = b64(mesh["positions"], "<f4").reshape(-1, 3)
    np.testing.assert_allclose(np.ptp(v, axis=0), vs.BAR, atol=1e-7)
    assert len(b64(mesh["indices"], "<u4")) == 36
    # contacts per frame: those recorded at the frame's step
    start = b64(d["contacts"]["start"], "<u4")
    counts = [int(np.sum(c_step == s)) for s in f_steps(results)]
    np.testing.assert_array_equal(np.diff(start), counts)
    assert sum(counts) == len(c_step) > 0
    np.testing.assert_allclose(b64(d["contacts"]["point"], "<f4").reshape(-1, 3)[0], c_point[0])
    assert d["events"]["kind"] == list(r.event_kind_names()) and "impact" in d["events"]["kind"]
    assert d["floor"] is True


def f_steps(path) -> np.ndarray:
    with h5py.File(path) as f:
        return f["trajectory/step"][...]


def test_long_runs_are_subsampled_to_the_frame_budget(results, tmp_path):
    out = tmp_path / "short.html"
    proc = mbsim("view", results, "-o", out, "--max-frames", "50")
    assert proc.returncode == 0, proc.stderr
    assert "301 recorded states subsampled to 50 frames" in proc.stderr
    t = b64(page_data(out.read_text())["times"], "<f8")
    times = load_results(results).time
    assert len(t) == 50 and t[0] == times[0] and t[-1] == times[-1]
    assert np.all(np.isin(t, times)) and np.all(np.diff(t) > 0)


def _copy_scene(results: Path, folder: Path) -> Path:
    for name in ("pend.urdf", "ball.urdf", "scene.toml", "bar.stl", results.name):
        shutil.copy(results.parent / name, folder / name)
    copy = folder / results.name
    with h5py.File(copy, "a") as f:  # the copied results point at the copied mesh
        files = f["visual/mesh_files"]
        files[...] = [str(folder / "bar.stl")]
    return copy


def test_a_changed_or_moved_mesh_is_refused_in_one_sentence(results, tmp_path):
    copy = _copy_scene(results, tmp_path)
    assert mbsim("view", copy, "-o", tmp_path / "ok.html").returncode == 0
    with open(tmp_path / "bar.stl", "ab") as fh:
        fh.write(b"\0")
    proc = mbsim("view", copy, "-o", tmp_path / "a.html")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "bar.stl of link 'bar' has changed since the run" in proc.stderr
    (tmp_path / "bar.stl").unlink()
    proc = mbsim("view", copy, "-o", tmp_path / "b.html")
    assert proc.returncode == 2 and "has moved or been deleted" in proc.stderr
    assert not (tmp_path / "a.html").exists() and not (tmp_path / "b.html").exists()


def test_a_file_without_scene_or_poses_is_rebuilt_from_its_scenario(results, tmp_path):
    """Older files have no /visual, some no body poses: the model is rebuilt from the
    recorded scenario; the poses must equal those the run recorded."""
    copy = tmp_path / "old.h5"
    shutil.copy(results, copy)
    with h5py.File(copy, "a") as f:
        del f["visual"]
        del f["trajectory/body_pose"]
    out = tmp_path / "old.html"
    proc = mbsim("view", copy, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "scene rebuilt from the scenario's URDFs" in proc.stderr
    d = page_data(out.read_text())
    poses = load_results(results).body_pose
    np.testing.assert_allclose(b64(d["poses"], "<f4").reshape(poses.shape), poses, atol=1e-6)
    assert {s["link"] for s in d["shapes"] if s["role"] == "visual"} == {
        "base", "bar", "tip", "ball"
    }  # fmt: skip
    urdf = results.parent / "pend.urdf"
    text = urdf.read_text()
    try:
        urdf.write_text(text + "<!-- edited -->")
        proc = mbsim("view", copy, "-o", tmp_path / "x.html", "--force")
    finally:
        urdf.write_text(text)
    assert proc.returncode == 2 and "pend.urdf has changed since the run" in proc.stderr


def _glb_json(data: bytes) -> tuple[dict, bytes]:
    magic, version, length = struct.unpack_from("<4sII", data, 0)
    assert (magic, version, length) == (b"glTF", 2, len(data))
    n, kind = struct.unpack_from("<I4s", data, 12)
    assert kind == b"JSON"
    doc = json.loads(data[20 : 20 + n])
    m, kind = struct.unpack_from("<I4s", data, 20 + n)
    assert kind == b"BIN\x00"
    return doc, data[28 + n : 28 + n + m]


def _accessor(doc: dict, binary: bytes, i: int) -> np.ndarray:
    acc = doc["accessors"][i]
    view = doc["bufferViews"][acc["bufferView"]]
    width = {"SCALAR": 1, "VEC3": 3, "VEC4": 4}[acc["type"]]
    assert acc["componentType"] == 5126  # float
    raw = binary[view["byteOffset"] : view["byteOffset"] + view["byteLength"]]
    return np.frombuffer(raw, "<f4").reshape(acc["count"], width)


def test_glb_is_an_animated_gltf_of_the_bodies(results, tmp_path):
    out = tmp_path / "replay.glb"
    proc = mbsim("view", results, "--format", "glb", "-o", out)
    assert proc.returncode == 0, proc.stderr
    scene = trimesh.load(out)
    # four visuals (base box, bar mesh, tip sphere, ball) and the floor
    assert len(scene.graph.nodes_geometry) == 5
    doc, binary = _glb_json(out.read_bytes())
    r = load_results(results)
    (anim,) = doc["animations"]
    assert len(anim["channels"]) == 2 * len(r.body_names)
    nodes = {n["name"]: i for i, n in enumerate(doc["nodes"])}
    for b, name in enumerate(r.body_names):
        for ch in anim["channels"]:
            if ch["target"]["node"] != nodes[name]:
                continue
            s = anim["samplers"][ch["sampler"]]
            np.testing.assert_allclose(_accessor(doc, binary, s["input"])[:, 0], r.time, atol=1e-6)
            out_ = _accessor(doc, binary, s["output"])
            if ch["target"]["path"] == "translation":
                np.testing.assert_allclose(out_, r.body_pose[:, b, :3], atol=1e-6)
            else:  # glTF quaternions are x y z w
                np.testing.assert_allclose(out_, r.body_pose[:, b, [4, 5, 6, 3]], atol=1e-6)


def test_decimation_keeps_large_meshes_within_the_face_budget_and_their_shape():
    from mbsim.view.replay import decimate

    sphere = trimesh.creation.icosphere(subdivisions=5, radius=0.2)  # 20480 faces
    v, f, cell = decimate(np.asarray(sphere.vertices), np.asarray(sphere.faces), 2000)
    assert 500 < len(f) <= 2000 and cell > 0
    # every merged vertex is a mean of surface points within one cell: off the sphere by
    # at most the cell diagonal
    assert np.all(np.abs(np.linalg.norm(v, axis=1) - 0.2) <= np.sqrt(3) * cell)
    assert f.max() < len(v)
    same = decimate(np.asarray(sphere.vertices), np.asarray(sphere.faces), 30000)
    assert same[2] == 0.0 and len(same[1]) == 20480


@pytest.mark.parametrize("ext", ["obj", "dae", "stl"])
def test_meshes_of_every_urdf_format_load_with_their_colour(tmp_path, ext):
    from mbsim.view.replay import load_mesh

    if ext == "dae":
        pytest.importorskip("collada", reason="COLLADA needs pycollada (the view extra)")
    box = trimesh.creation.box(extents=(0.1, 0.2, 0.3))
    box.visual.face_colors = (200, 30, 40, 255)
    path = tmp_path / f"box.{ext}"
    box.export(path)
    m = load_mesh(str(path))
    np.testing.assert_allclose(np.ptp(m.vertices, axis=0), (0.1, 0.2, 0.3), atol=1e-6)
    assert len(m.faces) == 12
    if ext != "stl":  # STL has no colour
        np.testing.assert_allclose(m.color[:3], (200 / 255, 30 / 255, 40 / 255), atol=0.01)


def test_size_is_printed_and_a_large_output_warned_about(results, tmp_path, monkeypatch, capsys):
    from mbsim.cli import view as view_cmd

    out = tmp_path / "big.html"
    monkeypatch.setattr(view_cmd, "WARN_BYTES", 1000)  # the page is ~0.8 MB
    view_cmd.view(results, out, "html", None, False)
    captured = capsys.readouterr()
    size = out.stat().st_size
    assert f"{out}: {size / 1e6:.2f} MB, 301 frames" in captured.out
    assert "warning:" in captured.err and "above 50 MB" in captured.err
    monkeypatch.setattr(view_cmd, "WARN_BYTES", size)  # exactly at the limit: no warning
    view_cmd.view(results, out, "html", None, True)
    assert "warning:" not in capsys.readouterr().err


def test_visuals_that_cannot_be_shown_are_named_not_dropped_silently(tmp_path):
    from mbsim.errors import UrdfError
    from mbsim.view.visuals import read_visuals

    urdf = tmp_path / "r.urdf"
    urdf.write_text(
        """<robot name="r">
  <link name="a"><visual><geometry><mesh filename="package://nowhere/a.dae"/></geometry>
    </visual></link>
  <link name="b"><visual><geometry><box size="1 2"/></geometry></visual>
    <visual><origin xyz="0 0 1" rpy="0 0 1.5707963267948966"/>
      <geometry><cylinder radius="0.1" length="0.5"/></geometry></visual></link>
</robot>"""
    )
    problems: list[str] = []
    (ok,) = read_visuals(urdf, problems)
    assert ok.link == "b" and ok.kind == "cylinder" and ok.params == (0.1, 0.5)
    np.testing.assert_allclose(ok.origin[:3, 3], (0, 0, 1))
    np.testing.assert_allclose(ok.origin[:3, 0], (0, 1, 0), atol=1e-12)  # yaw 90 deg: x -> y
    assert len(problems) == 2
    assert "link 'a'" in problems[0] and "package://nowhere/a.dae" in problems[0]
    assert "link 'b'" in problems[1] and "size='1 2'" in problems[1]
    with pytest.raises(UrdfError, match="link 'a'"):
        read_visuals(urdf)
