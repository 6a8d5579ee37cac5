"""Degenerate friction LCPs from redundant contact sets (issue 14, section 1).

Random rigid bodies touch the world or each other through faces with 3-4 coplanar contact
points (the corners a box-box manifold gives), sometimes with duplicated points; mostly with
axis-aligned faces and axis-aligned translations, whose exact ties in q are what trips Lemke.
D^T W D then has rank <= 6 per body while each contact brings nf + 1 unknowns, cond(M) ~
1e17. W is built here from first principles (W = J M^-1 J^T of free rigid bodies, J the point
Jacobians), not by the simulator's Delassus code. Every LCP must be solved by the chain,
checked twice: by the chain's own acceptance test (``r.ok``) and by an independent
complementarity check here.
"""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mbsim.simcore.contact import contact_lcp, friction_matrix
from mbsim.simcore.lcp import solve_lcp
from mbsim.simcore.lcp.selection import selecting

SETTINGS = settings(max_examples=60, deadline=None)


def skew(p):
    return np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])


def random_rotation(rng):
    Q, R = np.linalg.qr(rng.standard_normal((3, 3)))
    Q = Q * np.sign(np.diag(R))
    return Q if np.linalg.det(Q) > 0 else -Q


def redundant_contact_lcp(rng, nf, mu):
    """(M, q) of the OS contact LCP (000 Eq. 53 without bilateral rows) for 1-2 free rigid
    bodies with faces of 3-4 coplanar contacts each; units: kg, m, m/s."""
    n_bodies = int(rng.integers(1, 4))
    aligned = rng.random() < 0.7  # axis-aligned faces and motions: exact ties in q
    minv = []
    centres = []
    for _ in range(n_bodies):
        m = rng.uniform(0.1, 5.0)
        inertia = np.diag(rng.uniform(1e-4, 1e-1, 3))
        Rb = np.eye(3) if aligned else random_rotation(rng)
        minv.append((1.0 / m, Rb @ np.linalg.inv(inertia) @ Rb.T))
        centres.append(rng.uniform(-0.5, 0.5, 3))
    points, normals, body_a, body_b = [], [], [], []
    for _ in range(int(rng.integers(2, 7))):  # faces
        a = int(rng.integers(0, n_bodies))
        b = int(rng.integers(-1, n_bodies))  # -1: the world
        if b == a:
            b = -1
        if aligned:
            ax = int(rng.integers(0, 3))
            n = np.zeros(3)
            n[ax] = rng.choice([-1.0, 1.0])
            t = np.zeros(3)
            t[(ax + 1) % 3] = 1.0
        else:
            n = rng.standard_normal(3)
            n /= np.linalg.norm(n)
            t = np.cross(n, rng.standard_normal(3))
            t /= np.linalg.norm(t)
        s = np.cross(n, t)
        half = rng.uniform(0.005, 0.1, 2)
        corners = [(1, 1), (1, -1), (-1, -1), (-1, 1)][: int(rng.integers(3, 5))]
        if rng.random() < 0.3:
            corners.append(corners[0])  # a duplicated contact point
        origin = centres[a] + (0.0 if aligned else rng.uniform(-0.1, 0.1, 3))
        for cu, cv in corners:
            points.append(origin + cu * half[0] * t + cv * half[1] * s)
            normals.append(n)
            body_a.append(a)
            body_b.append(b)
    nu = len(points)
    J = np.zeros((3 * nu, 6 * n_bodies))
    for i in range(nu):
        for body, sign in ((body_a[i], 1.0), (body_b[i], -1.0)):
            if body < 0:
                continue
            r = points[i] - centres[body]
            # velocity of the point: v + w x r = [I, -[r]x] [v; w]
            J[3 * i : 3 * i + 3, 6 * body : 6 * body + 3] += sign * np.eye(3)
            J[3 * i : 3 * i + 3, 6 * body + 3 : 6 * body + 6] -= sign * skew(r)
    Minv = np.zeros((6 * n_bodies, 6 * n_bodies))
    for k, (im, iI) in enumerate(minv):
        Minv[6 * k : 6 * k + 3, 6 * k : 6 * k + 3] = im * np.eye(3)
        Minv[6 * k + 3 : 6 * k + 6, 6 * k + 3 : 6 * k + 6] = iI
    W = J @ Minv @ J.T
    # free velocities of a rigid-body motion u, so the LCP is solvable (Anitescu-Potra: a
    # velocity meeting every normal row exists, u' = 0 since W F = -J u is solvable) and the
    # redundant rows stay consistent; some contacts approach, others separate
    u = rng.standard_normal(6 * n_bodies)
    if aligned:  # translations along the axes only, some bodies at rest
        u = np.round(u) * np.tile([1.0, 1.0, 1.0, 0.0, 0.0, 0.0], n_bodies)
    v_free = (J @ u).reshape(nu, 3)
    D = friction_matrix(np.array(normals), nf)
    return contact_lcp(W, D, np.full(nu, mu), v_free)


