"""mbsim's dynamics and compliance against Pinocchio on every example-robot-data URDF.

For each URDF that Pinocchio loads, both as a fixed-base and as a floating-base robot, at three
random configurations and velocities: body poses, the mass matrix M (CRBA), inverse dynamics
(RNEA, gravity included), forward dynamics (ABA) and Lambda = J M^-1 J^T for 1-6 random nodes
(Pinocchio's Jacobians and mass matrix, densely). Tolerance 1e-9 relative to the largest entry
of the quantity compared (Pinocchio and mbsim both work in float64 with different operation
orders; robots with link masses from 1e-3 to 1e2 kg keep errors well below that).

A URDF that Pinocchio cannot load, or that mbsim rejects by design (planar joints), is skipped
with the reason in the skip message (``pytest -rs`` lists them).
"""

from __future__ import annotations

import zlib

import numpy as np
import pinocchio as pin
import pytest

from mbsim.simcore.data import Data
from mbsim.simcore.delassus import upsilon_from_poses
from mbsim.simcore.dynamics import articulated_factor, impulse_response
from mbsim.simcore.kinematics import forward_kinematics, node_transforms
from mbsim.simcore.spatial import plucker_np
from pin_oracle import (
    RTOL,
    all_urdfs,
    assert_dynamics_match,
    random_nodes,
    rel_err,
    robots_dir,
    twin_or_skip,
)

URDFS = all_urdfs()


twin = twin_or_skip


def test_example_robot_data_is_there():
    assert len(URDFS) > 30, f"expected the example-robot-data corpus under {robots_dir()}"


@pytest.mark.parametrize("base", ["fixed", "floating"])
@pytest.mark.parametrize("urdf", URDFS, ids=[str(u.relative_to(robots_dir())) for u in URDFS])
def test_dynamics_match_pinocchio(urdf, base):
    model, tw = twin(urdf, base)
    assert_dynamics_match(model, tw, np.random.default_rng(zlib.crc32(urdf.name.encode())))


@pytest.mark.parametrize("base", ["fixed", "floating"])
@pytest.mark.parametrize("urdf", URDFS, ids=[str(u.relative_to(robots_dir())) for u in URDFS])
def test_compliance_matches_pinocchio(urdf, base):
    model, tw = twin(urdf, base)
    data = Data(model)
    rng = np.random.default_rng(zlib.crc32(urdf.name.encode()) + 1)
    for n_nodes in (1, 3, 6):
        q, bodies, points, J, M, lam_pin = random_nodes(model, tw, rng, n_nodes)
        forward_kinematics(model, data, q)
        X = node_transforms(data, bodies, points)
        assert rel_err(upsilon_from_poses(model, data, bodies, X), lam_pin) < RTOL
        f = rng.normal(size=(n_nodes, 6))
        articulated_factor(model, data)
        dv_pin = np.linalg.solve(M, J.T @ f.ravel())
        assert rel_err(impulse_response(model, data, bodies, X, f), dv_pin) < RTOL


@pytest.mark.parametrize("base", ["fixed", "floating"])
@pytest.mark.parametrize("urdf", URDFS, ids=[str(u.relative_to(robots_dir())) for u in URDFS])
def test_compliance_matches_pinocchio_delassus(urdf, base):
    """Lambda for body-aligned 6D nodes equals pin.computeDelassusMatrix (LOCAL frames)."""
    model, tw = twin(urdf, base)
    data = Data(model)
    rng = np.random.default_rng(zlib.crc32(urdf.name.encode()) + 2)
    n_nodes = min(4, model.nb)
    bodies = rng.choice(model.nb, n_nodes, replace=False)
    points = rng.normal(size=(n_nodes, 3)) * 0.2
    cms = pin.StdVec_RigidConstraintModel()
    for b, p in zip(bodies, points, strict=True):
        placement = pin.SE3(np.eye(3), p)
        cms.append(
            pin.RigidConstraintModel(
                pin.ContactType.CONTACT_6D, tw.pm, tw.jids[b], placement, pin.LOCAL
            )
        )
    cds = pin.StdVec_RigidConstraintData()
    for c in cms:
        cds.append(c.createData())
    pin.initConstraintDynamics(tw.pm, tw.pd, cms, cds)
    q = model.random_q(rng)
    delassus = pin.computeDelassusMatrix(tw.pm, tw.pd, tw.q(q), cms, cds, 0.0)
    X = np.array([plucker_np(np.eye(3), p) for p in points])  # body axes, origin at p
    forward_kinematics(model, data, q)
    lam = upsilon_from_poses(model, data, bodies, X)
    # mbsim orders each node's rows [angular; linear], Pinocchio [linear; angular]
    perm = np.concatenate([[6 * a + 3, 6 * a + 4, 6 * a + 5, 6 * a, 6 * a + 1, 6 * a + 2]
                           for a in range(n_nodes)])  # fmt: skip
    assert rel_err(lam[np.ix_(perm, perm)], delassus) < RTOL
