"""Penetration recovery never launches a body (issue 20): a body starting deep inside the floor
rises out at most at ``max_recovery_speed`` and never gains more kinetic energy than the
potential energy m g depth of its rise (closed form)."""

from __future__ import annotations

import numpy as np
import pytest

from analytic_contacts import SpheresOnPlane
from mbsim.simcore.data import Data
from mbsim.simcore.dynamics import energy
from mbsim.simcore.kinematics import forward_kinematics
from mbsim.simcore.model import build_model
from mbsim.simcore.spec import Inertial, LinkSpec, RobotSpec
from mbsim.simcore.stepper import OSStepper, StepOptions

G = 9.81


def ball_model(mass, r):
    link = LinkSpec("ball", Inertial(mass, np.zeros(3), np.diag([0.4 * mass * r * r] * 3)))
    return build_model([RobotSpec("ball", [link], [], "ball", base="floating")], gravity=(0, 0, -G))


@pytest.mark.parametrize("dt", [1e-3, 1e-4])
@pytest.mark.parametrize("depth", [0.045, 0.02])
def test_a_deep_body_rises_out_without_gaining_energy(dt, depth):
    """A 2 kg ball starting ``depth`` inside the floor, at rest. Uncapped recovery pushes it out
    at 0.2 depth / dt (9 m/s at 4.5 cm, dt 1 ms: +81 J, a 4 m jump). Now its kinetic energy
    stays below m g depth (the potential energy of its rise; + 1e-9 J for rounding) at every
    step, it never rises more than ``depth`` above its resting height, and it ends resting on
    the floor."""
    m, r = 2.0, 0.1
    model = ball_model(m, r)
    opts = StepOptions(dt=dt)
    st = OSStepper(model, SpheresOnPlane({0: r}), opts)
    d = Data(model)
    q = model.neutral_q()
    q[2] = r - depth
    v = np.zeros(6)
    t = 0.0
    ke_max = 0.0
    z_max = q[2]
    for _ in range(int(0.5 / dt)):
        q, v, _ = st.step(q, v, t)
        t += dt
        forward_kinematics(model, d, q, v)
        ke_max = max(ke_max, float(energy(model, d)[0]))
        z_max = max(z_max, q[2])
    assert ke_max <= m * G * depth + 1e-9
    assert ke_max <= 0.5 * m * opts.max_recovery_speed**2 * (1 + 1e-9)
    assert z_max <= r + depth
    assert q[2] == pytest.approx(r, abs=1e-3) and np.max(np.abs(v)) < 0.05
