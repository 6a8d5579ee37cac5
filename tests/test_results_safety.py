"""No run loses or overwrites another run's data (issue 17, "Data loss").

Every check is against an independent fact: the bytes a file held before, the closed-form
bouncing ball of test_results.py, the size of a tmpfs mounted for the test, the kernel's
file type of a path.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import h5py
import numpy as np
import pytest

import mbsim.io.results.target as target_mod
from mbsim.errors import MbsimError
from mbsim.io.results import ResultsError, ResultsWriter, load_results
from test_results import DT, INFO, ball, write_ball_file


def one_line(exc) -> str:
    msg = str(exc.value)
    assert isinstance(exc.value, MbsimError) and "\n" not in msg, msg
    return msg


def writer(path, **kw) -> ResultsWriter:
    return ResultsWriter(path, model_info=INFO, scenario_toml="", dt=DT, duration=1.0, **kw)


def append_ball_rows(w: ResultsWriter, start: int, stop: int) -> None:
    for k in range(start, stop):
        z, vz, ke, pe = ball(k * DT)
        w.append_state(k * DT, z, vz, [ke[0], pe[0], ke[0] + pe[0]])
        w.append_diagnostics(time=k * DT, step=k, solver="none")


def assert_ball_rows(path: Path, n: int) -> None:
    r = load_results(path)
    z, vz, _, _ = ball(np.arange(n) * DT)
    assert len(r.time) == n and np.array_equal(r.q[:, 0], z) and np.array_equal(r.v[:, 0], vz)


# --------------------------------------------------------------------------- one writer a file


def test_a_file_in_use_is_refused_with_or_without_force(tmp_path: Path):
    path = tmp_path / "w.h5"
    first = writer(path)
    append_ball_rows(first, 0, 200)
    first.flush()
    for force in (False, True):
        with pytest.raises(ResultsError) as exc:
            writer(path, force=force)
        msg = one_line(exc)
        assert str(path) in msg and ("in use" in msg or "using this file" in msg), msg
    append_ball_rows(first, 200, 400)
    first.finish("complete")
    assert load_results(path).status == "complete"
    assert_ball_rows(path, 400)  # the first run's rows, all of them


def test_two_runs_past_the_exists_check_never_truncate_each_other(tmp_path: Path, monkeypatch):
    path = tmp_path / "race.h5"
    first = writer(path)
    append_ball_rows(first, 0, 300)
    first.flush()
    # the second run checked the path before the first created it: the check passes
    monkeypatch.setattr(target_mod, "check_output_path", lambda *a, **k: None)
    with pytest.raises(ResultsError) as exc:
        writer(path)
    assert "already exists" in one_line(exc)
    first.finish("complete")
    assert_ball_rows(path, 300)


def test_a_run_never_reports_complete_for_a_file_it_did_not_write(tmp_path: Path):
    path = tmp_path / "gone.h5"
    w = writer(path)
    append_ball_rows(w, 0, 50)
    path.unlink()
    path.write_bytes(b"someone else's file")  # another program puts its file there
    with pytest.raises(ResultsError) as exc:
        w.finish("complete")
    assert "removed or replaced" in one_line(exc) and w.status != "complete"
    assert path.read_bytes() == b"someone else's file"


# --------------------------------------------------------------------------- path checks


def test_invalid_output_names_are_refused(tmp_path: Path):
    existing = tmp_path / "r.h5"
    existing.write_bytes(b"precious")
    cases = [
        (str(existing) + "\0.new", "NUL"),
        (str(tmp_path / ("x" * 300 + ".h5")), "at most 255"),
        (str(tmp_path / "sub") + "/", "names no file"),
    ]
    for bad, fragment in cases:
        with pytest.raises(ResultsError) as exc:
            writer(bad, force=False)
        assert fragment in one_line(exc), str(exc.value)
        assert "\0" not in str(exc.value)
    assert existing.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.h5"]


def test_an_input_of_the_run_is_never_the_output(tmp_path: Path):
    urdf = tmp_path / "robot.urdf"
    urdf.write_text("<robot name='r'/>")
    alias = tmp_path / "alias.urdf"
    alias.symlink_to(urdf)
    for out in (urdf, tmp_path / "." / "robot.urdf"):
        with pytest.raises(ResultsError) as exc:
            writer(out, input_files=[alias], force=True)
        assert "input file of this run" in one_line(exc)
    assert urdf.read_text() == "<robot name='r'/>"


def test_only_regular_files_are_written(tmp_path: Path):
    fifo = tmp_path / "pipe.h5"
    os.mkfifo(fifo)
    link = tmp_path / "link.h5"
    link.symlink_to(tmp_path / "elsewhere.h5")
    targets = [(fifo, "named pipe"), (link, "symbolic link")]
    device = tmp_path / "null.h5"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a copy of /dev/null
        targets.append((device, "character device"))
    except PermissionError:
        pass  # not root: the pipe and the link stand for every non-regular file
    for path, kind in targets:
        with pytest.raises(ResultsError) as exc:
            writer(path, force=True)
        assert kind in one_line(exc) and str(path) in str(exc.value)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.path.islink(link)
    assert not (tmp_path / "elsewhere.h5").exists()
    if device.exists():
        assert stat.S_ISCHR(os.lstat(device).st_mode)


def test_an_absurd_step_count_is_said_to_be_one(tmp_path: Path):
    for dt in (1e-300, 5e-324):
        with pytest.raises(ResultsError) as exc:
            ResultsWriter(tmp_path / "r.h5", model_info=INFO, scenario_toml="", dt=dt, duration=1.0)
        msg = one_line(exc)
        assert "too many" in msg and "steps" in msg and len(msg) < 300, msg
    assert not (tmp_path / "r.h5").exists()


# --------------------------------------------------------------------------- table lengths


def test_no_flush_falls_between_a_steps_state_and_its_diagnostics(tmp_path: Path):
    path = tmp_path / "steps.h5"
    w = writer(path, flush_seconds=0.0)  # flush at every chance
    for k in range(20):
        z, vz, ke, pe = ball(k * DT)
        w.append_state(k * DT, z, vz, [ke[0], pe[0], ke[0] + pe[0]])
        with h5py.File(path, "r", locking=False) as f:  # what a SIGKILL here would leave
            rows = {  # no _tail before the first flush
                g: int(f[g].attrs["rows"])
                + (int(f[g]["_tail"].attrs["rows"]) if "_tail" in f[g] else 0)
                for g in ("trajectory", "diagnostics")
            }
        assert rows["trajectory"] == rows["diagnostics"] == k, rows
        w.append_diagnostics(time=k * DT, step=k, solver="none")
    w.finish("complete")


KILLED_AT_FIRST_FLUSH = """
import os, signal, sys
sys.path[:0] = sys.argv[3:]
import h5py
from mbsim.io.results import ResultsWriter
from mbsim.io.results import table
from test_results import DT, INFO, ball

