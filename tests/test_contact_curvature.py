"""The J-dot v gap correction (simcore/contact.py curvature_drift) against closed-form
accelerations of points on rotating bodies: 1/2 dt^2 n . a with a the centripetal
acceleration -w^2 r of a point at radius r (exact to rounding)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from mbsim.io.urdf import parse_urdf_string
from mbsim.samples.generators import pendulum_urdf
from mbsim.simcore.contact import curvature_drift
from mbsim.simcore.data import Data
from mbsim.simcore.kinematics import forward_kinematics, propagate_bias
from mbsim.simcore.model import build_model

BOX = """<robot name="box"><link name="box"><inertial><mass value="2.0"/>
<inertia ixx="0.02" iyy="0.03" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>"""


def drift(model, q, v, body, local, normal, dt):
    d = Data(model)
    forward_kinematics(model, d, q, v)
    chat = np.empty((model.nb, 6))
    propagate_bias(model.parent, d.E, d.r, d.cbias, chat)
    contacts = SimpleNamespace(
        gap=np.zeros(1), body_a=np.array([body]), body_b=np.array([-1]),
        local_a=np.array([local], dtype=float), local_b=np.zeros((1, 3)),
        normal=np.array([normal], dtype=float),
    )  # fmt: skip
    return curvature_drift(d.R_world, d.vel, chat, contacts, dt)[0]


@pytest.mark.parametrize("q1", [0.0, 0.7])
def test_pendulum_point_centripetal(q1):
    model = build_model([parse_urdf_string(pendulum_urdf(1))])
    w, r, dt = 3.0, 5.0, 1e-3
    d = Data(model)
    forward_kinematics(model, d, np.array([q1]))
    hinge = d.p_world[0]
    point = d.p_world[0] + d.R_world[0] @ np.array([0.0, 0.0, -r])
    toward_hinge = (hinge - point) / r
    got = drift(model, np.array([q1]), np.array([w]), 0, (0.0, 0.0, -r), toward_hinge, dt)
    assert got == pytest.approx(0.5 * dt * dt * w * w * r, rel=1e-12)


def test_free_body_spinning_and_translating():
    """A free body translating at u and spinning at w about z: a point at (r, 0, 0) has
    centripetal acceleration -w^2 r along its radius, whatever u (free-joint convention:
    linear velocity in the world frame, angular in the body frame)."""
    model = build_model([parse_urdf_string(BOX, base="floating")])
    w, r, dt = 4.0, 0.3, 2e-3
    q = np.array([1.0, -2.0, 0.5, 1.0, 0.0, 0.0, 0.0])
    v = np.array([0.7, -0.4, 1.3, 0.0, 0.0, w])
    radial = np.array([1.0, 0.0, 0.0])
    got = drift(model, q, v, 0, (r, 0.0, 0.0), radial, dt)
    assert got == pytest.approx(-0.5 * dt * dt * w * w * r, rel=1e-12)
    tangential = np.array([0.0, 1.0, 0.0])
    assert abs(drift(model, q, v, 0, (r, 0.0, 0.0), tangential, dt)) < 1e-15
