"""``mbsim inspect``, ``export`` and ``plot`` on results files written by the tests' own
bouncing-ball run (tests/test_results.py), compared with values computed here.

Commands run in-process through ``mbsim.cli.main.main`` (the console-script entry point, so
errors go through the same one-line/exit-2 path); one test runs the real executable.
"""

from __future__ import annotations

import csv
import json
import math
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import h5py
import numpy as np
import pytest

from mbsim.cli.main import main
from test_results import DT, M, ball, impacts, write_ball_file

MBSIM = Path(sys.executable).with_name("mbsim")
N = 1500


def cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["mbsim", *map(str, args)])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    code = exc.value.code
    return (0 if code is None else code), out.out, out.err


def error_line(code: int, out: str, err: str, *fragments: str) -> str:
    assert code == 2, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mbsim: error: "), err
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def ball_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("ball") / "ball.h5"
    write_ball_file(path, N)
    return path


@pytest.fixture(scope="module")
def truth():
    t = np.arange(N) * DT
    z, vz, ke, pe = ball(t)
    return dict(t=t, z=z, vz=vz, ke=ke, pe=pe, hits=impacts(t[-1]))


# --------------------------------------------------------------------------- inspect


def test_inspect_summary(monkeypatch, capsys, ball_file, truth):
    code, out, err = cli(monkeypatch, capsys, "inspect", ball_file, "--json")
    assert code == 0 and err == ""
    s = json.loads(out)
    n_hits = len(truth["hits"])
    assert s["status"] == "complete" and s["formulation"] == "os" and s["dt_s"] == DT
    assert s["recorded_states"] == N and s["time_last_s"] == truth["t"][-1]
    assert s["events"] == 3 * n_hits
    assert s["events_by_kind"] == {
        "contact_begin": n_hits,
        "contact_end": n_hits,
        "impact": n_hits,
        "stick": 0,
        "slip": 0,
        "limit_begin": 0,
        "limit_end": 0,
    }
    total = truth["ke"] + truth["pe"]
    assert s["energy"]["total_start_J"] == total[0] and s["energy"]["total_end_J"] == total[-1]
    assert s["energy"]["drift_J"] == pytest.approx(total[-1] - total[0], rel=1e-12)
    assert s["energy"]["max_abs_drift_J"] == pytest.approx(np.max(np.abs(total - total[0])))
    touching = int(np.sum(truth["z"] < 0.05))
    assert s["diagnostics"]["solvers"] == {"lemke": touching, "none": N - touching}
    assert s["diagnostics"]["lcp_pivots_total"] == int(np.sum(np.arange(N) % 5))
    assert s["diagnostics"]["n_contacts_max"] == 1


def test_inspect_text_and_events_table(monkeypatch, capsys, ball_file, truth):
    code, out, err = cli(monkeypatch, capsys, "inspect", ball_file, "--events")
    assert code == 0 and err == ""
    n_hits = len(truth["hits"])
    assert "status: complete" in out
    assert (
        f"events: {3 * n_hits} (contact_begin {n_hits}, contact_end {n_hits}, impact {n_hits}"
        in out
    )
    table = out[out.index("time [s]") :].strip().splitlines()
    _, full, _ = cli(monkeypatch, capsys, "inspect", ball_file)
    assert "; drift " in full and "not a drift" not in full  # no actuator: the change is drift
    assert len(table) == 1 + 3 * n_hits
    impacts_rows = [row.split() for row in table[1:] if " impact " in row]
    assert len(impacts_rows) == n_hits
    for row, (ti, vb, va) in zip(impacts_rows, truth["hits"], strict=True):
        assert float(row[0]) == pytest.approx(ti, rel=1e-5)
        assert (row[3], row[4]) == ("ball", "world")
        assert float(row[5]) == pytest.approx(M * (va - vb), rel=1e-5)
        assert float(row[8]) == pytest.approx(0.5 * M * vb**2, rel=1e-5)


def test_inspect_reports_a_killed_run(monkeypatch, capsys, tmp_path):
    w, _ = write_ball_file(tmp_path / "live.h5", 50, finish=False)
    w.flush()
    (tmp_path / "snap.h5").write_bytes((tmp_path / "live.h5").read_bytes())
    w.finish()
    code, out, _ = cli(monkeypatch, capsys, "inspect", tmp_path / "snap.h5")
    assert code == 0 and "status: running (no process is writing it" in out
    assert "recorded: 50 states" in out


# --------------------------------------------------------------------------- export


