"""A results file as tables for data-frame tools: the trajectory in long format (one row per
time, item and quantity) and the contacts with their forces.

Long format, columns ``time`` (s), ``step``, ``kind`` (``joint``, ``body`` or ``energy``),
``item`` (a q/v coordinate ``tree/joint`` such as ``arm/joint_1`` or ``quadruped/root_joint.z``,
a body ``tree/link``, or ``total``/``kinetic``/``potential``; bare URDF names for a file
without tree names, io/results/labels.py), ``quantity`` and ``value``:

* joints: ``position`` (q, rad or m; free and spherical joints' quaternion parts are
  dimensionless) and ``velocity`` (v, rad/s or m/s); when actuators acted (a recorded tau
  not all zero), also ``force`` (the actuator force applied over the step, N m or N, by v
  name) and ``force_limit`` (its effort flag: -1, 0 or +1);
* bodies (when body poses were recorded): ``x``, ``y``, ``z`` (m) and ``qw``..``qz`` (1);
* energy: ``energy`` (J).

Contacts: the file stores impulses over one step (N s); the mean force over the step is the
impulse divided by the step ``dt`` (N), added beside them as ``normal_force`` and
``tangent_force``. For an impact the impulse is the physical quantity and the "force" is only
its average over the step.
"""

from __future__ import annotations

import numpy as np

from mbsim.errors import MbsimError
from mbsim.io.results.labels import body_labels, coordinate_labels

_POSE = ("x", "y", "z", "qw", "qx", "qy", "qz")
_ENERGY = ("kinetic", "potential", "total")


def long_table(r) -> dict[str, np.ndarray]:
    """The trajectory of :class:`~mbsim.io.results.Results` ``r`` in long format (module
    docstring), as equal-length columns; rows ordered by item, then time."""
    n = len(r.time)
    parts = []  # (kind, item, quantity, values); items tree/joint, tree/link (labels.py)
    q_names, v_names = coordinate_labels(r, "q"), coordinate_labels(r, "v")
    for k, name in enumerate(q_names):
        parts.append(("joint", name, "position", r.q[:, k]))
    for k, name in enumerate(v_names):
        parts.append(("joint", name, "velocity", r.v[:, k]))
    if r.tau is not None and np.any(r.tau != 0):
        for k, name in enumerate(v_names):
            parts.append(("joint", name, "force", r.tau[:, k]))
        flags = r.tau_limit if r.tau_limit is not None else np.zeros_like(r.tau)
        for k, name in enumerate(v_names):
            parts.append(("joint", name, "force_limit", flags[:, k].astype(float)))
    if r.body_pose is not None:
        for b, body in enumerate(body_labels(r)):
            for k, c in enumerate(_POSE):
                parts.append(("body", body, c, r.body_pose[:, b, k]))
    for k, name in enumerate(_ENERGY):
        parts.append(("energy", name, "energy", r.energy[:, k]))
    m = len(parts)
    return {
        "time": np.tile(r.time, m),
        "step": np.tile(r.step, m),
        "kind": np.repeat(np.array([p[0] for p in parts], dtype=object), n),
        "item": np.repeat(np.array([p[1] for p in parts], dtype=object), n),
        "quantity": np.repeat(np.array([p[2] for p in parts], dtype=object), n),
        "value": np.concatenate([p[3] for p in parts]) if parts else np.zeros(0),
    }


def contact_forces(r) -> dict[str, np.ndarray]:
    """``normal_force`` (n,) and ``tangent_force`` (n, 3) in N: the contacts' impulses over
    one step divided by the step ``dt`` (module docstring). MbsimError if the run recorded no
    contacts."""
    if r.contacts is None:
        raise MbsimError(
            f"{r.path}: has no contacts table (the run did not record contacts; rerun with "
            "--record-contacts)."
        )
    dt = r.dt
    return {
        "normal_force": r.contacts["normal_impulse"] / dt,
        "tangent_force": r.contacts["tangent_impulse"] / dt,
    }


def to_pandas(r, what: str = "trajectory"):
    """A pandas DataFrame: ``trajectory`` in long format (:func:`long_table`), or the
    ``events``, ``contacts`` (with forces in N) or ``diagnostics`` table as ``mbsim export``
    writes it. MbsimError in one sentence when pandas is not installed (it is not a
    dependency of mbsim)."""
    try:
        import pandas as pd
    except ImportError:
        raise MbsimError(
            "to_pandas needs pandas, which is not installed (mbsim does not depend on it): "
            "pip install pandas into the environment that runs mbsim, or read the arrays of "
            "load_results(...) directly."
        ) from None
    if what == "trajectory":
        return pd.DataFrame(long_table(r))
    from mbsim.cli.export import table

    names, cols = table(r, what)
    return pd.DataFrame(dict(zip(names, cols, strict=True)))
