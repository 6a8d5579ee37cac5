"""``mbsim plot`` names every joint ``tree/joint`` (the scenario's vocabulary, the file's
``/model/v_names`` qualified by ``/model/tree_names``) in every legend, and ``--joint`` takes
``tree/joint`` or a bare name only one tree has: on a run of two copies of the bundled
3-link pendulum, whose joints share their names."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from mbsim.cli.main import main
from mbsim.io.results import load_results
from mbsim.simulator import Simulator

pytest.importorskip("matplotlib")

SCENARIO = """
[simulation]
duration = 0.02
dt = 1e-3
[robot.left]
urdf = "sample:pendulum-3"
torque = { joint_2 = 0.5 }
pd = { joint_1 = { target = 0.2, kp = 10.0, kd = 1.0 } }
[robot.right]
urdf = "sample:pendulum-3"
base_pose = { xyz = [0.0, 10.0, 0.0] }
torque = { joint_3 = -0.25 }
[contact]
self_collision = false
[output]
path = "two.h5"
"""
JOINTS = ("joint_1", "joint_2", "joint_3")
ALL = [f"{t}/{j}" for t in ("left", "right") for j in JOINTS]


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("two")
    (folder / "two.toml").write_text(SCENARIO)
    sim = Simulator.from_file(folder / "two.toml")
    assert sim.run_to_file("test").status == "complete"
    return folder / "two.h5"


def cli(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["mbsim", *map(str, args)])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    return (0 if exc.value.code is None else exc.value.code), out.out, out.err


def legends(monkeypatch, capsys, path: Path, tmp_path: Path, *args) -> list[list[str]]:
    """The legend texts of each axes of the figure ``mbsim plot`` saves."""
    import mbsim.cli.plot as plot

    figures = []
    real = plot.draw

    def spy(fig, *a, **k):
        figures.append(fig)
        return real(fig, *a, **k)

    monkeypatch.setattr(plot, "draw", spy)
    code, _, err = cli(monkeypatch, capsys, "plot", path, *args, "-o", tmp_path / "f.png")
    assert code == 0, err
    (fig,) = figures
    return [[t.get_text() for t in ax.get_legend().get_texts()] for ax in fig.axes]


def test_the_file_stores_bare_names_and_tree_indices(two):
    r = load_results(two)
    assert r.tree_names == ["left", "right"]
    assert r.v_names == list(JOINTS) * 2


def test_tau_legend_is_tree_joint_and_matches_the_torques(monkeypatch, capsys, two, tmp_path):
    (labels,) = legends(monkeypatch, capsys, two, tmp_path, "--tau")
    assert labels == ALL
    r = load_results(two)
    # the constant torques of the scenario, in the columns the labels name (rows 1..)
    np.testing.assert_array_equal(r.tau[1:, ALL.index("left/joint_2")], 0.5)
    np.testing.assert_array_equal(r.tau[1:, ALL.index("right/joint_3")], -0.25)
    np.testing.assert_array_equal(r.tau[1:, ALL.index("right/joint_1")], 0.0)


def test_tracking_and_tau_legends_share_the_names(monkeypatch, capsys, two, tmp_path):
    tau, tracking = legends(
        monkeypatch, capsys, two, tmp_path, "--tau", "--tracking", "--joint", "left/joint_1"
    )
    assert tau == ["left/joint_1"] and tracking == ["left/joint_1"]


@pytest.mark.parametrize("tau", [False, True])
def test_joint_takes_tree_joint_and_picks_that_tree_only(monkeypatch, capsys, two, tmp_path, tau):
    args = ["--joint", "right/joint_2", "--joint", "left/joint_3"] + (["--tau"] if tau else [])
    (labels,) = legends(monkeypatch, capsys, two, tmp_path, *args)
    assert labels == ["right/joint_2", "left/joint_3"]


def test_default_joint_panel_names_every_joint_once(monkeypatch, capsys, two, tmp_path):
    joints, energy = legends(monkeypatch, capsys, two, tmp_path)
    assert joints == ALL and energy == ["kinetic", "potential", "total"]


@pytest.mark.parametrize("tau", [False, True])
def test_an_ambiguous_bare_joint_name_is_refused(monkeypatch, capsys, two, tmp_path, tau):
    args = ["--joint", "joint_2"] + (["--tau"] if tau else [])
    code, out, err = cli(monkeypatch, capsys, "plot", two, *args, "-o", tmp_path / "f.png")
    assert code == 2, (out, err)
    (line,) = err.strip().splitlines()
    assert line.startswith("mbsim: error: ") and "Traceback" not in err
    for fragment in (str(two), "--joint 'joint_2'", "ambiguous", "left/joint_2, right/joint_2"):
        assert fragment in line, (fragment, line)
    assert not (tmp_path / "f.png").exists()


def test_an_unknown_tree_joint_lists_the_tree_joint_names(monkeypatch, capsys, two, tmp_path):
    code, _, err = cli(
        monkeypatch, capsys, "plot", two, "-j", "left/knee", "-o", tmp_path / "f.png"
    )
    assert code == 2
    assert "--joint 'left/knee': no such joint" in err and "right/joint_3" in err


def test_body_legends_are_tree_link_and_a_shared_body_name_is_refused(
    monkeypatch, capsys, two, tmp_path
):
    (labels,) = legends(monkeypatch, capsys, two, tmp_path, "--body", "right/link2")
    assert labels == ["right/link2 height"]
    code, _, err = cli(monkeypatch, capsys, "plot", two, "-b", "link2", "-o", tmp_path / "g.png")
    assert code == 2
    assert "--body 'link2' is ambiguous" in err and "left/link2, right/link2" in err


def test_export_names_two_robots_columns_apart(monkeypatch, capsys, two, tmp_path):
    """The CSV and the long table name joints and bodies tree/joint and tree/link, as the
    legends do: two robots' joint_1 are two columns, each holding its own robot's data (the
    constant torques of the scenario), where bare names gave duplicate headers."""
    import csv

    out = tmp_path / "two.csv"
    code, _, err = cli(monkeypatch, capsys, "export", two, "-o", out, "--format", "csv")
    assert code == 0, err
    with open(out, newline="") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    assert len(set(header)) == len(header)
    for name in ALL:
        assert f"q[{name}]" in header and f"tau[{name}]" in header
    data = np.array(rows[1:], dtype=float)
    assert np.all(data[1:, header.index("tau[left/joint_2]")] == 0.5)
    assert np.all(data[1:, header.index("tau[right/joint_3]")] == -0.25)
    assert np.all(data[1:, header.index("tau[right/joint_2]")] == 0.0)
    long = tmp_path / "long.csv"
    code, _, err = cli(
        monkeypatch, capsys, "export", two, "-o", long, "--format", "csv", "--what", "long"
    )
    assert code == 0, err
    with open(long, newline="") as fh:
        items = {row["item"] for row in csv.DictReader(fh)}
    assert set(ALL) <= items and {"left/link1", "right/link1"} <= items
