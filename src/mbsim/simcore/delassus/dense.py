"""The reference Lambda = J M^-1 J^T: CRBA, Cholesky and the explicit node Jacobian, O(N^3).

Slow and simple on purpose: it shares no sweep with the recursive algorithms, so the tests use
it as their independent truth, and ``simulation.delassus = "dense"`` runs it in the stepper.
Same nodes and units as the other algorithms (:mod:`mbsim.simcore.delassus`).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from mbsim.simcore.dynamics import mass_matrix
from mbsim.simcore.kinematics import forward_kinematics, node_jacobian


def dense_lambda(model, data, q, node_body, node_X) -> np.ndarray:
    """Reference Lambda = J M^-1 J^T by CRBA, Cholesky and the explicit node Jacobian, O(N^3)
    (M + diag(data.armature) when the stepper integrates damping implicitly)."""
    forward_kinematics(model, data, q)
    mass_matrix(model, data)  # M + dt D with implicit damping (dynamics.aba)
    J = node_jacobian(model, data, node_body, node_X)
    if model.nv == 0:
        return np.zeros((J.shape[0], J.shape[0]))
    c = scipy.linalg.cho_factor(data.M)
    return J @ scipy.linalg.cho_solve(c, J.T)