where = sys.argv[2]
made = table.Table.make_tail
flush = h5py.File.flush
def make_tail(self):
    made(self)
    if where == "tails made" and self.h5.name == "/diagnostics":  # the last table's
        os.kill(os.getpid(), signal.SIGKILL)
def flushed(self):
    flush(self)
    if where == "tails flushed" and "_tail" in self["diagnostics"]:
        os.kill(os.getpid(), signal.SIGKILL)
table.Table.make_tail = make_tail
h5py.File.flush = flushed
w = ResultsWriter(sys.argv[1], model_info=INFO, scenario_toml="", dt=DT, duration=1.0,
                  flush_seconds=0.0)
for k in range(10):
    z, vz, ke, pe = ball(k * DT)
    w.append_state(k * DT, z, vz, [ke[0], pe[0], ke[0] + pe[0]])
    w.append_diagnostics(time=k * DT, step=k, solver="none")
"""


@pytest.mark.parametrize("where", ["tails made", "tails flushed"])
def test_a_kill_while_the_first_flush_makes_the_tails_leaves_a_running_file(
    tmp_path: Path, where: str
):
    # the tails are made at the first flush (Table.make_tail), flushed on their own before
    # any row: killed there, the file reads as running with no row, as before any flush
    script = tmp_path / "killed.py"
    script.write_text(KILLED_AT_FIRST_FLUSH)
    path = tmp_path / "killed.h5"
    here = str(Path(__file__).parent)
    proc = subprocess.run(
        [sys.executable, str(script), str(path), where, here, *sys.path],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == -9, proc.stderr
    with h5py.File(path, "r") as f:  # plain h5py opens it
        assert f.attrs["status"] == "running"
        assert int(f["trajectory"].attrs["rows"]) == 0
    r = load_results(path)
    assert r.status == "running" and r.writer_alive is False
    assert len(r.time) == len(r.diagnostics["time"]) == 0


def test_the_reader_trims_tables_of_a_killed_run_to_one_length(tmp_path: Path):
    path = tmp_path / "killed.h5"
    write_ball_file(path, 300, contacts=False)
    with h5py.File(path, "r+") as f:  # a run killed after a state row, before its diagnostics
        g = f["diagnostics"]
        for name in g:
            g[name].resize(299, axis=0)
        g.attrs["rows"] = 299
        f.attrs["status"] = "running"
    r = load_results(path)
    assert len(r.time) == len(r.diagnostics["time"]) == 299
    assert r.notes and "299" in r.notes[0] and "300" in r.notes[0]
    z, _, _, _ = ball(np.arange(299) * DT)
    assert np.array_equal(r.q[:, 0], z)


# --------------------------------------------------------------------------- a full disk


@pytest.fixture
def small_disk():
    """A 4 MiB tmpfs (mounting needs root and a kernel that lets this process mount)."""
    folder = Path(f"/tmp/mbsim-full-{uuid.uuid4().hex[:8]}")
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)
        folder.rmdir()


FILL = f"""
import sys
import numpy as np
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_results import INFO, ball
from mbsim.io.results import ResultsError, ResultsWriter