def test_export_csv_trajectory_parses_back_exactly(monkeypatch, capsys, ball_file, truth, tmp_path):
    out_csv = tmp_path / "traj.csv"
    code, out, err = cli(monkeypatch, capsys, "export", ball_file, "--format", "csv", "-o", out_csv)
    assert code == 0 and err == ""
    with open(out_csv, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == [
        "time",
        "step",
        "q[ball/z]",  # tree/joint and tree/link (io/results/labels.py)
        "v[ball/z]",
        "energy[kinetic]",
        "energy[potential]",
        "energy[total]",
    ] + [f"body_pose[ball/ball.{c}]" for c in ("x", "y", "z", "qw", "qx", "qy", "qz")] + [
        "tau[ball/z]",
        "tau_limit[ball/z]",
    ]
    data = np.array(rows[1:], dtype=float)
    assert data.shape == (N, 16)
    assert np.array_equal(data[:, 0], truth["t"]) and np.array_equal(data[:, 1], np.arange(N))
    assert np.array_equal(data[:, 2], truth["z"]) and np.array_equal(data[:, 3], truth["vz"])
    assert np.array_equal(data[:, 4], truth["ke"]) and np.array_equal(data[:, 5], truth["pe"])
    assert np.array_equal(data[:, 6], truth["ke"] + truth["pe"])
    assert np.array_equal(data[:, 9], truth["z"])  # body_pose z


def test_export_csv_events_and_diagnostics(monkeypatch, capsys, ball_file, truth, tmp_path):
    path = tmp_path / "events.csv"
    code, _, _ = cli(
        monkeypatch, capsys, "export", ball_file, "-f", "csv", "--what", "events", "-o", path
    )
    assert code == 0
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    hits = truth["hits"]
    assert [r["kind"] for r in rows] == ["contact_begin", "impact", "contact_end"] * len(hits)
    impact_rows = [r for r in rows if r["kind"] == "impact"]
    assert [float(r["time"]) for r in impact_rows] == [h[0] for h in hits]
    assert [float(r["normal_velocity_after"]) for r in impact_rows] == [h[2] for h in hits]
    assert {(r["body_a_name"], r["body_b_name"], r["body_b"]) for r in rows} == {
        ("ball", "world", "-1")
    }
    assert [float(r["normal[z]"]) for r in rows] == [1.0] * len(rows)
    assert all(math.isnan(float(r["energy_before"])) for r in rows if r["kind"] != "impact")
    path = tmp_path / "diag.csv"
    code, _, _ = cli(
        monkeypatch, capsys, "export", ball_file, "-f", "csv", "-w", "diagnostics", "-o", path
    )
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert code == 0 and len(rows) == N
    assert Counter(r["solver"] for r in rows) == {
        "lemke": int(np.sum(truth["z"] < 0.05)),
        "none": int(np.sum(truth["z"] >= 0.05)),
    }


def test_export_npz(monkeypatch, capsys, ball_file, truth, tmp_path):
    path = tmp_path / "traj.npz"
    code, _, _ = cli(monkeypatch, capsys, "export", ball_file, "--format", "npz", "-o", path)
    assert code == 0
    with np.load(path) as d:  # no pickle needed
        assert np.array_equal(d["time"], truth["t"]) and np.array_equal(d["q"][:, 0], truth["z"])
        assert list(d["q_names"]) == ["z"] and list(d["energy_columns"]) == [
            "kinetic",
            "potential",
            "total",
        ]
    path = tmp_path / "contacts.npz"
    code, _, _ = cli(
        monkeypatch, capsys, "export", ball_file, "-f", "npz", "-w", "contacts", "-o", path
    )
    with np.load(path) as d:
        assert code == 0 and np.array_equal(d["time"], [h[0] for h in truth["hits"]])


def test_export_refuses_to_overwrite_without_force(monkeypatch, capsys, ball_file, tmp_path):
    path = tmp_path / "exists.csv"
    path.write_text("keep me")
    res = cli(monkeypatch, capsys, "export", ball_file, "-f", "csv", "-o", path)
    error_line(*res, str(path), "already exists", "--force")
    assert path.read_text() == "keep me"
    code, _, _ = cli(monkeypatch, capsys, "export", ball_file, "-f", "csv", "-o", path, "--force")
    assert code == 0 and path.read_text().startswith("time,step,")


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["-f", "xlsx", "-o", "{tmp}/x.xlsx"], ["--format 'xlsx'", "csv, npz"]),
        (["-f", "csv", "-w", "joints", "-o", "{tmp}/x.csv"], ["--what 'joints'"]),
        (["-f", "csv"], ["-o PATH"]),
        (["-o", "{tmp}/x.txt"], ["--format csv", ".csv or .npz"]),
        (["-f", "csv", "-o", "{tmp}/no/such/x.csv"], ["{tmp}/no/such/x.csv", "does not exist"]),
    ],
)
def test_export_bad_options(monkeypatch, capsys, ball_file, tmp_path, args, fragments):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    res = cli(monkeypatch, capsys, "export", ball_file, *args)
    error_line(*res, *[f.replace("{tmp}", str(tmp_path)) for f in fragments])
    assert list(tmp_path.iterdir()) == []  # no output, no leftover temporary file


def test_export_takes_the_format_from_the_output_suffix(monkeypatch, capsys, ball_file, tmp_path):
    """``mbsim export r.h5 -o r.csv`` used to stop with "needs an output format"."""
    for suffix in ("csv", "NPZ"):
        path = tmp_path / f"t.{suffix}"
        code, out, _ = cli(monkeypatch, capsys, "export", ball_file, "-o", path)
        assert code == 0 and out.strip() == str(path)
    assert (tmp_path / "t.csv").read_text().startswith("time,")
    assert "time" in np.load(tmp_path / "t.NPZ")


