"""One run of a sweep, inside a worker process: the code path of ``mbsim run``.

:func:`run_task` loads the base scenario with the run's overrides, builds the
:class:`~mbsim.simulator.Simulator`, runs it into its results file with
:meth:`~mbsim.simulator.Simulator.run_to_file` (the one run loop, shared with ``mbsim run``)
and returns what the summary needs. It never raises: a bad parameter, a divergence or a bug
ends as ``status = "failed"`` with the message, so one run cannot stop the sweep. Each results
file gets a ``/batch`` group (docs/batch.md): the run id, the run's identity (see
:mod:`mbsim.batch.identity`) and its overrides, written with the file's header before its
first flush (so a sweep killed at any moment recognises the file as its own), and, when the
run ends, its metrics, which is what lets a resumed sweep reuse the file without re-running
it.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field

import numpy as np

from mbsim.errors import MbsimError
from mbsim.io.results import EVENT_KINDS

#: Name of the group written into every results file of a sweep.
BATCH_GROUP = "batch"


@dataclass(frozen=True)
class RunTask:
    """What a worker needs for one run (plain, picklable data). Paths are absolute;
    ``identity`` is recorded in the file, ``command`` in its ``command`` attribute;
    ``package_dirs`` and ``allow_outside_paths``: where mesh files may be read (the command
    line's ``--package-dir`` and ``--allow-outside-paths``, see Simulator)."""

    run_id: int
    path: str
    scenario: str
    overrides: dict
    identity: str
    sweep: str
    command: str
    package_dirs: dict = field(default_factory=dict)
    allow_outside_paths: bool = False


def outcome(status: str, message: str, metrics: dict | None = None) -> dict:
    """A run's result as the driver and the summary see it."""
    return {"status": status, "message": message, "metrics": metrics or {}}


def _final(model, state, names, first, counts) -> dict[str, float]:
    """The final q or v by coordinate, named ``tree/name`` as the scenario and every other
    output name it (io/results/labels.py; summary.h5 escapes the slash in its dataset
    names), in the model's body order."""
    return {
        f"{model.tree_names[model.tree_of[i]]}/{names[k]}": float(state[k])
        for i in range(model.nb)
        for k in range(first[i], first[i] + counts[i])
    }


def _f(x) -> float:
    return float(x) if x is not None else math.nan


def metrics_of(sim, summary, e0: float, wall_s: float, cpu_s: float) -> dict:
    """The summary's numbers for one run (units in the keys' docs in docs/batch.md)."""
    m = sim.model
    try:
        energy = [float(x) for x in sim.energy()]
    except Exception:  # a diverged state may not even evaluate; report NaN, not a crash
        energy = [math.nan] * 3
    events = {k: int(summary.events.get(k, 0)) for k in EVENT_KINDS}
    return {
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "steps": int(sim.step_index),
        "sim_time_s": float(sim.t),
        "events": events,
        "max_penetration_m": float(summary.max_penetration),
        "worst_lcp_residual": _f(summary.worst_lcp_residual),
        "impacts_gaining_energy": int(summary.energy_gains),
        "recovery_softened_steps": int(summary.softened_steps),
        **{
            f"energy_gain_steps_{k}": int(tally.steps)
            for k, tally in summary.energy_sources.sources.items()
        },
        **{
            f"energy_gain_J_{k}": float(tally.total)
            for k, tally in summary.energy_sources.sources.items()
        },
        "final_kinetic_J": energy[0],
        "final_potential_J": energy[1],
        "final_total_J": energy[2],
        "energy_change_J": energy[2] - e0,
        "final_q": _final(m, sim.q, m.q_names, m.qi, m.nqj),
        "final_v": _final(m, sim.v, m.v_names, m.vi, m.nvj),
    }


def run_task(task: RunTask, should_stop=None) -> dict:
    """Run one task to its end and return :func:`outcome` (never raises).

    ``should_stop()`` is polled between steps (and once before anything is created): when it
    turns true the run ends as ``interrupted`` with its file closed cleanly, or, if it had not
    started, as ``not_run`` with no file."""
    should_stop = should_stop or (lambda: False)
    # wall and CPU time of this thread (the one that steps and writes): on a shared machine
    # the two differ by the time the run waited for a core
    t0 = (time.perf_counter(), time.thread_time())
    if should_stop():
        return outcome("not_run", "the sweep was stopped before this run started")
    try:
        from mbsim.io.scenario import load_scenario
        from mbsim.simulator import Simulator

        scenario = load_scenario(task.scenario, task.overrides, flags={"output": task.path})
        sim = Simulator(
            scenario,
            package_dirs=task.package_dirs,
            allow_outside_paths=task.allow_outside_paths,
        )
        e0 = float(sim.energy()[2])
    except MbsimError as exc:
        return outcome("failed", str(exc))
    except Exception as exc:  # a bug must not stop the sweep either; say what it was
        return outcome("failed", f"internal error ({type(exc).__name__}: {exc})")
    # the file is marked as this sweep's from its header on, so a sweep killed at any
    # moment finds its own file on the rerun (plan.py) and replaces it
    record = {
        "run_id": np.int64(task.run_id),
        "identity": task.identity,
        "sweep": task.sweep,
        "overrides": json.dumps(task.overrides, ensure_ascii=False),
    }
    metrics: dict = {}

    def write_metrics(writer, summary) -> None:
        # written before the file is closed: a file whose status is final has its metrics
        metrics.update(metrics_of(sim, summary, e0, *_elapsed(t0)))
        writer.group(BATCH_GROUP).attrs["metrics"] = json.dumps(metrics)

    try:
        # force: the plan decided this file is to be (re)written (a file another process
        # still writes is refused all the same)
        summary = sim.run_to_file(
            task.command,
            force=True,
            records={BATCH_GROUP: record},
            should_stop=should_stop,
            before_finish=write_metrics,
        )
    except MbsimError as exc:  # the file could not be created: nothing ran
        return outcome("failed", str(exc))
    except Exception as exc:
        return outcome("failed", f"internal error ({type(exc).__name__}: {exc})")
    if not metrics:  # the writer failed before the end (a full disk)
        metrics = _safe_metrics(sim, summary, e0, t0)
    return outcome(summary.status, summary.message, metrics)


def _elapsed(t0: tuple[float, float]) -> tuple[float, float]:
    return time.perf_counter() - t0[0], time.thread_time() - t0[1]


def _safe_metrics(sim, summary, e0: float, t0: tuple[float, float]) -> dict:
    try:
        return metrics_of(sim, summary, e0, *_elapsed(t0))
    except Exception:
        return {}


#: Seconds to wait for a lost worker's run to close its file (a worker ended by SIGTERM, as
#: the process pool ends the others when one dies, finishes its step and closes the file).
LOST_WAIT_SECONDS = 10.0


def lost_run_outcome(task: RunTask, status: str, why: str, wait: float = LOST_WAIT_SECONDS):
    """The outcome of a run whose worker was lost, told by the run's own file so that the
    summary and the file agree: a file of this run (its ``/batch`` identity) that ended with
    a final status gives that status, message and metrics; a file left ``running`` (the
    worker was killed) is marked ``status`` with ``why`` as its message, as the summary
    says; without a file of this run, ``status`` and ``why``."""
    import h5py

    from mbsim.io.results.target import writer_holds

    path = task.path
    deadline = time.monotonic() + wait
    while writer_holds(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    if writer_holds(path):
        return outcome(status, f"{why}; another process still writes its file")
    try:
        with h5py.File(path, "r+") as f:
            record = read_record(f)
            if record is None or record["identity"] != task.identity:
                return outcome(status, why)  # no file of this run (it had not started)
            final = f.attrs.get("status")
            final = final.decode() if isinstance(final, bytes) else str(final)
            if final in ("interrupted", "failed") or (final == "complete" and record["metrics"]):
                message = f.attrs.get("message", "")
                message = message.decode() if isinstance(message, bytes) else str(message)
                return outcome(final, message, record["metrics"])
            f.attrs["status"] = status
            f.attrs["message"] = why
    except (OSError, ValueError, KeyError, TypeError, RuntimeError):
        pass  # no file, or one HDF5 cannot open: the summary alone tells it
    return outcome(status, why)


def read_record(h5file) -> dict | None:
    """The ``/batch`` record of an open results file (h5py.File): run_id, identity, sweep,
    overrides, metrics (None when the run never finished); None if the file has none."""
    group = h5file.get(BATCH_GROUP)
    if group is None or "identity" not in group.attrs:
        return None
    a = group.attrs

    def text(key):
        value = a.get(key)
        return value.decode() if isinstance(value, bytes) else value

    metrics = text("metrics")
    return {
        "run_id": int(a.get("run_id", -1)),
        "identity": str(text("identity")),
        "sweep": str(text("sweep") or ""),
        "overrides": json.loads(text("overrides") or "{}"),
        "metrics": json.loads(metrics) if metrics else None,
    }
