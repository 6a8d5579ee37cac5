"""Random robot trees for property tests: chains, branches, mixed joint types, fixed joints."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from mbsim.simcore.model import Model, build_model
from mbsim.simcore.spec import Inertial, JointSpec, LinkSpec, RobotSpec


def random_pose(rng: np.random.Generator, reach: float = 0.3) -> np.ndarray:
    """A random 4x4 pose: uniform rotation, normal translation with std ``reach`` (m)."""
    t = np.eye(4)
    t[:3, :3] = Rotation.random(random_state=int(rng.integers(2**31))).as_matrix()
    t[:3, 3] = rng.normal(size=3) * reach
    return t


def random_inertial(rng: np.random.Generator) -> Inertial:
    """Physically valid random mass properties (principal moments obey the triangle rule)."""
    moments = rng.uniform(0.2, 1.0, 3)
    moments[2] = rng.uniform(abs(moments[0] - moments[1]) + 0.05, moments[0] + moments[1])
    R = Rotation.random(random_state=int(rng.integers(2**31))).as_matrix()
    return Inertial(rng.uniform(0.3, 3.0), rng.normal(size=3) * 0.1, R @ np.diag(moments) @ R.T)


def random_tree(
    rng: np.random.Generator,
    n_links: int,
    joint_types=("revolute", "prismatic", "continuous", "fixed", "spherical"),
    branching: float = 0.5,
    base: str = "fixed",
) -> RobotSpec:
    """A random tree of ``n_links`` links below a root ``base`` link.

    ``branching`` is the probability that a new link hangs from a random earlier link rather
    than from the last one (0 gives a chain). Axes are random and not normalised, so the
    builder's normalisation is exercised too.
    """
    links = [LinkSpec("base", random_inertial(rng))]
    joints = []
    for k in range(1, n_links + 1):
        parent = links[int(rng.integers(len(links)))] if rng.random() < branching else links[-1]
        links.append(LinkSpec(f"link{k}", random_inertial(rng)))
        jtype = joint_types[int(rng.integers(len(joint_types)))]
        axis = rng.normal(size=3)
        joints.append(
            JointSpec(f"joint{k}", jtype, parent.name, f"link{k}", random_pose(rng), axis)
        )
    return RobotSpec("random", links, joints, "base", base=base)


def random_model_and_q(
    seed: int, n_links: int, branching: float, base: str
) -> tuple[np.random.Generator, Model, np.ndarray] | None:
    """(rng, model, q) for the random tree of ``seed`` with a random configuration q, or None
    when every joint came out fixed (nothing to test): the property tests' shared set-up."""
    rng = np.random.default_rng(seed)
    model = build_model([random_tree(rng, n_links, branching=branching, base=base)])
    if model.nv == 0:
        return None
    return rng, model, model.random_q(rng)
