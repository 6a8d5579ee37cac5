"""The HDF5 results file (mbsim.io.results): layout, round trip, streaming, crash safety.

The writer is driven by a synthetic run computed here in closed form: a ball of mass M dropped
from H0 bouncing on the floor with restitution E (z up, SI units). Every check compares what
the file holds with these independent values, never with the writer's own output.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import mbsim.io.results.table as table_mod
import mbsim.io.results.target as results_mod
from mbsim.errors import MbsimError
from mbsim.io.results import ResultsError, ResultsWriter, load_results

# The synthetic run (also imported by the subprocess writers below).
G, M, H0, E = 9.81, 2.0, 1.0, 0.5
INFO = dict(
    body_names=["ball"],
    joint_names=["z"],
    joint_types=["prismatic"],
    parents=[-1],
    q_names=["z"],
    v_names=["z"],
    masses=[M],
    tree_names=["ball"],
    body_trees=[0],
)


def impacts(t_end):
    """(time, speed before, speed after) of every impact up to t_end. Impact times accumulate
    (Zeno), so the 6th impact is plastic and the ball then rests on the floor."""
    out, t, v = [], math.sqrt(2 * H0 / G), math.sqrt(2 * G * H0)
    while t <= t_end and len(out) < 6:
        after = E * v if len(out) < 5 else 0.0
        out.append((t, -v, after))
        t, v = t + 2 * after / G, after
    return out


def ball(t):
    """Height (m), vertical velocity (m/s), kinetic and potential energy (J) at times t."""
    t = np.atleast_1d(np.asarray(t, dtype=float))
    z = np.empty_like(t)
    vz = np.empty_like(t)
    hits = impacts(float(t.max()) if t.size else 0.0)
    starts = [(0.0, 0.0, H0)] + [(ti, va, 0.0) for ti, vb, va in hits]
    for k, tk in enumerate(t):
        t0, v0, z0 = max((s for s in starts if s[0] <= tk), key=lambda s: s[0])
        if len(hits) == 6 and t0 == hits[-1][0]:
            z[k], vz[k] = 0.0, 0.0  # at rest after the plastic impact
            continue
        z[k] = z0 + v0 * (tk - t0) - 0.5 * G * (tk - t0) ** 2
        vz[k] = v0 - G * (tk - t0)
    return z, vz, 0.5 * M * vz**2, M * G * z


DT = 1e-3
SCENARIO = '[simulation]\ndt = 0.001\n\n[robot.ball]\nurdf = "ball.urdf"\n'


def write_ball_file(
    path: Path,
    n: int = 1500,
    *,
    input_file: Path | None = None,
    body_poses: bool = True,
    contacts: bool = True,
    finish: bool = True,
    **kw,
):
    """A results file of the first ``n`` states of the bouncing ball, with an impact event and
    a contact_begin/contact_end pair per bounce, contacts while touching, diagnostics."""
    t = np.arange(n) * DT
    z, vz, ke, pe = ball(t)
    w = ResultsWriter(
        path,
        model_info=INFO,
        scenario_toml=SCENARIO,
        input_files=[input_file] if input_file else [],
        command="mbsim run ball.toml",
        formulation="os",
        dt=DT,
        duration=(n - 1) * DT,
        body_poses=body_poses,
        contacts=contacts,
        **kw,
    )
    hits = impacts(t[-1])
    for k in range(n):
        pose = np.array([[0.0, 0.0, z[k], 1.0, 0.0, 0.0, 0.0]])
        w.append_state(t[k], [z[k]], [vz[k]], [ke[k], pe[k], ke[k] + pe[k]], body_pose=pose)
        for ti, vb, va in hits:
            if t[k] - DT < ti <= t[k]:
                w.append_events(
                    time=[ti, ti, ti],
                    step=k,
                    kind=["contact_begin", "impact", "contact_end"],
                    body_a=0,
                    body_b=-1,
                    point=[0.0, 0.0, 0.0],
                    normal=[0.0, 0.0, 1.0],
                    normal_impulse=M * (va - vb),
                    tangent_impulse=[0.0, 0.0, 0.0],
                    normal_velocity_before=vb,
                    normal_velocity_after=va,
                    energy_before=[np.nan, 0.5 * M * vb**2, np.nan],
                    energy_after=[np.nan, 0.5 * M * va**2, np.nan],
                )
                w.append_contacts(
                    time=ti,
                    step=k,
                    body_a=[0],
                    body_b=[-1],
                    point=[[0.0, 0.0, 0.0]],
                    normal=[[0.0, 0.0, 1.0]],
                    normal_impulse=M * (va - vb),
                    tangent_impulse=[[0.0, 0.0, 0.0]],
                    normal_velocity_before=vb,
                    normal_velocity_after=va,
                    gap=0.0,
                )
        w.append_diagnostics(
            time=t[k],
            step=k,
            lcp_size=3 if z[k] < 0.05 else 0,
            lcp_pivots=k % 5,
            lcp_residual=1e-12 * (k % 3),
            n_contacts=int(z[k] < 0.05),
            max_penetration=1e-4 if z[k] < 0.05 else 0.0,
            step_seconds=1e-5,
            solver="lemke" if z[k] < 0.05 else "none",
        )
    if finish:
        w.finish("complete")
    return w, t


def one_line(exc) -> str:
    msg = str(exc.value)
    assert isinstance(exc.value, MbsimError) and "\n" not in msg, msg
    return msg


# --------------------------------------------------------------------------- round trip


def test_round_trip_matches_the_closed_form(tmp_path: Path, monkeypatch):
    # small seals and flushes: the run crosses many whole-chunk seals and tail rewrites
    monkeypatch.setattr(table_mod.Table, "SEAL_BYTES", 4096)
    inp = tmp_path / "ball.urdf"
    inp.write_text("<robot name='ball'/>")
    path = tmp_path / "ball.h5"
    w, t = write_ball_file(path, 2000, input_file=inp, flush_rows=97)
    assert w.flushes > 20
    r = load_results(path)
    z, vz, ke, pe = ball(t)
    assert r.status == "complete" and r.message == "" and r.writer_alive is None
    assert np.array_equal(r.time, t) and np.array_equal(r.step, np.arange(2000))
    assert np.array_equal(r.q[:, 0], z) and np.array_equal(r.v[:, 0], vz)
    assert np.array_equal(r.energy, np.column_stack([ke, pe, ke + pe]))
    assert r.body_pose.shape == (2000, 1, 7) and np.array_equal(r.body_pose[:, 0, 2], z)
    hits = impacts(t[-1])
    assert len(hits) >= 3
    ev = r.events
    assert [r.event_kinds[k] for k in ev["kind"]] == [
        "contact_begin",
        "impact",
        "contact_end",
    ] * len(hits)
    assert np.array_equal(ev["time"][1::3], [h[0] for h in hits])
    assert np.array_equal(ev["normal_velocity_before"][1::3], [h[1] for h in hits])
    assert np.array_equal(ev["energy_after"][1::3], [0.5 * M * h[2] ** 2 for h in hits])
    assert np.isnan(ev["energy_before"][0::3]).all()
    assert np.array_equal(ev["body_b"], np.full(3 * len(hits), -1))
    assert np.array_equal(ev["normal"], np.tile([0.0, 0.0, 1.0], (3 * len(hits), 1)))
    assert len(r.contacts["time"]) == len(hits) and np.array_equal(
        r.contacts["gap"], [0.0] * len(hits)
    )
    d = r.diagnostics
    touching = z < 0.05
    assert np.array_equal(d["n_contacts"], touching.astype(int))
    assert np.array_equal(d["solver"], np.where(touching, 1, 0))  # 1 = lemke, 0 = none
    assert np.array_equal(d["lcp_pivots"], np.arange(2000) % 5)
    assert r.scenario_toml == SCENARIO
    assert r.input_files == {str(inp): hashlib.sha256(inp.read_bytes()).hexdigest()}
    assert r.body_names == ["ball"] and r.q_names == ["z"] and r.joint_types == ["prismatic"]
    assert list(r.parents) == [-1] and list(r.masses) == [M] and r.tree_names == ["ball"]
    assert (r.formulation, r.dt, r.duration) == ("os", DT, 1999 * DT)


def test_two_models_written_one_after_the_other_keep_their_own_names(tmp_path: Path):
    # the writer keeps what it can from one file to the next (property lists, encoded
    # padding): two different models written in turn, in one process, must each read back
    # their own names, shapes and rows (the truth: the model_info and rows given)
    other = dict(
        body_names=["base", "arm", "hand"],
        joint_names=["slide", "shoulder", "wrist"],
        joint_types=["prismatic", "revolute", "revolute"],
        parents=[-1, 0, 1],
        q_names=["slide", "shoulder", "wrist"],
        v_names=["slide", "shoulder", "wrist"],
        masses=[3.0, 1.5, 0.5],
        tree_names=["robot"],
        body_trees=[0, 0, 0],
    )
    runs = []
    for k, info in enumerate((INFO, other, INFO)):
        path = tmp_path / f"run{k}.h5"
        n = len(info["q_names"])
        rows = [(i * 1e-3, np.full(n, k + i * 0.5), np.full(n, -k - 1.0)) for i in range(7 + k)]
        with ResultsWriter(path, model_info=info, scenario_toml="", dt=1e-3, duration=1.0) as w:
            for t, q, v in rows:
                w.append_state(t, q, v, [1.0, 2.0, 3.0])
                w.append_diagnostics(time=t, step=int(round(t / 1e-3)))
        runs.append((path, info, rows))
    for path, info, rows in runs:
        r = load_results(path)
        assert r.status == "complete"
        for key in ("body_names", "joint_names", "joint_types", "q_names", "v_names"):
            assert list(getattr(r, key)) == info[key], (path.name, key)
        assert list(r.tree_names) == info["tree_names"]
        assert np.array_equal(r.parents, info["parents"])
        assert np.array_equal(r.masses, info["masses"])
        assert np.array_equal(r.q, np.array([q for _, q, _ in rows]))
        assert np.array_equal(r.v, np.array([v for _, _, v in rows]))
        assert np.array_equal(r.time, np.array([t for t, _, _ in rows]))
        assert r.attrs["last_time"] == rows[-1][0]


def test_layout_is_plain_h5py_readable(tmp_path: Path):
    path = tmp_path / "ball.h5"
    write_ball_file(path, 300)
    with h5py.File(path, "r") as f:
        a = f.attrs
        assert a["format"] == "mbsim-results" and a["schema_version"] == 1
        assert a["status"] == "complete" and a["command"] == "mbsim run ball.toml"
        assert a["formulation"] == "os" and a["dt"] == DT and a["duration"] == 299 * DT
        created = dt.datetime.strptime(a["created_utc"], "%Y-%m-%dT%H:%M:%SZ")
        assert abs(dt.datetime.now(dt.UTC).replace(tzinfo=None) - created) < dt.timedelta(minutes=5)
        assert isinstance(a["mbsim_version"], str) and a["message"] == ""
        expected = {
            "trajectory": {"time", "step", "q", "v", "energy", "body_pose", "tau", "tau_limit"},
            "events": {
                "time",
                "step",
                "kind",
                "body_a",
                "body_b",
                "point",
                "normal",
                "normal_impulse",
                "tangent_impulse",
                "normal_velocity_before",
                "normal_velocity_after",
                "energy_before",
                "energy_after",
            },  # fmt: skip
            "contacts": {
                "time",
                "step",
                "body_a",
                "body_b",
                "point",
                "normal",
                "normal_impulse",
                "tangent_impulse",
                "normal_velocity_before",
                "normal_velocity_after",
                "gap",
            },  # fmt: skip
            "diagnostics": {
                "time",
                "step",
                "lcp_size",
                "lcp_pivots",
                "lcp_residual",
                "n_contacts",
                "max_penetration",
                "constraint_error",
                "step_seconds",
                "solver",
            },  # fmt: skip
            "model": {
                "body_names",
                "joint_names",
                "joint_types",
                "parents",
                "q_names",
                "v_names",
                "masses",
                "tree_names",
                "body_trees",
            },  # fmt: skip
            "scenario": {"toml", "input_files", "sha256"},
        }
        assert set(f.keys()) == set(expected)
        for group, names in expected.items():
            assert set(f[group].keys()) == names, group  # no _tail left after a clean finish
            for name in names:
                ds = f[group][name]
                assert ds.attrs["units"] and ds.attrs["description"], (group, name)
                if group in ("trajectory", "events", "contacts", "diagnostics"):
                    assert ds.chunks is not None and ds.compression == "gzip"
                    assert ds.maxshape[0] is None
        assert f["trajectory/q"].shape == (300, 1) and f["trajectory/body_pose"].shape == (
            300,
            1,
            7,
        )
        assert h5py.check_enum_dtype(f["events/kind"].dtype) == {
            "contact_begin": 0,
            "contact_end": 1,
            "impact": 2,
            "stick": 3,
            "slip": 4,
            "limit_begin": 5,
            "limit_end": 6,
        }
        assert h5py.check_enum_dtype(f["diagnostics/solver"].dtype) == {
            "none": 0,
            "lemke": 1,
            "lemke_reg": 2,
            "pgs": 3,
            "failed": 4,
        }
        assert f["scenario/toml"].asstr()[()] == SCENARIO


def test_snapshot_between_flushes_is_complete_up_to_the_flush(tmp_path: Path, monkeypatch):
    """Copying the file while the writer is open is what a SIGKILL leaves on disk."""
    monkeypatch.setattr(table_mod.Table, "SEAL_BYTES", 2048)
    path = tmp_path / "live.h5"
    w, t = write_ball_file(path, 700, finish=False, flush_rows=50)
    w.flush()
    snap = tmp_path / "snap.h5"
    shutil.copyfile(path, snap)
    w.finish("complete")
    with h5py.File(snap, "r") as f:
        assert f.attrs["status"] == "running"
        # the state is split between whole compressed chunks and the uncompressed tail
        assert f["trajectory"].attrs["rows"] % f["trajectory/_tail/q"].maxshape[0] == 0
        assert f["trajectory/_tail"].attrs["rows"] > 0
        # crash safety rests on this: committed rows are rewritten only in unfiltered chunks
        for group in ("trajectory", "events", "diagnostics"):
            for ds in f[f"{group}/_tail"].values():
                assert ds.compression is None and ds.maxshape[0] == ds.chunks[0] * (
                    ds.maxshape[0] // ds.chunks[0]
                )
    r = load_results(snap)
    z, vz, _, _ = ball(t)
    assert r.status == "running" and r.writer_alive is False
    assert np.array_equal(r.time, t) and np.array_equal(r.q[:, 0], z)
    assert np.array_equal(r.body_pose[:, 0, 2], z)
    assert len(r.diagnostics["time"]) == 700 and len(r.events["time"]) == len(
        load_results(path).events["time"]
    )


def test_exceptions_set_the_status(tmp_path: Path):
    path = tmp_path / "fail.h5"
    with pytest.raises(RuntimeError):
        with ResultsWriter(path, model_info=INFO, scenario_toml="", dt=DT, duration=1.0) as w:
            w.append_state(0.0, [H0], [0.0], [0.0, M * G * H0, M * G * H0])
            raise RuntimeError("LCP failed at step 1")
    r = load_results(path)
    assert r.status == "failed" and r.message == "RuntimeError: LCP failed at step 1"
    assert list(r.q[:, 0]) == [H0]
    path = tmp_path / "int.h5"
    with pytest.raises(KeyboardInterrupt):
        with ResultsWriter(path, model_info=INFO, scenario_toml="", dt=DT, duration=1.0) as w:
            w.append_state(0.0, [H0], [0.0], [0.0, M * G * H0, M * G * H0])
            raise KeyboardInterrupt
    r = load_results(path)
    assert r.status == "interrupted" and "interrupted" in r.message and len(r.time) == 1


def test_no_moving_joints_and_no_rows(tmp_path: Path):
    info = dict(INFO, body_names=[], joint_names=[], joint_types=[], parents=[], masses=[])
    info.update(q_names=[], v_names=[], body_trees=[])
    path = tmp_path / "static.h5"
    with ResultsWriter(path, model_info=info, scenario_toml="", dt=DT, duration=1.0) as w:
        for k in range(3):
            w.append_state(k * DT, [], [], [0.0, 0.0, 0.0])
    r = load_results(path)
    assert r.q.shape == (3, 0) and r.v.shape == (3, 0) and list(r.time) == [0.0, DT, 2 * DT]
    path = tmp_path / "empty.h5"
    with ResultsWriter(path, model_info=INFO, scenario_toml="", dt=DT, duration=1.0):
        pass
    r = load_results(path)
    assert r.status == "complete" and r.q.shape == (0, 1) and len(r.events["time"]) == 0


def test_bad_rows_are_refused(tmp_path: Path):
    with ResultsWriter(
        tmp_path / "x.h5", model_info=INFO, scenario_toml="", dt=DT, duration=1.0
    ) as w:
        with pytest.raises(ValueError, match="'q'"):
            w.append_state(0.0, [1.0, 2.0], [0.0], [0.0, 0.0, 0.0])
        with pytest.raises(ValueError, match="unknown event kind"):
            w.append_events(
                time=0.0, step=0, kind=["bounce"], body_a=0, body_b=-1, point=[0, 0, 0],
                normal=[0, 0, 1], normal_impulse=0.0, tangent_impulse=[0, 0, 0],
                normal_velocity_before=0.0, normal_velocity_after=0.0,
            )  # fmt: skip
        with pytest.raises(ValueError, match="unknown solver"):
            w.append_diagnostics(time=0.0, step=0, solver="simplex")


# --------------------------------------------------------------------------- before the run


def test_existing_file_needs_force(tmp_path: Path):
    path = tmp_path / "old.h5"
    path.write_bytes(b"precious")
    with pytest.raises(ResultsError) as exc:
        ResultsWriter(path, model_info=INFO, scenario_toml="", dt=DT, duration=1.0)
    assert str(path) in one_line(exc) and "--force" in str(exc.value)
    assert path.read_bytes() == b"precious"
    with ResultsWriter(path, model_info=INFO, scenario_toml="", dt=DT, duration=1.0, force=True):
        pass
    assert load_results(path).status == "complete"


@pytest.fixture
def unwritable_dir(tmp_path: Path):
    """A folder where creating a file fails (root ignores permissions: use /proc then)."""
    if os.geteuid() == 0:
        if not Path("/proc").is_dir():
            pytest.skip("running as root without /proc: no unwritable folder available")
        yield Path("/proc")
        return
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    yield folder
    folder.chmod(0o700)


@pytest.mark.parametrize("where", ["missing", "directory", "unwritable", "file-parent"])
def test_unwritable_targets_fail_before_the_run(tmp_path: Path, unwritable_dir: Path, where):
    target = {
        "missing": tmp_path / "no" / "such" / "r.h5",
        "directory": tmp_path,
        "unwritable": unwritable_dir / "mbsim-test-results.h5",
        "file-parent": tmp_path / "plain.txt" / "r.h5",
    }[where]
    (tmp_path / "plain.txt").write_text("x")
    with pytest.raises(ResultsError) as exc:
        ResultsWriter(target, model_info=INFO, scenario_toml="", dt=DT, duration=1.0)
    assert str(target) in one_line(exc)
    if where != "directory":
        assert not target.exists()


def test_missing_input_file_is_named(tmp_path: Path):
    with pytest.raises(ResultsError) as exc:
        ResultsWriter(
            tmp_path / "r.h5",
            model_info=INFO,
            scenario_toml="",
            input_files=[tmp_path / "gone.urdf"],
            dt=DT,
            duration=1.0,
        )
    assert "gone.urdf" in one_line(exc) and not (tmp_path / "r.h5").exists()


def test_not_enough_space_is_known_before_the_run(tmp_path: Path, monkeypatch):
    # 100 s at 1 ms with one body pose: ~8.6 MB of states; pretend 5 MB are free
    monkeypatch.setattr(results_mod, "free_bytes", lambda folder: 5_000_000)
    path = tmp_path / "big.h5"
    with pytest.raises(ResultsError) as exc:
        ResultsWriter(
            path, model_info=INFO, scenario_toml="", dt=DT, duration=100.0, body_poses=True
        )
    assert "not enough disk space" in one_line(exc) and not path.exists()


def test_disk_filling_up_during_the_run_fails_cleanly(tmp_path: Path, monkeypatch):
    free = {"bytes": 10**12}
    monkeypatch.setattr(results_mod, "free_bytes", lambda folder: free["bytes"])
    # a file system without fallocate: the writer falls back to checking the free space
    monkeypatch.setattr(results_mod, "_fallocate", lambda: None)
    path = tmp_path / "full.h5"
    w, t = write_ball_file(path, 400, finish=False, flush_rows=100)
    w.flush()
    flushed = 400
    free["bytes"] = 1000  # the disk is now full
    with pytest.raises(ResultsError) as exc:
        for k in range(400, 1000):
            z, vz, ke, pe = ball(k * DT)
            w.append_state(k * DT, z, vz, [ke[0], pe[0], ke[0] + pe[0]], body_pose=np.zeros((1, 7)))
    assert "disk is full" in one_line(exc) and str(path) in str(exc.value)
    r = load_results(path)
    assert r.status == "failed" and "disk is full" in r.message
    z, _, _, _ = ball(t)
    assert np.array_equal(r.q[:, 0], z[:flushed])  # everything up to the last flush
    with pytest.raises(ResultsError):
        w.append_state(1.0, [0.0], [0.0], [0.0, 0.0, 0.0])  # closed for good


# --------------------------------------------------------------------------- reader errors


def test_load_results_rejects_what_is_not_a_results_file(tmp_path: Path):
    (tmp_path / "text.h5").write_text("not hdf5")
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f["x"] = [1, 2, 3]
    path = tmp_path / "v2.h5"
    write_ball_file(path, 10)
    with h5py.File(path, "r+") as f:
        f.attrs["schema_version"] = 2
    cases = [
        (tmp_path / "missing.h5", "does not exist"),
        (tmp_path, "not a regular file"),
        (tmp_path / "text.h5", "not an HDF5 file"),
        (tmp_path / "other.h5", "not an mbsim results file"),
        (path, "schema version 2"),
    ]
    for target, fragment in cases:
        with pytest.raises(ResultsError) as exc:
            load_results(target)
        msg = one_line(exc)
        assert str(target) in msg and fragment in msg, msg


# --------------------------------------------------------------------------- real processes

CHILD = f"""
import signal, sys, time
# a shell's background job inherits SIGINT ignored, and Python then raises no
# KeyboardInterrupt: restore the default so the test does not depend on how it was started
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_results import INFO, ball
from mbsim.io.results import ResultsWriter

