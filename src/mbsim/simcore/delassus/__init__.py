"""The Delassus matrix (operational space compliance) Lambda = J M^-1 J^T of constraint nodes.

Every algorithm takes the same nodes (``node_body[a]``, the body of node a, and ``node_X[a]``,
the 6x6 motion transform from that body's frame to the node frame, from
:func:`~mbsim.simcore.kinematics.node_transforms`) and returns the same matrix: (6 nc, 6 nc),
rows ``[angular; linear]`` per node, units (rad/s, m/s) per (N m s, N s), symmetric positive
semi-definite, zero between nodes of different trees. One module per algorithm:

* :mod:`.upsilon_body` -- Jain's Upsilon recursion (000 Appendix, Eqs. 64-69) in body
  coordinates, O(N) + O(nc^2): :func:`upsilon_after_aba` reuses the factorisation ABA left in
  Data (the OS stepper's route).
* :mod:`.upsilon_world` -- the same recursion in world-aligned coordinates, one compiled call
  that computes the factorisation itself: :func:`upsilon_from_poses` (from the poses in Data,
  or from ``q=``). The fast "Lambda at this configuration" entry point.
* :mod:`.pv_osimr` -- PV-OSIMr (003 Algorithm 3), O(n + m^2), also for 3D (point)
  constraints: :func:`pv_osimr_after_aba` and :func:`pv_osimr_from_poses`.
* :mod:`.dense` -- the O(N^3) reference by CRBA, Cholesky and the explicit Jacobian:
  :func:`dense_lambda`.

Shared pieces: :mod:`.compressed_tree` (the tree compressed to the node bodies, both Upsilon
variants), :mod:`.world_frame` (frame transforms and the world-frame articulated sweep, world
Upsilon and PV-OSIMr) and :mod:`.nodes` (argument conversion).

Naming of the entry points: ``*_after_aba`` reads the articulated factorisation (U, Dinv)
already in Data; ``*_from_poses`` computes it from the poses (and leaves U, Dinv, pivots in
Data as :func:`~mbsim.simcore.dynamics.articulated_factor` would).

:data:`ALGORITHMS` is the registry a run selects from by name (``simulation.delassus``);
its keys are the option list.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mbsim.simcore.delassus.dense import dense_lambda
from mbsim.simcore.delassus.pv_osimr import (
    branching_inverse_inertias,
    pv_osimr_after_aba,
    pv_osimr_from_poses,
)
from mbsim.simcore.delassus.upsilon_body import upsilon, upsilon_after_aba
from mbsim.simcore.delassus.upsilon_world import upsilon_from_poses
from mbsim.simcore.dynamics import articulated_factor


def _by_upsilon(model, data, q, node_body, node_X, factorised: bool) -> np.ndarray:
    if not factorised:
        articulated_factor(model, data)
    return upsilon_after_aba(model, data, node_body, node_X)


def _by_pv_osimr(model, data, q, node_body, node_X, factorised: bool) -> np.ndarray:
    if not factorised and np.any(data.armature):
        # PV-OSIMr's own sweep knows no armature (implicit damping, dynamics.aba)
        articulated_factor(model, data)
        factorised = True
    if factorised:
        return pv_osimr_after_aba(model, data, node_body, node_X)
    return pv_osimr_from_poses(model, data, node_body, node_X)


def _by_dense(model, data, q, node_body, node_X, factorised: bool) -> np.ndarray:
    return dense_lambda(model, data, q, node_body, node_X)


#: The Delassus algorithms a run may choose (``simulation.delassus``), by name. Each takes
#: (model, data, q, node_body, node_X, factorised) with the kinematics of q in ``data``;
#: ``factorised`` says whether ``data`` already holds the articulated factorisation of q
#: (after ABA), which the recursive algorithms then reuse.
ALGORITHMS: dict[str, Callable[..., np.ndarray]] = {
    "upsilon": _by_upsilon,  # 000 Appendix, body frame
    "pv-osimr": _by_pv_osimr,  # 003 Algorithm 3
    "dense": _by_dense,  # J M^-1 J^T, the reference
}

#: The option list of ``simulation.delassus``, the default first.
NAMES = tuple(ALGORITHMS)


def delassus_lambda(name: str, model, data, q, node_body, node_X, *, factorised: bool):
    """Lambda for the nodes by the algorithm ``name`` (a key of :data:`ALGORITHMS`)."""
    try:
        algorithm = ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown delassus {name!r}; choose one of {', '.join(NAMES)}") from None
    return algorithm(model, data, q, node_body, node_X, factorised)


__all__ = [
    "ALGORITHMS",
    "NAMES",
    "branching_inverse_inertias",
    "delassus_lambda",
    "dense_lambda",
    "pv_osimr_after_aba",
    "pv_osimr_from_poses",
    "upsilon",
    "upsilon_after_aba",
    "upsilon_from_poses",
]