def test_export_contacts_not_recorded(monkeypatch, capsys, tmp_path):
    path = tmp_path / "nocontacts.h5"
    write_ball_file(path, 20, contacts=False)
    out = tmp_path / "c.csv"
    res = cli(monkeypatch, capsys, "export", path, "-f", "csv", "-w", "contacts", "-o", out)
    error_line(*res, str(path), "did not record contacts")
    assert not out.exists()


def test_export_into_unwritable_folder(monkeypatch, capsys, ball_file, tmp_path):
    import os

    if os.geteuid() == 0:
        target = Path("/proc/mbsim-export-test.csv")  # creating files fails even for root
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        target = ro / "x.csv"
    res = cli(monkeypatch, capsys, "export", ball_file, "-f", "csv", "-o", target)
    error_line(*res, str(target))
    assert not target.exists()


# --------------------------------------------------------------------------- plot


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize(
    "args, size",
    [
        ([], (1200, 800)),
        (["--joint", "z", "--energy", "--events", "--width", "640", "--height", "480"], (640, 480)),
        (
            ["--body", "ball", "--body", "ball", "-q", "height", "-q", "speed", "--events"]
            + ["--width", "1001", "--height", "333", "--dpi", "150"],
            (1001, 333),
        ),
    ],
)
def test_plot_writes_a_png_of_the_requested_size(
    monkeypatch, capsys, ball_file, tmp_path, args, size
):
    path = tmp_path / "fig.png"
    code, out, err = cli(monkeypatch, capsys, "plot", ball_file, *args, "-o", path)
    assert code == 0 and err == "", err
    assert png_size(path) == size


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["--joint", "knee"], ["--joint 'knee'", "no such joint", "z"]),
        (["--body", "wheel"], ["--body 'wheel'", "no such body"]),
        (["--body", "ball", "-q", "colour"], ["--quantity 'colour'"]),
        (["-q", "height"], ["needs a --body"]),
        (["--width", "0"], ["--width 0"]),
    ],
)
def test_plot_bad_selections(monkeypatch, capsys, ball_file, tmp_path, args, fragments):
    path = tmp_path / "fig.png"
    res = cli(monkeypatch, capsys, "plot", ball_file, *args, "-o", path)
    error_line(*res, *fragments)
    assert list(tmp_path.iterdir()) == []


def test_plot_body_needs_body_poses(monkeypatch, capsys, tmp_path):
    path = tmp_path / "noposes.h5"
    write_ball_file(path, 20, body_poses=False)
    res = cli(monkeypatch, capsys, "plot", path, "--body", "ball", "-o", tmp_path / "f.png")
    error_line(*res, str(path), "body poses")
    assert not (tmp_path / "f.png").exists()


def test_plot_without_matplotlib(monkeypatch, capsys, ball_file, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails
    res = cli(monkeypatch, capsys, "plot", ball_file, "-o", tmp_path / "f.png")
    error_line(*res, "matplotlib", "pip install")
    assert not (tmp_path / "f.png").exists()


def test_plot_existing_output_needs_force(monkeypatch, capsys, ball_file, tmp_path):
    path = tmp_path / "fig.png"
    path.write_bytes(b"old")
    error_line(*cli(monkeypatch, capsys, "plot", ball_file, "-o", path), "already exists")
    assert path.read_bytes() == b"old"
    code, _, _ = cli(monkeypatch, capsys, "plot", ball_file, "-o", path, "--force")
    assert code == 0 and png_size(path) == (1200, 800)


# --------------------------------------------------------------------------- bad results files


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    d = tmp_path_factory.mktemp("bad")
    (d / "text.h5").write_text("hello")
    with h5py.File(d / "plain.h5", "w") as f:
        f["x"] = np.arange(3)
    return {
        "missing": (d / "missing.h5", "does not exist"),
        "not-hdf5": (d / "text.h5", "not an HDF5 file"),
        "not-mbsim": (d / "plain.h5", "not an mbsim results file"),
    }


@pytest.mark.parametrize("kind", ["missing", "not-hdf5", "not-mbsim"])
@pytest.mark.parametrize(
    "command",
    [["inspect"], ["export", "-f", "csv", "-o", "{tmp}/o.csv"], ["plot", "-o", "{tmp}/o.png"]],
)
def test_every_command_rejects_bad_files(monkeypatch, capsys, tmp_path, bad_inputs, kind, command):
    path, fragment = bad_inputs[kind]
    name, *opts = [c.replace("{tmp}", str(tmp_path)) for c in command]
    res = cli(monkeypatch, capsys, name, path, *opts)
    error_line(*res, str(path), fragment)
    assert list(tmp_path.iterdir()) == []


def test_installed_executable(ball_file, tmp_path):
    """The console script has the commands and turns errors into one line and exit 2."""
    proc = subprocess.run(
        [
            str(MBSIM),
            "export",
            str(tmp_path / "nope.h5"),
            "-f",
            "csv",
            "-o",
            str(tmp_path / "x.csv"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"mbsim: error: {tmp_path / 'nope.h5'}: results file does not exist."
    ]
