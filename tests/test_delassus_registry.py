"""The Delassus registry (mbsim.simcore.delassus.ALGORITHMS): every name a scenario may give
(docs/scenario-format.md, written here by hand) runs, on both of the stepper's paths (after
ABA, and without a factorisation in Data), and gives the dense J M^-1 J^T.

Truth: the dense Lambda computed on a separate Data (CRBA, Cholesky, explicit Jacobian).
Tolerance 1e-9 relative to the largest entry, as tests/test_dynamics_random_trees.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from mbsim.simcore.data import Data
from mbsim.simcore.delassus import ALGORITHMS, NAMES, delassus_lambda, dense_lambda
from mbsim.simcore.dynamics import aba
from mbsim.simcore.kinematics import forward_kinematics, node_transforms
from random_trees import random_model_and_q

DOCUMENTED = ("upsilon", "pv-osimr", "dense")
RTOL = 1e-9


def test_the_names_are_the_documented_ones():
    assert NAMES == DOCUMENTED
    assert tuple(ALGORITHMS) == NAMES


@pytest.mark.parametrize("name", DOCUMENTED)
@pytest.mark.parametrize("factorised", [True, False])
def test_each_algorithm_gives_the_dense_lambda(name, factorised):
    rng, model, q = random_model_and_q(5, 14, 0.5, "floating")
    bodies = rng.integers(0, model.nb, 4)
    ref = Data(model)
    forward_kinematics(model, ref, q)
    X = node_transforms(ref, bodies, rng.normal(size=(4, 3)) * 0.3)
    dense = dense_lambda(model, ref, q, bodies, X)
    data = Data(model)
    if factorised:  # the ABA path: kinematics and the articulated factorisation of q in data
        aba(model, data, q, rng.normal(size=model.nv), rng.normal(size=model.nv))
    else:  # the CRBA path: kinematics only
        forward_kinematics(model, data, q)
    lam = delassus_lambda(name, model, data, q, bodies, X, factorised=factorised)
    assert np.max(np.abs(lam - dense)) < RTOL * np.max(np.abs(dense))


def test_an_unknown_name_is_refused_with_the_choices():
    rng, model, q = random_model_and_q(5, 3, 0.5, "fixed")
    with pytest.raises(ValueError, match="upsilon, pv-osimr, dense"):
        delassus_lambda("nope", model, Data(model), q, [0], np.eye(6)[None], factorised=False)
