"""Compiled per-contact stages of the general contact step (simcore/stepper.py, issue 15).

The stepper's contact step used to do these as a dozen small numpy operations each; each
kernel below is one pass over the contacts with the same arithmetic in the same order (every
result bit for bit the same as the numpy code, tests/test_contact_step_kernels.py). The rules
themselves are stated in stepper.py's module docstring; this module only evaluates them.

* :func:`gap_allowance`: the normal rows' gap allowance g_v = target / dt (s^-1 m, the
  "Gap stabilisation" and "Softened recovery" rules), whether any row demands a separation
  speed, and the deepest penetration;
* :func:`impacting`: which contacts collide this step (approach faster than the impact
  velocity and would close the gap within the step; 000 Sec. 7);
* :func:`split_impulses`: each contact's total impulse on A (N s) split into its normal part
  n . P and its tangential part P - (n . P) n, and which contacts slide (sigma > 1e-9 of the
  largest, at least 1e-9).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, forceinline=True)
def _maximum(a, b):
    """np.maximum on two floats (nan if either is nan)."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


@njit(cache=True, forceinline=True)
def _minimum(a, b):
    """np.minimum on two floats (nan if either is nan)."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


@njit(cache=True)
def _gap_allowance_kernel(gap, drift, stabilization, cap, use_floor, gap_floor, scale, dt, out):
    """out[i] = target_i / dt; returns (any target < 0, min(0, min gap))."""
    demands = False
    deepest = 0.0
    with_drift = drift.shape[0] > 0
    for i in range(gap.shape[0]):
        g = gap[i]
        if use_floor:
            t = _maximum(g, gap_floor)
        else:
            recover = _maximum(stabilization * g, cap)
            t = g if g > 0.0 else recover
        if with_drift:
            t = t + drift[i]
        if scale != 1.0:
            t = _maximum(t, 0.0) + scale * _minimum(t, 0.0)
        if t < 0.0:
            demands = True
        out[i] = t / dt
        deepest = _minimum(deepest, g)
    return demands, deepest


def gap_allowance(gap, drift, stabilization, max_recovery_speed, gap_floor, scale, dt):
    """(g_v (nu,) m/s, demands, deepest) for the contacts' signed gaps ``gap`` (m).

    Without ``gap_floor`` (None): target = g for a separated contact (g > 0), else
    max(k g, -v_max dt) (k = ``stabilization``, v_max = ``max_recovery_speed`` m/s); with it
    (001's g_Neps): max(g, g_Neps). ``drift`` (nu,) m, or empty: the curvature term
    (contact.curvature_drift), added unscaled. ``scale`` != 1 (softened recovery): target =
    max(target, 0) + scale min(target, 0). g_v = target / dt. ``demands``: some target < 0
    (the row asks the bodies apart); ``deepest``: min(0, min g) (m, nan if a gap is nan)."""
    gap = np.ascontiguousarray(gap, dtype=np.float64)
    out = np.empty(len(gap))
    use_floor = gap_floor is not None
    demands, deepest = _gap_allowance_kernel(
        gap, np.ascontiguousarray(drift, dtype=np.float64), float(stabilization),
        -max_recovery_speed * dt, use_floor, float(gap_floor) if use_floor else 0.0,
        float(scale), float(dt), out,
    )  # fmt: skip
    return out, bool(demands), float(deepest)


@njit(cache=True)
def _impacting_kernel(vn, gap, impact_velocity, dt, out):
    found = False
    for i in range(vn.shape[0]):
        out[i] = (vn[i] < -impact_velocity) & (gap[i] + vn[i] * dt <= 0.0)
        found |= out[i]
    return found


def impacting(vn, gap, impact_velocity: float, dt: float):
    """(mask (nu,) bool, any): contacts approaching at n . v_u = ``vn`` < -``impact_velocity``
    (m/s) that would close their gap (m) within the step, g + vn dt <= 0."""
    out = np.empty(len(vn), dtype=np.bool_)
    gap = np.ascontiguousarray(gap, dtype=np.float64)
    return out, bool(_impacting_kernel(vn, gap, float(impact_velocity), float(dt), out))


@njit(cache=True)
def _split_kernel(P, normal, sigma, fn, tangent, sliding):
    for i in range(P.shape[0]):
        s = fn[i]
        for k in range(3):
            tangent[i, k] = P[i, k] - s * normal[i, k]
    big = 0.0
    for i in range(sigma.shape[0]):
        a = abs(sigma[i])
        if not a <= big:  # also propagates nan, as np.max
            big = a
    level = 1e-9 * (big if big > 1.0 else 1.0)  # Python's max(1.0, big): 1.0 for nan
    for i in range(sigma.shape[0]):
        sliding[i] = sigma[i] > level


def split_impulses(P, normal, sigma):
    """(n . P (nu,) N s, P - (n . P) n (nu, 3) N s, sliding (nu,) bool) for the total impulses
    on A ``P`` (nu, 3), unit normals ``normal`` (nu, 3) and the LCP's sigma (nu,) (the
    friction rows' slip speeds): a contact slides when sigma > 1e-9 max(1, max |sigma|)."""
    P = np.ascontiguousarray(P, dtype=np.float64)
    normal = np.ascontiguousarray(normal, dtype=np.float64)
    # numpy's own sum order for n . P (einsum pairs x and z first), as every other n . P
    # of the step and of the report's readers
    fn = np.einsum("ij,ij->i", P, normal)
    tangent = np.empty((P.shape[0], 3))
    sliding = np.empty(len(sigma), dtype=np.bool_)
    _split_kernel(
        P, normal, np.ascontiguousarray(sigma, dtype=np.float64), fn, tangent, sliding
    )  # fmt: skip
    return fn, tangent, sliding