path, dt = sys.argv[1], 1e-3
t_start = time.monotonic()
with ResultsWriter(path, model_info=INFO, scenario_toml="", dt=dt, duration=1e3) as w:
    k = 0
    while True:
        z, vz, ke, pe = ball(k * dt)
        w.append_state(k * dt, z, vz, [ke[0], pe[0], ke[0] + pe[0]])
        w.append_diagnostics(time=k * dt, step=k, solver="none")
        k += 1
        print(f"{{time.monotonic() - t_start:.4f}} {{k}}", flush=True)
        time.sleep(0.001)
"""


def _run_child(tmp_path: Path, stop_after: float, sig: int, settle: float = 0.0):
    """Start a writer process, let it run, then send ``sig``. Returns (rows appended at
    ``stop_after - settle`` s, last rows count printed, process)."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    path = tmp_path / "child.h5"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    reference, last = None, 0
    try:
        for line in proc.stdout:
            elapsed, rows = float(line.split()[0]), int(line.split()[1])
            last = rows
            if reference is None and elapsed >= stop_after - settle:
                reference = rows
            if elapsed >= stop_after:
                break
        else:
            pytest.fail(f"writer process ended early: {proc.stderr.read()}")
        proc.send_signal(sig)
        try:  # never hang the suite
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"writer process did not stop within 30 s of signal {sig}")
        # the rows printed before the signal landed, read through proc.stdout: the loop
        # above may have read lines ahead into its buffer, which communicate() (reading
        # the pipe itself) would skip
        for line in proc.stdout:
            last = int(line.split()[1])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return path, reference, last, proc


