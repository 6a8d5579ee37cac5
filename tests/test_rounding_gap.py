"""The acceptance tolerance's absolute floor (lcp/problem.py, ``ABS_TOL``) and the names a
results file gives its static world and its event counts.

Independent truths: a contact whose normal row of M is exactly zero (a sphere turning about a
horizontal axis through its centre: its contact point never moves along the normal) cannot
meet any recovery demand, so a demand of rounding size (a gap of one ulp below the floor)
leaves the LCP with the sign violation 0.2 |g| / dt whatever z is. That violation is noise
(1e-15 m/s); before the floor it was refused relative to ||q|| = 1e-15 and every step was
solved again with softened recovery (pybullet_data's minitaur on the floor).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from mbsim.io.results import EVENT_KINDS, load_results
from mbsim.simcore.lcp.chain import solve_lcp
from mbsim.simcore.lcp.problem import (
    ABS_TOL,
    DEFAULT_TOL_REL,
    GROWTH,
    ROUND,
    SCALE_FLOOR,
    Status,
    accept_kernel,
    evaluate,
    tolerance,
    verifiable,
)
from mbsim.simcore.limit_step import evaluate_candidate

MBSIM = Path(sys.executable).with_name("mbsim")
EPS = float(np.finfo(np.float64).eps)


def zero_row_lcp(q0: float = -1.3877787807814457e-15):
    """A resting contact's LCP with an exactly zero normal row (row 0) and a rounding-size
    recovery demand q0 < 0 on it, next to a well-posed row."""
    M = np.array([[0.0, 0.0], [0.0, 2.0]])
    q = np.array([q0, 0.0])
    return M, q


def test_zero_row_with_a_rounding_size_demand_is_accepted_at_z_0():
    M, q = zero_row_lcp()
    z = np.zeros(2)
    # every relative term is ~1e-24: the floor decides
    assert tolerance(M, q, z) == ABS_TOL
    r = evaluate(M, q, z.copy(), Status.SOLVED, 0, "test")
    assert r.status == Status.SOLVED and r.sign_violation == -q[0]
    # the compiled acceptance test (the contact and joint-row kernels') says the same
    ok, worst, tol = evaluate_candidate(M, q, z.copy(), DEFAULT_TOL_REL, np.empty(2))
    assert ok and worst == -q[0] and tol == ABS_TOL
    # and the whole chain (Lemke ends on a ray: no z meets row 0) accepts an answer
    res = solve_lcp(M, q, solver="lemke", chain=True)
    assert res.status == Status.SOLVED and res.sign_violation <= ABS_TOL


def test_a_violation_above_the_floor_is_still_refused():
    # the same zero row with a physical demand (1 um/s): no solution, refused as before
    M, q = zero_row_lcp(-1e-6)
    r = evaluate(M, q, np.zeros(2), Status.SOLVED, 0, "test")
    assert r.status == Status.NUMERICAL
    res = solve_lcp(M, q, solver="lemke", chain=True)
    assert res.status != Status.SOLVED


def test_the_floor_changes_nothing_above_it():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((6, 6))
    M = A @ A.T + np.eye(6)
    q = rng.standard_normal(6)
    z = np.abs(rng.standard_normal(6))
    n, mn, qn, zn = 6, np.abs(M).sum(1).max(), np.abs(q).max(), np.abs(z).max()
    rel = DEFAULT_TOL_REL * (min(mn * zn, GROWTH * qn) + qn) + ROUND * n * EPS * mn * zn
    assert rel > ABS_TOL and tolerance(M, q, z) == rel
    # the same problem in units 1e9 times smaller: the floor takes over, never below it
    assert tolerance(M, q * 1e-9, z * 1e-9) == ABS_TOL
    # proportional to tol_rel: a tighter one tightens it, a negative one accepts nothing
    assert tolerance(M, q * 1e-9, z * 1e-9, tol_rel=1e-12) == 1e-12 * SCALE_FLOOR
    assert tolerance(M, q * 1e-9, z * 1e-9, tol_rel=-1.0) < 0.0


def test_python_and_compiled_acceptance_agree_near_the_floor():
    rng = np.random.default_rng(5)
    for k in range(200):
        n = 1 + k % 5
        A = rng.standard_normal((n, n))
        M = A @ A.T * 10.0 ** rng.integers(-3, 3)
        M[0, :] = M[:, 0] = 0.0 if k % 2 else M[0, 0]  # half of them with a zero row
        q = rng.standard_normal(n) * 10.0 ** rng.integers(-18, -9)
        z = np.abs(rng.standard_normal(n)) * 10.0 ** rng.integers(-16, -6) * (k % 3 > 0)
        w = np.empty(n)
        ok, worst, tol = evaluate_candidate(M, q, z.copy(), DEFAULT_TOL_REL, w)
        r = evaluate(M, q, z.copy(), Status.SOLVED, 0, "test")
        assert ok == (r.status == Status.SOLVED), (k, worst, tol, r.message)
        assert tol == r.tol
        qn, zn = float(np.abs(q).max()), float(np.abs(z).max())
        mv = float((np.abs(M) @ np.abs(z)).max())
        ok2, _, _ = accept_kernel(DEFAULT_TOL_REL, n, r.residual, r.sign_violation,
                                  float(np.abs(M).sum(1).max()), qn, zn, mv)  # fmt: skip
        assert ok2 == ok
        if zn == 0.0:
            assert verifiable(DEFAULT_TOL_REL, n, mv, qn, zn)


# A sphere on a hinge about the world y axis through its centre, one ulp (1.4e-17 m) into the
# floor: the contact's normal row is exactly zero (turning about the centre never moves the
# contact point along z) and its recovery demand 0.2 |g| / dt = 2.8e-15 m/s is rounding.
HINGED_SPHERE = """<?xml version="1.0"?>
<robot name="wheel">
  <link name="world"/>
  <link name="wheel">
    <inertial><mass value="1.0"/>
      <inertia ixx="0.004" iyy="0.004" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="0.1"/></geometry></collision>
  </link>
  <joint name="axle" type="continuous">
    <parent link="world"/><child link="wheel"/>
    <origin xyz="0 0 0.09999999999999999"/><axis xyz="0 1 0"/>
  </joint>
