"""Joint type codes: the integer a kernel reads in ``Model.jtype``, and the spec name of each.

The codes live here, apart from the model builder, so that the kernels (kinematics, dynamics,
the Delassus algorithms) can read them without importing :mod:`mbsim.simcore.model`, which
itself runs dynamics to check a new model's mass matrix.

* ``REVOLUTE``: one rotation about the joint axis, nq = nv = 1 (rad); URDF ``revolute`` and
  ``continuous`` (a continuous joint is an unbounded angle, not Pinocchio's (cos, sin)).
* ``PRISMATIC``: one translation along the joint axis, nq = nv = 1 (m).
* ``FREE``: 6 DoF, q = [x y z qw qx qy qz], v = [vx vy vz wx wy wz] (model.py docstring);
  URDF ``floating``.

Fixed joints have no code: the model builder merges them into the parent body.
"""

from __future__ import annotations

REVOLUTE, PRISMATIC, FREE = 0, 1, 2

#: Spec joint type (:data:`mbsim.simcore.spec.JOINT_TYPES`, fixed excepted) -> code.
JOINT_CODE = {
    "revolute": REVOLUTE,
    "continuous": REVOLUTE,
    "prismatic": PRISMATIC,
    "floating": FREE,
}
