"""`mbsim batch` after a kill, a lost worker, or a cluster without workers (issue 17, "Batch").

Independent truths: the bytes a SIGKILL leaves (a copy of the file taken while the run is
live, which is what the disk holds at that moment), the status each results file records
(the summary must say the same), and wall-clock bounds on waiting.
"""

from __future__ import annotations

import json
import shutil
import threading
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import h5py
import pytest

from mbsim.batch import load_sweep, plan_sweep
from mbsim.batch.backends import WorkersGone
from mbsim.batch.driver import execute
from mbsim.batch.runner import run_task
from mbsim.io.results import load_results
from test_batch import BASE, cli, make_sweep

ONE_RUN = """
scenario = "drop.toml"
out_dir = "out"

[sweep.grid]
"contact.mu" = [0.3]
"""


def killed_in_its_first_second(task, snapshot: Path) -> None:
    """Run ``task`` and keep a copy of its file as it was on disk before the first time step:
    the file a SIGKILL at that moment leaves behind."""

    def should_stop() -> bool:
        if Path(task.path).exists() and not snapshot.exists():
            shutil.copyfile(task.path, snapshot)
        return False

    Path(task.path).parent.mkdir(parents=True, exist_ok=True)
    assert run_task(task, should_stop)["status"] == "complete"
    assert snapshot.exists()


def test_a_sweep_killed_in_a_runs_first_second_resumes(tmp_path: Path):
    sweep = load_sweep(make_sweep(tmp_path, ONE_RUN))
    task = plan_sweep(sweep)[0].task(sweep)
    snapshot = tmp_path / "killed.h5"
    killed_in_its_first_second(task, snapshot)
    shutil.copyfile(snapshot, task.path)  # the file the killed sweep left
    r = load_results(task.path)
    assert r.status == "running" and r.writer_alive is False
    dry = cli("batch", sweep.path, "--dry-run", "--json", check_rc=0)
    run = json.loads(dry.stdout)["runs"][0]
    assert (run["action"], run["reason"]) == ("run", "killed")
    cli("batch", sweep.path, "--jobs", "1", "--quiet", check_rc=0)
    assert load_results(task.path).status == "complete"


def test_a_file_of_an_older_mbsim_batch_without_its_record_resumes(tmp_path: Path):
    # mbsim before this change wrote /batch only at the first flush after the header
    sweep = load_sweep(make_sweep(tmp_path, ONE_RUN))
    task = plan_sweep(sweep)[0].task(sweep)
    snapshot = tmp_path / "killed.h5"
    killed_in_its_first_second(task, snapshot)
    shutil.copyfile(snapshot, task.path)
    with h5py.File(task.path, "r+") as f:
        del f["batch"]
    run = json.loads(cli("batch", sweep.path, "--dry-run", "--json", check_rc=0).stdout)
    assert (run["runs"][0]["action"], run["runs"][0]["reason"]) == ("run", "killed")


class LostWorkers:
    """A backend whose every worker dies while running its task, after ``leave(task)`` left
    the task's file as the worker did."""

    def __init__(self, leave) -> None:
        self.leave = leave

    def describe(self) -> str:
        return "a backend that loses its workers"

    def capacity(self) -> int:
        return 1

    def submit(self, task):
        self.leave(task)
        future: Future = Future()
        future.set_exception(BrokenProcessPool("a worker was terminated abruptly"))
        return future

    def request_stop(self) -> None:
        pass

    def close(self, wait: bool = True) -> None:
        pass


def interrupted_by_sigterm(task) -> None:
    """What a worker ended by the pool's SIGTERM leaves: its run stops at the next step."""
    polls = iter(range(10**9))
    Path(task.path).parent.mkdir(parents=True, exist_ok=True)
    assert run_task(task, lambda: next(polls) > 5)["status"] == "interrupted"


