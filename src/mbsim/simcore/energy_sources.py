"""Which source added kinetic energy in a step: impacts, stabilisation, closures (issue 20).

A step of the OS stepper (stepper.py) changes the joint velocity in three stages,

    v  --impact phase-->  v_s  --free motion-->  v_f = v_s + dt qdd  --step LCP-->  v+,

the impact phase (000 Eqs. 54-58) only in a step with a collision (else v_s = v), and
v+ = v_f + M'^-1 J^T p with p the step LCP's row impulses (contact, joint-limit / joint-friction
and bilateral rows) and M' = M + A the matrix the step factorises (A = ``data.armature``: dt D
of the implicit joint damping and dt g of implicit PD gains; A = 0 without them). The kinetic
energy is measured in that metric, T'(v) = 1/2 v^T M' v = T(v) + 1/2 sum_k A_k v_k^2, so every
identity below is exact (T' = T, the kinetic energy, when A = 0).

* impacts: T'(v_s) - T'(v), the kinetic energy the collision's impulses (compression and
  decompression together) added; positive only with restitution and a multi-contact
  collision (Kane's paradox) or rounding.
* the step LCP: since v+ - v_f = M'^-1 J^T p,

      T'(v+) - T'(v_f) = 1/2 (v+ - v_f)^T M' (v+ + v_f) = sum_r p_r (w_f,r + w+_r) / 2,

  w = J v the row velocities: each row's share is its impulse times its mean velocity over
  the step (the work of a linear impulse, exactly). The shares are an exact partition of the
  impulse's kinetic energy change, and each source is a set of rows:

  - stabilisation: the normal rows of penetrating contacts (gap < 0), which ask for a
    separation speed n . v+ = min(k |g| / dt, max_recovery_speed) > 0 (plus the curvature
    term), and the joint-limit rows past their stop (joint gap < 0, the same recovery);
    share fn_i (n . u_f,i + n . u+_i) / 2 with fn_i the normal impulse and u the relative
    contact velocity;
  - closures: the bilateral rows (loop closures and mimic joints, G_b v+ = -k e / dt):
    their impulses are not exposed by every formulation, so their share is the remainder
    T'(v+) - T'(v_f) minus the shares of every contact row (normal and friction, F_i .
    (u_f,i + u+_i) / 2) and every joint row (p_j . G_j (v_f + v+) / 2);
  - the rest: friction (its share is -sigma mu beta_n <= 0 by complementarity, 000 Eqs.
    10-13) and contacts at or outside their gap.

  A row whose target is zero never adds energy: with zero targets the shares sum to
  friction work minus 1/2 (v+ - v_f)^T M' (v+ - v_f) <= 0. A target asking for a positive
  velocity can: its share for one frictionless row is r^2 / (2 K) - w_f^2 / (2 K) (K the
  row's Delassus entry, r its target speed, w_f its free-motion velocity): the kinetic
  energy the target adds (the velocity with the target minus the one without it,
  1/2 r^2 / K) less what the row would have absorbed anyway (w_f^2 / (2 K)). A body at rest
  started 5 cm into the floor at dt 1 ms gets 1/2 m (r^2 - (g dt)^2) in the first step,
  which is 1/2 m r^2 to (g dt / r)^2 = 4e-4; while it rises at the capped speed r each
  step's share m g dt (r - g dt / 2) is, to O(dt^2), the potential energy m g r dt it gains.
* the rest of the step's kinetic energy change (the free motion: gravity, actuators,
  damping) is no injection and is not attributed.

Cost: nothing on a step without such a row; a step with penetrating contacts or limits
under an impulse computes the velocities of those contact points before and after (two
point-velocity passes) and a dot product; a step with bilateral rows adds two kinetic-energy
passes. No extra factorisation.

For an rk4 step (001 Sec. 4.1) the attribution is that of the step's impulses as the LCP
solved them (v_s to the Euler v+ the held force is built from).

A step counts as having gained energy from a source when the source's share exceeds
:func:`gain_tolerance`: GAIN_TOL_ABS + GAIN_TOL_REL times the kinetic energy at the step's
end (evaluated only for a step with a share above GAIN_TOL_ABS).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mbsim.simcore.kinematics import relative_velocity_sums

#: The energy sources, in the order the summary names them.
SOURCES = ("impacts", "stabilisation", "closures")
#: A per-step gain below this (J) is not counted: a 1 kg body at 1.4 mm/s holds 1e-6 J, far
#: above the rounding of the shares (1e-16 relative) and of an LCP solution (lcp_tol_rel 1e-9
#: of the impulses times the row velocities), and below any recovery worth reporting.
GAIN_TOL_ABS = 1e-6
#: ... plus this fraction of the kinetic energy at the step's end (J): a fast system's
#: rounding scales with its energy.
GAIN_TOL_REL = 1e-6


def gain_tolerance(kinetic_start: float) -> float:
    """The smallest per-step gain (J) counted: GAIN_TOL_ABS + GAIN_TOL_REL |T|."""
    return GAIN_TOL_ABS + GAIN_TOL_REL * abs(kinetic_start)


def armature_energy(armature: np.ndarray, v: np.ndarray) -> float:
    """1/2 sum_k A_k v_k^2 (J): the part of T'(v) the armature diagonal adds to T(v)."""
    return 0.5 * float(np.dot(armature * v, v))


def _contact_velocity_sums(model, data, contacts, idx, v1, v2):
    """u(v1) + u(v2) (len(idx), 3), u = v_A - v_B the relative velocity of the contacts
    ``idx`` (m/s)."""
    c = contacts
    return relative_velocity_sums(
        model, data, v1, v2, c.body_a[idx], c.local_a[idx], c.body_b[idx], c.local_b[idx]
    )


