"""Reading a results file: :func:`load_results` returns a :class:`Results` of numpy arrays."""

from __future__ import annotations

import functools
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from mbsim.io.results.schema import (
    EVENT_KINDS,
    FORMAT,
    SCHEMA_VERSION,
    SOLVER_CODES,
    ResultsError,
    _Col,
    _contact_cols,
    _diagnostic_cols,
    _trajectory_cols,
)
from mbsim.io.results.target import writer_holds
from mbsim.names import FLOOR, WORLD


@dataclass
class Results:
    """The content of a results file as numpy arrays (see docs/hdf5-format.md).

    ``status`` is the file's status attribute; for ``running``, ``writer_alive`` tells whether
    a process still holds the file open for writing (False: the writer was killed or crashed).
    ``events``/``contacts``/``diagnostics`` map column names to arrays; ``events["kind"]`` and
    ``diagnostics["solver"]`` hold codes into :data:`EVENT_KINDS` / :data:`SOLVER_CODES`.
    ``notes`` says what the reader corrected (a killed run's tables trimmed to one length).
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
    #: What the reader corrected, one sentence each (e.g. tables trimmed to a common length).
    notes: list[str] = field(default_factory=list)
    #: actuator forces (rows, nv; N m or N) and effort flags (rows, nv; -1, 0, +1); None in
    #: files written before they were recorded
    tau: np.ndarray | None = None
    tau_limit: np.ndarray | None = None
    #: ``python`` when a Python controller drove the run (Simulator.run(controller=...)),
    #: else "" (the scenario's controls only): such a run cannot be replayed from the file
    controller: str = ""
    controller_name: str = ""
    #: the attributes of ``/summary`` (written when the run ends; empty before that)
    run_summary: dict = field(default_factory=dict)
    #: ``tree/link`` of the links with static collision shapes (``/model/static_links``);
    #: None in files written before it was recorded
    static_links: list[str] | None = None
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
        """Name of body ``index``: its ``/model/body_names`` entry, and for -1 (the static
        world) :meth:`static_name`."""
        return self._static_name if index < 0 else self.body_names[index]

    @functools.cached_property
    def _static_name(self) -> str:
        return self.static_name()

    def static_name(self) -> str:
        """The name of body index -1 in the scenario's vocabulary (mbsim.names): the one link
        the static world is made of when there is one, ``builtin/floor`` for a scene whose
        only static shape is the built-in floor (what ``mbsim info`` and the scenario's
        ``pairs`` call it); ``world`` when it holds several links (say the floor and a
        fixed base, whose contacts the file does not tell apart) or the file predates
        ``/model/static_links``."""
        if self.static_links is None:
            return WORLD
        links = [*self.static_links, *([FLOOR] if self.floor else [])]
        return links[0] if len(links) == 1 else WORLD

    @property
    def floor(self) -> bool:
        """Whether the run had the built-in floor (the scenario's ``contact.floor``)."""
        try:
            sc = tomllib.loads(self.scenario_toml)
        except tomllib.TOMLDecodeError:
            return False
        contact = sc.get("contact", {})
        return bool(contact.get("floor", False)) if isinstance(contact, dict) else False

    def long_table(self) -> dict[str, np.ndarray]:
        """The trajectory in long format: time, step, kind, item, quantity, value
        (:mod:`mbsim.io.results.long`)."""
        from mbsim.io.results.long import long_table

        return long_table(self)

    def to_pandas(self, what: str = "trajectory"):
        """A pandas DataFrame of the trajectory in long format, or of the events, contacts
        (with forces in N) or diagnostics table (:func:`mbsim.io.results.long.to_pandas`;
        pandas is not a dependency: MbsimError when it is missing)."""
        from mbsim.io.results.long import to_pandas

        return to_pandas(self, what)


def _attr(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _open(path: Path) -> tuple[h5py.File, bool]:
    """Open read-only; returns (file, locked_by_writer). A live writer holds an exclusive
    ``flock`` on its file (mbsim.io.results.target.FileClaim): the file is then read as a
    snapshot, without HDF5's own lock."""
    locked = writer_holds(path)
    if not locked:
        try:
            return h5py.File(path, "r"), False
        except OSError as exc:
            if "lock" not in str(exc).lower():
                raise
            locked = True  # an older mbsim writing it under HDF5's own lock
    return h5py.File(path, "r", locking=False), locked


class _Damaged(Exception):
    """A part of the file that does not have the schema's form (message: which and why)."""


def _table(f: h5py.File, name: str, cols: list[_Col], optional: tuple[str, ...] = ()):
    """The columns ``cols`` of table ``/name`` as arrays of the schema's shapes: the committed
    rows of the main datasets, then those of the ``_tail`` subgroup if the run did not end
    cleanly (see mbsim.io.results.table.Table). Raises _Damaged naming what is wrong."""
    group = f.get(name)
    if not isinstance(group, h5py.Group):
        raise _Damaged(f"/{name} is {'missing' if group is None else 'not a group'}")
    wanted = [c for c in cols if c.name in group or c.name not in optional]

    def committed(g: h5py.Group, where: str) -> int:
        n = None
        for c in wanted:
            ds = g.get(c.name)
            if not isinstance(ds, h5py.Dataset):
                raise _Damaged(f"{where}/{c.name} is {'missing' if ds is None else 'not a table'}")
            if ds.ndim == 0 or tuple(ds.shape[1:]) != c.shape:
                raise _Damaged(
                    f"{where}/{c.name} has shape {ds.shape}, not (rows, "
                    f"{', '.join(map(str, c.shape))})".replace(", )", ")")
                )
            if ds.dtype.kind not in "iuf":
                raise _Damaged(f"{where}/{c.name} holds {ds.dtype}, not numbers")
            n = ds.shape[0] if n is None else min(n, ds.shape[0])
        n = n or 0
        rows = g.attrs.get("rows", n)
        return max(0, min(n, int(rows))) if np.ndim(rows) == 0 else n

    n = committed(group, f"/{name}")
    out = {c.name: group[c.name][:n] for c in wanted}
    tail = group.get("_tail")
    if isinstance(tail, h5py.Group) and all(c.name in tail for c in wanted):
        m = committed(tail, f"/{name}/_tail")
        out = {k: np.concatenate([v, tail[k][:m]], axis=0) for k, v in out.items()}
    return out


def _codes(table: dict, key: str, names: tuple[str, ...], where: str) -> None:
    codes = table[key]
    if len(codes) and (codes.min() < 0 or codes.max() >= len(names)):
        bad = int(codes[(codes < 0) | (codes >= len(names))][0])
        raise _Damaged(f"{where} holds the code {bad}, which is none of {', '.join(names)}")


def _bodies(table: dict, n_bodies: int, where: str) -> None:
    for key in ("body_a", "body_b"):
        b = table[key]
        if len(b) and (b.min() < -1 or b.max() >= n_bodies):
            raise _Damaged(f"{where}/{key} names a body outside -1..{n_bodies - 1}")


def _trim(traj: dict, diag: dict, notes: list[str]) -> tuple[dict, dict]:
    """/trajectory and /diagnostics hold one row per recorded step: cut both to the shorter
    length (a run killed between the two appends of a step) and say so. A file without
    diagnostics (written by a program that records none) is left as it is."""
    nt, nd = len(traj["time"]), len(diag["time"])
    if nt == nd or not nd:
        return traj, diag
    n = min(nt, nd)
    notes.append(
        f"/trajectory has {nt} rows and /diagnostics {nd} (the run was killed between the two "
        f"writes of a step); both are read to their common {n} rows"
    )
    return {k: v[:n] for k, v in traj.items()}, {k: v[:n] for k, v in diag.items()}


def load_results(path: str | os.PathLike[str]) -> Results:
    """Read an mbsim results file into a :class:`Results`.

    Raises :class:`ResultsError` naming the file when it is missing, not HDF5, not an mbsim
    results file, of another schema version, or damaged (a table of the wrong form, a code
    outside its enum, bytes HDF5 cannot decode).
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
    except Exception as exc:
        raise ResultsError(f"{p}: HDF5 cannot open it (damaged file?): {_one_line(exc)}.") from exc
    try:
        with f:
            return _read(p, f, locked)
    except ResultsError:
        raise
    except _Damaged as exc:
        raise ResultsError(f"{p}: the results file is damaged: {exc}.") from exc
    except Exception as exc:  # HDF5 reports undecodable bytes as any of several types
        raise ResultsError(
            f"{p}: the results file is damaged or incomplete ({_one_line(exc)})."
        ) from exc


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


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
    sc, m = f.get("scenario"), f.get("model")
    for name, g in (("scenario", sc), ("model", m)):
        if not isinstance(g, h5py.Group):
            raise _Damaged(f"/{name} is {'missing' if g is None else 'not a group'}")

    def names(key: str, required: bool = True) -> list[str]:
        ds = m.get(key)
        if ds is None and not required:
            return []
        if not isinstance(ds, h5py.Dataset) or ds.ndim != 1:
            raise _Damaged(f"/model/{key} is {'missing' if ds is None else 'not a list'}")
        return [str(x) for x in ds.asstr()[...]]

    def numbers(key: str, n: int, default=None) -> np.ndarray:
        ds = m.get(key)
        if ds is None and default is not None:
            return default
        if not isinstance(ds, h5py.Dataset) or ds.shape != (n,) or ds.dtype.kind not in "iuf":
            raise _Damaged(f"/model/{key} is not a list of {n} numbers")
        return ds[...]

    body_names = names("body_names")
    q_names, v_names = names("q_names"), names("v_names")
    nb, nq, nv = len(body_names), len(q_names), len(v_names)
    toml = sc.get("toml")
    if not isinstance(toml, h5py.Dataset) or toml.ndim != 0:
        raise _Damaged("/scenario/toml is not a text")
    files = [names_of(sc, k) for k in ("input_files", "sha256")]
    if len(files[0]) != len(files[1]):
        raise _Damaged("/scenario/input_files and /scenario/sha256 differ in length")
    notes: list[str] = []
    pose = "body_pose" in f.get("trajectory", {})
    traj = _table(f, "trajectory", _trajectory_cols(nq, nv, nb, pose), ("tau", "tau_limit"))
    diag = _table(f, "diagnostics", _diagnostic_cols())
    _codes(diag, "solver", SOLVER_CODES, "/diagnostics/solver")
    traj, diag = _trim(traj, diag, notes)
    events = _table(f, "events", _contact_cols(events=True))
    _codes(events, "kind", EVENT_KINDS, "/events/kind")
    _bodies(events, nb, "/events")
    contacts = None
    if "contacts" in f:
        contacts = _table(f, "contacts", _contact_cols(events=False))
        _bodies(contacts, nb, "/contacts")
    ctrl = f.get("controller")
    ctrl = ctrl if isinstance(ctrl, h5py.Group) else None
    summary = f.get("summary")
    run_summary = (
        {k: _attr(v) for k, v in summary.attrs.items()} if isinstance(summary, h5py.Group) else {}
    )
    return Results(
        path=p,
        attrs=attrs,
        run_summary=run_summary,
        status=status,
        message=str(attrs.get("message", "")),
        writer_alive=locked if status == "running" else None,
        scenario_toml=str(toml.asstr()[()]),
        input_files=dict(zip(files[0], files[1], strict=True)),
        body_names=body_names,
        joint_names=names("joint_names"),
        joint_types=names("joint_types"),
        parents=numbers("parents", nb),
        masses=numbers("masses", nb),
        q_names=q_names,
        v_names=v_names,
        tree_names=names("tree_names", required=False),
        body_trees=numbers("body_trees", nb, default=np.zeros(nb, np.int64)),
        static_links=names("static_links") if "static_links" in m else None,
        time=traj["time"],
        step=traj["step"],
        q=traj["q"],
        v=traj["v"],
        energy=traj["energy"],
        body_pose=traj.get("body_pose"),
        events=events,
        contacts=contacts,
        diagnostics=diag,
        notes=notes,
        tau=traj.get("tau"),
        tau_limit=traj.get("tau_limit"),
        controller=str(_attr(ctrl.attrs.get("kind", ""))) if ctrl is not None else "",
        controller_name=str(_attr(ctrl.attrs.get("name", ""))) if ctrl is not None else "",
    )


def names_of(group: h5py.Group, key: str) -> list[str]:
    """A 1-D text dataset of ``group`` as a list (raises _Damaged when it is not one)."""
    ds = group.get(key)
    if not isinstance(ds, h5py.Dataset) or ds.ndim != 1:
        raise _Damaged(f"{group.name}/{key} is {'missing' if ds is None else 'not a list'}")
    return [str(x) for x in ds.asstr()[...]]