@pytest.mark.parametrize("leave", ["interrupted", "killed", "nothing"])
def test_a_lost_workers_run_is_reported_as_its_file_says(tmp_path: Path, leave: str):
    # 10 s simulated: the compiled loop takes the chain's steps in chunks between which the
    # run polls its stop flag (up to 1600 steps), so the sixth poll comes before the end
    base = BASE.replace("duration = 0.05", "duration = 10.0")
    sweep = load_sweep(make_sweep(tmp_path, ONE_RUN, base))
    plan = plan_sweep(sweep)
    task = plan[0].task(sweep)

    def left(task) -> None:
        if leave == "interrupted":
            interrupted_by_sigterm(task)
        elif leave == "killed":
            snapshot = tmp_path / "killed.h5"
            killed_in_its_first_second(task, snapshot)
            shutil.copyfile(snapshot, task.path)

    results = execute(sweep, plan, LostWorkers(left))
    outcome = results[0]
    if leave == "nothing":
        assert outcome["status"] == "failed" and "worker" in outcome["message"]
        assert not Path(task.path).exists()
        return
    r = load_results(task.path)
    assert (outcome["status"], outcome["message"]) == (r.status, r.message)
    assert r.status == {"interrupted": "interrupted", "killed": "failed"}[leave]
    if leave == "interrupted":  # the run's own metrics, from its file
        assert outcome["metrics"]["steps"] > 0


class NoWorkers(LostWorkers):
    """A cluster whose workers are all gone: tasks are accepted and never start."""

    def __init__(self) -> None:
        super().__init__(lambda task: None)

    def workers(self) -> int:
        return 0

    def submit(self, task):
        return Future()


def test_no_worker_left_is_said_and_the_timeout_is_honoured(tmp_path: Path):
    sweep = load_sweep(make_sweep(tmp_path, ONE_RUN))
    plan = plan_sweep(sweep)
    lines: list[str] = []
    box: dict = {}

    def drive() -> None:
        try:
            execute(sweep, plan, NoWorkers(), timeout=0.5, on_wait=lines.append, results=box)
        except WorkersGone as exc:
            box["error"] = str(exc)

    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the sweep kept waiting past its --timeout"
    assert lines and "waiting for workers: 0 connected" in lines[0] and "1 run" in lines[0]
    assert "0.5 s" in box["error"] and "--timeout" in box["error"]
    assert box[0]["status"] == "not_run"


def test_a_scheduler_without_workers_is_waited_for_aloud(tmp_path: Path):
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    sweep = make_sweep(tmp_path, ONE_RUN)
    with LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster:
        done = cli("batch", sweep, "--scheduler", cluster.scheduler_address, "--timeout", "1", "-q")
    assert done.returncode == 2, done
    assert "waiting for workers: 0 connected" in done.stderr
    assert "no workers after 1 s" in done.stderr.strip().splitlines()[-1]


def test_killing_one_local_worker_leaves_summary_and_files_agreeing(tmp_path: Path):
    import csv
    import os
    import signal
    import subprocess
    import sys
    import time

    from test_batch import BASE, GRID

    # Long enough that neither run ends before the kill: the compiled loop takes this chain
    # through 600 s of contact in ~10 s, so 36,000 s is ~10 min; recording every 10th step
    # keeps the files small for the seconds the runs live.
    base = BASE.replace("duration = 0.05", "duration = 36000.0") + "\n[output]\nrecord_every = 10\n"
    sweep = make_sweep(tmp_path, GRID.replace("contact.restitution = [0.0, 0.5, 0.9]", ""), base)
    mbsim = Path(sys.executable).with_name("mbsim")
    proc = subprocess.Popen(
        [str(mbsim), "batch", str(sweep), "--jobs", "2", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out = tmp_path / "out"
    try:
        deadline = time.time() + 300
        while time.time() < deadline:  # both runs live, each past its first flush
            files = [out / f"run-{i:04d}.h5" for i in range(2)]
            try:
                if all(len(load_results(f).time) > 10 for f in files):
                    break
            except Exception:  # not created yet, or mid-flush
                pass
            time.sleep(0.5)
        else:
            pytest.fail("the runs never started")
        children = subprocess.run(
            ["ps", "-ww", "--ppid", str(proc.pid), "-o", "pid=,args="],
            capture_output=True,
            text=True,
        ).stdout.splitlines()
        workers = [int(c.split()[0]) for c in children if "multiprocessing.spawn" in c]
        assert len(workers) == 2, children
        os.kill(workers[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, err
    with open(out / "summary.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2
    for row in rows:
        r = load_results(out / row["file"])
        assert (row["status"], row["message"]) == (r.status, r.message), row
        assert r.status in ("failed", "interrupted")
