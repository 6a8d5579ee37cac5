"""The correction speed of a loop closure is capped at ``max_recovery_speed`` and a closure
must start assembled (simcore/bilateral.py, "Position drift" and ``MAX_START_ERROR``).

Independent truth: a slider (one prismatic joint along x, no gravity) held by a ball closure
to a world point e0 away. Its only free row is x, so each step (semi-implicit Euler,
x_{n+1} = x_n + dt v_{n+1}) the closure row sets v_{n+1} = min(k (e0 - x_n) / dt, v_max): a
constant-speed approach at v_max while k |e| / dt > v_max, then the geometric decay
|e_{n+1}| = (1 - k) |e_n|. The recurrence is evaluated here in plain floats; the stepper must
reproduce it to round-off (1e-12, the LCP's equality rows hold to ~1e-15 m/s).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from mbsim.cli.main import main
from mbsim.io.urdf import parse_urdf_string
from mbsim.simcore.bilateral import MAX_START_ERROR, Bilateral, ClosureSpec
from mbsim.simcore.model import build_model
from mbsim.simcore.stepper import OSStepper, StepOptions

SLIDER = """<robot name="slider"><link name="world"/>
<link name="cart"><inertial><mass value="2.0"/>
<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="x" type="prismatic"><parent link="world"/><child link="cart"/>
<axis xyz="1 0 0"/><limit lower="-10" upper="10" effort="100" velocity="10"/></joint>
</robot>"""
K, DT = 0.2, 1e-3


def slider(e0: float, v_max: float):
    model = build_model([parse_urdf_string(SLIDER)], gravity=(0.0, 0.0, 0.0))
    closure = ClosureSpec("ball", 0, -1, np.zeros(3), np.array([e0, 0.0, 0.0]))
    bil = Bilateral(model, [closure], q0=np.zeros(1), stabilization=K, max_recovery_speed=v_max)
    return OSStepper(model, None, StepOptions(dt=DT), bilateral=bil)


@pytest.mark.parametrize("e0, v_max", [(0.03, 0.5), (-0.04, 0.5), (0.03, 2.0), (1e-3, 0.5)])
def test_a_closure_started_apart_closes_at_the_capped_speed(e0, v_max):
    st = slider(e0, v_max)
    q, v = np.zeros(1), np.zeros(1)
    x = 0.0
    for n in range(400):
        q, v, rep = st.step(q, v, n * DT)
        speed = min(K * abs(e0 - x) / DT, v_max)  # closed form, module docstring
        x += DT * np.copysign(speed, e0 - x)
        assert v[0] == pytest.approx(np.copysign(speed, e0), abs=1e-12), n
        assert q[0] == pytest.approx(x, abs=1e-12), n
        assert abs(v[0]) <= v_max * (1.0 + 1e-12)
    capped_steps = int(np.ceil((abs(e0) - v_max * DT / K) / (v_max * DT)))
    assert capped_steps < 400 - 150  # ends well inside the run: the decay then takes over
    assert abs(q[0] - e0) < 1e-12


def test_the_cap_keeps_a_ball_group_direction_and_leaves_small_errors_alone():
    st = slider(0.0, 0.5)
    bil = st.bilateral
    e = np.array([0.3, -0.4, 0.0])  # |e| = 0.5 m: k |e| / dt = 100 m/s, capped to 0.5
    np.testing.assert_allclose(bil.target(e, DT), -0.5 * e / 0.5, rtol=1e-15)
    small = np.array([1e-3, 0.0, -1e-3])  # k |e| / dt = 0.28 m/s < 0.5: -k e / dt
    np.testing.assert_allclose(bil.target(small, DT), -K * small / DT, rtol=1e-15)
    assert not bil.target(e, 0.0).any()  # impulsive phase


def run_cli(monkeypatch, capsys, *args) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["mbsim", *map(str, args)])
    with pytest.raises(SystemExit) as exc:
        main()
    return exc.value.code, capsys.readouterr().err


# the closure of the reference listing before it was corrected: link3 of the 12-link
# pendulum (1 m links from (0, 0, 10), joint_1 at 45 degrees) pinned at (1, 0, 2), which no
# pose of three 1 m links from (0, 0, 10) reaches (the run used to diverge by step 5)
UNREACHABLE = """
[simulation]
duration = 0.01
[robot.pendulum]
urdf = "sample:pendulum-12"
q0 = { joint_1 = 0.7853981633974483 }
[[closure]]
type = "ball"
a = "pendulum/link3"
point_b = [%s]
[output]
path = "out.h5"
"""


def test_a_closure_starting_apart_is_refused_in_one_sentence(monkeypatch, capsys, tmp_path):
    path = tmp_path / "far.toml"
    path.write_text(UNREACHABLE % "1.0, 0.0, 2.0")
    code, err = run_cli(monkeypatch, capsys, "run", path, "--out", tmp_path / "far.h5")
    assert code == 2
    (line,) = err.strip().splitlines()
    # closed form: link3's origin is at (-2 sin 45deg, 0, 10 - 2 cos 45deg)
    gap = np.linalg.norm([-np.sqrt(2.0) - 1.0, 0.0, 10.0 - np.sqrt(2.0) - 2.0])
    for fragment in (str(path), "closure 0 (ball pendulum/link3 - world)", f"{gap:.3g} m"):
        assert fragment in line, (fragment, line)
    assert "Traceback" not in err and not (tmp_path / "far.h5").exists()


def test_an_assembled_closure_holds_its_error(monkeypatch, capsys, tmp_path):
    """The listing's corrected closure: link3's own start position, within MAX_START_ERROR."""
    from mbsim.io.results import load_results

    path = tmp_path / "ok.toml"
    path.write_text(UNREACHABLE % "-1.414213562373095, 0.0, 8.585786437626904")
    code, err = run_cli(monkeypatch, capsys, "run", path, "--out", tmp_path / "ok.h5")
    assert code in (0, None), err
    r = load_results(tmp_path / "ok.h5")
    # the pinned link3 cannot move, so the chain below it swings; the closure error stays at
    # the integration drift of the module docstring of test_bilateral.py (5 dt^2 w^2 L)
    assert r.diagnostics["constraint_error"].max() < MAX_START_ERROR * 1e-2
