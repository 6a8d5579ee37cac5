"""Joint type codes: the integer a kernel reads in ``Model.jtype``, and the spec name of each.

The codes live here, apart from the model builder, so that the kernels (kinematics, dynamics,
the Delassus algorithms) can read them without importing :mod:`mbsim.simcore.model`, which
itself runs dynamics to check a new model's mass matrix.

* ``REVOLUTE``: one rotation about the joint axis, nq = nv = 1 (rad); URDF ``revolute`` and
  ``continuous`` (a continuous joint is an unbounded angle, not Pinocchio's (cos, sin)).
* ``PRISMATIC``: one translation along the joint axis, nq = nv = 1 (m).
* ``FREE``: 6 DoF, q = [x y z qw qx qy qz], v = [vx vy vz wx wy wz] (model.py docstring);
  URDF ``floating``.
* ``SPHERICAL``: 3 DoF ball joint, q = [qw qx qy qz] (unit quaternion, the rotation of the
  child frame in the joint frame: the rotational part of ``FREE``), v = [wx wy wz] (the
  child's angular velocity relative to its parent, child frame, rad/s), nq = nv + 1; as
  Pinocchio's JointModelSpherical (whose quaternion is stored x y z w). URDF
  ``spherical`` (PyBullet's extension; the axis is ignored).

Fixed joints have no code: the model builder merges them into the parent body.
"""

from __future__ import annotations

REVOLUTE, PRISMATIC, FREE, SPHERICAL = 0, 1, 2, 3

#: Spec joint type (:data:`mbsim.simcore.spec.JOINT_TYPES`, fixed excepted) -> code.
JOINT_CODE = {
    "revolute": REVOLUTE,
    "continuous": REVOLUTE,
    "prismatic": PRISMATIC,
    "floating": FREE,
    "spherical": SPHERICAL,
}

#: (nq, nv) of each code.
JOINT_SIZES = {REVOLUTE: (1, 1), PRISMATIC: (1, 1), FREE: (7, 6), SPHERICAL: (4, 3)}

#: Joint codes whose q holds a unit quaternion -> the offset of qw in the joint's q.
QUATERNION_OFFSET = {FREE: 3, SPHERICAL: 0}
#: Offset of the body angular velocity [wx wy wz] in the joint's v, for the same codes.
ANGULAR_V_OFFSET = {FREE: 3, SPHERICAL: 0}
