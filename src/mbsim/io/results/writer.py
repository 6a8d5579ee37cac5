"""Writing a results file: :class:`ResultsWriter` streams a run into HDF5 (schema version 1).

docs/hdf5-format.md is the reference for the layout. Units are SI: time in s, joint positions
in rad or m (free joints: m and a unit quaternion; spherical joints: a unit quaternion),
velocities in rad/s or m/s, impulses in N s, energies in J, lengths in m, wall-clock durations
in s.

Writing (:class:`ResultsWriter`, a context manager):

* Everything that can be checked before the run is: the path is a valid name for a regular file
  that is none of the run's inputs, the folder exists and is writable, the file does not exist
  (unless ``force``), the disk has room for the estimated size. The file is then claimed (an
  exclusive lock held until it is closed, :class:`~mbsim.io.results.target.FileClaim`) and
  created at once, so an unwritable path or a file in use fails before the first step.
* Rows are buffered in memory and written only inside :meth:`ResultsWriter.flush`, which runs
  when a buffer holds ``flush_rows`` rows or ``flush_seconds`` (1 s) of wall time have passed,
  and ends with an HDF5 flush. Outside a flush the file on disk is the consistent state of the
  last flush, so SIGKILL or a power cut leaves a file h5py opens, holding everything up to the
  last flush; its ``status`` attribute stays ``running``. SWMR mode is deliberately not used:
  a SWMR file whose writer died cannot be opened by plain h5py until ``h5clear`` is run on it.
* A flush writes the datasets, flushes, then records the committed row count in each group's
  ``rows`` attribute and flushes again, so a reader of a file killed mid-flush can ignore a
  partly written tail (:func:`load_results` does).
* Before each flush the disk space the flush and the file's end after it need is reserved
  (:meth:`~mbsim.io.results.target.FileClaim.reserve`: the new rows, the committed tails and
  the tails the flush leaves; for the finish, which leaves none, the rows and the committed
  tails alone); when the disk cannot give it the run stops with status ``failed`` and a
  message, the file finished with every row if the room for that alone can be reserved,
  else with the committed rows (in the room the flush before reserved), instead of HDF5
  failing half-way through a write (which leaves the file unreadable).
* A flush happens only between recorded steps (``/trajectory`` and ``/diagnostics`` of equal
  length), so a killed run leaves tables that agree.
* Whole chunks are encoded here (:mod:`mbsim.io.results.chunks`: the shuffle + gzip bytes,
  built cheaply) and written with ``write_direct_chunk``; HDF5 compresses nothing itself.
* The tables' ``_tail`` groups are made at the first flush before the end (and flushed
  before any row is written): a run that ends before it never has them.
* Finishing writes every remaining row straight to the main datasets (the last chunk partial,
  written with the shuffle filter skipped in its filter mask: ``chunks.encode_last``), then
  counts them in ``rows`` and deletes the tails (if made).
* The file is created with the chunk indexes' B-tree order :data:`ISTORE_K` (small nodes for
  columns of a few chunks; every HDF5 reads it), and the attributes written again at every
  flush or at the end (``rows``, ``last_time``, ``status``, ``message``) are kept open.
* Leaving the ``with`` block normally marks the file ``complete``; a KeyboardInterrupt marks it
  ``interrupted``; any other exception ``failed`` with the exception as the message.

Reading: :mod:`mbsim.io.results.reader`.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import time as _time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

import h5py
import numpy as np

from mbsim.io.files import file_sha256
from mbsim.io.results import schema
from mbsim.io.results import target as _target
from mbsim.io.results.schema import (
    _MODEL_META,
    _STR,
    EVENT_KINDS,
    SOLVER_CODES,
    ResultsError,
    _contact_cols,
    _diagnostic_cols,
    _mib,
    _trajectory_cols,
)
from mbsim.io.results.table import Table, _vector, put_attrs, write_scalar, write_text

#: The /events/kind code of each event name (its index in EVENT_KINDS).
_EVENT_CODES = {name: code for code, name in enumerate(EVENT_KINDS)}
#: HDF5 metadata, the global heap and attribute updates need some room beyond the raw data.
SPACE_MARGIN_BYTES = 1 << 20
#: More recorded rows than any run can produce (1e12: at 1 us of wall time per step, 11 days):
#: a duration / dt past it is a mistake in the numbers, said as such, not a disk-space error.
MAX_ROWS = 10**12
FLUSH_SECONDS = 1.0
#: Rows buffered before a flush is forced regardless of time (bounds memory).
FLUSH_ROWS = 4096


#: The diagnostics of a free step's rows, which :meth:`ResultsWriter.append_free_steps` fills.
_FREE_DIAGNOSTICS = dict(
    lcp_size=0, lcp_pivots=0, lcp_residual=0, n_contacts=0, max_penetration=0,
    constraint_error=0, solver=SOLVER_CODES.index("none"),
)  # fmt: skip


#: The v1 B-tree order of the datasets' chunk indexes (HDF5's "indexed storage internal node
#: K", default 32: nodes of up to 64 chunks, ~2.5 KiB each, made and flushed whole for every
#: chunked dataset's first chunk, though a column of a short run has one chunk). 2: nodes of
#: up to 4 chunks. A file-creation property recorded in the superblock (version 1 instead of
#: 0, read by every HDF5 since 1.6); readers see the same datasets.
ISTORE_K = 2


def _hdf5_library():
    """The HDF5 library h5py runs on, as a ctypes handle (for ``H5Pset_istore_k``, which h5py
    does not expose), or None where it cannot be found for certain (no ``/proc``, another
    version): the file is then created with HDF5's defaults. Found once per process."""
    if "lib" not in _hdf5:
        lib = None
        try:
            import ctypes

            with open("/proc/self/maps") as maps:
                paths = {
                    line.split(maxsplit=5)[5].strip()
                    for line in maps
                    if "libhdf5" in line and "libhdf5_hl" not in line
                }
            if len(paths) == 1:
                lib = ctypes.CDLL(paths.pop())
                version = [ctypes.c_uint() for _ in range(3)]
                lib.H5get_libversion(*map(ctypes.byref, version))
                if tuple(v.value for v in version) != h5py.version.hdf5_version_tuple[:3]:
                    lib = None
                else:
                    lib.H5Pset_istore_k.argtypes = [ctypes.c_int64, ctypes.c_uint]
                    lib.H5Pset_istore_k.restype = ctypes.c_int
        except (OSError, AttributeError, IndexError, ValueError):
            lib = None
        _hdf5["lib"] = lib
    return _hdf5["lib"]


