"""`mbsim batch`: sweeps on local worker processes and on a Dask LocalCluster, resume, failures.

Independent truths: each results file's own recorded scenario (/scenario/toml) and its own
trajectory and events (the summary must agree with them); a direct `mbsim run` of one grid
point (the sweep's file must be identical to it bit for bit); the local run (the Dask run must
be identical to it); file bytes and modification times (a resumed sweep must not rewrite a
file it reuses). The sample is the 3-body chain dropped onto the ground with a sideways speed,
so friction and restitution change every trajectory within its 0.05 s (50 steps).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
import pytest

from mbsim.batch import SweepError, load_sweep, plan_sweep, read_summary
from mbsim.io.results import EVENT_KINDS, load_results
from mbsim.io.results.labels import coordinate_labels

MBSIM = Path(sys.executable).with_name("mbsim")

# The chain starts 4 cm above the ground (its contact spheres have a 1 cm radius), falling at
# 1 m/s and sliding at 1 m/s: the first contact comes at about 0.035 s.
BASE = """
[simulation]
duration = 0.05
dt = 1e-3

[robot.chain]
urdf = "sample:chain-3"
q0 = { base_z = -0.95, joint_1 = 0.1 }
v0 = { base_z = -1.0, base_x = 1.0 }

[environment.ground]
urdf = "sample:ground"

[contact]
mu = 0.5
restitution = 0.5
"""

GRID = """
scenario = "drop.toml"
out_dir = "out"

[sweep.grid]
"contact.mu" = [0.1, 0.8]
contact.restitution = [0.0, 0.5, 0.9]
"""
MU = [0.1, 0.8]
EPS = [0.0, 0.5, 0.9]


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def cli(*args, check_rc=None, cwd=None):
    """`mbsim ARGS` through the console script's main(), in this process (the workers are
    still separate processes; this only saves starting one more Python per call)."""
    from mbsim.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    argv, here = sys.argv, os.getcwd()
    sys.argv = ["mbsim", *map(str, args)]
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
                rc = 0
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = argv
        os.chdir(here)
    done = Done(rc, out.getvalue(), err.getvalue())
    if check_rc is not None:
        assert done.returncode == check_rc, done
    return done


def make_sweep(folder: Path, sweep: str = GRID, base: str = BASE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "drop.toml").write_text(base)
    path = folder / "sweep.toml"
    path.write_text(sweep)
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def summary_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The 2 x 3 grid run once with --jobs 2; tests copy its folder before changing it."""
    folder = tmp_path_factory.mktemp("local")
    sweep = make_sweep(folder)
    proc = cli("batch", sweep, "--jobs", "2", "--quiet", "--json", check_rc=0)
    return folder, json.loads(proc.stdout)


# --------------------------------------------------------------------------- local run