# duration = 1 s sizes the pre-run estimate (fits); the loop then writes far more
w = ResultsWriter(sys.argv[1], model_info=INFO, scenario_toml="", dt=1e-3, duration=1.0,
                  body_poses=True, flush_rows=2000)
rng = np.random.default_rng(0)  # random poses: incompressible, the disk fills for real
try:
    for k in range(10**6):
        z, vz, ke, pe = ball(k * 1e-3)
        w.append_state(k * 1e-3, z, vz, [ke[0], pe[0], ke[0] + pe[0]],
                       body_pose=rng.random((1, 7)))
        w.append_diagnostics(time=k * 1e-3, step=k, solver="none")
except ResultsError as exc:
    print(exc)
    sys.exit(1)
sys.exit(3)
"""


def test_a_full_disk_is_a_clean_failure_with_the_flushed_rows_kept(tmp_path, small_disk):
    script = tmp_path / "fill.py"
    script.write_text(FILL)
    path = small_disk / "full.h5"
    done = subprocess.run(
        [sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])  # not a SIGSEGV
    assert "disk is full" in done.stdout and str(path) in done.stdout
    r = load_results(path)
    assert r.status == "failed" and "disk is full" in r.message
    n = len(r.time)
    assert n > 1000 and len(r.diagnostics["time"]) == n
    z, vz, _, _ = ball(np.arange(n) * 1e-3)
    assert np.array_equal(r.q[:, 0], z) and np.array_equal(r.v[:, 0], vz)
    with h5py.File(path, "r") as f:
        assert all("_tail" not in f[g] for g in ("trajectory", "events", "diagnostics"))


RUN_ON_A_FULL_DISK = """
import sys
import mbsim.io.results.target as target
target.free_bytes = lambda folder: 10**15  # the pre-run estimate passes; the disk fills later
from mbsim.cli.main import main
sys.argv = ["mbsim", "run", "sample:pendulum-3.toml", "--duration", "600", "--out", sys.argv[1],
            "--quiet"]
