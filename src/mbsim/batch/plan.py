"""Which runs of a sweep to run, which to reuse, and why (resume and ``--dry-run``).

For each run the base scenario is resolved with the run's overrides (TOML only, no URDF is
loaded) to find its input files and identity; a run whose overrides the scenario loader
rejects is ``invalid`` and fails without a worker. An existing results file at the run's path
is then:

* reused when its status is ``complete``, its ``/batch`` identity equals the run's and every
  table reads back (a truncated or corrupted file is not complete);
* replaced when it is damaged (HDF5 cannot read it), its run failed, was interrupted or was
  killed (``running`` with no live writer), or it was written for other overrides or other
  input files (``stale``);
* never touched when it is not a file of mbsim batch (another results file, another HDF5
  file, any other non-empty file) or a live process is still writing it: the sweep stops with
  an error naming it, before anything runs (``--force`` replaces it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import h5py

from mbsim.batch.identity import FileHashes, run_identity
from mbsim.batch.runner import RunTask, read_record
from mbsim.batch.sweep import RunSpec, Sweep, SweepError
from mbsim.errors import MbsimError
from mbsim.io.results import FORMAT, ResultsError, load_results

ACTIONS = ("run", "reuse", "invalid")


@dataclass
class PlannedRun:
    """One run's fate. ``action``: ``run`` (``reason`` says why: new, damaged, failed,
    interrupted, killed, stale, forced), ``reuse`` (``metrics`` from the file) or ``invalid``
    (``reason`` is the scenario loader's message)."""

    spec: RunSpec
    identity: str
    action: str
    reason: str
    metrics: dict | None = None
    replaces: bool = False  # a file exists at the path and will be overwritten

    def task(self, sweep: Sweep) -> RunTask:
        return RunTask(
            run_id=self.spec.run_id,
            path=str(self.spec.path),
            scenario=str(sweep.scenario),
            overrides=dict(self.spec.overrides),
            identity=self.identity,
            sweep=str(sweep.path),
            command=f"mbsim batch {sweep.path} (run {self.spec.run_id} of {sweep.n_runs})",
            package_dirs=dict(sweep.package_dirs),
            allow_outside_paths=sweep.allow_outside_paths,
        )


def plan_sweep(sweep: Sweep, *, force: bool = False) -> list[PlannedRun]:
    """The plan for every run of ``sweep`` (see the module docstring). Raises SweepError for
    a file the sweep must not overwrite."""
    from mbsim.io.scenario import load_scenario

    hashes = FileHashes()
    plan = []
    for spec in sweep.runs():
        try:
            sc = load_scenario(sweep.scenario, spec.overrides, flags={"output": str(spec.path)})
            inputs = [hashes(p) for p in sc.input_files()]
        except (MbsimError, OSError) as exc:
            identity = run_identity(spec.overrides, [hashes(sweep.scenario)])
            plan.append(PlannedRun(spec, identity, "invalid", _message(exc)))
            continue
        identity = run_identity(spec.overrides, inputs)
        plan.append(_against_file(spec, identity, force, sweep))
    return plan


def _message(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return f"{exc.filename}: cannot be read ({exc.strerror or exc})."
    return str(exc)


def _against_file(spec: RunSpec, identity: str, force: bool, sweep: Sweep) -> PlannedRun:
    path = spec.path
    if not os.path.lexists(path):
        return PlannedRun(spec, identity, "run", "new")
    if path.is_dir():
        raise SweepError(
            f"{path}: is a folder where run {spec.run_id}'s results file goes; "
            "remove it or change file_pattern."
        )
    if force:
        return PlannedRun(spec, identity, "run", "forced", replaces=True)
    state = _peek(path)
    if state is None:
        return PlannedRun(spec, identity, "run", "damaged", replaces=True)
    fmt, status, record, command = state
    if fmt == FORMAT and record is None and status == "running" and _ours(command, sweep):
        # a sweep killed before its file's first flush, by an mbsim that wrote /batch only
        # then (files written now carry /batch from the header on)
        if _writer_alive(path):
            raise SweepError(
                f"{path}: another process is still writing it; wait for that "
                "process or stop it before rerunning the sweep."
            )
        return PlannedRun(spec, identity, "run", "killed", replaces=True)
    if fmt != FORMAT or record is None:
        what = "an mbsim results file" if fmt == FORMAT else "a file"
        raise SweepError(
            f"{path}: is {what} that mbsim batch did not write, at run "
            f"{spec.run_id}'s path; move it away or use --force to replace it."
        )
    if status == "running":
        if _writer_alive(path):
            raise SweepError(
                f"{path}: another process is still writing it; wait for that "
                "process or stop it before rerunning the sweep."
            )
        return PlannedRun(spec, identity, "run", "killed", replaces=True)
    if record["identity"] != identity:
        return PlannedRun(spec, identity, "run", "stale", replaces=True)
    if status != "complete":
        return PlannedRun(spec, identity, "run", status or "damaged", replaces=True)
    if record["metrics"] is None or not _reads_back(path):
        return PlannedRun(spec, identity, "run", "damaged", replaces=True)
    return PlannedRun(spec, identity, "reuse", "complete", metrics=record["metrics"])


def _ours(command, sweep: Sweep) -> bool:
    """The file's ``command`` attribute says this sweep wrote it (see PlannedRun.task)."""
    return isinstance(command, str) and command.startswith(f"mbsim batch {sweep.path} (run ")


def _peek(path: Path):
    """(format, status, /batch record, command) of an HDF5 file, or None when it cannot be
    read as one (empty, truncated, corrupted); format None for a file that is not HDF5."""
    try:
        if path.stat().st_size == 0:
            return None
        if not h5py.is_hdf5(str(path)):
            # A truncated HDF5 file keeps its signature (and fails to open below: damaged);
            # a file without one never was an HDF5 file: someone else's.
            return (None, None, None, None)
        # no lock: a live writer holds one, and that case is told apart below
        with h5py.File(path, "r", locking=False) as f:
            fmt = f.attrs.get("format")
            status = f.attrs.get("status")
            record = read_record(f)
            command = f.attrs.get("command")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    fmt, status, command = (
        x.decode() if isinstance(x, bytes) else x for x in (fmt, status, command)
    )
    return fmt, status, record, command


def _writer_alive(path: Path) -> bool:
    try:
        return bool(load_results(path).writer_alive)
    except ResultsError:
        return False


def _reads_back(path: Path) -> bool:
    """Every table of the file decompresses (load_results reads them all)."""
    try:
        load_results(path)
    except ResultsError:
        return False
    return True
