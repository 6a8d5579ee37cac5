"""Batch simulation: parameter sweeps on local worker processes or a Dask cluster.

docs/batch.md is the user reference. The modules, one job each:

* :mod:`~mbsim.batch.sweep`: read and check a sweep file, expand it into runs;
* :mod:`~mbsim.batch.identity`: a run's identity (overrides + input-file contents);
* :mod:`~mbsim.batch.plan`: which runs to run or reuse (resume, ``--dry-run``);
* :mod:`~mbsim.batch.runner`: one run in a worker (the code path of ``mbsim run``);
* :mod:`~mbsim.batch.backends`: local process pool and Dask distributed;
* :mod:`~mbsim.batch.driver`: submit, collect and stop cleanly;
* :mod:`~mbsim.batch.summary`: the summary table (CSV and HDF5);
* :mod:`~mbsim.batch.lock`: one sweep per output folder;
* :mod:`~mbsim.batch.orchestrate`: all of it as :func:`run_sweep`.
"""

from mbsim.batch.backends import BatchError, DaskBackend, LocalBackend
from mbsim.batch.orchestrate import SweepResult, run_sweep
from mbsim.batch.plan import PlannedRun, plan_sweep
from mbsim.batch.summary import read_summary
from mbsim.batch.sweep import RunSpec, Sweep, SweepError, load_sweep

__all__ = [
    "BatchError",
    "DaskBackend",
    "LocalBackend",
    "PlannedRun",
    "RunSpec",
    "Sweep",
    "SweepError",
    "SweepResult",
    "load_sweep",
    "plan_sweep",
    "read_summary",
    "run_sweep",
]