def test_grid_runs_locally_and_the_summary_matches_the_files(local, tmp_path):
    folder, report = local
    out = folder / "out"
    assert report["status"] == "complete"
    assert (report["runs"], report["complete"], report["reused"]) == (6, 6, 0)
    files = sorted(p.name for p in out.glob("*.h5") if p.name != "summary.h5")
    assert files == [f"run-{i:04d}.h5" for i in range(6)]

    rows = summary_csv(out / "summary.csv")
    table = read_summary(out / "summary.h5")
    assert [int(r["run_id"]) for r in rows] == list(table["run_id"]) == list(range(6))
    finals = []
    for i, row in enumerate(rows):
        path = out / row["file"]
        r = load_results(path)
        assert r.status == row["status"] == "complete"
        # the parameters the summary claims are those the file's own scenario record holds
        recorded = tomllib.loads(r.scenario_toml)["contact"]
        assert float(row["contact.mu"]) == recorded["mu"] == table["contact.mu"][i]
        assert float(row["contact.restitution"]) == recorded["restitution"]
        assert table["contact.restitution"][i] == recorded["restitution"]
        # grid order: the last key varies fastest
        assert (recorded["mu"], recorded["restitution"]) == (MU[i // 3], EPS[i % 3])
        # the metrics are the file's own trajectory and events
        assert int(row["steps"]) == r.step[-1] == 50
        for k, name in enumerate(coordinate_labels(r)):  # tree/joint, as the scenario says
            assert "/" in name
            assert float(row[f"final_q[{name}]"]) == r.q[-1, k]
            assert table[f"final_q[{name}]"][i] == r.q[-1, k]
        kinds = r.event_kind_names().tolist()
        for kind in EVENT_KINDS:
            assert int(row[f"events_{kind}"]) == kinds.count(kind)
        assert abs(float(row["final_total_J"]) - r.energy[-1, 2]) < 1e-9
        with h5py.File(path, "r") as f:
            for source in ("impacts", "stabilisation", "closures"):
                steps = int(f["summary"].attrs[f"energy_gain_steps_{source}"])
                total = float(f["summary"].attrs[f"energy_gain_total_{source}"])
                assert int(row[f"energy_gain_steps_{source}"]) == steps
                assert float(row[f"energy_gain_J_{source}"]) == pytest.approx(total, abs=1e-12)
        assert row["message"] == "" and row["reused"] == "false"
        finals.append(r.q[-1])
    assert int(rows[0]["events_impact"]) >= 1  # the grid points do touch the ground
    # every grid point gave a different motion: the overrides reached the simulation
    assert len({tuple(q) for q in finals}) == 6

    # the same grid point run directly with `mbsim run` gives the same file content
    single = tmp_path / "single.h5"
    cli(
        "run",
        folder / "drop.toml",
        "--set",
        "contact.mu=0.8",
        "--set",
        "contact.restitution=0.5",
        "--out",
        single,
        "--quiet",
        check_rc=0,
    )
    a, b = load_results(single), load_results(out / "run-0004.h5")
    assert np.array_equal(a.q, b.q) and np.array_equal(a.v, b.v)
    assert np.array_equal(a.events["kind"], b.events["kind"])
    assert np.array_equal(a.events["normal_impulse"], b.events["normal_impulse"])
    with h5py.File(out / "summary.h5") as f:
        assert f.attrs["sweep_status"] == "complete"
        assert f.attrs["runs_complete"] == 6


# --------------------------------------------------------------------------- Dask


def test_dask_local_cluster_gives_the_local_results(local, tmp_path):
    from distributed import LocalCluster

    folder, _ = local
    out = tmp_path / "dask"
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        proc = cli(
            "batch",
            folder / "sweep.toml",
            "--scheduler",
            cluster.scheduler_address,
            "--out-dir",
            out,
            "--quiet",
            "--json",
            check_rc=0,
        )
    assert cluster.status.name == "closed"
    report = json.loads(proc.stdout)
    assert (report["runs"], report["complete"]) == (6, 6)
    for i in range(6):
        a = load_results(folder / "out" / f"run-{i:04d}.h5")
        b = load_results(out / f"run-{i:04d}.h5")
        for name in ("q", "v", "energy", "body_pose", "time"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), (i, name)
        for col in a.events:
            assert np.array_equal(a.events[col], b.events[col], equal_nan=True), (i, col)
        with h5py.File(b.path) as f:
            assert json.loads(f["batch"].attrs["overrides"]) == {
                "contact.mu": MU[i // 3],
                "contact.restitution": EPS[i % 3],
            }
    local_rows, dask_rows = (
        summary_csv(folder / "out" / "summary.csv"),
        summary_csv(out / "summary.csv"),
    )
    for x, y in zip(local_rows, dask_rows, strict=True):
        for timing in ("wall_s", "cpu_s"):
            x.pop(timing), y.pop(timing)
        assert x == y


# --------------------------------------------------------------------------- resume


def test_resume_reruns_exactly_the_deleted_and_the_corrupted_run(local, tmp_path):
    src, _ = local
    folder = tmp_path / "resume"
    shutil.copytree(src, folder)
    out = folder / "out"
    (out / "run-0002.h5").unlink()
    corrupt = out / "run-0004.h5"
    with open(corrupt, "r+b") as f:  # a copy cut short: the HDF5 signature survives
        f.truncate(corrupt.stat().st_size // 2)
    kept = {
        i: (sha256(out / f"run-{i:04d}.h5"), (out / f"run-{i:04d}.h5").stat().st_mtime_ns)
        for i in (0, 1, 3, 5)
    }

    dry = json.loads(cli("batch", folder / "sweep.toml", "--dry-run", "--json", check_rc=0).stdout)
    actions = {r["run_id"]: (r["action"], r["reason"]) for r in dry["runs"]}
    assert actions == {
        0: ("reuse", "complete"),
        1: ("reuse", "complete"),
        2: ("run", "new"),
        3: ("reuse", "complete"),
        4: ("run", "damaged"),
        5: ("reuse", "complete"),
    }

    proc = cli("batch", folder / "sweep.toml", "--jobs", "1", "--quiet", "--json", check_rc=0)
    report = json.loads(proc.stdout)
    assert (report["complete"], report["reused"]) == (6, 4)
    rows = summary_csv(out / "summary.csv")
    assert [r["reused"] for r in rows] == ["true", "true", "false", "true", "false", "true"]
    for i, (digest, mtime) in kept.items():  # reused files were not rewritten
        p = out / f"run-{i:04d}.h5"
        assert (sha256(p), p.stat().st_mtime_ns) == (digest, mtime)
    for i in (2, 4):  # the re-runs reproduce the original runs
        a, b = load_results(src / "out" / f"run-{i:04d}.h5"), load_results(out / f"run-{i:04d}.h5")
        assert b.status == "complete" and np.array_equal(a.q, b.q)
    # the reused rows carry the metrics recorded in their files, same as the first sweep
    first = summary_csv(src / "out" / "summary.csv")
    for x, y in zip(first, rows, strict=True):
        for key in ("steps", "events_impact", "final_q[chain/base_x]", "final_total_J"):
            assert x[key] == y[key]


def test_resume_replaces_failed_interrupted_and_stale_runs_only(local, tmp_path):
    src, _ = local
    folder = tmp_path / "plan"
    shutil.copytree(src, folder)
    out = folder / "out"
    for i, status in ((1, "interrupted"), (3, "failed")):
        with h5py.File(out / f"run-{i:04d}.h5", "a") as f:
            f.attrs["status"] = status
    plan = plan_sweep(load_sweep(folder / "sweep.toml"))
    assert [(p.action, p.reason) for p in plan] == [
        ("reuse", "complete"),
        ("run", "interrupted"),
        ("reuse", "complete"),
        ("run", "failed"),
        ("reuse", "complete"),
        ("reuse", "complete"),
    ]
    # a changed sweep: mu 0.8 -> 0.7 makes runs 3-5 new parameters, never reused
    (folder / "sweep.toml").write_text(GRID.replace("0.8]", "0.7]"))
    plan = plan_sweep(load_sweep(folder / "sweep.toml"))
    assert [p.action for p in plan] == ["reuse", "run", "reuse", "run", "run", "run"]
    assert [p.reason for p in plan][4:] == ["stale", "stale"]
    # so does a changed input file, here the base scenario, for every run
    (folder / "drop.toml").write_text(BASE + "\n# edited\n")
    assert {p.reason for p in plan_sweep(load_sweep(folder / "sweep.toml"))} == {"stale"}
    # a results file mbsim batch did not write is never overwritten
    (out / "run-0000.h5").unlink()
    shutil.copy(src / "out" / "summary.h5", out / "run-0000.h5")
    with pytest.raises(SweepError, match=r"run-0000\.h5: is a file that mbsim batch did not"):
        plan_sweep(load_sweep(folder / "sweep.toml"))


# --------------------------------------------------------------------------- failures


def test_an_invalid_value_fails_its_run_only(tmp_path):
    sweep = make_sweep(
        tmp_path,
        """
scenario = "drop.toml"
[set]
"simulation.duration" = 0.02
[sweep.zip]
"contact.restitution" = [0.0, 1.5, 0.5, 0.2]
"robot.chain.q0.base_z" = [-0.95, -0.95, 5000.0, -0.9]
""",
    )
    proc = cli(
        "batch",
        sweep,
        "--jobs",
        "1",
        "--out-dir",
        tmp_path / "o",
        "--quiet",
        "--json",
        check_rc=1,
        cwd=tmp_path,
    )
    report = json.loads(proc.stdout)
    assert (report["complete"], report["failed"]) == (2, 2)
    rows = {int(r["run_id"]): r for r in summary_csv(tmp_path / "o" / "summary.csv")}
    assert [rows[i]["status"] for i in range(4)] == ["complete", "failed", "failed", "complete"]
    # rejected when the sweep is planned (the scenario loader's range check) ...
    assert "contact.restitution = 1.5" in rows[1]["message"]
    assert "must be" in rows[1]["message"] and str(tmp_path / "drop.toml") in rows[1]["message"]
    # ... or in the worker, against the URDF's joint limits
    assert "base_z" in rows[2]["message"] and "5000" in rows[2]["message"]
    assert not (tmp_path / "o" / "run-0001.h5").exists()
    for i in (0, 3):
        assert load_results(tmp_path / "o" / f"run-{i:04d}.h5").status == "complete"
    assert rows[3]["final_q[chain/base_z]"] != rows[0]["final_q[chain/base_z]"]


def test_ctrl_c_stops_the_sweep_and_keeps_every_finished_file(tmp_path):
    # run 0 is short, run 1 long enough to be cut by the Ctrl-C, runs 2 and 3 never start
    sweep = make_sweep(
        tmp_path,
        """
scenario = "drop.toml"
out_dir = "out"
[sweep.zip]
"simulation.duration" = [0.01, 5.0, 0.01, 0.01]
""",
    )
    proc = subprocess.Popen(
        [str(MBSIM), "batch", str(sweep), "--jobs", "1", "--quiet", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    out = tmp_path / "out"
    try:
        deadline = time.monotonic() + 120
        while not (out / "run-0001.h5").exists():  # run 0 finished, run 1 is going
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: parent and workers alike
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr  # issue 17: Ctrl-C at any moment exits 130
    assert "Traceback" not in stderr
    assert json.loads(stdout)["status"] == "interrupted"
    rows = summary_csv(out / "summary.csv")
    assert [r["status"] for r in rows] == ["complete", "interrupted", "not_run", "not_run"]
    assert rows[1]["message"].startswith("interrupted by the user")
    assert 0 < float(rows[1]["sim_time_s"]) < 5.0
    for r in rows:
        path = out / r["file"]
        if r["status"] == "not_run":
            assert not path.exists()
        else:  # every file that was started is closed cleanly, with its true status
            assert load_results(path).status == r["status"]
    with h5py.File(out / "summary.h5") as f:
        assert f.attrs["sweep_status"] == "interrupted"


# --------------------------------------------------------------------------- sweep files


def load(tmp_path, text):
    (tmp_path / "drop.toml").write_text(BASE)
    (tmp_path / "s.toml").write_text(text)
    return load_sweep(tmp_path / "s.toml")


def params(sweep):
    return [r.params for r in sweep.runs()]


def test_axes_combine_in_file_order_with_the_last_fastest(tmp_path):
    s = load(
        tmp_path,
        """
scenario = "drop.toml"
[set]
simulation.duration = 0.1
[sweep.zip]
"robot.chain.q0.joint_1" = [0.1, 0.2]
robot.chain.v0.joint_1 = [1.0, 2.0]
[sweep.grid]
contact.mu = [0.3, 0.6]
""",
    )
    assert s.parameters == ["robot.chain.q0.joint_1", "robot.chain.v0.joint_1", "contact.mu"]
    assert params(s) == [
        {"robot.chain.q0.joint_1": q, "robot.chain.v0.joint_1": v, "contact.mu": mu}
        for q, v in ((0.1, 1.0), (0.2, 2.0))
        for mu in (0.3, 0.6)
    ]
    assert all(r.overrides["simulation.duration"] == 0.1 for r in s.runs())
    assert [r.path.name for r in s.runs()] == [f"run-{i:04d}.h5" for i in range(4)]
    assert s.out_dir == Path.cwd() / "s"  # default: ./<sweep stem>


def test_relative_paths_in_values_are_relative_to_the_sweep_file(tmp_path):
    s = load(
        tmp_path,
        """
scenario = "drop.toml"
[set]
"environment.ground.urdf" = "sample:ground"
[sweep.grid]
"robot.chain.urdf" = ["robots/a.urdf", "/abs/b.urdf", "sample:chain-4"]
""",
    )
    assert [p["robot.chain.urdf"] for p in params(s)] == [
        str(tmp_path / "robots" / "a.urdf"),
        "/abs/b.urdf",
        "sample:chain-4",
    ]
    assert s.fixed == {"environment.ground.urdf": "sample:ground"}


def test_ranges_and_seeded_random_draws(tmp_path):
    text = """
scenario = "drop.toml"
file_pattern = "case_{id}.h5"
[sweep.range]
"simulation.dt" = { start = 1e-4, stop = 1e-2, num = 3, scale = "log" }
"contact.friction_directions" = { start = 4, stop = 8, step = 2 }
[sweep.random]
seed = 11
samples = 5
"contact.mu" = { uniform = [0.2, 0.4] }
"contact.restitution" = { choice = [0.0, 0.5] }
"robot.chain.q0.joint_2" = { normal = [0.0, 0.1] }
"""
    s = load(tmp_path, text)
    assert s.n_runs == 3 * 3 * 5 and s.file_name(12) == "case_12.h5"
    dts = sorted({p["simulation.dt"] for p in params(s)})
    assert np.allclose(dts, [1e-4, 1e-3, 1e-2], rtol=1e-12)
    assert sorted({p["contact.friction_directions"] for p in params(s)}) == [4, 6, 8]
    mus = [p["contact.mu"] for p in params(s)[:5]]
    assert all(0.2 <= m <= 0.4 for m in mus) and len(set(mus)) == 5
    assert {p["contact.restitution"] for p in params(s)} <= {0.0, 0.5}
    # the same seed gives the same draws: the runs (and their identities) are repeatable
    assert params(load(tmp_path, text)) == params(s)
    assert params(load(tmp_path, text.replace("seed = 11", "seed = 12"))) != params(s)


S = 'scenario = "drop.toml"\n'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            S + '[sweep.grid]\n"contact.mu" = 0.3',
            r"sweep\.grid\.contact\.mu = 0\.3: must be a list of values",
        ),
        (
            S + '[sweep.grid]\n"contact.muu" = []',
            r"sweep\.grid\.contact\.muu: is an empty list",
        ),
        (
            S + '[sweep.grid]\n"contac.mu" = [1]',
            r"sweep\.grid\.contac\.mu: is not a scenario key \(did you mean 'contact'\?",
        ),
        (
            S + '[sweep.grid]\n"output.path" = ["a.h5"]',
            r"output\.path: cannot be set in a sweep",
        ),
        (
            S + "[sweep.zip]\na.b = [1]",
            r"sweep\.zip\.a\.b: is not a scenario key",
        ),
        (
            S + '[sweep.zip]\n"contact.mu" = [1, 2]\n"contact.margin" = [1]',
            r"sweep\.zip\.contact\.margin: has 1 values but contact\.mu has 2",
        ),
        (
            S + '[sweep.range]\n"contact.mu" = { start = 0, stop = 1 }',
            r"sweep\.range\.contact\.mu: needs exactly one of num",
        ),
        (
            S + '[sweep.range]\n"contact.mu" = { start = 0, stpo = 1, num = 2 }',
            r"sweep\.range\.contact\.mu\.stpo: unknown key in a range \(did you mean 'stop'\?",
        ),
        (
            S + '[sweep.random]\nsamples = 3\n"contact.mu" = { uniform = [0, 1] }',
            r"sweep\.random\.seed: is required",
        ),
        (
            S + '[sweep.random]\nseed = 1\nsamples = 3\n"contact.mu" = { gauss = [0, 1] }',
            r"sweep\.random\.contact\.mu\.gauss = \[0, 1\]: must be a table with one distribution",
        ),
        (
            S + '[set]\n"contact.mu" = 0.2\n[sweep.grid]\n"contact.mu" = [1]',
            r"contact\.mu \(in set\) is also set in sweep\.grid",
        ),
        (
            S + '[sweep.grid]\n"robot.chain.q0" = [{}]\n"robot.chain.q0.joint_1" = [1]',
            r"robot\.chain\.q0 \(in sweep\.grid\) overlaps robot\.chain\.q0\.joint_1",
        ),
        (S + 'file_pattern = "run.h5"', r'file_pattern = "run\.h5": must be'),
        ('scenario = "nope.toml"', r'scenario = "nope\.toml": .*nope\.toml does not exist'),
        (S + "[sweeps.grid]", r"sweeps: unknown key \(did you mean 'sweep'"),
        (S + "[sweep.grd]", r"sweep\.grd: unknown kind of sweep"),
        ("out_dir = 'x'", r"scenario: is required"),
    ],
)
def test_bad_sweep_files_are_one_sentence_naming_file_key_and_value(tmp_path, body, expected):
    with pytest.raises(SweepError, match=expected) as info:
        load(tmp_path, body)
    message = str(info.value)
    assert message.startswith(str(tmp_path / "s.toml") + ": ") and "\n" not in message


def test_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path):
    sweep = make_sweep(tmp_path, S + '[sweep.grid]\n"contact.mu" = 0.3\n')
    proc = cli("batch", sweep, "--dry-run", check_rc=2)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "sweep.toml: sweep.grid.contact.mu = 0.3: must be a list" in proc.stderr
    proc = cli("batch", sweep, "--jobs", "0", check_rc=2)
    assert "--jobs 0: must be at least 1" in proc.stderr