def step_shares(model, data, problem, F, p_joint, v_free, v_new, kinetic) -> tuple[float, float]:
    """(stabilisation, closures) shares (J) of the step LCP's kinetic energy change T'(v+) -
    T'(v_f) (module docstring). F (nu, 3): the LCP's contact impulses on A (N s); p_joint:
    its joint-row impulses; ``kinetic(v)``: T(v) at the step's configuration (J). Returns
    (0, 0) at once when no penetrating contact or limit carries an impulse and there is no
    bilateral row."""
    c = problem.contacts
    nu = len(c.gap)
    stab = 0.0
    fn = np.einsum("ij,ij->i", F, c.normal) if nu else np.zeros(0)
    recovering = np.flatnonzero((c.gap < 0.0) & (fn > 0.0))
    jr = problem.joint
    bilateral = problem.n_bilateral > 0
    jshare = np.zeros(0)
    if jr is not None and jr.n_rows and (bilateral or np.any(jr.limit_gap < 0.0)):
        jshare = 0.5 * p_joint * (jr.G @ (v_free + v_new))
        stab += float(np.sum(jshare[: jr.n_limits][jr.limit_gap < 0.0]))
    if not bilateral:
        if len(recovering):
            u = _contact_velocity_sums(model, data, c, recovering, v_free, v_new)
            un = np.einsum("ij,ij->i", u, c.normal[recovering])
            stab += 0.5 * float(np.dot(fn[recovering], un))
        return stab, 0.0
    contact_total = 0.0
    if nu:
        everyone = np.arange(nu)
        u = _contact_velocity_sums(model, data, c, everyone, v_free, v_new)
        contact_total = 0.5 * float(np.sum(F * u))
        un = np.einsum("ij,ij->i", u, c.normal)
        stab += 0.5 * float(np.dot(fn[recovering], un[recovering]))
    a = data.armature
    delta = (
        kinetic(v_new) + armature_energy(a, v_new) - kinetic(v_free) - armature_energy(a, v_free)
    )
    closures = delta - contact_total - float(np.sum(jshare))
    return stab, closures


@dataclass
class SourceTally:
    """One source's gains over a run: steps above the tolerance, their total and the largest
    (J) with its time (s, the end of that step)."""

    steps: int = 0
    total: float = 0.0
    largest: float = 0.0
    time: float = float("nan")

    def add(self, gain: float, t: float) -> None:
        self.steps += 1
        self.total += gain
        if gain > self.largest:
            self.largest, self.time = gain, t


#: (attribute key, SourceTally field, type) of :meth:`EnergyGains.as_attrs`
_ATTRS = (("steps", "steps", int), ("total", "total", float), ("max", "largest", float),
          ("time", "time", float))  # fmt: skip


@dataclass
class EnergyGains:
    """Per-source tally of the steps that gained kinetic energy (module docstring)."""

    sources: dict = field(default_factory=lambda: {s: SourceTally() for s in SOURCES})

    def add_step(self, report, t: float, kinetic_end) -> None:
        """Count the step ``report`` (a StepReport) that ended at time ``t`` (s);
        ``kinetic_end()`` gives the kinetic energy (J) at its end, asked for only when a
        share exceeds GAIN_TOL_ABS."""
        gains = [getattr(report, f"energy_{name}", 0.0) for name in SOURCES]
        if max(gains) <= GAIN_TOL_ABS:
            return
        tol = gain_tolerance(kinetic_end())
        for name, gain in zip(SOURCES, gains, strict=True):
            if gain > tol:
                self.sources[name].add(gain, t)

    def as_attrs(self) -> dict:
        """The ``/summary`` attributes of the tally: ``energy_gain_{steps,total,max,time}_S``
        for each source S (docs/hdf5-format.md)."""
        return {
            f"energy_gain_{key}_{name}": getattr(tally, field_name)
            for name, tally in self.sources.items()
            for key, field_name, _ in _ATTRS
        }

    @classmethod
    def from_attrs(cls, attrs: dict) -> EnergyGains | None:
        """The tally a results file's ``/summary`` attributes hold (:meth:`as_attrs`); None
        for a file written before they existed."""
        if f"energy_gain_steps_{SOURCES[0]}" not in attrs:
            return None
        gains = cls()
        for name, tally in gains.sources.items():
            for key, field_name, kind in _ATTRS:
                setattr(tally, field_name, kind(attrs[f"energy_gain_{key}_{name}"]))
        return gains

    def as_dict(self) -> dict:
        return {
            name: {
                "steps": s.steps,
                "total_J": s.total,
                "max_J": s.largest,
                "max_time_s": None if s.steps == 0 else s.time,
            }
            for name, s in self.sources.items()
        }

    def text(self) -> str:
        """One line: ``impacts 0 steps; stabilisation 1 step, 182 J max at t=0.001 s, 182 J
        in all; closures 0 steps``."""
        parts = []
        for name, s in self.sources.items():
            part = f"{name} {s.steps} step{'' if s.steps == 1 else 's'}"
            if s.steps:
                part += f", {s.largest:.3g} J max at t={s.time:.6g} s"
                if s.steps > 1:
                    part += f", {s.total:.3g} J in all"
            parts.append(part)
        return "; ".join(parts)


__all__ = [
    "GAIN_TOL_ABS",
    "GAIN_TOL_REL",
    "SOURCES",
    "EnergyGains",
    "SourceTally",
    "armature_energy",
    "gain_tolerance",
    "step_shares",
]