def test_sigkill_leaves_a_readable_file_flushed_within_a_second(tmp_path: Path):
    # rows appended by t = 1.0 s must be on disk when the process dies at t = 2.3 s: the
    # writer flushes at least once per wall-clock second
    path, reference, last, proc = _run_child(tmp_path, 2.3, signal.SIGKILL, settle=1.3)
    assert proc.returncode == -signal.SIGKILL
    with h5py.File(path, "r") as f:  # plain h5py opens it
        assert f.attrs["status"] == "running"
    r = load_results(path)
    assert r.status == "running" and r.writer_alive is False
    n = len(r.time)
    assert reference <= n <= last
    z, vz, _, _ = ball(np.arange(n) * 1e-3)
    assert np.array_equal(r.time, np.arange(n) * 1e-3)
    assert np.array_equal(r.q[:, 0], z) and np.array_equal(r.v[:, 0], vz)


def test_sigint_marks_the_file_interrupted(tmp_path: Path):
    path, _, last, proc = _run_child(tmp_path, 1.2, signal.SIGINT)
    assert proc.returncode != 0
    r = load_results(path)
    assert r.status == "interrupted" and "SIGINT" in r.message
    n = len(r.time)
    assert last <= n <= last + 1  # every appended row, including the unflushed ones
    z, _, _, _ = ball(np.arange(n) * 1e-3)
    assert np.array_equal(r.q[:, 0], z)
    with h5py.File(path, "r") as f:
        assert "_tail" not in f["trajectory"]
