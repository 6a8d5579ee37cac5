"""The results file's schema (version 1): names, codes, column layouts and the /model table.

docs/hdf5-format.md is the reference for the layout. Units are SI: time in s, joint positions
in rad or m (free joints: m and a unit quaternion; spherical joints: a unit quaternion),
velocities in rad/s or m/s, impulses in N s, energies in J, lengths in m, wall-clock durations
in s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import h5py
import numpy as np

from mbsim.errors import MbsimError
from mbsim.names import link_ref

FORMAT = "mbsim-results"
SCHEMA_VERSION = 1
#: Event kinds, in HDF5 enum code order (0, 1, ...).
EVENT_KINDS = (
    "contact_begin", "contact_end", "impact", "stick", "slip", "limit_begin", "limit_end",
)  # fmt: skip
#: Which LCP solver solved a step (``/diagnostics/solver`` enum codes): ``none`` = no LCP that
#: step (no contacts or closures), ``lemke_reg`` = Lemke on the regularised matrix, ``failed``
#: = the whole fallback chain failed.
SOLVER_CODES = ("none", "lemke", "lemke_reg", "pgs", "failed")
STATUSES = ("running", "complete", "interrupted", "failed")


class ResultsError(MbsimError):
    """A results file cannot be written or read; the message names the file."""


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
            "rad or m (free joints: m, then a unit quaternion qw qx qy qz; spherical joints: a "
            "unit quaternion qw qx qy qz)",
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
    cols += [
        _Col(
            "tau",
            np.float64,
            (nv,),
            "N m or N",
            "actuator joint forces applied over the step that ended at this state (torque, "
            "PD/velocity control, Python controller; after the effort clamp; 0 in row 0), "
            "columns named by /model/v_names",
        ),
        _Col(
            "tau_limit",
            np.int8,
            (nv,),
            "1",
            "effort saturation of each joint over that step: +1 / -1 clamped at +effort / "
            "-effort (URDF <limit effort>), 0 not clamped",
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
        "static_links": static_links(model),
    }


def static_links(model) -> list[str]:
    """``tree/link`` of every link whose collision shapes (or PyBullet ``<plane>``) are static,
    i.e. welded to the world (body index -1), in model order: with the built-in floor (not a
    model link: the scenario's ``contact.floor``) they make up the static world that body
    index -1 of the contacts and events stands for."""
    out: list[str] = []
    for g in (*model.geometries, *model.planes):
        ref = link_ref(model.tree_names[g.tree], g.link)
        if g.body < 0 and ref not in out:
            out.append(ref)
    return out


_MODEL_META = {
    "body_names": ("1", "moving bodies, in model order (depth-first, trees one after another)"),
    "joint_names": ("1", "the joint that moves each body"),
    "joint_types": ("1", "revolute, continuous, prismatic, floating or spherical, per body"),
    "parents": ("1", "index of each body's parent body; -1 = the world"),
    "q_names": ("1", "name of each column of /trajectory/q"),
    "v_names": ("1", "name of each column of /trajectory/v"),
    "masses": ("kg", "mass of each body (fixed-joint children merged in)"),
    "tree_names": ("1", "robot and environment names, one per tree"),
    "body_trees": ("1", "index into tree_names of each body"),
    "static_links": (
        "1",
        "tree/link of each link with static collision shapes (body index -1; the built-in "
        "floor builtin/floor is not listed: the scenario's contact.floor)",
    ),
}


def estimate_bytes(*, nq: int, nv: int, nb: int, rows: int, body_poses: bool = False) -> int:
    """Uncompressed size (bytes) of ``rows`` recorded states with their diagnostics; events
    and contacts are not counted (their number is unknown before the run)."""
    per_row = 8 * (2 + nq + nv + 3 + (7 * nb if body_poses else 0))  # trajectory
    per_row += 8 * 5 + 4 * 3 + 1  # diagnostics
    return int(rows) * per_row


def _mib(n: float) -> str:
    """A byte count for a message: MiB up to 1 TiB, then TiB in 3 significant digits (a
    size estimate of an absurd run stays a short number)."""
    if n < 1 << 40:
        return f"{n / (1 << 20):.1f} MiB"
    return f"{n / (1 << 40):.3g} TiB"
