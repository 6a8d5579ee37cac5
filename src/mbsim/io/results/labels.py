"""The scenario's names of a results file's columns: ``tree/joint`` and ``tree/link``.

A results file stores each coordinate's and body's bare URDF name (``/model/q_names``,
``v_names``, ``body_names``) and the trees apart (``/model/tree_names``, ``body_trees``,
docs/hdf5-format.md). Everything that shows or exports the columns (``mbsim plot``'s legends,
``mbsim export``'s CSV headers and long-format items) names them as the scenario does,
``tree/joint`` and ``tree/link``, so two robots with a joint of the same name stay apart.
A file without tree names (written before they were recorded) keeps the bare names.
"""

from __future__ import annotations

from mbsim.simcore.joints import JOINT_CODE, JOINT_SIZES


def coordinate_trees(r, kind: str = "q") -> list[int]:
    """Tree index of every q (``kind="q"``) or v coordinate of Results ``r`` (free joints
    have 7 q and 6 v coordinates, spherical 4 and 3, others 1:
    mbsim.simcore.joints.JOINT_SIZES)."""
    names = r.q_names if kind == "q" else r.v_names
    col = 0 if kind == "q" else 1
    out: list[int] = []
    for b, jtype in enumerate(r.joint_types):
        n = JOINT_SIZES[JOINT_CODE[jtype]][col] if jtype in JOINT_CODE else 1
        out += [int(r.body_trees[b])] * n
    return out if len(out) == len(names) else [0] * len(names)


def coordinate_labels(r, kind: str = "q") -> list[str]:
    """``tree/name`` of every q or v column: the file's ``/model/q_names`` (``v_names``)
    qualified by ``/model/tree_names``, the scenario's vocabulary (``tree/joint``, as
    ``max_velocity_joint`` and the scenario's own keys). Bare names for a file without tree
    names."""
    names = r.q_names if kind == "q" else r.v_names
    if not r.tree_names:
        return list(names)
    trees = coordinate_trees(r, kind)
    return [
        f"{r.tree_names[t]}/{n}" if t < len(r.tree_names) else n
        for t, n in zip(trees, names, strict=True)
    ]


def body_label(r, b: int, name: str | None = None) -> str:
    """``tree/link`` of body ``b`` (or of the link ``name`` merged into it), bare without
    tree names in the file."""
    name = r.body_names[b] if name is None else name
    t = int(r.body_trees[b])
    return f"{r.tree_names[t]}/{name}" if t < len(r.tree_names) else name


def body_labels(r) -> list[str]:
    """``tree/link`` of every body (:func:`body_label`)."""
    return [body_label(r, b) for b in range(len(r.body_names))]