def independent_violation(M, q, z):
    """max of |min(w, z)|, -w and -z, with w = M z + q recomputed here."""
    w = M @ z + q
    return max(float(np.abs(np.minimum(w, z)).max()), float(-w.min()), float(-z.min()), 0.0)


@SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    nf=st.sampled_from([4, 6, 8]),
    mu=st.sampled_from([0.0, 0.15, 0.6, 1.0, 2.0]),
    select=st.sampled_from(["vertex", "least_norm"]),
)
def test_redundant_friction_lcps_are_always_solved(seed, nf, mu, select):
    rng = np.random.default_rng(seed)
    M, q = redundant_contact_lcp(rng, nf, mu)
    with selecting(select):
        r = solve_lcp(M, q)
    assert r.ok, r.describe()
    scale = np.abs(M).sum(axis=1).max() * np.abs(r.z).max() + np.abs(q).max()
    # the acceptance tolerance is 1e-9 of this scale plus rounding (docs/lcp.md)
    assert independent_violation(M, q, r.z) <= 2e-9 * scale


def test_least_norm_spreads_the_load_of_a_resting_face():
    """A cube resting on 4 corners (no friction needed): the support forces are statically
    indeterminate; the least-norm selection gives each corner m g / 4 (by symmetry, the closed
    form), Lemke's vertex does not have to."""
    m, a = 0.5, 0.025
    corners = np.array([[a, a, -a], [a, -a, -a], [-a, -a, -a], [-a, a, -a]])
    J = np.zeros((12, 6))
    for i, r in enumerate(corners):
        J[3 * i : 3 * i + 3, :3] = np.eye(3)
        J[3 * i : 3 * i + 3, 3:] = -skew(r)
    inertia = m * (2 * a) ** 2 / 6.0
    Minv = np.diag([1 / m] * 3 + [1 / inertia] * 3)
    W = J @ Minv @ J.T
    dt, g = 1e-3, 9.81
    v_free = np.tile([0.0, 0.0, -g * dt], (4, 1))
    D = friction_matrix(np.tile([0.0, 0.0, 1.0], (4, 1)), 4)
    M, q = contact_lcp(W, D, np.full(4, 0.5), v_free)
    with selecting("least_norm"):
        r = solve_lcp(M, q)
    assert r.ok, r.describe()
    normal = r.z[: 4 * 5 : 5]
    np.testing.assert_allclose(normal, m * g * dt / 4, rtol=1e-9)
    assert np.abs(r.z[:20].reshape(4, 5)[:, 1:]).max() <= 1e-12  # no friction


@pytest.mark.parametrize(
    "name", ["gripper_lcp_mu06_numerical", "gripper_lcp_mu015_ray"]
)  # fmt: skip
@pytest.mark.parametrize("select", ["vertex", "least_norm"])
def test_the_gripper_lcps_that_failed_are_solved(name, select):
    """Two contact LCPs recorded from sample:gripper-lift.toml (mu 0.6 at t = 0.314 s, n = 48;
    mu 0.15 at t = 0.089 s, n = 72) on which every attempt of the chain failed before
    (docs/lcp.md, "Redundant contacts")."""
    data = np.load(Path(__file__).parent / "data" / f"{name}.npz")
    M, q = data["M"], data["q"]
    with selecting(select):
        r = solve_lcp(M, q)
    assert r.ok, r.describe()
    scale = np.abs(M).sum(axis=1).max() * np.abs(r.z).max() + np.abs(q).max()
    assert independent_violation(M, q, r.z) <= 2e-9 * scale


def test_the_friction_matrix_is_copositive_but_not_copositive_plus():
    """docs/lcp.md: z = e_sigma gives z'Mz = 0 but (M + M')z = mu e_normal != 0, so Lemke's
    ray termination does not prove a friction LCP infeasible."""
    M, _ = contact_lcp(np.eye(3), friction_matrix(np.array([[0.0, 0.0, 1.0]]), 4),
                       np.array([0.5]), np.zeros((1, 3)))  # fmt: skip
    z = np.zeros(6)
    z[5] = 1.0
    assert z @ M @ z == 0.0
    assert ((M + M.T) @ z)[0] == 0.5


