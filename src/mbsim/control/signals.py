"""Signals of time: a :class:`~mbsim.io.scenario.Signal` made callable.

``SignalFn(signal)(t) -> (y, dy/dt)``. Linear interpolation is piecewise linear (dy/dt the
segment's slope); cubic is scipy's CubicSpline (C2, ``natural``: y'' = 0 at both ends,
``clamped``: y' = 0 there). Before t_0 and from t_n on the signal holds its end value with
dy/dt = 0, so a trajectory that ends leaves the joint holding its last target; at t_0 itself
dy/dt is the first segment's (the derivative over the step that starts there), so a trajectory
that starts at t = 0 moves from the first step.
"""

from __future__ import annotations

import numpy as np


class SignalFn:
    """Evaluate a Signal (see the module docstring). Units are those of the signal, per s for
    the derivative."""

    def __init__(self, signal) -> None:
        self.value = float(signal.value)
        self.t = np.asarray(signal.t, dtype=float)
        self.y = np.asarray(signal.y, dtype=float)
        self.spline = None
        if len(self.t) and signal.interpolation == "cubic":
            from scipy.interpolate import CubicSpline

            self.spline = CubicSpline(self.t, self.y, bc_type=signal.ends)

    def __call__(self, t: float) -> tuple[float, float]:
        ts = self.t
        if not len(ts):
            return self.value, 0.0
        if t < ts[0]:
            return float(self.y[0]), 0.0
        if t >= ts[-1]:
            return float(self.y[-1]), 0.0
        if self.spline is not None:
            return float(self.spline(t)), float(self.spline(t, 1))
        k = int(np.searchsorted(ts, t, side="right")) - 1
        slope = (self.y[k + 1] - self.y[k]) / (ts[k + 1] - ts[k])
        return float(self.y[k] + slope * (t - ts[k])), float(slope)

    def over(self, times) -> tuple[np.ndarray, np.ndarray]:
        """(y, dy/dt) at each of ``times`` (s), element for element what :meth:`__call__`
        gives (the same operations, vectorised)."""
        times = np.asarray(times, dtype=float)
        ts = self.t
        if not len(ts):
            return np.full(times.shape, self.value), np.zeros(times.shape)
        inside = (times >= ts[0]) & (times < ts[-1])
        y = np.where(times < ts[0], self.y[0], self.y[-1]).astype(float)
        dy = np.zeros(times.shape)
        t_in = times[inside]
        if self.spline is not None:
            y[inside], dy[inside] = self.spline(t_in), self.spline(t_in, 1)
        else:
            k = np.searchsorted(ts, t_in, side="right") - 1
            slope = (self.y[k + 1] - self.y[k]) / (ts[k + 1] - ts[k])
            y[inside], dy[inside] = self.y[k] + slope * (t_in - ts[k]), slope
        return y, dy
