"""The newcomer's rough edges (issue 16): the README tour's commands work as written, samples
list/path/copy know the scenarios, ``run`` prints its results line once, ``inspect --events``
prints the table without the summary, the docs' sample durations are the files', a merged link
can be plotted by name, and the trajectory and contacts export for data-frame tools.

Independent truths: the bundled files themselves (durations, copied bytes), a box resting on the
floor (its contact forces add up to m g), and a link 0.3 m above its body's origin.
"""

from __future__ import annotations

import csv
import hashlib
import re
import shlex
import tomllib
from pathlib import Path

import numpy as np
import pytest

from mbsim.errors import MbsimError
from mbsim.io.results import load_results
from mbsim.samples.catalog import bundled_dir
from test_cli_run import MBSIM, run

ROOT = Path(__file__).parents[1]
G = 9.81  # m/s^2, the scenario default
MASS = 2.0  # kg

# a box with a fixed-joint child "tip" 0.3 m above the box's centre (merged into the box body)
BOX = """<robot name="box">
  <link name="box"><inertial><mass value="2"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.4 0.4 0.2"/></geometry></collision></link>
  <link name="tip"/>
  <joint name="to_tip" type="fixed"><parent link="box"/><child link="tip"/>
    <origin xyz="0 0 0.3"/></joint>
</robot>
"""


@pytest.fixture(scope="module")
def box_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("box")
    (folder / "box.urdf").write_text(BOX)
    proc = run(
        "run", "box.urdf", "--floor", "--base", "floating", "--place-on-floor",
        "--duration", "0.2", "--record-contacts", "--out", "r.h5", check_rc=0, cwd=folder,
    )  # fmt: skip
    return folder, proc


def test_run_prints_the_results_line_once(box_run):
    _, proc = box_run
    assert [line for line in proc.stdout.splitlines() if line.startswith("results:")] == [
        f"results: {box_run[0] / 'r.h5'}"
    ]


def test_inspect_events_prints_the_table_not_the_summary(box_run):
    folder, _ = box_run
    out = run("inspect", "r.h5", "--events", check_rc=0, cwd=folder).stdout
    assert "time [s]" in out and "contact_begin" in out
    assert "energy:" not in out and "diagnostics:" not in out and "input files" not in out
    full = run("inspect", "r.h5", check_rc=0, cwd=folder).stdout
    assert "energy:" in full


def test_contacts_export_with_forces_that_hold_the_box(box_run):
    folder, _ = box_run
    run("export", "r.h5", "-f", "csv", "-w", "contacts", "-o", "c.csv", check_rc=0, cwd=folder)
    with open(folder / "c.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    dt = 1e-3
    for row in rows[:20]:
        assert float(row["normal_force"]) == pytest.approx(float(row["normal_impulse"]) / dt)
        assert float(row["tangent_force[x]"]) == pytest.approx(
            float(row["tangent_impulse[x]"]) / dt
        )
    # at rest, the normal forces of the last step hold the box's weight: m g (closed form)
    last = max(int(r["step"]) for r in rows)
    total = sum(float(r["normal_force"]) for r in rows if int(r["step"]) == last)
    assert total == pytest.approx(MASS * G, rel=1e-6)


def test_long_format_export_and_to_pandas(box_run):
    from mbsim.io.results.labels import body_labels

    folder, _ = box_run
    r = load_results(folder / "r.h5")
    run("export", "r.h5", "-f", "csv", "-w", "long", "-o", "l.csv", check_rc=0, cwd=folder)
    with open(folder / "l.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["time", "step", "kind", "item", "quantity", "value"]
    n = len(r.time)
    assert len(rows) == n * (len(r.q_names) + len(r.v_names) + 7 * len(r.body_names) + 3)
    box = body_labels(r)[0]  # tree/link
    assert box.endswith("/box")
    z = [float(x["value"]) for x in rows if x["item"] == box and x["quantity"] == "z"]
    np.testing.assert_array_equal(z, r.body_pose[:, 0, 2])
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(MbsimError, match="needs pandas, which is not installed"):
            r.to_pandas()
    else:
        df = r.to_pandas()
        assert list(df.columns) == ["time", "step", "kind", "item", "quantity", "value"]
        assert len(df) == len(rows)


def test_a_link_merged_by_a_fixed_joint_is_plotted_by_name(box_run):
    from mbsim.cli.plot import build_panels

    folder, _ = box_run
    r = load_results(folder / "r.h5")
    panels = build_panels(r, [], ["tip", "box"], ["height"], False)
    (title, _, series) = panels[0]
    tip, box = series[0][1], series[1][1]
    # the box does not tip over: the tip is 0.3 m above the box's centre throughout
    np.testing.assert_allclose(tip, box + 0.3, atol=1e-9)
    with pytest.raises(MbsimError, match="no such body"):
        build_panels(r, [], ["nothing"], ["height"], False)


def test_samples_list_path_and_copy_know_the_scenarios(tmp_path):
    out = run("samples", "list", check_rc=0).stdout.split()
    assert "panda" in out and "sample:panda-table.toml" in out
    assert "sample:sweep-pendulum-6.toml" in out
    path = run("samples", "path", "pendulum-12.toml", check_rc=0).stdout.strip()
    assert Path(path) == bundled_dir() / "pendulum-12.toml"
    run("samples", "copy", "panda-table.toml", tmp_path, check_rc=0)
    for rel in ("panda-table.toml", "panda.urdf", "table.urdf", "panda/panda.srdf"):
        assert _sha(tmp_path / rel) == _sha(bundled_dir() / rel), rel
    assert any((tmp_path / "panda" / "meshes").iterdir())
    # the copy is self-contained: its scenario loads from the copied files
    from mbsim.io.scenario import load_scenario

    sc = load_scenario(tmp_path / "panda-table.toml")
    assert all(Path(f).is_relative_to(tmp_path) for f in sc.input_files())
    proc = run("samples", "path", "nothing.toml", check_rc=2)
    assert "pendulum-12.toml" in proc.stderr


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_docs_give_the_sample_scenarios_durations():
    text = (ROOT / "docs" / "scenario-format.md").read_text()
    rows = re.findall(r"^\| `([\w-]+\.toml)` \|(.*)\|$", text, re.M)
    assert {name for name, _ in rows} == {p.name for p in bundled_dir().glob("*.toml")}
    for name, what in rows:
        raw = tomllib.loads((bundled_dir() / name).read_text())
        duration = raw.get("simulation", {}).get("duration") or raw["set"]["simulation.duration"]
        assert f"duration {duration:g} s" in what, name


# commands of the tour left out here: they take minutes (batch, view) or print help
_SLOW = ("mbsim batch", "mbsim view", "mbsim bench", "mbsim --help")


def test_the_readme_tour_runs_as_written(tmp_path):
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("## A five-minute tour") :]
    block = block[block.index("```sh") + 5 : block.index("```", block.index("```sh") + 5)]
    commands = [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
    assert any("plot r.h5" in c for c in commands)
    for command in commands:
        if command.startswith(_SLOW):
            continue
        if command.startswith("mbsim plot"):
            pytest.importorskip("matplotlib")
        args = shlex.split(command)
        assert args[0] == "mbsim"
        proc = run(*args[1:], cwd=tmp_path)
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    assert (tmp_path / "h.png").stat().st_size > 0
    assert MBSIM.exists()
