"""Swing and twist limits of spherical joints, as PyBullet applies a URDF ``<limit>``.

What PyBullet does (github.com/bulletphysics/bullet3 at 6c888f4, 2025-01-29; PyBullet 3.2.7
was built the same day):

* ``examples/Importers/ImportURDFDemo/UrdfParser.cpp``, ``parseJointLimits`` (line 1450 on):
  lower = 0, upper = -1, twist = -1, effort = 0 unless the file gives them.
* ``examples/Importers/ImportURDFDemo/URDF2Bullet.cpp``, ``ConvertURDF2BulletInternal``, case
  ``URDFSphericalJoint`` (line 432): ``if (jointUpperLimit > 0 && jointLowerLimit > 0 &&
  twistLimit > 0 && jointMaxForce > 0)`` it adds ``btMultiBodySphericalJointLimit(body, link,
  jointLowerLimit, jointUpperLimit, twistLimit, jointMaxForce)``, whose arguments are
  ``swingxRange, swingyRange, twistRange, maxAppliedImpulse``. So ``lower`` is the swing span
  about x, ``upper`` the swing span about y, ``twist`` the twist span about z (rad, each
  symmetric: |angle| <= span), and ``effort`` caps each row's impulse per step (N m s; Bullet's
  comment "should multiply by time step" leaves it unscaled). The URDF ``<axis>`` is not used:
  the twist axis is z of the child frame (of its inertial frame in Bullet, the same frame when
  the child's ``<inertial>`` has no rotation).
* ``src/BulletDynamics/Featherstone/btMultiBodySphericalJointLimit.cpp``,
  ``createConstraintRows`` (lines 140-230; m_kp = 0.2 at line 36): with the joint rotation R
  (child frame in the joint frame, as mbsim's q: ``btMultiBodyLink::updateCacheMultiDof``
  rotates parent to child by the conjugate of the joint quaternion), the swing-twist split
  R = R_swing R_twist (``shortestArcQuat(z, R z)``), ``relRot = R^-1 R_twist`` and
  ``matrixToEulerXYZ(relRot)``, which (btGeneric6DofSpring2Constraint.cpp, lines 60-83,
  ``btGetMatrixElem(m, i) = m[i % 3][i / 3]``) reads the third row of relRot, i.e.
  e = R_twist^T R z, giving swing_x = atan2(-e_y, e_z) and
  swing_y = asin(e_x); twist = the signed angle of R_twist about z. Each of the three angles
  outside (-span, span) gets one one-sided row on the child's angular velocity about the
  link's x, y or z axis, with position error kp (angle - span), kp = 0.2, and damping 1.

mbsim applies the same region, |swing_x| <= lower, |swing_y| <= upper, |twist| <= twist,
created under the same condition (the URDF loader checks it), as unilateral rows of the step's
LCP like the stops of 1-DoF joints (joint_rows.py): hard (complementarity) rather than
Bullet's soft Baumgarte rows, with the rows' exact Jacobians rather than Bullet's link axes,
and without Bullet's impulse cap (the effort limit caps actuator forces in mbsim, as for 1-DoF
joints).

The angles, from q = [w x y z] and d = R^T e_z (the joint frame's z axis in the child frame,
d = (2 (xz - yw), 2 (yz + xw), 1 - 2 (x^2 + y^2)); e = (-d_x, -d_y, d_z) because R_swing
turns about an axis normal to z):

    alpha = atan2(d_y, d_z)       (swing about x, rad)
    beta  = asin(-d_x)            (swing about y, rad)
    tau   = 2 atan2(z, w)         (twist about z, rad, wrapped into (-pi, pi])

and their rates for the joint's body angular velocity w (v, rad/s; d' = d x w, quaternion
rate q' = q (0, w) / 2):

    alpha' = [(d_y^2 + d_z^2), -d_x d_y, -d_x d_z] . w / (d_y^2 + d_z^2)
    beta'  = [0, d_z, -d_y] . w / sqrt(d_y^2 + d_z^2)
    tau'   = [xz - wy, wx + yz, w^2 + z^2] . w / (w^2 + z^2)

each the identity row at R = 1. For angle a with span s the gap to the upper side is s - a
(side -1, row -grad a) and to the lower side a + s (side +1, row +grad a); a side is near,
and gets the row s grad(a) . v+ + g_v >= 0, by the rule of the 1-DoF stops (joint_rows.py:
gap plus the step's travel at the faster of v and v_free below ``margin``, rad) with the same
allowance g_v (g/dt when separated, the capped Baumgarte recovery when past the span) and
the same cap row on that recovery in the other side's place (joint_rows.py, "Recovery").
The row's v index in reports is the joint's first v index plus 0, 1, 2 (swing x, swing y,
twist: the body axis each row turns about at R = 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbsim.simcore.joint_rows import _recovering, _stop_reach, limit_allowance, recovery_cap

#: names of the three angles, in row order (report and message vocabulary)
ANGLES = ("swing_x", "swing_y", "twist")
#: smallest denominator of the angle rates: at a 90 degree swing about y (d_y = d_z = 0) beta
#: is singular, as Bullet's Euler angles are there
_TINY = 1e-12


@dataclass(frozen=True)
class SphericalLimit:
    """The limit of one spherical joint: body index, first q and v index, and the spans
    (swing about x, swing about y, twist about z; rad, each > 0) of URDF lower, upper, twist."""

    joint: str
    body: int
    qi: int
    vi: int
    spans: tuple[float, float, float]


def swing_twist(quat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(angles (3,), rad; gradients (3, 3)): [alpha, beta, tau] of the module docstring for
    the unit quaternion [w x y z], and row i the rate of angle i per body angular velocity."""
    w, x, y, z = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    dx = 2.0 * (x * z - y * w)
    dy = 2.0 * (y * z + x * w)
    dz = 1.0 - 2.0 * (x * x + y * y)
    tau = 2.0 * np.arctan2(z, w)
    tau = tau - 2.0 * np.pi if tau > np.pi else (tau + 2.0 * np.pi if tau <= -np.pi else tau)
    angles = np.array([np.arctan2(dy, dz), np.arcsin(np.clip(-dx, -1.0, 1.0)), tau])
    ryz = max(dy * dy + dz * dz, _TINY)
    rwz = max(w * w + z * z, _TINY)
    grad = np.array([
        [ryz, -dx * dy, -dx * dz] / np.float64(ryz),
        [0.0, dz / np.sqrt(ryz), -dy / np.sqrt(ryz)],
        [x * z - w * y, w * x + y * z, w * w + z * z] / np.float64(rwz),
    ])  # fmt: skip
    return angles, grad