main()
"""


def test_mbsim_run_on_a_full_disk_fails_with_exit_1(tmp_path, small_disk):
    script = tmp_path / "run_full.py"
    script.write_text(RUN_ON_A_FULL_DISK)
    path = small_disk / "full.h5"
    done = subprocess.run(
        [sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mbsim: failed: "), done.stderr
    assert "disk is full" in lines[0] and "Traceback" not in done.stderr
    r = load_results(path)
    assert r.status == "failed" and "disk is full" in r.message
    assert len(r.time) > 100 and len(r.diagnostics["time"]) == len(r.time)
    assert np.all(np.diff(r.time) > 0) and np.all(np.isfinite(r.q))
    with h5py.File(path, "r") as f:
        assert all("_tail" not in f[g] for g in ("trajectory", "events", "diagnostics"))


def test_mbsim_run_force_never_takes_a_live_runs_file(tmp_path: Path):
    import signal
    import time

    mbsim = Path(sys.executable).with_name("mbsim")
    out = tmp_path / "w.h5"
    # long enough to be live when the second starts (the compiled loop takes 600 s of this
    # pendulum in seconds), recording every 100th step to keep the file small meanwhile
    first = subprocess.Popen(
        [str(mbsim), "run", "sample:pendulum-3.toml", "--duration", "36000", "--out", str(out),
         "--set", "output.record_every=100", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            try:
                if len(load_results(out).time) > 10:
                    break
            except Exception:  # not created yet
                pass
            time.sleep(0.5)
        else:
            pytest.fail("the first run never flushed")
        second = subprocess.run(
            [str(mbsim), "run", "sample:pendulum-3.toml", "--duration", "0.01", "--out",
             str(out), "--force", "--quiet"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "another process is using this file" in lines[0]
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    r = load_results(out)
    assert r.status == "interrupted" and r.duration == 36000.0  # the first run's file, intact
    assert len(r.time) > 10 and len(r.diagnostics["time"]) == len(r.time)


def test_direct_writes_reserve_their_room_first(small_disk):
    path = small_disk / "dumps.h5"
    w = writer(path)
    append_ball_rows(w, 0, 100)
    w.flush()
    w.reserve(1 << 16)  # fits: nothing happens
    with pytest.raises(ResultsError) as exc:
        w.reserve(64 << 20)  # an LCP dump larger than the disk
    assert "disk is full" in one_line(exc)
    r = load_results(path)
    assert r.status == "failed" and "disk is full" in r.message
    assert_ball_rows(path, 100)


def bodies_info(nb: int) -> dict:
    """The ball's model with ``nb`` bodies (wider body_pose rows; the ball is the first)."""
    names = ["ball"] + [f"b{i}" for i in range(1, nb)]
    return dict(INFO, body_names=names, parents=[-1] * nb, masses=INFO["masses"] * nb,
                body_trees=[0] * nb)  # fmt: skip


def fill_rows(w: ResultsWriter, nb: int, rows: int) -> tuple[int, np.ndarray]:
    """Append up to ``rows`` ball steps (random-bit body poses: incompressible, so the
    disk fills for real) until the writer stops the run; (rows appended, their poses)."""
    rng = np.random.default_rng(0)
    poses = rng.integers(0, 2**63, (rows, nb, 7), dtype=np.int64).view(np.float64)
    z, vz, ke, pe = ball(np.arange(rows) * DT)
    for k in range(rows):
        try:
            w.append_state(k * DT, z[k], vz[k], [ke[k], pe[k], ke[k] + pe[k]], poses[k])
            w.append_diagnostics(time=k * DT, step=k, solver="none")
        except ResultsError as exc:
            assert "disk is full" in str(exc) and "\n" not in str(exc), str(exc)
            assert w.status == "failed"
            return k + 1, poses
    return rows, poses