</robot>
"""


def run(*args):
    proc = subprocess.run([str(MBSIM), *map(str, args)], capture_output=True, text=True)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    return proc.stdout


def test_resting_at_a_rounding_size_gap_is_not_softened(tmp_path):
    urdf = tmp_path / "wheel.urdf"
    urdf.write_text(HINGED_SPHERE)
    out = tmp_path / "wheel.h5"
    args = ("--duration", "0.05", "--dt", "1e-3", "--record-contacts", "--record-every", "1")
    summary = json.loads(run("run", urdf, "--floor", *args, "-o", out, "--json", "-q"))
    r = load_results(out)
    gaps = r.contacts["gap"]
    assert len(gaps) == 50 and np.all(gaps < 0.0) and np.all(gaps > -1e-16)  # rounding size
    # the results file's diagnostics: every step's LCP accepted as posed, none softened
    assert r.run_summary["recovery_softened_steps"] == 0
    assert summary["recovery_softened_steps"] == 0
    assert np.all(r.diagnostics["lcp_residual"] <= ABS_TOL)
    # the run's JSON counts every kind of the file's /events/kind, as inspect does
    kinds = Counter(r.event_kinds[k] for k in r.events["kind"])
    assert summary["events"] == {k: kinds.get(k, 0) for k in EVENT_KINDS}
    assert summary["events"]["contact_begin"] == 1
    inspected = json.loads(run("inspect", out, "--json", "--events"))
    assert inspected["events_by_kind"] == summary["events"]
    # the floor is named as the scenario and `mbsim info` name it
    assert r.static_links == [] and r.floor
    assert {(e["body_a"], e["body_b"]) for e in inspected["event_list"]} == {
        ("wheel", "builtin/floor")
    }
    info = json.loads(run("info", urdf, "--floor", "--json"))
    assert ["builtin/floor", "wheel/wheel"] in info["checked_pairs"]
