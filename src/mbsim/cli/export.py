"""``mbsim export``: a results table to CSV or NPZ for other tools (pandas, MATLAB, ...).

Values keep the file's SI units (s, rad or m, rad/s or m/s, J, N s, m), and contacts get their
forces (N, impulse / dt) beside the impulses; ``--what long`` writes the trajectory as one row
per time, item and quantity (:mod:`mbsim.io.results.long`). CSV numbers are written
in Python's shortest round-trip form, so parsing them gives back the stored float64 exactly.
Output files appear atomically (written to a temporary file, then renamed), so a failure never
leaves a partial file behind.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import typer

from mbsim.errors import MbsimError
from mbsim.io.results import Results, check_output_path, load_results
from mbsim.io.results.labels import body_labels, coordinate_labels

FORMATS = ("csv", "npz")
WHATS = ("trajectory", "long", "events", "contacts", "diagnostics")
_AXES = ("x", "y", "z")


def export(
    results: Path = typer.Argument(..., help="Results file (HDF5) written by mbsim run."),
    fmt: str = typer.Option(
        None, "--format", "-f", help="Output format: csv or npz (default: the -o file's suffix)."
    ),
    what: str = typer.Option(
        "trajectory",
        "--what",
        "-w",
        help="trajectory, long (the trajectory as time, item, quantity, value rows), events, "
        "contacts (impulses and forces) or diagnostics.",
    ),
    output: Path = typer.Option(None, "--output", "-o", help="Output file."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing output file."),
) -> None:
    """Export one table of a results file as CSV (header row of names) or NPZ (named arrays)."""
    if fmt is None and output is not None and output.suffix.lower()[1:] in FORMATS:
        fmt = output.suffix.lower()[1:]
    if fmt is None:
        raise MbsimError(
            "mbsim export needs an output format: --format csv or --format npz (or an -o file "
            "ending in .csv or .npz)."
        )
    if fmt not in FORMATS:
        raise MbsimError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}.")
    if what not in WHATS:
        raise MbsimError(f"--what {what!r} is not one of {', '.join(WHATS)}.")
    if output is None:
        raise MbsimError("mbsim export needs an output file: -o PATH.")
    check_output(output, force, inputs=[results])
    r = load_results(results)
    names, columns = table(r, what)
    if fmt == "csv":
        write_atomic(output, lambda fh: write_csv(fh, names, columns))
    else:
        arrays = npz_arrays(r, what)
        write_atomic(output, lambda fh: np.savez_compressed(fh, **arrays))
    typer.echo(str(output))


# --------------------------------------------------------------------------- output files


def check_output(path: Path, force: bool, inputs=()) -> None:
    """Refuse an output path that cannot or must not be written, naming it (exit 2); an
    output equal to one of ``inputs`` (the results file read) is refused, --force or not."""
    check_output_path(path, force, list(inputs))


def write_atomic(path: Path, write: Callable[[io.BufferedWriter], None]) -> None:
    """Write through a temporary file in the same folder, then rename over ``path``."""
    p = Path(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    except OSError as exc:
        raise MbsimError(f"{p}: cannot write in {p.parent} ({exc.strerror or exc}).") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, p)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise MbsimError(f"{p}: writing failed ({exc.strerror or exc}).") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    # mkstemp creates files 0600; give the result the permissions a plain open() would.
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --------------------------------------------------------------------------- tables


def _require(r: Results, what: str) -> dict[str, np.ndarray]:
    if what == "contacts":
        if r.contacts is None:
            raise MbsimError(
                f"{r.path}: has no contacts table (the run did not record contacts; "
                "rerun with --record-contacts)."
            )
        return r.contacts
    return r.events if what == "events" else r.diagnostics


def table(r: Results, what: str) -> tuple[list[str], list[list]]:
    """Column names and column value lists (Python scalars) of one table, as in the CSV."""
    names: list[str] = []
    cols: list[list] = []

    def add(name: str, values: np.ndarray) -> None:
        names.append(name)
        cols.append(values.tolist())

    if what == "long":
        from mbsim.io.results.long import long_table

        for key, values in long_table(r).items():
            add(key, values)
        return names, cols
    if what == "trajectory":  # columns named tree/joint, tree/link (io/results/labels.py)
        q_names, v_names = coordinate_labels(r, "q"), coordinate_labels(r, "v")
        add("time", r.time)
        add("step", r.step)
        for k, n in enumerate(q_names):
            add(f"q[{n}]", r.q[:, k])
        for k, n in enumerate(v_names):
            add(f"v[{n}]", r.v[:, k])
        for k, n in enumerate(("kinetic", "potential", "total")):
            add(f"energy[{n}]", r.energy[:, k])
        if r.body_pose is not None:
            for b, body in enumerate(body_labels(r)):
                for k, c in enumerate(("x", "y", "z", "qw", "qx", "qy", "qz")):
                    add(f"body_pose[{body}.{c}]", r.body_pose[:, b, k])
        if r.tau is not None:  # last: files from before tau was recorded keep their columns
            for k, n in enumerate(v_names):
                add(f"tau[{n}]", r.tau[:, k])
            for k, n in enumerate(v_names):
                add(f"tau_limit[{n}]", r.tau_limit[:, k])
        return names, cols
    data = _require(r, what)
    order = ["time", "step"] + [k for k in data if k not in ("time", "step")]
    for key in order:
        values = data[key]
        if key == "kind":
            names.append("kind")
            cols.append([r.event_kinds[int(k)] for k in values])
        elif key == "solver":
            names.append("solver")
            cols.append([r.solver_codes[int(k)] for k in values])
        elif values.ndim == 2:
            for k in range(values.shape[1]):
                add(f"{key}[{_AXES[k] if values.shape[1] == 3 else k}]", values[:, k])
        else:
            add(key, values)
        if key in ("body_a", "body_b"):
            names.append(f"{key}_name")
            cols.append([r.body_name(int(i)) for i in values])
        if what == "contacts" and key in ("normal_impulse", "tangent_impulse"):
            # the mean force over the step, N, beside the impulse (mbsim.io.results.long)
            from mbsim.io.results.long import contact_forces

            force = contact_forces(r)[key.replace("impulse", "force")]
            if force.ndim == 2:
                for k in range(3):
                    add(f"{key.replace('impulse', 'force')}[{_AXES[k]}]", force[:, k])
            else:
                add(key.replace("impulse", "force"), force)
    return names, cols


def write_csv(fh, names: list[str], cols: list[list]) -> None:
    """Header row, then one row per record; floats in shortest round-trip form (str() of a
    Python float is its repr), NaN as ``nan``."""
    text = io.TextIOWrapper(fh, encoding="utf-8", newline="")
    w = csv.writer(text, lineterminator="\n")
    w.writerow(names)
    w.writerows(zip(*cols, strict=True))
    text.flush()
    text.detach()


def npz_arrays(r: Results, what: str) -> dict[str, np.ndarray]:
    """Named arrays for ``np.load``: the table's columns as stored, plus name lists as
    unicode arrays (no pickling needed to load them)."""
    names = {
        "body_names": np.array(r.body_names, dtype=str),
        "q_names": np.array(r.q_names, dtype=str),
        "v_names": np.array(r.v_names, dtype=str),
    }
    if what == "long":
        from mbsim.io.results.long import long_table

        return {k: v.astype(str) if v.dtype == object else v for k, v in long_table(r).items()}
    if what == "trajectory":
        out = {
            "time": r.time,
            "step": r.step,
            "q": r.q,
            "v": r.v,
            "energy": r.energy,
            "energy_columns": np.array(["kinetic", "potential", "total"]),
            **names,
        }
        if r.tau is not None:
            out["tau"], out["tau_limit"] = r.tau, r.tau_limit
        if r.body_pose is not None:
            out["body_pose"] = r.body_pose
            out["body_pose_columns"] = np.array(["x", "y", "z", "qw", "qx", "qy", "qz"])
        return out
    data = dict(_require(r, what))
    if "kind" in data:
        data["kind"] = data["kind"].astype(np.int64)
        data["kind_names"] = np.array(r.event_kinds)
    if "solver" in data:
        data["solver"] = data["solver"].astype(np.int64)
        data["solver_names"] = np.array(r.solver_codes)
    if what == "contacts":
        from mbsim.io.results.long import contact_forces

        data.update(contact_forces(r))
    return {**data, "body_names": names["body_names"]}


__all__ = ["export", "check_output", "write_atomic", "table", "write_csv", "npz_arrays"]