def near_rows(limits, eps, q, v, v_free, dt, margin, stabilization, max_recovery_speed, nv):
    """The near sides of the spherical limits ``limits`` (restitution ``eps`` per limit) at
    (q, v), v_free the free-motion velocity: (dof, side, gap (rad), allowance (rad/s), eps,
    G (n, nv)) in the order joint, angle, lower side then upper side."""
    dof, side, gap, allow, e_out, rows = [], [], [], [], [], []
    for lim, e in zip(limits, eps, strict=True):
        angles, grad = swing_twist(q[lim.qi : lim.qi + 4])
        w = v[lim.vi : lim.vi + 3]
        wf = v_free[lim.vi : lim.vi + 3]
        for i in range(3):
            rate, rate_f = grad[i] @ w, grad[i] @ wf
            for s in (1.0, -1.0):
                # the stop at -span (s = +1) or +span (s = -1): g = s (angle - bound); the
                # opposite one passed by more than RECOVERY_END_SPEED dt puts its cap row here
                g_other = lim.spans[i] - s * angles[i]
                if _recovering(g_other, dt):
                    g, a = np.inf, recovery_cap(g_other, dt, stabilization)
                else:
                    g, reach = _stop_reach(s, angles[i], -s * lim.spans[i], rate, rate_f, dt)
                    if reach >= margin:
                        continue
                    a = limit_allowance(g, dt, stabilization, max_recovery_speed)
                row = np.zeros(nv)
                row[lim.vi : lim.vi + 3] = s * grad[i]
                dof.append(lim.vi + i)
                side.append(s)
                gap.append(g)
                allow.append(a)
                e_out.append(e)
                rows.append(row)
    n = len(dof)
    return (
        np.array(dof, dtype=np.int64), np.array(side, dtype=float), np.array(gap, dtype=float),
        np.array(allow, dtype=float), np.array(e_out, dtype=float),
        np.array(rows, dtype=float).reshape(n, nv),
    )  # fmt: skip