def assert_finished_rows(path: Path, poses: np.ndarray) -> int:
    """The file opens, is finished (no ``_tail``) and every row it holds is the one
    written (the poses bit for bit); the row count."""
    r = load_results(path)
    n = len(r.time)
    z, vz, _, _ = ball(np.arange(n) * DT)
    assert len(r.diagnostics["time"]) == n and np.array_equal(r.time, np.arange(n) * DT)
    assert np.array_equal(r.q[:, 0], z) and np.array_equal(r.v[:, 0], vz)
    assert np.array_equal(r.body_pose.view(np.int64), poses[:n].view(np.int64))
    with h5py.File(path, "r") as f:
        assert all("_tail" not in f[g] for g in ("trajectory", "events", "diagnostics"))
    return n


@pytest.mark.parametrize(
    ("nb", "flush_rows", "ballast"),
    [
        (20, 1500, 768 << 10),  # e8c5e48: the finish fails, the tails stay (3 sets)
        (40, 700, 1 << 20),
        (10, 2000, 1600 << 10),
        (20, 700, 768 << 10),  # fdisk2: one flush, then the finish from its rows (2 sets)
        (10, 1200, 1 << 20),
    ],
)
def test_a_full_disk_after_a_flush_that_seals_nothing_leaves_a_finished_file(
    small_disk, nb: int, flush_rows: int, ballast: int
):
    """The full-disk finish, independent of timing (flush_seconds infinite: a flush every
    ``flush_rows`` rows). Rows of ``nb`` body poses (the seal, 1024-4096 rows, is more than
    ``flush_rows``), so the first flush seals nothing and leaves its rows in the tails; the
    next flush cannot reserve its room on the 4 MiB tmpfs (``ballast`` bytes taken by
    another file) and the writer must finish the file: tails moved into the main datasets.
    Guards f3f59aa/7068751: e8c5e48 reserved at a flush only its rows, the committed tails
    and 1 MiB, not the tails the flush leaves, and its finish ran out of disk part-way (the
    first three sets fail on e8c5e48's src: the ``_tail`` groups stay, the file unfinished;
    the same shortfall is what fdisk2 found behind the file HDF5 could not open after the
    cold-cache run of test_mbsim_run_on_a_full_disk_fails_with_exit_1). The last two sets
    take fdisk2's other branch: the rows of a flush that finds the disk full are dropped and
    the file finished from the committed rows."""
    (small_disk / "ballast").write_bytes(bytes(ballast))
    path = small_disk / "full.h5"
    w = ResultsWriter(
        path, model_info=bodies_info(nb), scenario_toml="", dt=DT, duration=0.1,
        body_poses=True, flush_rows=flush_rows, flush_seconds=float("inf"),
    )  # fmt: skip
    appended, poses = fill_rows(w, nb, 10 * flush_rows)
    assert appended < 10 * flush_rows  # the disk filled
    r = load_results(path)
    assert r.status == "failed" and "disk is full" in r.message
    n = assert_finished_rows(path, poses)
    assert n >= flush_rows and n % flush_rows == 0, n  # whole flushes, the first one kept


@pytest.mark.parametrize(("flush_rows", "rows"), [(10**6, 1500), (1000, 1300)])
def test_a_run_that_fits_the_disk_finishes_complete(small_disk, flush_rows: int, rows: int):
    """The finish reserves what it writes: the unflushed rows and the committed tails (into
    the main datasets) and 1 MiB, not also the tail a flush before the end would leave
    (the rows again). 1300-1500 rows of 20 body poses (1.5-1.8 MB, fewer than a seal) on the
    4 MiB tmpfs, unflushed or after a flush that sealed nothing: 7068751 reserved 4.1-4.6 MiB
    at the finish and ended these runs ``failed``, "disk is full", with every row written."""
    path = small_disk / "fits.h5"
    w = ResultsWriter(
        path, model_info=bodies_info(20), scenario_toml="", dt=DT, duration=0.1,
        body_poses=True, flush_rows=flush_rows, flush_seconds=float("inf"),
    )  # fmt: skip
    appended, poses = fill_rows(w, 20, rows)
    assert appended == rows and w.flushes == rows // flush_rows
    w.finish("complete")
    assert w.status == "complete" and load_results(path).status == "complete"
    assert assert_finished_rows(path, poses) == rows
