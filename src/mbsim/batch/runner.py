"""One run of a sweep, inside a worker process: the code path of ``mbsim run``.

:func:`run_task` loads the base scenario with the run's overrides, builds the
:class:`~mbsim.simulator.Simulator`, streams the run into a
:class:`~mbsim.io.results.ResultsWriter` and returns what the summary needs. It never raises:
a bad parameter, a divergence or a bug ends as ``status = "failed"`` with the message, so one
run cannot stop the sweep. Each results file gets a ``/batch`` group (docs/batch.md): the run
id, the run's identity (see :mod:`mbsim.batch.identity`), its overrides and, when the run ends,
its metrics, which is what lets a resumed sweep reuse the file without re-running it.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

from mbsim.errors import MbsimError
from mbsim.io.results import EVENT_KINDS

#: Name of the group written into every results file of a sweep.
BATCH_GROUP = "batch"


@dataclass(frozen=True)
class RunTask:
    """What a worker needs for one run (plain, picklable data). Paths are absolute;
    ``identity`` is recorded in the file, ``command`` in its ``command`` attribute."""

    run_id: int
    path: str
    scenario: str
    overrides: dict
    identity: str
    sweep: str
    command: str


def outcome(status: str, message: str, metrics: dict | None = None) -> dict:
    """A run's result as the driver and the summary see it."""
    return {"status": status, "message": message, "metrics": metrics or {}}


class _Tally:
    """Wraps the ResultsWriter to count events by kind and track the deepest penetration as
    the Simulator writes them, so a run that fails mid-way still reports what happened up to
    then (the Simulator's own summary is lost with its exception)."""

    def __init__(self, writer) -> None:
        self._writer = writer
        self.events: Counter = Counter()
        self.max_penetration = 0.0

    def append_events(self, **columns) -> None:
        self._writer.append_events(**columns)
        for kind in np.atleast_1d(columns["kind"]):
            self.events[kind if isinstance(kind, str) else EVENT_KINDS[int(kind)]] += 1

    def append_diagnostics(self, **columns) -> None:
        self._writer.append_diagnostics(**columns)
        pen = np.max(np.atleast_1d(columns.get("max_penetration", 0.0)))
        if pen > self.max_penetration:
            self.max_penetration = float(pen)

    def __getattr__(self, name):
        return getattr(self._writer, name)


def _coordinate_names(model, names, first, counts) -> list[str]:
    """Column names of q or v; qualified as ``tree:name`` when two trees share a name (not
    ``tree/name``: a slash would make a subgroup of an HDF5 dataset name)."""
    trees = [model.tree_names[model.tree_of[i]] for i in range(model.nb) for _ in range(counts[i])]
    order = [k for i in range(model.nb) for k in range(first[i], first[i] + counts[i])]
    plain = [names[k] for k in order]
    if len(set(plain)) == len(plain):
        return plain
    return [f"{t}:{n}" for t, n in zip(trees, plain, strict=True)]


def _f(x) -> float:
    return float(x) if x is not None else math.nan


def metrics_of(sim, summary, tally, e0: float, wall_s: float, cpu_s: float) -> dict:
    """The summary's numbers for one run (units in the keys' docs in docs/batch.md)."""
    m = sim.model
    try:
        energy = [float(x) for x in sim.energy()]
    except Exception:  # a diverged state may not even evaluate; report NaN, not a crash
        energy = [math.nan] * 3
    qn = _coordinate_names(m, m.q_names, m.qi, m.nqj)
    vn = _coordinate_names(m, m.v_names, m.vi, m.nvj)
    q = [float(sim.q[k]) for i in range(m.nb) for k in range(m.qi[i], m.qi[i] + m.nqj[i])]
    v = [float(sim.v[k]) for i in range(m.nb) for k in range(m.vi[i], m.vi[i] + m.nvj[i])]
    events = {k: int(tally.events.get(k, 0)) for k in EVENT_KINDS}
    max_pen = tally.max_penetration
    if summary is not None:
        max_pen = max(max_pen, summary.max_penetration)
    return {
        "wall_s": wall_s,
        "cpu_s": cpu_s,
        "steps": int(sim.step_index),
        "sim_time_s": float(sim.t),
        "events": events,
        "max_penetration_m": float(max_pen),
        "worst_lcp_residual": _f(summary.worst_lcp_residual) if summary else math.nan,
        "impacts_gaining_energy": int(summary.energy_gains) if summary else -1,
        "final_kinetic_J": energy[0],
        "final_potential_J": energy[1],
        "final_total_J": energy[2],
        "energy_change_J": energy[2] - e0,
        "final_q": dict(zip(qn, q, strict=True)),
        "final_v": dict(zip(vn, v, strict=True)),
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
        sim = Simulator(scenario)
        # force: the plan decided this file is to be (re)written
        writer = sim.open_writer(task.command, force=True)
    except MbsimError as exc:
        return outcome("failed", str(exc))
    except Exception as exc:  # a bug must not stop the sweep either; say what it was
        return outcome("failed", f"internal error ({type(exc).__name__}: {exc})")
    return _run(task, sim, writer, should_stop, t0)


def _elapsed(t0: tuple[float, float]) -> tuple[float, float]:
    return time.perf_counter() - t0[0], time.thread_time() - t0[1]


def _run(task: RunTask, sim, writer, should_stop, t0: tuple[float, float]) -> dict:
    from mbsim.simcore.stepper import SimulationError

    tally = _Tally(writer)
    summary = None
    status, message = "complete", ""
    try:
        with writer:
            record = writer.group(BATCH_GROUP)
            record.attrs["run_id"] = np.int64(task.run_id)
            record.attrs["identity"] = task.identity
            record.attrs["sweep"] = task.sweep
            record.attrs["overrides"] = json.dumps(task.overrides, ensure_ascii=False)
            e0 = float(sim.energy()[2])
            try:
                summary = sim.run(tally, should_stop=should_stop)
                status, message = summary.status, summary.message
            except SimulationError as exc:
                status, message = "failed", str(exc)
            metrics = metrics_of(sim, summary, tally, e0, *_elapsed(t0))
            # written before finish(): a file whose status is final always has its metrics
            record.attrs["metrics"] = json.dumps(metrics)
            writer.finish(status, message)
    except MbsimError as exc:  # e.g. the disk filled up; the writer marked the file failed
        return outcome("failed", str(exc), _safe_metrics(sim, summary, tally, t0))
    except Exception as exc:
        return outcome(
            "failed",
            f"internal error ({type(exc).__name__}: {exc})",
            _safe_metrics(sim, summary, tally, t0),
        )
    return outcome(status, message, metrics)


def _safe_metrics(sim, summary, tally, t0: tuple[float, float]) -> dict:
    try:
        return metrics_of(sim, summary, tally, math.nan, *_elapsed(t0))
    except Exception:
        return {}


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
