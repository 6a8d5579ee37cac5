"""``mbsim batch`` as a function: lock the folder, plan, execute, write the summary.

    sweep = load_sweep("sweep.toml")
    result = run_sweep(sweep, lambda: LocalBackend(2))
    result.counts, result.csv_path

The summary is written whatever happens (complete, stopped, or an unexpected error in the
driver), from the runs that ended; runs that never started are ``not_run``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mbsim.batch.driver import execute
from mbsim.batch.lock import FolderLock
from mbsim.batch.plan import PlannedRun, plan_sweep
from mbsim.batch.summary import RUN_STATUSES, build_rows, write_csv, write_hdf5
from mbsim.batch.sweep import Sweep
from mbsim.errors import MbsimError


@dataclass
class SweepResult:
    """What a sweep did. ``status``: complete (every run was attempted), interrupted
    (stopped early) or failed (the driver itself failed). ``wall_s`` in s."""

    sweep: Sweep
    plan: list[PlannedRun]
    rows: list[dict]
    status: str
    csv_path: Path
    h5_path: Path
    wall_s: float

    @property
    def counts(self) -> dict[str, int]:
        out = {s: sum(r["status"] == s for r in self.rows) for s in RUN_STATUSES}
        out["reused"] = sum(bool(r["reused"]) for r in self.rows)
        return out


def run_sweep(
    sweep: Sweep,
    backend_factory: Callable[[], object],
    *,
    force: bool = False,
    should_stop: Callable[[], bool] = lambda: False,
    on_plan: Callable[[list[PlannedRun]], None] | None = None,
    on_start: Callable[[PlannedRun], None] | None = None,
    on_done: Callable[[PlannedRun, dict], None] | None = None,
    timeout: float | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> SweepResult:
    """Run ``sweep``; ``backend_factory()`` is called only if some run has to execute.
    ``timeout`` and ``on_wait``: how long to wait for workers when none is left, and where
    to say so (see :func:`~mbsim.batch.driver.execute`)."""
    t0 = time.perf_counter()
    try:
        sweep.out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MbsimError(
            f"{sweep.out_dir}: cannot create the sweep's output folder ({exc.strerror or exc})."
        ) from exc
    csv_path = sweep.out_dir / f"{sweep.summary}.csv"
    h5_path = sweep.out_dir / f"{sweep.summary}.h5"
    with FolderLock(sweep.out_dir):
        # planned under the lock: no other sweep is changing the files being judged
        plan = plan_sweep(sweep, force=force)
        if on_plan is not None:
            on_plan(plan)
        results: dict[int, dict] = {}
        status = "failed"
        stopped = {"value": False}

        def stop() -> bool:
            stopped["value"] = stopped["value"] or should_stop()
            return stopped["value"]

        # connected before the try: a backend that cannot start (no Dask, no scheduler) is
        # an error of the command, and must not leave a summary of runs that never started
        backend = backend_factory() if any(p.action == "run" for p in plan) else None
        try:
            if backend is not None:
                execute(
                    sweep,
                    plan,
                    backend,
                    should_stop=stop,
                    on_start=on_start,
                    on_done=on_done,
                    results=results,
                    timeout=timeout,
                    on_wait=on_wait,
                )
            status = "interrupted" if stopped["value"] else "complete"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            rows = build_rows(sweep, plan, results)
            write_csv(csv_path, sweep, rows)
            write_hdf5(h5_path, sweep, rows, sweep_status=status)
    return SweepResult(sweep, plan, rows, status, csv_path, h5_path, time.perf_counter() - t0)