_hdf5: dict = {}


def _create_file(path: Path) -> h5py.File:
    """``h5py.File(path, "w", locking=False)`` (HDF5 must not lock the file: the claim's
    ``flock`` would conflict), with the chunk indexes' B-tree order :data:`ISTORE_K`."""
    lib = _hdf5_library()
    try:  # the property lists h5py.File would make (h5py's own helpers), K set on the fcpl
        from h5py._hl.files import make_fapl, make_fcpl

        fcpl = make_fcpl(track_order=h5py.get_config().track_order)
        fapl = make_fapl(None, locking=False)
        ok = lib is not None and lib.H5Pset_istore_k(fcpl.id, ISTORE_K) >= 0
    except Exception:  # another h5py's helpers: HDF5's defaults
        ok = False
    if not ok:
        return h5py.File(path, "w", locking=False)
    return h5py.File(h5py.h5f.create(os.fsencode(path), h5py.h5f.ACC_TRUNC, fapl=fapl, fcpl=fcpl))


def _utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _mbsim_version() -> str:
    from mbsim import __version__

    return __version__


class ResultsWriter:
    """Stream a run into an HDF5 results file (schema version 1; see the module docstring).

    ``model_info``: ``/model`` content (see :func:`model_info`; ``body_names``, ``joint_names``,
    ``joint_types``, ``parents``, ``q_names``, ``v_names``, ``masses`` are required,
    ``tree_names`` and ``body_trees`` optional). ``scenario_toml``: the resolved scenario.
    ``input_files``: files whose sha256 is recorded. ``command``: the command line.
    ``dt``/``duration`` in s; ``record_every`` only sizes the free-space estimate.
    ``body_poses`` / ``contacts``: create ``/trajectory/body_pose`` / ``/contacts``.
    ``records``: extra groups and their attributes (group name -> attributes), written with
    the header, before the file's first flush (``mbsim batch`` marks its files this way).
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
        records: Mapping[str, Mapping[str, object]] | None = None,
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
        self._check_target(path, force, input_files)
        self._check_space(dt, duration, record_every)
        hashes = self._hash_inputs(input_files)
        # the exclusive claim on the path: from here until the file is closed no other run
        # can open, truncate or unlink it (target.FileClaim)
        self._claim = _target.FileClaim(self.path, force)
        try:
            if not self._claim.still_ours():
                raise OSError("another process replaced the file just claimed")
            # HDF5 must not lock it again: its own flock would conflict with the claim's
            self._file = _create_file(self.path)
        except Exception as exc:
            if self._claim.still_ours() and os.fstat(self._claim.fd).st_size == 0:
                self.path.unlink(missing_ok=True)  # the empty file this claim created
            self._claim.release()
            raise ResultsError(f"{self.path}: cannot create the results file ({exc}).") from exc
        self._closed = False
        try:
            self._write_header(info, scenario_toml, hashes, command, formulation, dt, duration)
            for name, attrs in (records or {}).items():
                group = self._file.require_group(name)
                for key, value in attrs.items():
                    group.attrs[key] = value
            self.trajectory = Table(
                self._file.create_group("trajectory"),
                _trajectory_cols(self.nq, self.nv, self.nb, self.body_poses),
            )
            self.events = Table(self._file.create_group("events"), _contact_cols(events=True))
            self.contacts = (
                Table(self._file.create_group("contacts"), _contact_cols(events=False))
                if contacts
                else None
            )
            self.diagnostics = Table(self._file.create_group("diagnostics"), _diagnostic_cols())
            self._describe_groups()
            self._file.flush()
            self._claim.settle()
        except BaseException as exc:
            # Nothing useful is in the file yet: remove it rather than leave a misleading one.
            self._closed = True
            try:
                self._file.close()
            finally:
                if self._claim.still_ours():  # ours (claimed): removing it loses nothing
                    self.path.unlink(missing_ok=True)
                self._claim.release()
            if isinstance(exc, Exception):
                raise ResultsError(f"{self.path}: cannot write the results file ({exc}).") from exc
            raise
        self._groups = [
            g for g in (self.trajectory, self.events, self.contacts, self.diagnostics) if g
        ]
        self._last_flush = _time.monotonic()
        self._started = _time.monotonic()
        self._last_time: h5py.h5a.AttrID | None = None  # the file's last_time, once made
        self._tails_made = False  # the tables' _tail groups exist (Table.make_tail)
        self.last_time = float("nan")

    # ----------------------------------------------------------------- set-up

    def _check_target(self, path, force: bool, inputs) -> None:
        _target.check_output_path(path, force, list(inputs))

    def _check_space(self, dt: float, duration: float, record_every: int) -> None:
        """Refuse a run whose recorded rows cannot fit on the disk (or cannot be counted)."""
        steps = duration / dt if dt > 0 else 0.0
        rows = steps / max(1, record_every) + 1
        if not math.isfinite(rows) or rows > MAX_ROWS:
            raise ResultsError(
                f"{self.path}: duration = {duration:g} s at dt = {dt:g} s is {steps:.3g} "
                f"time steps, too many to run or record (at most {MAX_ROWS:.0e}); raise dt or "
                "shorten the duration."
            )
        needed = schema.estimate_bytes(
            nq=self.nq, nv=self.nv, nb=self.nb, rows=int(rows), body_poses=self.body_poses
        )
        free = _target.free_bytes(str(self.path.parent))
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
                out.append((str(p), file_sha256(p)))
            except OSError as exc:
                raise ResultsError(
                    f"{p}: cannot read this input file to record its checksum "
                    f"({exc.strerror or exc})."
                ) from exc
        return out

    def _write_header(self, info, scenario_toml, hashes, command, formulation, dt, duration):
        f = self._file
        put_attrs(
            f,
            (
                ("format", schema.FORMAT),
                ("schema_version", np.int64(schema.SCHEMA_VERSION)),
                ("mbsim_version", _mbsim_version()),
                ("created_utc", _utc_now()),
                ("command", command),
                ("formulation", formulation),
                ("dt", float(dt)),
                ("duration", float(duration)),
                ("status", "running"),
                ("message", ""),
            ),
        )
        # status and message, written once more at the end: kept open (the close closes them)
        self._status = (h5py.h5a.open(f.id, b"status"), h5py.h5a.open(f.id, b"message"))
        g = f.create_group("scenario")
        put_attrs(
            g, [("description", "the fully resolved scenario and checksums of the input files")]
        )
        ds = g.create_dataset("toml", data=scenario_toml, dtype=_STR)
        put_attrs(ds, (("units", "1"), ("description", "fully resolved scenario, TOML text")))
        ds = g.create_dataset("input_files", data=[h[0] for h in hashes], dtype=_STR)
        put_attrs(ds, (("units", "1"), ("description", "absolute paths of the files the run read")))
        ds = g.create_dataset("sha256", data=[h[1] for h in hashes], dtype=_STR)
        put_attrs(
            ds, (("units", "1"), ("description", "SHA-256 (hex) of each input file, same order"))
        )
        m = f.create_group("model")
        put_attrs(m, [("description", "the multibody model the trajectory refers to")])
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
            put_attrs(ds, (("units", units), ("description", desc)))

    def _describe_groups(self) -> None:
        for table, text in (
            (self.trajectory, "recorded states, one row per recorded step"),
            (self.events, "contact and joint-limit events, one row per event (kinds: "
             "/events/kind codes)"),
            (self.contacts, "every active contact at every recorded step"),
            (self.diagnostics, "solver diagnostics, one row per recorded step"),
        ):  # fmt: skip
            if table is not None:
                put_attrs(table.h5, [("description", text)])

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
        tau=None,
        tau_limit=None,
    ) -> None:
        """One recorded state: ``q`` (nq), ``v`` (nv), ``energy`` (kinetic, potential, total),
        ``body_pose`` (nb, 7) if body poses are recorded; ``step`` defaults to round(time/dt);
        ``tau`` (nv, default 0) the actuator forces of the step that ended here, ``tau_limit``
        (nv, default 0) their effort-saturation flags (-1, 0, +1). The arrays are copied."""
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
            "tau": np.zeros(self.nv) if tau is None else _vector("tau", tau, (self.nv,)),
            "tau_limit": np.zeros(self.nv, np.int8)
            if tau_limit is None
            else np.asarray(tau_limit, dtype=np.int8).reshape(self.nv),
        }
        if self.body_poses:
            if body_pose is None:
                raise ValueError("this results file records body poses: pass body_pose")
            row["body_pose"] = _vector("body_pose", body_pose, (self.nb, 7))
        self.trajectory.add_row(row)
        self.last_time = time
        self._maybe_flush()

    def append_free_steps(
        self, time, step, q, v, energy, body_pose=None, step_seconds=np.nan, tau=None,
        tau_limit=None, lcp=None,
    ):  # fmt: skip
        """Rows of :meth:`append_state` and :meth:`append_diagnostics` at once for ``n``
        recorded steps in which no contact was found: ``time``, ``step`` (n,), ``q`` (n, nq),
        ``v`` (n, nv), ``energy`` (n, 3), ``body_pose`` (n, nb, 7) when body poses are
        recorded, ``step_seconds`` (scalar or (n,)), ``tau`` (n, nv) and ``tau_limit`` (n, nv)
        the actuators' applied forces and effort flags (0 when None), ``lcp``: None when no
        step solved an LCP, else {lcp_size, lcp_pivots, lcp_residual, solver (codes of
        SOLVER_CODES)} of (n,) arrays (joint-limit steps, simcore/limit_step.py), with
        n_contacts and max_penetration when contact steps were taken (simcore/
        contact_loop.py). The compiled loop of steps records through it (simcore/free_loop.py);
        the rows are those the one-row calls would write. The arrays are copied."""
        self._check_open()
        n = int(np.asarray(step).shape[0])
        if n == 0:
            return
        if self.body_poses and body_pose is None:
            raise ValueError("this results file records body poses: pass body_pose")
        given = dict(time=time, step=step, q=q, v=v, energy=energy, body_pose=body_pose)
        zero = {}
        for name, value in (("tau", tau), ("tau_limit", tau_limit)):
            if value is None:
                zero[name] = 0
            else:
                given[name] = value
        self.trajectory.add_block(given, zero, n)
        given = dict(time=time, step=step, step_seconds=step_seconds)
        fill = _FREE_DIAGNOSTICS
        if lcp is not None:  # limit steps of the compiled loop: their LCP's diagnostics
            fill = dict(fill)
            for key in lcp:
                given[key] = lcp[key]
                del fill[key]
        self.diagnostics.add_block(given, fill, n)
        self.last_time = float(np.asarray(time)[-1])
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
            names = [str(k) for k in kinds.tolist()]  # (bytes decoded as str() shows them)
            codes = [_EVENT_CODES.get(k, -1) for k in names]
            if -1 in codes:
                bad = sorted(set(names) - set(EVENT_KINDS))
                raise ValueError(f"unknown event kind(s) {bad}; known: {EVENT_KINDS}")
            codes = np.array(codes, dtype=np.uint8)
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
        values["kind"] = codes
        # straight into the table's buffers (numpy's assignment broadcasts scalars and single
        # rows and casts to the column's dtype, as _column's copy did before add_batch's)
        self.events.add_block(values, {}, n)
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
        self.contacts.add_block(values, {}, n)  # as append_events
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
        traj, diag = self.trajectory.total_rows, self.diagnostics.total_rows
        # Flush only between recorded steps, when /trajectory and /diagnostics hold the same
        # number of rows, so that a killed run leaves tables of equal length (a writer that
        # records no diagnostics flushes at any row). Memory bounds the wait.
        between_steps = traj == diag if diag else traj > 1
        pending = max(g.pending_rows for g in self._groups)
        if (between_steps or pending >= 4 * self.flush_rows) and (
            pending >= self.flush_rows or _time.monotonic() - self._last_flush >= self.flush_seconds
        ):
            self.flush()

    def flush(self) -> None:
        """Write every buffered row and flush the file (see :class:`Table` for the order)."""
        self._check_open()
        self._write(final=False)

    def _write(self, final: bool, reserve: bool = True) -> None:
        """Write the buffered rows: whole chunks to the main datasets and the rest to the
        tails, or with ``final`` every row to the main datasets and the tails deleted (the end
        of the run). ``reserve``: make room first (not when the disk is known to be full: the
        room reserved at the previous flush holds the tails)."""
        try:
            if not self._write_rows(final, reserve):
                return
        except ResultsError:
            raise
        except Exception as exc:  # h5py raises OSError or RuntimeError on write failures
            self._fail(f"writing the results failed ({exc})")
        self.flushes += 1
        self._last_flush = _time.monotonic()

    def _write_rows(self, final: bool, reserve: bool) -> bool:
        """:meth:`_write` without its error handling; False when there was nothing to do."""
        pending = sum(g.pending_bytes for g in self._groups)
        if not pending and not final:
            return False
        # Encoded chunks are at most a little larger than the raw rows (stored deflate
        # blocks); the tail is rewritten in place (fixed-size uncompressed chunks), so new
        # rows need new space once; finishing the file from the new committed state needs
        # its own room on top (SPACE_MARGIN_BYTES covers the encoding's overhead).
        if reserve:
            self._make_room(pending + self._finish_bytes(final))
        if not final and not self._tails_made:
            # the tails, made at the first flush before the end (Table.make_tail) and
            # flushed on their own: nothing is committed anywhere yet
            for g in self._groups:
                g.make_tail()
            self._file.flush()
            self._tails_made = True
        sealed = [g.write_sealed(final) for g in self._groups]
        if any(sealed):
            self._file.flush()
            for g in self._groups:
                g.mark_sealed()
            if not final or self._tails_made:
                # the counters on disk before the tails change or go; at the end of a run
                # that never made them, the flush below (after last_time) writes them
                self._file.flush()
        if final:
            for g in self._groups:
                g.delete_tail()
        else:
            for g in self._groups:
                g.write_tail()
            self._file.flush()
            for g in self._groups:
                g.mark_tail()
        for g in self._groups:
            g.commit(final)
        if self._last_time is not None:
            write_scalar(self._last_time, self._committed_time(), np.float64)
        else:
            put_attrs(self._file, [("last_time", self._committed_time())])
            self._last_time = h5py.h5a.open(self._file.id, b"last_time")
        self._file.flush()
        return True

    def _finish_bytes(self, final: bool = False) -> int:
        """Disk the next flush and the finish after it need besides the new rows: the
        committed tails (the flush seals them into the main datasets: new space, uncompressed
        at most), the tails that flush leaves (the finish moves them into the main datasets:
        a flush that finds the disk full finishes the file in the room the flush before it
        reserved) and the final attributes (SPACE_MARGIN_BYTES). ``final``: the next flush is
        the finish, which leaves no tail (reserving for one would fail a run that fits)."""
        tails = sum(g.tail_bytes for g in self._groups)
        if not final:
            tails += sum(g.next_tail_bytes for g in self._groups)
        return tails + SPACE_MARGIN_BYTES

    def _lack_of_room(self, nbytes: int) -> str | None:
        """Reserve ``nbytes`` past the end of the file (see :mod:`mbsim.io.results.target`;
        without ``fallocate`` the free space is checked instead): None when there is room,
        else why not."""
        try:
            if self._claim.reserve(nbytes):
                return None
        except OSError as exc:
            return f"{exc.strerror or exc} while reserving {_mib(nbytes)}"
        free = _target.free_bytes(str(self.path.parent))
        return None if free >= nbytes else f"{_mib(free)} free, {_mib(nbytes)} needed"

    def _make_room(self, nbytes: int) -> None:
        """Reserve ``nbytes`` before HDF5 writes (:meth:`_lack_of_room`); a full disk ends the
        run as a clean failure (:meth:`_fail_disk_full`)."""
        detail = self._lack_of_room(nbytes)
        if detail is not None:
            self._fail_disk_full(detail)

    def _fail_disk_full(self, detail: str) -> NoReturn:
        """The disk cannot take the next flush: finish the file (status failed) with every
        row when the room that finish alone needs (the unflushed rows and the tails, into the
        main datasets) can still be reserved, else from its committed rows alone (in the room
        the flush before reserved, :meth:`_finish_bytes`), and raise ResultsError."""
        pending = sum(g.pending_bytes for g in self._groups)
        if not pending or self._lack_of_room(pending + self._finish_bytes(final=True)) is not None:
            for g in self._groups:
                g.drop_pending()
        try:
            self._write_rows(final=True, reserve=False)
        except Exception:  # the committed rows stay readable through the tails
            pass
        message = (
            f"the disk is full on {self.path.parent} ({detail}); the file holds the results "
            f"up to t = {self._committed_time():g} s"
        )
        self._fail(message)

    def _committed_time(self) -> float:
        return self.trajectory.last_time

    def _fail(self, message: str) -> NoReturn:
        """Mark the file failed (best effort: the disk may be full) and raise ResultsError."""
        self._set_final("failed", message)
        raise ResultsError(f"{self.path}: {message}.")

    def _set_final(self, status: str, message: str) -> bool:
        """Record the final status, close the file and give up the claim on it. False when
        the path no longer names this run's file (another process removed or replaced it)."""
        self.status = status
        self._closed = True
        try:
            f = self._file
            write_text(self._status[0], status)  # both written with the header, kept open
            if message:  # the header's message is "" (a run that ends complete keeps it)
                write_text(self._status[1], message)
            # (once: the file is closed below, and every caller checks _closed first)
            put_attrs(
                f, (("ended_utc", _utc_now()), ("wall_seconds", _time.monotonic() - self._started))
            )
        except Exception:  # the state is already as good as it gets; report the first error
            pass
        finally:
            try:
                # closing flushes: the status reaches the file in the flush after the
                # rows' (_write_rows), as an explicit flush here would write it
                self._file.close()
            except Exception:
                pass
            ours = self._claim.still_ours()
            self._claim.release()
        return ours

    def finish(self, status: str = "complete", message: str = "") -> None:
        """Write what is buffered, set ``status`` (complete, interrupted or failed) and
        ``message``, close the file. A second call does nothing. Raises ResultsError when the
        file cannot be finished (the disk is full: status failed) or when another process
        removed or replaced it during the run (a run never reports a file it did not write)."""
        if self._closed:
            return
        if status not in schema.STATUSES[1:]:
            raise ValueError(f"status must be one of {schema.STATUSES[1:]}, not {status!r}")
        self._write(final=True)
        if not self._set_final(status, message):
            self.status = "failed"
            raise ResultsError(
                f"{self.path}: was removed or replaced by another process while this run "
                "wrote it; this run's results are lost."
            )

    def reserve(self, nbytes: int) -> None:
        """Make room for ``nbytes`` about to be written directly into an extra group
        (:meth:`group`, outside the buffered tables), so HDF5 never meets a full disk there
        either; a disk that cannot give it fails the run cleanly (ResultsError, status
        failed, the committed rows kept)."""
        self._check_open()
        self._make_room(int(nbytes) + self._finish_bytes())

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
            self._claim.release()
