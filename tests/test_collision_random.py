"""Random convex pairs against independent computations (hypothesis).

Separated pairs: the distance of two boxes (or a capsule's segment and a box) as a convex
quadratic programme solved by scipy (SLSQP on the half-space descriptions), which shares no
code with mbsim. Overlapping boxes: the penetration depth as the smallest overlap over the 15
separating-axis candidates, in a few lines of numpy. Every reported point must also lie on its
shape's surface.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.spatial.transform import Rotation

from test_collision_support import Scene, part, pose, shape

MARGIN = 0.05


def _halfspaces(R, p, half):
    """(A, b) with A x <= b describing the box."""
    A = np.vstack([R.T, -R.T])
    b = np.concatenate([half + R.T @ p, half - R.T @ p])
    return A, b


def _qp_distance(constraints_a, constraints_b, x0):
    """(min |x - y| over x in A, y in B, x, y), A and B given as ("box", (A, b))."""

    def split(z):
        return z[:3], z[3:6]

    cons = []
    for k, c in enumerate((constraints_a, constraints_b)):
        if c[0] == "box":
            A, b = c[1]
            cons.append({"type": "ineq", "fun": lambda z, A=A, b=b, k=k: b - A @ split(z)[k]})
    z0 = np.concatenate([x0[0], x0[1]])
    res = minimize(
        lambda z: np.sum((split(z)[0] - split(z)[1]) ** 2),
        z0,
        jac=lambda z: np.concatenate([2 * (z[:3] - z[3:6]), -2 * (z[:3] - z[3:6])]),
        constraints=cons,
        method="SLSQP",
        options={"ftol": 1e-16, "maxiter": 500},
    )
    return float(np.sqrt(max(res.fun, 0.0))), res.x[:3], res.x[3:6]


def _box_depth(Ra, pa, ha, Rb, pb, hb):
    """Penetration depth of two overlapping boxes: min overlap over the 15 axes."""
    axes = [Ra[:, i] for i in range(3)] + [Rb[:, i] for i in range(3)]
    axes += [np.cross(Ra[:, i], Rb[:, j]) for i in range(3) for j in range(3)]
    best = np.inf
    for u in axes:
        n = np.linalg.norm(u)
        if n < 1e-9:
            continue
        u = u / n
        ra = np.sum(ha * np.abs(Ra.T @ u))
        rb = np.sum(hb * np.abs(Rb.T @ u))
        best = min(best, ra + rb - abs(u @ (pa - pb)))
    return best


def _on_box_surface(x, R, p, half):
    q = np.abs(R.T @ (x - p)) - half
    return np.max(q) > -1e-7 and np.max(q) < 1e-7


rotations = st.integers(0, 2**31 - 1).map(lambda s: Rotation.random(random_state=s).as_matrix())
sizes = st.tuples(*[st.floats(0.1, 1.0)] * 3).map(np.array)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    Ra=rotations, Rb=rotations, ha=sizes, hb=sizes, direction=rotations, g=st.floats(-0.04, 0.04)
)
def test_box_box_gap_matches_independent_answer(Ra, Rb, ha, hb, direction, g):
    """Place A clearly apart along a random direction, find the distance d0 and the closest
    points by the QP, then move A by d0 - g along their normal: the distance is then exactly g
    if g >= 0 (for convex sets it falls linearly along that path); if g < 0 they overlap and
    the expected gap is minus the 15-axis depth."""
    u = direction[:, 0]
    ra = np.sum(ha * np.abs(Ra.T @ u))
    rb = np.sum(hb * np.abs(Rb.T @ u))
    pb = np.zeros(3)
    pa = pb + 1.5 * (ra + rb) * u
    d0, xa, xb = _qp_distance(
        ("box", _halfspaces(Ra, pa, ha)), ("box", _halfspaces(Rb, pb, hb)), (pa, pb)
    )
    n = (xa - xb) / d0
    pa = pa - (d0 - g) * n
    expected = g if g >= 0 else -_box_depth(Ra, pa, ha, Rb, pb, hb)
    s = Scene(part("a", shape("box", 2 * ha)), part("b", shape("box", 2 * hb)), margin=MARGIN)
    c = s.detect({"a": pose(Ra, pa), "b": pose(Rb, pb)})
    assert len(c) >= 1
    assert abs(c.gap.min() - expected) < 1e-6, (c.gap, expected)
    for i in range(len(c)):
        assert c.gap[i] <= MARGIN
        assert _on_box_surface(c.point_a[i], Ra, pa, ha)
        assert _on_box_surface(c.point_b[i], Rb, pb, hb)
        assert abs(np.linalg.norm(c.normal[i]) - 1) < 1e-12
        assert abs((c.point_a[i] - c.point_b[i]) @ c.normal[i] - c.gap[i]) < 1e-9
    if g > 1e-6:
        # separated: the deepest contact's normal is the closest-points direction (touching,
        # g = 0, any direction of the normal cone is right)
        assert np.allclose(c.normal[np.argmin(c.gap)], n, atol=1e-5)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(Rb=rotations, hb=sizes, direction=rotations, scale=st.floats(0.8, 1.3))
def test_sphere_box_gap_matches_independent_answer(Rb, hb, direction, scale):
    r = 0.2
    u = direction[:, 0]
    rb = np.sum(hb * np.abs(Rb.T @ u))
    centre = scale * (rb + r) * u
    s = Scene(part("a", shape("sphere", [r])), part("b", shape("box", 2 * hb)), margin=MARGIN)
    c = s.detect({"a": pose(p=centre), "b": pose(Rb)})
    # the closest point of a box to a point: clamp in the box frame (inside: nearest face)
    q = Rb.T @ centre
    outside = np.linalg.norm(np.maximum(np.abs(q) - hb, 0.0))
    expected = outside - r if outside > 0 else -np.min(hb - np.abs(q)) - r
    if expected > MARGIN + 1e-9:
        assert len(c) == 0
    else:
        assert len(c) == 1 and abs(c.gap[0] - expected) < 1e-9
        assert abs(np.linalg.norm(c.point_a[0] - centre) - r) < 1e-9
        assert _on_box_surface(c.point_b[0], Rb, np.zeros(3), hb)
