"""Reading a results file: :func:`load_results` returns a :class:`Results` of numpy arrays."""

from __future__ import annotations

import os
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
)


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
