"""What one :meth:`mbsim.Simulator.step` returns: the step's contacts as PyBullet's
getContactPoints gives them, its events, the actuator forces applied, and the stepper's report
(docs/python-api.md). Names are the scenario's ``tree/link`` vocabulary."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ContactPoint:
    """One contact of a step, as PyBullet's getContactPoints gives it: the two bodies
    (``tree/link``, or ``world``), the point (m, world; midway between the two surfaces), the
    unit normal from body_b to body_a, the gap (m, < 0: penetration), the impulses on body_a
    over the step (N s) and the mean forces impulse / dt (N)."""

    body_a: str
    body_b: str
    point: np.ndarray
    normal: np.ndarray
    gap: float
    normal_impulse: float
    tangent_impulse: np.ndarray
    normal_force: float
    friction_force: np.ndarray


@dataclass(frozen=True)
class Event:
    """An event of a step: ``kind`` (contact_begin, contact_end, impact, stick, slip) between
    ``body_a`` and ``body_b`` (``tree/link``) at ``point`` (m, world)."""

    kind: str
    body_a: str
    body_b: str
    point: np.ndarray


class StepResult:
    """What :meth:`mbsim.Simulator.step` did: ``contact_points`` (list of :class:`ContactPoint`),
    ``events`` (list of :class:`Event`), ``tau`` (nv, the actuator forces applied, N m or N),
    ``tau_limit`` (nv, int8: +1/-1 where the effort limit clamped the force), ``impacts`` and
    every other field of the stepper's report (``n_contacts``, ``lcp_residual``, the raw
    ``contacts`` arrays of the collision module, ...)."""

    def __init__(self, sim, report, rows, ended, tau, tau_limit) -> None:
        self.report, self.tau, self.tau_limit = report, tau, tau_limit
        self._sim, self._rows, self._ended = sim, rows, ended

    def __getattr__(self, name):
        return getattr(self.__dict__["report"], name)

    @property
    def contact_points(self) -> list[ContactPoint]:
        c, r, dt = self.report.contacts, self.report, self._sim.options.dt
        if c is None or not len(c.gap):
            return []
        body = self._sim.body_ref
        out = []
        for i in range(len(c.gap)):
            n, ti = float(r.normal_impulse[i]), np.array(r.tangent_impulse[i], dtype=float)
            out.append(
                ContactPoint(
                    body(c.body_a[i]),
                    body(c.body_b[i]),
                    0.5 * (c.point_a[i] + c.point_b[i]),
                    np.array(c.normal[i], dtype=float),
                    float(c.gap[i]),
                    n,
                    ti,
                    n / dt,
                    ti / dt,
                )  # fmt: skip
            )
        return out

    @property
    def events(self) -> list[Event]:
        body, c = self._sim.body_ref, self.report.contacts
        out = [
            Event(row[0], body(c.body_a[row[1]]), body(c.body_b[row[1]]),
                  0.5 * (c.point_a[row[1]] + c.point_b[row[1]]))
            for row in self._rows
        ]  # fmt: skip
        out += [
            Event("contact_end", body(old.body_a[i]), body(old.body_b[i]),
                  0.5 * (old.point_a[i] + old.point_b[i]))
            for old, i in self._ended
        ]  # fmt: skip
        return out