def test_lemke_follows_another_path_after_a_secondary_ray():
    """The contact LCP (n = 120: 20 floor contacts on a quadruped with 18 DoF lying on the
    floor, rank(D^T W D) = 18) recorded from pybullet_data's spirit40newer.urdf dropped with a
    floating base at t = 0.14 s (issue 19), on which every attempt of the chain failed before.
    The lexicographic Lemke path ends in a genuine secondary ray; :func:`lemke` then follows
    the other paths of lemke.py's docstring. Checked independently of the chain's test: the
    complementarity violation is at rounding level relative to ||M|| ||z|| + ||q||."""
    from mbsim.simcore.lcp import lemke
    from mbsim.simcore.lcp.lemke import run_lemke

    data = np.load(Path(__file__).parent / "data" / "spirit40newer_lcp_ray.npz")
    M, q = data["M"], data["q"]
    status, *_ = run_lemke(np.ascontiguousarray(M), np.ascontiguousarray(q))
    assert status == "ray_termination"  # the standard path alone fails on it
    r = lemke(M, q)
    assert r.ok, r.describe()
    scale = np.abs(M).sum(axis=1).max() * np.abs(r.z).max() + np.abs(q).max()
    assert independent_violation(M, q, r.z) <= 1e-12 * scale
    for select in ("vertex", "least_norm"):
        with selecting(select):
            assert solve_lcp(M, q).ok


def test_regularised_lemke_solves_the_restricted_lcp_when_its_active_set_is_inconsistent():
    """spirit40newer lying on the floor at t = 0.169 s (n = 120, 20 contacts on 18 DoF): the
    least-norm attempt's active set S gives an inconsistent system M_SS z_S = -q_S (the
    polish leaves 4e-9 against a tolerance of 8e-10) and no Lemke path solved it before;
    the LCP restricted to S, grown by the violated rows, is solved (chain.py, "Restricted
    LCP"). Checked independently of the chain's test."""
    from mbsim.simcore.lcp import lemke_regularised
    from mbsim.simcore.lcp.selection import LEAST_NORM_DELTA

    data = np.load(Path(__file__).parent / "data" / "spirit40newer_lcp_restricted.npz")
    M, q = data["M"], data["q"]
    mnorm = np.abs(M).sum(axis=1).max()
    r = lemke_regularised(M, q, LEAST_NORM_DELTA * mnorm)
    assert r.ok, r.describe()
    assert "restricted" in r.message
    scale = mnorm * np.abs(r.z).max() + np.abs(q).max()
    assert independent_violation(M, q, r.z) <= 1e-9 * scale
    # the impulses stay at the scale of the load (m g dt ~ 0.1 N s), no near-ray blow-up
    assert np.abs(r.z).max() <= 1.0


def test_chain_reports_failure_on_a_contact_lcp_proved_infeasible():
    """ERD kinova dropped with its joints at 0, below the lower limits of joints 2, 3 and 5
    (0.82, 0.33 and 0.52 rad): at t = 1 ms (n = 39: 3 joint-limit rows, 6 self-contacts of
    link_4 on link_6 and link_3 on link_5/6) the limit rows push the joints back into their
    ranges, and the third one drives link_4 into link_6, whose contact normal row can be
    served only by pushing that joint further out of its range. The LCP has no solution, proved here
    independently of mbsim's solvers by HiGHS: the largest s with M z + q >= s 1, z >= 0 is
    negative, and its dual gives a Farkas certificate y >= 0, sum y = 1, y'M <= 0, y'q < 0
    (so y'(M z + q) < 0 for every z >= 0). Every solver of the chain must then fail, never
    return an accepted answer (issue 19: a start pose outside the joint limits, not a
    solver failure)."""
    from scipy.optimize import linprog

    from mbsim.simcore.lcp.problem import LcpFailure, check, ensure

    data = np.load(Path(__file__).parent / "data" / "kinova_lcp_infeasible.npz")
    M, q = data["M"], data["q"]
    n = q.size
    best = linprog(
        np.r_[np.zeros(n), -1.0],
        A_ub=np.hstack([-M, np.ones((n, 1))]),
        b_ub=q,
        bounds=[(0, None)] * n + [(None, 1.0)],
        method="highs",
    )
    assert best.status == 0 and -best.fun < -1e-3  # m/s: no z >= 0 makes every w >= 0
    cert = linprog(
        q, A_ub=M.T, b_ub=np.zeros(n), A_eq=np.ones((1, n)), b_eq=[1.0],
        bounds=[(0, None)] * n, method="highs",
    )  # fmt: skip
    y = cert.x
    assert cert.status == 0 and y.min() >= 0.0
    assert (M.T @ y).max() <= 1e-12 * np.abs(M).max() and y @ q < -1e-3
    for select in ("vertex", "least_norm"):
        with selecting(select):
            r = solve_lcp(M, q)
        assert not r.ok and check(r) is not None
        with pytest.raises(LcpFailure):
            ensure(r)
