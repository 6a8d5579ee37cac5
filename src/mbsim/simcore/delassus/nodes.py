"""The constraint nodes every Delassus algorithm takes: ``node_body`` and ``node_X``.

``node_body[a]`` is the body of node a and ``node_X[a]`` (6x6) the motion transform from that
body's frame to the node frame (:func:`~mbsim.simcore.kinematics.node_transforms`). The
kernels want contiguous int64 and float64 arrays; lists and other dtypes are converted once
here (the fast case, arrays of the right type, costs two type checks).
"""

from __future__ import annotations

import numpy as np

_I64 = np.dtype(np.int64)
_F64 = np.dtype(np.float64)


def as_nodes(node_body, node_X) -> tuple[np.ndarray, np.ndarray]:
    """``(node_body, node_X)`` as int64 (nc,) and float64 (nc, 6, 6) arrays."""
    if type(node_body) is not np.ndarray or node_body.dtype is not _I64:
        node_body = np.ascontiguousarray(node_body, dtype=np.int64)
    if type(node_X) is not np.ndarray or node_X.dtype is not _F64:
        node_X = np.ascontiguousarray(node_X, dtype=np.float64)
    return node_body, node_X


def as_q(q) -> np.ndarray:
    """``q`` as a float64 array."""
    if type(q) is not np.ndarray or q.dtype is not _F64:
        q = np.ascontiguousarray(q, dtype=np.float64)
    return q
