"""``mbsim inspect``: what a results file holds -- run parameters, how far it got, events by
kind, energy drift (J), solver diagnostics -- and ``--events`` to list the events.

Times in s, energies in J, lengths in m, impulses in N s, velocities in m/s.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import typer

from mbsim.io.results import Results, load_results
from mbsim.simcore.energy_sources import EnergyGains


def inspect(
    results: Path = typer.Argument(..., help="Results file (HDF5) written by mbsim run."),
    events: bool = typer.Option(
        False, "--events", help="List every event as a table (instead of the summary)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary on stdout."),
) -> None:
    """Summarise a results file: parameters, progress, events, energy drift, diagnostics."""
    r = load_results(results)
    summary = summarize(r)
    if as_json:
        if events:
            summary["event_list"] = event_rows(r)
        typer.echo(json.dumps(summary, indent=2, allow_nan=False, default=str))
        return
    if events:
        # the table, under the three lines that say what it is (not the whole summary again)
        head = [
            line
            for line in render(summary).splitlines()
            if line.startswith(("results: ", "status: ", "events: "))
        ]
        typer.echo("\n".join([*head, "", render_events(r)]))
        return
    typer.echo(render(summary))


def _num(x) -> float | None:
    """A JSON-safe float (None for NaN/inf)."""
    x = float(x)
    return x if math.isfinite(x) else None


def summarize(r: Results) -> dict:
    """A plain-data summary of a results file (what ``inspect`` prints)."""
    a = r.attrs
    n = len(r.time)
    kinds = Counter(r.event_kinds[k] for k in r.events.get("kind", []))
    energy: dict = {}
    if n:
        total = r.energy[:, 2]
        finite = total[np.isfinite(total)]
        if finite.size:
            e0, e1 = float(finite[0]), float(finite[-1])
            energy = {
                "total_start_J": e0,
                "total_end_J": e1,
                "drift_J": e1 - e0,
                "max_abs_drift_J": float(np.max(np.abs(finite - e0))),
                # A relative drift means nothing when the energy's zero is near the start value.
                "drift_relative": (e1 - e0) / abs(e0) if abs(e0) > 1e-12 else None,
                # actuators (recorded tau) do work: the change is then not a drift
                "actuated": r.tau is not None and bool(np.any(r.tau != 0)),
            }
    gains = EnergyGains.from_attrs(r.run_summary)
    d = r.diagnostics
    diag: dict = {"rows": int(len(d.get("step", [])))}
    if diag["rows"]:
        solvers = Counter(r.solver_codes[k] for k in d["solver"])
        diag.update(
            lcp_size_max=int(d["lcp_size"].max()),
            lcp_size_mean=_num(d["lcp_size"].mean()),
            lcp_pivots_max=int(d["lcp_pivots"].max()),
            lcp_pivots_total=int(d["lcp_pivots"].sum()),
            lcp_residual_max=_num(np.nanmax(d["lcp_residual"]))
            if np.isfinite(d["lcp_residual"]).any()
            else None,
            n_contacts_max=int(d["n_contacts"].max()),
            max_penetration_m=_num(np.nanmax(d["max_penetration"]))
            if np.isfinite(d["max_penetration"]).any()
            else None,
            step_seconds_mean=_num(np.nanmean(d["step_seconds"]))
            if np.isfinite(d["step_seconds"]).any()
            else None,
            step_seconds_total=_num(np.nansum(d["step_seconds"])),
            solvers=dict(solvers),
        )
    return {
        "file": str(r.path),
        "status": r.status,
        "message": r.message,
        "notes": list(r.notes),
        "writer_alive": r.writer_alive,
        "mbsim_version": a.get("mbsim_version"),
        "created_utc": a.get("created_utc"),
        "ended_utc": a.get("ended_utc"),
        "command": a.get("command"),
        "formulation": r.formulation,
        "dt_s": _num(r.dt),
        "duration_s": _num(r.duration),
        "recorded_states": n,
        "time_first_s": _num(r.time[0]) if n else None,
        "time_last_s": _num(r.time[-1]) if n else None,
        "steps_last": int(r.step[-1]) if n else None,
        "bodies": len(r.body_names),
        "trees": list(r.tree_names),
        "nq": len(r.q_names),
        "nv": len(r.v_names),
        "body_poses": r.body_pose is not None,
        "contacts_recorded": None if r.contacts is None else int(len(r.contacts["time"])),
        "events": int(len(r.events.get("time", []))),
        "events_by_kind": {k: kinds.get(k, 0) for k in r.event_kinds},
        "energy": energy,
        "energy_gained": None if gains is None else gains.as_dict(),
        "energy_gained_text": None if gains is None else gains.text(),
        "effort_saturated_steps": r.run_summary.get("effort_saturated_steps"),
        "diagnostics": diag,
        "input_files": r.input_files,
    }


def _g(x, unit: str = "") -> str:
    if x is None:
        return "n/a"
    return f"{x:.6g}{(' ' + unit) if unit else ''}"


def render(s: dict) -> str:
    """Human-readable text of :func:`summarize`."""
    status = s["status"]
    if status == "running":
        status += (
            " (still being written by another process)"
            if s["writer_alive"]
            else " (no process is writing it: the run was killed or crashed; the data are "
            "those of the last flush)"
        )
    if s["message"]:
        status += f": {s['message']}"
    lines = [
        f"results: {s['file']}",
        f"status: {status}",
        *(f"note: {note}" for note in s.get("notes", [])),
        f"written by mbsim {s['mbsim_version']} on {s['created_utc']}"
        + (f", ended {s['ended_utc']}" if s["ended_utc"] else ""),
    ]
    if s["command"]:
        lines.append(f"command: {s['command']}")
    lines.append(
        f"run: formulation {s['formulation'] or 'n/a'}, dt = {_g(s['dt_s'], 's')}, "
        f"duration = {_g(s['duration_s'], 's')}"
    )
    if s["recorded_states"]:
        lines.append(
            f"recorded: {s['recorded_states']} states, t = {_g(s['time_first_s'])} .. "
            f"{_g(s['time_last_s'], 's')} (last step {s['steps_last']})"
        )
    else:
        lines.append("recorded: no states")
    lines.append(
        f"model: {s['bodies']} {'body' if s['bodies'] == 1 else 'bodies'}, "
        f"trees {', '.join(s['trees']) or 'n/a'}, "
        f"nq = {s['nq']}, nv = {s['nv']}" + (", body poses recorded" if s["body_poses"] else "")
    )
    by_kind = ", ".join(f"{k} {n}" for k, n in s["events_by_kind"].items())
    lines.append(f"events: {s['events']} ({by_kind})")
    if s["contacts_recorded"] is not None:
        lines.append(f"contacts recorded: {s['contacts_recorded']} rows")
    e = s["energy"]
    if e:
        rel = f" ({e['drift_relative'] * 100:+.3g} %)" if e["drift_relative"] is not None else ""
        lines.append(
            f"energy: total {_g(e['total_start_J'], 'J')} at start, {_g(e['total_end_J'], 'J')} "
            f"at end; {'change' if e['actuated'] else 'drift'} {e['drift_J']:+.6g} J{rel}, "
            f"largest |change| {_g(e['max_abs_drift_J'], 'J')}"
            + (" (actuators did work: not a drift)" if e["actuated"] else "")
        )
    if s["energy_gained_text"]:
        lines.append(f"energy gained: {s['energy_gained_text']}")
    if s["effort_saturated_steps"]:
        lines.append(
            f"steps with a joint force clamped at its URDF effort: {s['effort_saturated_steps']}"
            " (/trajectory/tau_limit on the recorded steps)"
        )
    d = s["diagnostics"]
    if d["rows"]:
        solvers = ", ".join(f"{k} {n}" for k, n in sorted(d["solvers"].items()))
        lines.append(
            f"diagnostics: LCP size max {d['lcp_size_max']} (mean {_g(d['lcp_size_mean'])}), "
            f"pivots max {d['lcp_pivots_max']} (total {d['lcp_pivots_total']}), "
            f"residual max {_g(d['lcp_residual_max'])}"
        )
        lines.append(
            f"             contacts max {d['n_contacts_max']}, max penetration "
            f"{_g(d['max_penetration_m'], 'm')}, step time mean {_g(d['step_seconds_mean'], 's')}"
            f" (total {_g(d['step_seconds_total'], 's')}); solvers: {solvers}"
        )
    else:
        lines.append("diagnostics: none recorded")
    lines.append(f"input files: {len(s['input_files'])} (sha256 recorded)")
    for path, digest in s["input_files"].items():
        lines.append(f"  {digest[:16]}  {path}")
    return "\n".join(lines)


_EVENT_HEADER = (
    "time [s]",
    "step",
    "kind",
    "body_a",
    "body_b",
    "normal impulse [N s]",
    "vn before [m/s]",
    "vn after [m/s]",
    "KE before [J]",
    "KE after [J]",
)


def event_rows(r: Results) -> list[dict]:
    """Events as a list of plain dicts (names resolved)."""
    ev = r.events
    rows = []
    for i in range(len(ev.get("time", []))):
        rows.append(
            {
                "time": _num(ev["time"][i]),
                "step": int(ev["step"][i]),
                "kind": r.event_kinds[int(ev["kind"][i])],
                "body_a": r.body_name(int(ev["body_a"][i])),
                "body_b": r.body_name(int(ev["body_b"][i])),
                "point": [_num(x) for x in ev["point"][i]],
                "normal": [_num(x) for x in ev["normal"][i]],
                "normal_impulse": _num(ev["normal_impulse"][i]),
                "tangent_impulse": [_num(x) for x in ev["tangent_impulse"][i]],
                "normal_velocity_before": _num(ev["normal_velocity_before"][i]),
                "normal_velocity_after": _num(ev["normal_velocity_after"][i]),
                "energy_before": _num(ev["energy_before"][i]),
                "energy_after": _num(ev["energy_after"][i]),
            }
        )
    return rows


def render_events(r: Results) -> str:
    """The events as a fixed-width text table, one line per event."""
    rows = event_rows(r)
    if not rows:
        return "no events"

    def g(x) -> str:
        return "" if x is None else f"{x:.6g}"

    table = [_EVENT_HEADER] + [
        (
            g(e["time"]),
            str(e["step"]),
            e["kind"],
            e["body_a"],
            e["body_b"],
            g(e["normal_impulse"]),
            g(e["normal_velocity_before"]),
            g(e["normal_velocity_after"]),
            g(e["energy_before"]),
            g(e["energy_after"]),
        )
        for e in rows
    ]
    widths = [max(len(row[c]) for row in table) for c in range(len(_EVENT_HEADER))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in table
    )


__all__ = ["inspect", "summarize", "render", "render_events", "event_rows"]
