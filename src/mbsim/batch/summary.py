"""The sweep's summary table: one row per run, written as CSV and as HDF5.

Columns (docs/batch.md lists units and meanings): ``run_id``, ``file``, ``status``, one column
per varied parameter (its dotted key), ``wall_s``, ``cpu_s``, ``steps``, ``sim_time_s``,
``events_<kind>`` for every event kind, ``max_penetration_m``, ``worst_lcp_residual``,
``impacts_gaining_energy``, ``recovery_softened_steps``, ``energy_gain_steps_<source>`` and
``energy_gain_J_<source>`` for each energy source (impacts, stabilisation, closures),
``final_kinetic_J``, ``final_potential_J``, ``final_total_J``, ``energy_change_J``,
``final_q[tree/name]`` and ``final_v[tree/name]`` for every coordinate met, ``message``,
``reused`` and ``identity``. A value a run does not have (a run that never started) is empty
in the CSV, NaN (floats), -1 (integers) or "" (text) in HDF5.

Both files are written to a temporary name and renamed into place, so a reader never sees a
half-written summary; ``summary.h5`` says in ``sweep_status`` whether the sweep finished.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import math
import os
from pathlib import Path

import h5py
import numpy as np

from mbsim.batch.plan import PlannedRun
from mbsim.batch.sweep import Sweep
from mbsim.io.results import EVENT_KINDS
from mbsim.simcore.energy_sources import SOURCES

SUMMARY_FORMAT = "mbsim-batch-summary"
SUMMARY_SCHEMA_VERSION = 1
#: Statuses a run can have in the summary.
RUN_STATUSES = ("complete", "failed", "interrupted", "not_run")

# name -> (kind, units, description); kind: int, float, str, bool
_HEAD = {
    "run_id": ("int", "1", "run id (0, 1, ...): the last sweep axis varies fastest"),
    "file": ("str", "1", "results file name, in the sweep's out_dir"),
    "status": ("str", "1", "complete, failed, interrupted or not_run"),
}
_METRICS = {
    "wall_s": ("float", "s", "wall-clock time of the run in its worker, loading included"),
    "cpu_s": ("float", "s", "CPU time of the worker thread that ran it, same span as wall_s"),
    "steps": ("int", "1", "time steps taken"),
    "sim_time_s": ("float", "s", "simulated time reached"),
    **{f"events_{k}": ("int", "1", f"number of {k} events") for k in EVENT_KINDS},
    "max_penetration_m": ("float", "m", "deepest penetration of any contact over the run"),
    "worst_lcp_residual": ("float", "mixed", "largest LCP complementarity residual"),
    "impacts_gaining_energy": ("int", "1", "impacts after which kinetic energy grew"),
    "recovery_softened_steps": (
        "int",
        "1",
        "steps solved with softened recovery (their LCP had no solution with it)",
    ),
    **{
        f"energy_gain_steps_{k}": ("int", "1", f"steps in which {k} added kinetic energy")
        for k in SOURCES
    },
    **{
        f"energy_gain_J_{k}": ("float", "J", f"kinetic energy {k} added over the run")
        for k in SOURCES
    },
    "final_kinetic_J": ("float", "J", "kinetic energy at the end"),
    "final_potential_J": ("float", "J", "gravitational potential energy at the end"),
    "final_total_J": ("float", "J", "total energy at the end"),
    "energy_change_J": ("float", "J", "final minus initial total energy"),
}
_TAIL = {
    "message": ("str", "1", "why the run failed or was interrupted (empty when complete)"),
    "reused": ("bool", "1", "true: the complete file of an earlier run of this sweep was kept"),
    "identity": ("str", "1", "SHA-256 of the run's overrides and input files (resume key)"),
}


def build_rows(sweep: Sweep, plan: list[PlannedRun], results: dict[int, dict]) -> list[dict]:
    """One row per run, in run-id order: plan + outcomes as flat column -> value dicts
    (None where a run has no value)."""
    rows = []
    for p in plan:
        run_id = p.spec.run_id
        if p.action == "reuse":
            status, message, metrics, reused = "complete", "", p.metrics or {}, True
        elif p.action == "invalid":
            status, message, metrics, reused = "failed", p.reason, {}, False
        else:
            r = results.get(run_id) or {"status": "not_run", "message": "", "metrics": {}}
            status, message, metrics, reused = r["status"], r["message"], r["metrics"], False
        row = {"run_id": run_id, "file": p.spec.path.name, "status": status}
        row.update(p.spec.params)
        for key in _METRICS:
            if key.startswith("events_"):
                events = metrics.get("events")
                row[key] = events.get(key[len("events_") :], 0) if events else None
            else:
                row[key] = metrics.get(key)
        for name, value in (metrics.get("final_q") or {}).items():
            row[f"final_q[{name}]"] = value
        for name, value in (metrics.get("final_v") or {}).items():
            row[f"final_v[{name}]"] = value
        row.update(message=message, reused=reused, identity=p.identity)
        rows.append(row)
    return rows


def columns(sweep: Sweep, rows: list[dict]) -> list[tuple[str, str, str, str]]:
    """(name, kind, units, description) of every column, in table order."""
    cols = [(k, *v) for k, v in _HEAD.items()]
    for key in sweep.parameters:
        cols.append(
            (
                key,
                _param_kind([r.get(key) for r in rows]),
                "as in the scenario",
                "swept scenario parameter (dotted override key)",
            )
        )
    cols += [(k, *v) for k, v in _METRICS.items()]
    for prefix, units, what in (
        ("final_q[", "rad or m", "position"),
        ("final_v[", "rad/s or m/s", "velocity"),
    ):
        names = dict.fromkeys(k for r in rows for k in r if k.startswith(prefix))
        cols += [(n, "float", units, f"final {what} of this coordinate") for n in names]
    cols += [(k, *v) for k, v in _TAIL.items()]
    return cols


def _param_kind(values: list) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "bool"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "int"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "float"
    if all(isinstance(v, str) for v in present):
        return "str"
    return "json"  # lists and tables (e.g. a swept gravity vector): JSON text


def _csv_text(value, kind: str) -> str:
    if value is None:
        return ""
    if kind == "json":
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # shortest round-trip form: parses back to the same double
    return str(value)


def write_csv(path: Path, sweep: Sweep, rows: list[dict]) -> None:
    cols = columns(sweep, rows)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow([c[0] for c in cols])
            for r in rows:
                w.writerow([_csv_text(r.get(name), kind) for name, kind, _, _ in cols])
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _h5_column(values: list, kind: str):
    if kind == "int":
        return np.array([-1 if v is None else int(v) for v in values], dtype=np.int64)
    if kind == "float":
        return np.array([math.nan if v is None else float(v) for v in values], dtype=np.float64)
    if kind == "bool":
        return np.array([bool(v) for v in values], dtype=bool)
    if kind == "json":
        return [json.dumps(v, ensure_ascii=False) if v is not None else "" for v in values]
    return ["" if v is None else str(v) for v in values]


def write_hdf5(path: Path, sweep: Sweep, rows: list[dict], *, sweep_status: str) -> None:
    from mbsim import __version__

    cols = columns(sweep, rows)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    counts = {s: sum(r["status"] == s for r in rows) for s in RUN_STATUSES}
    try:
        with h5py.File(tmp, "w") as f:
            a = f.attrs
            a["format"] = SUMMARY_FORMAT
            a["schema_version"] = np.int64(SUMMARY_SCHEMA_VERSION)
            a["mbsim_version"] = __version__
            a["created_utc"] = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            a["sweep"] = str(sweep.path)
            a["sweep_sha256"] = sweep.sha256
            a["scenario"] = str(sweep.scenario)
            a["out_dir"] = str(sweep.out_dir)
            a["sweep_status"] = sweep_status
            a["fixed_overrides"] = json.dumps(sweep.fixed, ensure_ascii=False)
            a["parameters"] = json.dumps(sweep.parameters, ensure_ascii=False)
            a["runs"] = np.int64(len(rows))
            for s, n in counts.items():
                a[f"runs_{s}"] = np.int64(n)
            g = f.create_group("runs")
            g.attrs["columns"] = json.dumps([c[0] for c in cols], ensure_ascii=False)
            g.attrs["description"] = "one row per run; column order in the columns attribute"
            for name, kind, units, desc in cols:
                data = _h5_column([r.get(name) for r in rows], kind)
                # a slash would make a subgroup; the real name is in attrs and in `columns`
                ds_name = name.replace("/", "%2F")
                if isinstance(data, list):
                    ds = g.create_dataset(
                        ds_name, data=data, dtype=h5py.string_dtype("utf-8"), shape=(len(data),)
                    )
                else:
                    ds = g.create_dataset(ds_name, data=data)
                ds.attrs.update(name=name, units=units, description=desc)
                if kind == "json":
                    ds.attrs["encoding"] = "json"
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_summary(path: str | os.PathLike[str]) -> dict[str, np.ndarray | list]:
    """The ``/runs`` table of a summary.h5 as column name -> array (strings as lists)."""
    with h5py.File(path, "r") as f:
        g = f["runs"]
        out: dict[str, np.ndarray | list] = {}
        for name in json.loads(g.attrs["columns"]):
            ds = g[name.replace("/", "%2F")]
            out[name] = ds.asstr()[...].tolist() if ds.dtype.kind == "O" else ds[...]
        return out
