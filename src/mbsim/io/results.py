"""The HDF5 results file (schema version 1): a streaming writer and a reader.

docs/hdf5-format.md is the reference for the layout. Units are SI: time in s, joint positions
in rad or m (free joints: m and a unit quaternion), velocities in rad/s or m/s, impulses in N s,
energies in J, lengths in m, wall-clock durations in s.

Writing (:class:`ResultsWriter`, a context manager):

* Everything that can be checked before the run is: the folder exists and is writable, the file
  does not exist (unless ``force``), the disk has room for the estimated size. The file is
  created at once, so an unwritable path fails before the first step.
* Rows are buffered in memory and written only inside :meth:`ResultsWriter.flush`, which runs
  when a buffer holds ``flush_rows`` rows or ``flush_seconds`` (1 s) of wall time have passed,
  and ends with an HDF5 flush. Outside a flush the file on disk is the consistent state of the
  last flush, so SIGKILL or a power cut leaves a file h5py opens, holding everything up to the
  last flush; its ``status`` attribute stays ``running``. SWMR mode is deliberately not used:
  a SWMR file whose writer died cannot be opened by plain h5py until ``h5clear`` is run on it.
* A flush writes the datasets, flushes, then records the committed row count in each group's
  ``rows`` attribute and flushes again, so a reader of a file killed mid-flush can ignore a
  partly written tail (:func:`load_results` does).
* Before each flush the free disk space is checked against the buffered bytes; when it runs
  short the run stops with status ``failed`` and a message, instead of HDF5 failing half-way
  through a write (which leaves a truncated file HDF5 refuses to open).
* Leaving the ``with`` block normally marks the file ``complete``; a KeyboardInterrupt marks it
  ``interrupted``; any other exception ``failed`` with the exception as the message.

Reading: :func:`load_results` returns a :class:`Results` of numpy arrays and name lists.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import os
import shutil
import time as _time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from mbsim.errors import MbsimError

__all__ = [
    "EVENT_KINDS",
    "FORMAT",
    "SCHEMA_VERSION",
    "SOLVER_CODES",
    "STATUSES",
    "Results",
    "ResultsError",
    "ResultsWriter",
    "estimate_bytes",
    "load_results",
    "model_info",
]

FORMAT = "mbsim-results"
SCHEMA_VERSION = 1
#: Event kinds, in HDF5 enum code order (0, 1, ...).
EVENT_KINDS = ("contact_begin", "contact_end", "impact", "stick", "slip")
#: Which LCP solver solved a step (``/diagnostics/solver`` enum codes): ``none`` = no LCP that
#: step (no contacts or closures), ``lemke_reg`` = Lemke on the regularised matrix, ``failed``
#: = the whole fallback chain failed.
SOLVER_CODES = ("none", "lemke", "lemke_reg", "pgs", "failed")
STATUSES = ("running", "complete", "interrupted", "failed")

#: HDF5 metadata, the global heap and attribute updates need some room beyond the raw data.
SPACE_MARGIN_BYTES = 1 << 20
#: Target uncompressed chunk size: large enough to compress well, small enough that rewriting
#: the last partial chunk at every flush stays cheap.
CHUNK_BYTES = 1 << 16
FLUSH_SECONDS = 1.0
#: Rows buffered before a flush is forced regardless of time (bounds memory).
FLUSH_ROWS = 4096


class ResultsError(MbsimError):
    """A results file cannot be written or read; the message names the file."""


def _free_bytes(folder: str) -> int:
    """Free bytes on the file system of ``folder`` (a function so tests can replace it)."""
    return shutil.disk_usage(folder).free


def _create_file(path: Path) -> h5py.File:
    """Create the HDF5 file. Some file systems (NFS, some cluster scratch) refuse the lock
    HDF5 takes; the file is then written without one (readers cannot tell a live run from a
    dead one there, nothing else changes)."""
    try:
        return h5py.File(path, "w")
    except OSError as exc:
        if "lock" not in str(exc).lower():
            raise
        path.unlink(missing_ok=True)
        return h5py.File(path, "w", locking=False)


def _utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _mbsim_version() -> str:
    from mbsim import __version__

    return __version__


# --------------------------------------------------------------------------- column layout


@dataclass(frozen=True)
class _Col:
    name: str
    dtype: object
    shape: tuple[int, ...]
    units: str
    description: str
    attrs: tuple[tuple[str, object], ...] = ()


_STR = h5py.string_dtype("utf-8")
_KIND_DTYPE = h5py.enum_dtype({k: i for i, k in enumerate(EVENT_KINDS)}, basetype="u1")
_SOLVER_DTYPE = h5py.enum_dtype({k: i for i, k in enumerate(SOLVER_CODES)}, basetype="u1")
_POSE_COLUMNS = ("x", "y", "z", "qw", "qx", "qy", "qz")
_ENERGY_COLUMNS = ("kinetic", "potential", "total")


def _codes_text(names: Sequence[str]) -> str:
    return ", ".join(f"{i}={n}" for i, n in enumerate(names))


def _trajectory_cols(nq: int, nv: int, nb: int, body_poses: bool) -> list[_Col]:
    cols = [
        _Col("step", np.int64, (), "1", "time-step index of the recorded state (0 = initial)"),
        _Col(
            "q",
            np.float64,
            (nq,),
            "rad or m (free joints: m, then a unit quaternion qw qx qy qz)",
            "joint positions, columns named by /model/q_names",
        ),
        _Col(
            "v",
            np.float64,
            (nv,),
            "rad/s or m/s (free joints: m/s and rad/s in the child body frame)",
            "joint velocities, columns named by /model/v_names",
        ),
        _Col(
            "energy",
            np.float64,
            (3,),
            "J",
            "kinetic, potential (gravity) and total mechanical energy",
            (("columns", list(_ENERGY_COLUMNS)),),
        ),
    ]
    if body_poses:
        cols.append(
            _Col(
                "body_pose",
                np.float64,
                (nb, 7),
                "m (x y z), 1 (unit quaternion qw qx qy qz)",
                "world pose of each body frame, bodies in /model/body_names order",
                (("columns", list(_POSE_COLUMNS)),),
            )
        )
    # time last: written last in a flush, so a torn flush never shows a time without data
    cols.append(_Col("time", np.float64, (), "s", "simulation time of the recorded state"))
    return cols


def _contact_cols(events: bool) -> list[_Col]:
    cols = [
        _Col("step", np.int64, (), "1", "time-step index"),
        _Col("body_a", np.int32, (), "1", "index into /model/body_names; -1 = the static world"),
        _Col("body_b", np.int32, (), "1", "index into /model/body_names; -1 = the static world"),
        _Col("point", np.float64, (3,), "m", "contact point, world frame"),
        _Col("normal", np.float64, (3,), "1", "unit contact normal from body_b to body_a, world"),
        _Col("normal_impulse", np.float64, (), "N s", "normal impulse on body_a over the step"),
        _Col(
            "tangent_impulse",
            np.float64,
            (3,),
            "N s",
            "friction impulse on body_a over the step, world frame",
        ),
        _Col(
            "normal_velocity_before",
            np.float64,
            (),
            "m/s",
            "relative normal velocity of a w.r.t. b before the step's impulses (< 0: approaching)",
        ),
        _Col(
            "normal_velocity_after",
            np.float64,
            (),
            "m/s",
            "relative normal velocity of a w.r.t. b after the step's impulses",
        ),
    ]
    if events:
        cols.insert(
            1,
            _Col(
                "kind",
                _KIND_DTYPE,
                (),
                "1",
                "event kind (HDF5 enum)",
                (("codes", _codes_text(EVENT_KINDS)),),
            ),
        )
        cols += [
            _Col(
                "energy_before",
                np.float64,
                (),
                "J",
                "kinetic energy before an impact (NaN if none)",
            ),
            _Col(
                "energy_after", np.float64, (), "J", "kinetic energy after an impact (NaN if none)"
            ),
        ]
    else:
        cols.append(_Col("gap", np.float64, (), "m", "signed distance (< 0: penetration)"))
    cols.append(_Col("time", np.float64, (), "s", "simulation time"))
    return cols


def _diagnostic_cols() -> list[_Col]:
    return [
        _Col("step", np.int64, (), "1", "time-step index"),
        _Col("lcp_size", np.int32, (), "1", "number of LCP unknowns solved in the step"),
        _Col("lcp_pivots", np.int32, (), "1", "pivots (Lemke) or sweeps (PGS) used"),
        _Col("lcp_residual", np.float64, (), "mixed", "complementarity residual of the solution"),
        _Col("n_contacts", np.int32, (), "1", "active contacts in the step"),
        _Col("max_penetration", np.float64, (), "m", "deepest penetration (0 if none)"),
        _Col(
            "constraint_error",
            np.float64,
            (),
            "m or rad",
            "largest loop-closure or mimic-joint position error at the step start (0 if none)",
        ),
        _Col("step_seconds", np.float64, (), "s", "wall-clock time spent on the step"),
        _Col(
            "solver",
            _SOLVER_DTYPE,
            (),
            "1",
            "which solver produced the step's LCP solution (HDF5 enum)",
            (("codes", _codes_text(SOLVER_CODES)),),
        ),
        _Col("time", np.float64, (), "s", "simulation time"),
    ]


# --------------------------------------------------------------------------- helpers


def model_info(model) -> dict:
    """The ``/model`` content of a :class:`~mbsim.simcore.model.Model`, as plain data."""
    return {
        "body_names": list(model.body_names),
        "joint_names": list(model.joint_names),
        "joint_types": list(model.joint_types),
        "parents": np.asarray(model.parent, dtype=np.int64),
        "q_names": list(model.q_names),
        "v_names": list(model.v_names),
        "masses": np.asarray(model.mass, dtype=np.float64),
        "tree_names": list(model.tree_names),
        "body_trees": np.asarray(model.tree_of, dtype=np.int64),
    }


_MODEL_META = {
    "body_names": ("1", "moving bodies, in model order (depth-first, trees one after another)"),
    "joint_names": ("1", "the joint that moves each body"),
    "joint_types": ("1", "revolute, continuous, prismatic or floating, per body"),
    "parents": ("1", "index of each body's parent body; -1 = the world"),
    "q_names": ("1", "name of each column of /trajectory/q"),
    "v_names": ("1", "name of each column of /trajectory/v"),
    "masses": ("kg", "mass of each body (fixed-joint children merged in)"),
    "tree_names": ("1", "robot and environment names, one per tree"),
    "body_trees": ("1", "index into tree_names of each body"),
}


def estimate_bytes(*, nq: int, nv: int, nb: int, rows: int, body_poses: bool = False) -> int:
    """Uncompressed size (bytes) of ``rows`` recorded states with their diagnostics; events
    and contacts are not counted (their number is unknown before the run)."""
    per_row = 8 * (2 + nq + nv + 3 + (7 * nb if body_poses else 0))  # trajectory
    per_row += 8 * 5 + 4 * 3 + 1  # diagnostics
    return int(rows) * per_row


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _mib(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


# --------------------------------------------------------------------------- writer


def _pow2_at_most(x: float) -> int:
    return 1 << max(0, int(math.floor(math.log2(max(1.0, x)))))


def _create(h5: h5py.Group, c: _Col, chunk_rows: int, max_rows: int | None, compress: bool):
    # HDF5 chunk sizes must be positive: a zero-width dimension (a robot without moving
    # joints has nq = 0) gets chunk size 1 and an unlimited maximum.
    ds = h5.create_dataset(
        c.name,
        shape=(0, *c.shape),
        maxshape=(max_rows, *(d if d > 0 else None for d in c.shape)),
        chunks=(chunk_rows, *(max(1, d) for d in c.shape)),
        dtype=c.dtype,
        **(dict(compression="gzip", compression_opts=4, shuffle=True) if compress else {}),
    )
    ds.attrs["units"] = c.units
    ds.attrs["description"] = c.description
    for k, v in c.attrs:
        ds.attrs[k] = v
    return ds


class _Group:
    """Buffered columns of one HDF5 group and their crash-safe path to the file.

    A compressed chunk must never be rewritten while the file is live: HDF5 rewrites a grown
    chunk in place or moves it, and a process killed between the chunk write and the index
    update leaves a chunk that fails to decompress (seen in testing for ~40% of kills during
    a flush). So the compressed datasets only ever receive whole chunks, ``seal`` rows at a
    time (``seal`` is a multiple of every column's chunk size), each written once. The rows
    after the last whole chunk live in ``_tail``: the same columns, uncompressed (fixed-size
    chunks, so rewriting a committed row writes identical bytes in place). The group attribute
    ``rows`` counts committed rows in the main datasets, ``_tail`` attribute ``rows`` those in
    the tail; both change only after the data they cover is flushed. :meth:`ResultsWriter.
    finish` moves the tail into the main datasets and deletes ``_tail``.

    Rows arrive one at a time (:meth:`add_row`: trajectory, diagnostics; kept in Python lists,
    several times cheaper per step than numpy concatenation) or in batches (:meth:`add_batch`).
    """

    #: Uncompressed bytes of one seal (all columns' rows), bounding the tail's size.
    SEAL_BYTES = 1 << 20

    def __init__(self, h5: h5py.Group, cols: list[_Col]) -> None:
        self.h5 = h5
        self.cols = cols
        row_bytes = {
            c.name: max(1, int(np.dtype(c.dtype).itemsize * math.prod(c.shape))) for c in cols
        }
        self.row_bytes = sum(row_bytes.values())
        self.seal = min(8192, max(64, _pow2_at_most(self.SEAL_BYTES / self.row_bytes)))
        self.tail = h5.create_group("_tail")
        self.tail.attrs["description"] = (
            "uncompressed rows after the last whole chunk while the run is live; removed when "
            "the run ends (readers append rows[:_tail.attrs['rows']] to the main datasets)"
        )
        for c in cols:
            chunk = min(self.seal, max(16, _pow2_at_most(CHUNK_BYTES / row_bytes[c.name])))
            _create(h5, c, chunk, None, compress=True)
            tail_chunk = min(self.seal, max(16, _pow2_at_most(16384 / row_bytes[c.name])))
            _create(self.tail, c, tail_chunk, self.seal, compress=False)
        h5.attrs["rows"] = np.int64(0)
        self.tail.attrs["rows"] = np.int64(0)
        self.pending: dict[str, list] = {c.name: [] for c in cols}
        self.pending_rows = 0
        self.pending_bytes = 0
        self.sealed = 0  # committed rows in the main datasets
        self.tail_rows = {c.name: np.zeros((0, *c.shape), c.dtype) for c in cols}
        self._plan: tuple[dict[str, np.ndarray], int] | None = None

    @property
    def committed(self) -> int:
        """Rows committed to the file (main + tail)."""
        return self.sealed + len(self.tail_rows[self.cols[0].name])

    def add_row(self, row: dict[str, object]) -> None:
        """One row: a value of each column's row shape (already validated and copied)."""
        for name, value in row.items():
            self.pending[name].append(value)
        self.pending_rows += 1
        self.pending_bytes += self.row_bytes

    def add_batch(self, batch: dict[str, np.ndarray], rows: int) -> None:
        """``rows`` rows, an (rows, *shape) array per column (wrapped in a tuple to tell
        it from a single row)."""
        for name, value in batch.items():
            self.pending[name].append((value,))
        self.pending_rows += rows
        self.pending_bytes += rows * self.row_bytes

    def _stack(self, col: _Col) -> np.ndarray:
        items = self.pending[col.name]
        if items and isinstance(items[0], tuple):
            new = np.concatenate([it[0] for it in items], axis=0)
        else:
            new = np.asarray(items, dtype=col.dtype).reshape(len(items), *col.shape)
        return np.concatenate([self.tail_rows[col.name], new], axis=0)

    # The phases below are separated by file flushes (ResultsWriter.flush). Each is
    # idempotent until commit(): a Ctrl-C in between makes the next flush redo them.

    def write_sealed(self) -> bool:
        """Phase 1: whole chunks to the compressed datasets. True if any were written."""
        if not self.pending_rows:
            self._plan = None
            return False
        data = {c.name: self._stack(c) for c in self.cols}
        n = len(data[self.cols[0].name])
        n_seal = (n // self.seal) * self.seal
        self._plan = (data, n_seal)
        if n_seal:
            for c in self.cols:  # "time" is last: a torn flush never shows time without data
                ds = self.h5[c.name]
                ds.resize(self.sealed + n_seal, axis=0)
                ds[self.sealed : self.sealed + n_seal] = data[c.name][:n_seal]
        return bool(n_seal)

    def mark_sealed(self) -> None:
        """Phase 2 (after a flush): count the new whole chunks, empty the tail."""
        if self._plan and self._plan[1]:
            self.h5.attrs.modify("rows", np.int64(self.sealed + self._plan[1]))
            self.tail.attrs.modify("rows", np.int64(0))

    def write_tail(self) -> None:
        """Phase 3: the remaining rows to the uncompressed tail."""
        if not self._plan:
            return
        data, n_seal = self._plan
        for c in self.cols:
            rest = data[c.name][n_seal:]
            ds = self.tail[c.name]
            if ds.shape[0] < len(rest):
                ds.resize(len(rest), axis=0)
            if len(rest):
                ds[: len(rest)] = rest

    def mark_tail(self) -> None:
        """Phase 4 (after a flush): count the tail rows."""
        if self._plan:
            data, n_seal = self._plan
            self.tail.attrs.modify("rows", np.int64(len(data[self.cols[0].name]) - n_seal))

    def commit(self) -> None:
        """The file now holds everything: update the in-memory state."""
        if self._plan:
            data, n_seal = self._plan
            self.sealed += n_seal
            self.tail_rows = {k: v[n_seal:] for k, v in data.items()}
            self.pending = {c.name: [] for c in self.cols}
            self.pending_rows, self.pending_bytes = 0, 0
            self._plan = None

    def close_tail(self) -> None:
        """At the end of the run: the tail becomes the last (partial) chunk of the main
        datasets, the main datasets hold every row, and ``_tail`` is deleted."""
        n_tail = len(self.tail_rows[self.cols[0].name])
        if n_tail:
            for c in self.cols:
                ds = self.h5[c.name]
                ds.resize(self.sealed + n_tail, axis=0)
                ds[self.sealed :] = self.tail_rows[c.name]
        self.h5.attrs.modify("rows", np.int64(self.sealed + n_tail))
        del self.h5["_tail"]
        self.sealed += n_tail
        self.tail_rows = {k: v[:0] for k, v in self.tail_rows.items()}


def _vector(name: str, value: object, shape: tuple[int, ...]) -> np.ndarray:
    """A float64 copy of ``value`` with exactly ``shape``."""
    arr = np.array(value, dtype=np.float64)
    if arr.shape != shape:
        if arr.size == math.prod(shape):
            return arr.reshape(shape)
        raise ValueError(f"results column {name!r}: expected shape {shape}, got {arr.shape}")
    return arr


def _column(name: str, value: object, dtype, shape: tuple[int, ...], n: int) -> np.ndarray:
    """``value`` as an (n, *shape) array; scalars and single rows broadcast."""
    arr = np.asarray(value, dtype=dtype)
    try:
        return np.array(np.broadcast_to(arr, (n, *shape)), dtype=dtype)
    except ValueError:
        raise ValueError(
            f"results column {name!r}: expected shape ({n}, {', '.join(map(str, shape))}) "
            f"or a broadcastable one, got {arr.shape}"
        ) from None


def check_output_path(path: str | os.PathLike[str], force: bool) -> None:
    """Refuse an output file that cannot or must not be written, naming it: a directory, an
    existing file without ``force``, a missing or unwritable folder (ResultsError)."""
    p = Path(os.path.abspath(os.fspath(path)))
    if p.is_dir():
        raise ResultsError(f"{p}: is a directory; give a file name.")
    if p.exists() and not force:
        raise ResultsError(f"{p}: already exists; use --force to overwrite it.")
    folder = p.parent
    if not folder.exists():
        raise ResultsError(f"{p}: the folder {folder} does not exist.")
    if not folder.is_dir():
        raise ResultsError(f"{p}: {folder} is not a folder.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ResultsError(f"{p}: the folder {folder} is not writable.")


class ResultsWriter:
    """Stream a run into an HDF5 results file (schema version 1; see the module docstring).

    ``model_info``: ``/model`` content (see :func:`model_info`; ``body_names``, ``joint_names``,
    ``joint_types``, ``parents``, ``q_names``, ``v_names``, ``masses`` are required,
    ``tree_names`` and ``body_trees`` optional). ``scenario_toml``: the resolved scenario.
    ``input_files``: files whose sha256 is recorded. ``command``: the command line.
    ``dt``/``duration`` in s; ``record_every`` only sizes the free-space estimate.
    ``body_poses`` / ``contacts``: create ``/trajectory/body_pose`` / ``/contacts``.
    Raises :class:`ResultsError` (nothing is created) when the file cannot be written.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        model_info: Mapping[str, object],
        scenario_toml: str,
        input_files: Sequence[str | os.PathLike[str]] = (),
        command: str = "",
        formulation: str = "",
        dt: float,
        duration: float,
        force: bool = False,
        record_every: int = 1,
        body_poses: bool = False,
        contacts: bool = False,
        flush_seconds: float = FLUSH_SECONDS,
        flush_rows: int = FLUSH_ROWS,
    ) -> None:
        self.path = Path(os.path.abspath(os.fspath(path)))
        self.flush_seconds = float(flush_seconds)
        self.flush_rows = int(flush_rows)
        self.flushes = 0
        self.status = "running"
        self._closed = True
        info = dict(model_info)
        missing = [k for k in list(_MODEL_META)[:7] if k not in info]
        if missing:
            raise ValueError(f"model_info lacks {', '.join(missing)}")
        self.q_names = [str(n) for n in info["q_names"]]  # type: ignore[union-attr]
        self.v_names = [str(n) for n in info["v_names"]]  # type: ignore[union-attr]
        self.body_names = [str(n) for n in info["body_names"]]  # type: ignore[union-attr]
        self.nq, self.nv, self.nb = len(self.q_names), len(self.v_names), len(self.body_names)
        self.dt = float(dt)
        self.body_poses = bool(body_poses)
        self._check_target(force)
        rows = int(duration / dt / max(1, record_every)) + 1 if dt > 0 else 0
        self._check_space(
            estimate_bytes(nq=self.nq, nv=self.nv, nb=self.nb, rows=rows, body_poses=body_poses)
        )
        hashes = self._hash_inputs(input_files)
        if force and self.path.exists():
            try:
                self.path.unlink()
            except OSError as exc:
                raise ResultsError(
                    f"{self.path}: cannot replace the existing file ({exc.strerror or exc})."
                ) from exc
        try:
            self._file = _create_file(self.path)
        except OSError as exc:
            raise ResultsError(f"{self.path}: cannot create the results file ({exc}).") from exc
        self._closed = False
        try:
            self._write_header(info, scenario_toml, hashes, command, formulation, dt, duration)
            self.trajectory = _Group(
                self._file.create_group("trajectory"),
                _trajectory_cols(self.nq, self.nv, self.nb, self.body_poses),
            )
            self.events = _Group(self._file.create_group("events"), _contact_cols(events=True))
            self.contacts = (
                _Group(self._file.create_group("contacts"), _contact_cols(events=False))
                if contacts
                else None
            )
            self.diagnostics = _Group(self._file.create_group("diagnostics"), _diagnostic_cols())
            self._describe_groups()
            self._file.flush()
        except BaseException as exc:
            # Nothing useful is in the file yet: remove it rather than leave a misleading one.
            self._closed = True
            try:
                self._file.close()
            finally:
                self.path.unlink(missing_ok=True)
            if isinstance(exc, Exception):
                raise ResultsError(f"{self.path}: cannot write the results file ({exc}).") from exc
            raise
        self._groups = [
            g for g in (self.trajectory, self.events, self.contacts, self.diagnostics) if g
        ]
        self._last_flush = _time.monotonic()
        self._started = _time.monotonic()
        self.last_time = float("nan")

    # ----------------------------------------------------------------- set-up

    def _check_target(self, force: bool) -> None:
        check_output_path(self.path, force)

    def _check_space(self, needed: int) -> None:
        free = _free_bytes(str(self.path.parent))
        if free < needed + SPACE_MARGIN_BYTES:
            raise ResultsError(
                f"{self.path}: not enough disk space: the results need about {_mib(needed)} "
                f"(uncompressed) but only {_mib(free)} are free on {self.path.parent}."
            )

    def _hash_inputs(self, files: Sequence[str | os.PathLike[str]]) -> list[tuple[str, str]]:
        out = []
        for f in files:
            p = Path(os.path.abspath(os.fspath(f)))
            try:
                out.append((str(p), _sha256(p)))
            except OSError as exc:
                raise ResultsError(
                    f"{p}: cannot read this input file to record its checksum "
                    f"({exc.strerror or exc})."
                ) from exc
        return out

    def _write_header(self, info, scenario_toml, hashes, command, formulation, dt, duration):
        f = self._file
        a = f.attrs
        a["format"] = FORMAT
        a["schema_version"] = np.int64(SCHEMA_VERSION)
        a["mbsim_version"] = _mbsim_version()
        a["created_utc"] = _utc_now()
        a["command"] = command
        a["formulation"] = formulation
        a["dt"] = float(dt)
        a["duration"] = float(duration)
        a["status"] = "running"
        a["message"] = ""
        g = f.create_group("scenario")
        g.attrs["description"] = "the fully resolved scenario and checksums of the input files"
        ds = g.create_dataset("toml", data=scenario_toml, dtype=_STR)
        ds.attrs.update(units="1", description="fully resolved scenario, TOML text")
        ds = g.create_dataset("input_files", data=[h[0] for h in hashes], dtype=_STR)
        ds.attrs.update(units="1", description="absolute paths of the files the run read")
        ds = g.create_dataset("sha256", data=[h[1] for h in hashes], dtype=_STR)
        ds.attrs.update(units="1", description="SHA-256 (hex) of each input file, same order")
        m = f.create_group("model")
        m.attrs["description"] = "the multibody model the trajectory refers to"
        for key, (units, desc) in _MODEL_META.items():
            if key not in info:
                continue
            value = info[key]
            if key in ("parents", "body_trees"):
                data = np.asarray(value, dtype=np.int64).reshape(-1)
            elif key == "masses":
                data = np.asarray(value, dtype=np.float64).reshape(-1)
            else:
                data = [str(x) for x in value]  # type: ignore[union-attr]
            if isinstance(data, list):
                ds = m.create_dataset(key, data=data, dtype=_STR, shape=(len(data),))
            else:
                ds = m.create_dataset(key, data=data)
            ds.attrs.update(units=units, description=desc)

    def _describe_groups(self) -> None:
        f = self._file
        f["trajectory"].attrs["description"] = "recorded states, one row per recorded step"
        f["events"].attrs["description"] = (
            "contact events, one row per event (contact_begin, contact_end, impact, stick, slip)"
        )
        if self.contacts is not None:
            f["contacts"].attrs["description"] = "every active contact at every recorded step"
        f["diagnostics"].attrs["description"] = "solver diagnostics, one row per recorded step"

    # ----------------------------------------------------------------- appending

    def _check_open(self) -> None:
        if self._closed:
            raise ResultsError(f"{self.path}: the results file is already closed ({self.status}).")

    def append_state(
        self,
        time: float,
        q,
        v,
        energy,
        body_pose=None,
        step: int | None = None,
    ) -> None:
        """One recorded state: ``q`` (nq), ``v`` (nv), ``energy`` (kinetic, potential, total),
        ``body_pose`` (nb, 7) if body poses are recorded; ``step`` defaults to round(time/dt).
        The arrays are copied."""
        self._check_open()
        time = float(time)
        if step is None:
            step = int(round(time / self.dt)) if self.dt > 0 else self.trajectory.committed
        row = {
            "time": time,
            "step": int(step),
            "q": _vector("q", q, (self.nq,)),
            "v": _vector("v", v, (self.nv,)),
            "energy": _vector("energy", energy, (3,)),
        }
        if self.body_poses:
            if body_pose is None:
                raise ValueError("this results file records body poses: pass body_pose")
            row["body_pose"] = _vector("body_pose", body_pose, (self.nb, 7))
        self.trajectory.add_row(row)
        self.last_time = time
        self._maybe_flush()

    def append_events(
        self,
        *,
        time,
        step,
        kind,
        body_a,
        body_b,
        point,
        normal,
        normal_impulse,
        tangent_impulse,
        normal_velocity_before,
        normal_velocity_after,
        energy_before=float("nan"),
        energy_after=float("nan"),
    ) -> None:
        """Append events, one per row; every argument is a length-E column (scalars broadcast).
        ``kind``: names from :data:`EVENT_KINDS` or their codes. Energies in J (impacts)."""
        self._check_open()
        kinds = np.atleast_1d(np.asarray(kind))
        n = len(kinds)
        if n == 0:
            return
        if kinds.dtype.kind in "US":
            bad = sorted(set(map(str, kinds)) - set(EVENT_KINDS))
            if bad:
                raise ValueError(f"unknown event kind(s) {bad}; known: {EVENT_KINDS}")
            codes = np.array([EVENT_KINDS.index(str(k)) for k in kinds], dtype=np.uint8)
        else:
            codes = kinds.astype(np.int64)
            if codes.min() < 0 or codes.max() >= len(EVENT_KINDS):
                raise ValueError(f"event kind codes must be in 0..{len(EVENT_KINDS) - 1}")
            codes = codes.astype(np.uint8)
        values = dict(
            time=time,
            step=step,
            body_a=body_a,
            body_b=body_b,
            point=point,
            normal=normal,
            normal_impulse=normal_impulse,
            tangent_impulse=tangent_impulse,
            normal_velocity_before=normal_velocity_before,
            normal_velocity_after=normal_velocity_after,
            energy_before=energy_before,
            energy_after=energy_after,
        )
        batch = {"kind": codes}
        for c in self.events.cols:
            if c.name != "kind":
                batch[c.name] = _column(c.name, values[c.name], c.dtype, c.shape, n)
        self.events.add_batch(batch, n)
        self._maybe_flush()

    def append_contacts(
        self,
        *,
        time,
        step,
        body_a,
        body_b,
        point,
        normal,
        normal_impulse,
        tangent_impulse,
        normal_velocity_before,
        normal_velocity_after,
        gap=float("nan"),
    ) -> None:
        """Append the active contacts of a recorded step (columns as in append_events, no
        kind, plus ``gap`` in m). Ignored when the file does not record contacts."""
        self._check_open()
        if self.contacts is None:
            return
        values = dict(
            time=time,
            step=step,
            body_a=body_a,
            body_b=body_b,
            point=point,
            normal=normal,
            normal_impulse=normal_impulse,
            tangent_impulse=tangent_impulse,
            normal_velocity_before=normal_velocity_before,
            normal_velocity_after=normal_velocity_after,
            gap=gap,
        )
        n = int(np.atleast_1d(np.asarray(body_a)).shape[0])
        if n == 0:
            return
        batch = {
            c.name: _column(c.name, values[c.name], c.dtype, c.shape, n) for c in self.contacts.cols
        }
        self.contacts.add_batch(batch, n)
        self._maybe_flush()

    def append_diagnostics(
        self,
        *,
        time: float,
        step: int,
        lcp_size: int = 0,
        lcp_pivots: int = 0,
        lcp_residual: float = 0.0,
        n_contacts: int = 0,
        max_penetration: float = 0.0,
        constraint_error: float = 0.0,
        step_seconds: float = float("nan"),
        solver: str | int = "none",
    ) -> None:
        """One row of solver diagnostics for a recorded step. ``solver``: a name from
        :data:`SOLVER_CODES` (or its code)."""
        self._check_open()
        if isinstance(solver, str):
            if solver not in SOLVER_CODES:
                raise ValueError(f"unknown solver {solver!r}; known: {SOLVER_CODES}")
            code = SOLVER_CODES.index(solver)
        else:
            code = int(solver)
        if not 0 <= code < len(SOLVER_CODES):
            raise ValueError(f"solver codes must be in 0..{len(SOLVER_CODES) - 1}")
        self.diagnostics.add_row(
            {
                "time": float(time),
                "step": int(step),
                "lcp_size": int(lcp_size),
                "lcp_pivots": int(lcp_pivots),
                "lcp_residual": float(lcp_residual),
                "n_contacts": int(n_contacts),
                "max_penetration": float(max_penetration),
                "constraint_error": float(constraint_error),
                "step_seconds": float(step_seconds),
                "solver": code,
            }
        )
        self._maybe_flush()

    # ----------------------------------------------------------------- flushing, finishing

    def _maybe_flush(self) -> None:
        if (
            max(g.pending_rows for g in self._groups) >= self.flush_rows
            or _time.monotonic() - self._last_flush >= self.flush_seconds
        ):
            self.flush()

    def flush(self) -> None:
        """Write every buffered row and flush the file (see :class:`_Group` for the order)."""
        self._check_open()
        try:
            pending = sum(g.pending_bytes for g in self._groups)
            if not pending:
                return
            free = _free_bytes(str(self.path.parent))
            # Compression may not shrink float data much: assume none.
            if free < pending + SPACE_MARGIN_BYTES:
                self._fail(
                    f"the disk is full: {_mib(free)} free on {self.path.parent}, "
                    f"{_mib(pending)} to write; the file holds the results up to "
                    f"t = {self._committed_time():g} s"
                )
            sealed = [g.write_sealed() for g in self._groups]
            if any(sealed):
                self._file.flush()
                for g in self._groups:
                    g.mark_sealed()
                self._file.flush()
            for g in self._groups:
                g.write_tail()
            self._file.flush()
            for g in self._groups:
                g.mark_tail()
            for g in self._groups:
                g.commit()
            self._file.attrs["last_time"] = self._committed_time()
            self._file.flush()
        except ResultsError:
            raise
        except Exception as exc:  # h5py raises OSError or RuntimeError on write failures
            self._fail(f"writing the results failed ({exc})")
        self.flushes += 1
        self._last_flush = _time.monotonic()

    def _committed_time(self) -> float:
        g = self.trajectory
        if len(g.tail_rows["time"]):
            return float(g.tail_rows["time"][-1])
        return float(self._file["trajectory/time"][g.sealed - 1]) if g.sealed else float("nan")

    def _fail(self, message: str) -> None:
        """Mark the file failed (best effort: the disk may be full) and raise ResultsError."""
        self._set_final("failed", message)
        raise ResultsError(f"{self.path}: {message}.")

    def _set_final(self, status: str, message: str) -> None:
        self.status = status
        self._closed = True
        try:
            a = self._file.attrs
            a["status"] = status
            a["message"] = message
            a["ended_utc"] = _utc_now()
            a["wall_seconds"] = _time.monotonic() - self._started
            self._file.flush()
        except Exception:  # the state is already as good as it gets; report the first error
            pass
        finally:
            try:
                self._file.close()
            except Exception:
                pass

    def finish(self, status: str = "complete", message: str = "") -> None:
        """Write what is buffered, set ``status`` (complete, interrupted or failed) and
        ``message``, close the file. A second call does nothing."""
        if self._closed:
            return
        if status not in STATUSES[1:]:
            raise ValueError(f"status must be one of {STATUSES[1:]}, not {status!r}")
        self.flush()
        try:
            for g in self._groups:
                g.close_tail()
        except Exception as exc:
            self._fail(f"writing the results failed ({exc})")
        self._set_final(status, message)

    def group(self, name: str) -> h5py.Group:
        """An extra top-level group for auxiliary records (e.g. ``lcp_dumps``), created on
        first use; its content is written directly, outside the buffered tables."""
        self._check_open()
        return self._file.require_group(name)

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._closed:
            return False
        if exc_type is None:
            self.finish("complete")
            return False
        if issubclass(exc_type, KeyboardInterrupt):
            status, message = "interrupted", "interrupted by the user (SIGINT / Ctrl-C)"
        else:
            status, message = "failed", f"{exc_type.__name__}: {exc}"
        try:
            self.finish(status, message)
        except ResultsError:
            pass  # the original exception is the one to report
        return False

    def __del__(self) -> None:
        # A writer dropped without finish (e.g. a bug): close the HDF5 file so it is
        # flushed; the status stays "running", which is the truth.
        if not getattr(self, "_closed", True):
            try:
                self._file.close()
            except Exception:
                pass


# --------------------------------------------------------------------------- reader


@dataclass
class Results:
    """The content of a results file as numpy arrays (see docs/hdf5-format.md).

    ``status`` is the file's status attribute; for ``running``, ``writer_alive`` tells whether
    a process still holds the file open for writing (False: the writer was killed or crashed).
    ``events``/``contacts``/``diagnostics`` map column names to arrays; ``events["kind"]`` and
    ``diagnostics["solver"]`` hold codes into :data:`EVENT_KINDS` / :data:`SOLVER_CODES`.
    """

    path: Path
    attrs: dict
    status: str
    message: str
    writer_alive: bool | None
    scenario_toml: str
    input_files: dict[str, str]
    body_names: list[str]
    joint_names: list[str]
    joint_types: list[str]
    parents: np.ndarray
    masses: np.ndarray
    q_names: list[str]
    v_names: list[str]
    tree_names: list[str]
    body_trees: np.ndarray
    time: np.ndarray
    step: np.ndarray
    q: np.ndarray
    v: np.ndarray
    energy: np.ndarray
    body_pose: np.ndarray | None
    events: dict[str, np.ndarray]
    contacts: dict[str, np.ndarray] | None
    diagnostics: dict[str, np.ndarray]
    event_kinds: tuple[str, ...] = field(default=EVENT_KINDS)
    solver_codes: tuple[str, ...] = field(default=SOLVER_CODES)

    @property
    def formulation(self) -> str:
        return str(self.attrs.get("formulation", ""))

    @property
    def dt(self) -> float:
        return float(self.attrs.get("dt", float("nan")))

    @property
    def duration(self) -> float:
        return float(self.attrs.get("duration", float("nan")))

    def event_kind_names(self) -> np.ndarray:
        """``events["kind"]`` as strings."""
        return np.array([self.event_kinds[k] for k in self.events["kind"]], dtype=object)

    def body_name(self, index: int) -> str:
        """Name of body ``index`` (-1: ``world``)."""
        return "world" if index < 0 else self.body_names[index]


def _attr(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _open(path: Path) -> tuple[h5py.File, bool]:
    """Open read-only; returns (file, locked_by_writer). HDF5 takes a file lock while writing:
    if we cannot get it, a live writer holds the file and we read a snapshot without locking."""
    try:
        return h5py.File(path, "r"), False
    except OSError as exc:
        if "lock" not in str(exc).lower():
            raise
    return h5py.File(path, "r", locking=False), True


def _columns(group: h5py.Group) -> dict[str, np.ndarray]:
    """Every column of a group: the committed rows of the main datasets, then those of the
    ``_tail`` subgroup if the run did not end cleanly (see :class:`_Group`)."""
    names = [k for k in group.keys() if isinstance(group[k], h5py.Dataset)]

    def committed(g: h5py.Group) -> int:
        n = min([g[k].shape[0] for k in names], default=0)
        return min(n, int(g.attrs.get("rows", n)))

    n = committed(group)
    out = {k: group[k][:n] for k in names}
    tail = group.get("_tail")
    if isinstance(tail, h5py.Group) and all(k in tail for k in names):
        m = committed(tail)
        out = {k: np.concatenate([out[k], tail[k][:m]], axis=0) for k in names}
    return out


def load_results(path: str | os.PathLike[str]) -> Results:
    """Read an mbsim results file into a :class:`Results`.

    Raises :class:`ResultsError` naming the file when it is missing, not HDF5, not an mbsim
    results file, of another schema version, or damaged.
    """
    p = Path(os.path.abspath(os.fspath(path)))
    if not p.exists():
        raise ResultsError(f"{p}: results file does not exist.")
    if not p.is_file():
        raise ResultsError(f"{p}: is not a regular file, so it is not a results file.")
    try:
        is_hdf5 = h5py.is_hdf5(str(p))
    except OSError as exc:
        raise ResultsError(f"{p}: cannot be read ({exc}).") from exc
    if not is_hdf5:
        raise ResultsError(f"{p}: is not an HDF5 file, so it is not an mbsim results file.")
    try:
        f, locked = _open(p)
    except OSError as exc:
        raise ResultsError(f"{p}: HDF5 cannot open it (damaged file?): {exc}.") from exc
    try:
        with f:
            return _read(p, f, locked)
    except ResultsError:
        raise
    except (KeyError, OSError, ValueError, TypeError) as exc:
        raise ResultsError(f"{p}: the results file is damaged or incomplete ({exc}).") from exc


def _read(p: Path, f: h5py.File, locked: bool) -> Results:
    attrs = {k: _attr(v) for k, v in f.attrs.items()}
    if attrs.get("format") != FORMAT:
        raise ResultsError(
            f"{p}: is an HDF5 file but not an mbsim results file (no format={FORMAT!r} attribute)."
        )
    version = attrs.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ResultsError(
            f"{p}: has results schema version {version}; this mbsim reads version {SCHEMA_VERSION}."
        )
    status = str(attrs.get("status", ""))
    sc = f["scenario"]
    m = f["model"]

    def names(key: str) -> list[str]:
        return [str(x) for x in m[key].asstr()[...]] if key in m else []

    traj = _columns(f["trajectory"])
    n_bodies = len(names("body_names"))
    return Results(
        path=p,
        attrs=attrs,
        status=status,
        message=str(attrs.get("message", "")),
        writer_alive=locked if status == "running" else None,
        scenario_toml=str(sc["toml"].asstr()[()]),
        input_files=dict(
            zip(
                (str(x) for x in sc["input_files"].asstr()[...]),
                (str(x) for x in sc["sha256"].asstr()[...]),
                strict=True,
            )
        ),
        body_names=names("body_names"),
        joint_names=names("joint_names"),
        joint_types=names("joint_types"),
        parents=m["parents"][...],
        masses=m["masses"][...],
        q_names=names("q_names"),
        v_names=names("v_names"),
        tree_names=names("tree_names"),
        body_trees=m["body_trees"][...] if "body_trees" in m else np.zeros(n_bodies, np.int64),
        time=traj["time"],
        step=traj["step"],
        q=traj["q"],
        v=traj["v"],
        energy=traj["energy"],
        body_pose=traj.get("body_pose"),
        events=_columns(f["events"]),
        contacts=_columns(f["contacts"]) if "contacts" in f else None,
        diagnostics=_columns(f["diagnostics"]),
    )
